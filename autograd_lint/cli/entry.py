"""The `autograd-lint` command line.

    autograd-lint check [PATH ...]   lint files and directories (default: .)
    autograd-lint rules              list the rules
    autograd-lint rule CODE          explain one rule
    autograd-lint server             language server for editors (LSP, stdio)

Exit status: 0 no findings, 1 findings, 2 usage, configuration or internal
error. User mistakes get one line on stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from ..core.config import ConfigError
from .arguments import (
    COMMANDS,
    EXIT_BROKEN_PIPE,
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_TERMINATED,
    build_parser,
)
from .check_command import run_check


# ---------------------------------------------------------------------------
# rules / rule
# ---------------------------------------------------------------------------
def run_rules(args: argparse.Namespace, out: TextIO) -> int:
    from ..core.registry import all_rules

    rows = list(all_rules())
    if args.format == "json":
        import json

        json.dump([{"code": r.code, "name": r.name, "severity": r.severity, "tier": r.tier,
                    "default": r.default, "summary": r.summary} for r in rows], out, indent=2)
        out.write("\n")
        return EXIT_CLEAN
    width = max(len(r.name) for r in rows)
    tier_width = max(len(r.tier) for r in rows)
    for r in rows:
        state = "" if r.default else "  (off by default)"
        out.write(f"{r.code}  {r.name:<{width}}  {r.severity:<7}  {r.tier:<{tier_width}}  "
                  f"{r.summary}{state}\n")
    return EXIT_CLEAN


def run_rule(args: argparse.Namespace, out: TextIO) -> int:
    from ..core.docs import rule_page
    from ..core.registry import lookup

    rule = lookup(args.code)
    if rule is None:
        raise ConfigError(f"unknown rule {args.code!r} (see `autograd-lint rules`)")
    out.write(rule_page(rule))
    return EXIT_CLEAN


def run_record(args: argparse.Namespace, err: TextIO) -> int:
    """Run the command with every Function's calls recorded; its exit status."""
    from ..dynamic.recording import RecordingError, default_path, record_command

    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not command:
        raise ConfigError("record needs a command to run: autograd-lint record -- pytest tests/")
    output = Path(args.output) if args.output else default_path(os.getcwd())
    try:
        status, summary = record_command(command, output)
    except RecordingError as exc:
        raise ConfigError(str(exc)) from None
    err.write(f"autograd-lint: {summary}\n")
    return status


def run_server() -> int:
    try:
        from ..integrations.lsp import serve
    except ImportError as exc:
        raise ConfigError(f"the language server needs pygls and lsprotocol ({exc.name} is "
                          "missing): install the lsp extra from your clone, "
                          "pip install './autograd-lint[lsp]', or from its git URL, "
                          "pip install 'autograd-lint[lsp] @ git+https://HOST/PATH/"
                          "autograd-lint.git@COMMIT_SHA'") from None
    serve()
    return EXIT_CLEAN


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None, *, keep: list[object] | None = None) -> int:
    """Run a command; returns the exit status.

    keep: when given, the run's syntax trees are appended to it instead of
    being freed (see `run`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # `autograd-lint src/` means `autograd-lint check src/`.
    if args_list and args_list[0] not in COMMANDS and not args_list[0].startswith("-"):
        args_list.insert(0, "check")
    out, err = sys.stdout, sys.stderr
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help(err)
            return EXIT_ERROR
        if args.command == "check":
            return run_check(args, out, err, keep)
        if args.command == "coverage":
            from .coverage import run_coverage

            return run_coverage(args, out, err)
        if args.command == "rules":
            return run_rules(args, out)
        if args.command == "server":
            return run_server()
        if args.command == "record":
            return run_record(args, err)
        return run_rule(args, out)
    except ConfigError as exc:
        err.write(f"autograd-lint: error: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.write("autograd-lint: interrupted\n")
        return 130
    except Terminated:
        _quiet_after_termination()
        err.write("autograd-lint: terminated\n")
        return EXIT_TERMINATED
    except BrokenPipeError:
        # `autograd-lint check | head`: stop quietly, as git does (`run`
        # then dies by SIGPIPE, which shells expect of a closed pipe).
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if _while_terminating(exc):  # a pool's shutdown failing as SIGTERM unwound it
            _quiet_after_termination()
            err.write("autograd-lint: terminated\n")
            return EXIT_TERMINATED
        if os.environ.get("AUTOGRAD_LINT_DEBUG"):
            raise
        err.write(f"autograd-lint: internal error: {type(exc).__name__}: {exc} "
                  "(set AUTOGRAD_LINT_DEBUG=1 for a traceback)\n")
        return EXIT_ERROR


def run() -> NoReturn:
    """The console command: `main`, then exit at once. Freeing a large run's
    syntax trees one by one takes longer than the output needs (0.2 s on the
    torch tree); the operating system reclaims them all at exit, as mypy's
    command does."""
    import signal

    keep: list[object] = []
    # SIGTERM (`timeout`, CI cancellation) unwinds the run like Ctrl-C does,
    # so that workers are stopped and temporary files removed on the way out.
    catch = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if catch:
        signal.signal(signal.SIGTERM, _raise_terminated)
    code = main(keep=keep)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away before the last of it
            code = EXIT_BROKEN_PIPE if stream is sys.stdout else code
        except (OSError, ValueError):  # nothing more to say
            pass
    if catch and code == EXIT_TERMINATED:  # die by the signal, as shells expect
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
    if code == EXIT_BROKEN_PIPE and hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.raise_signal(signal.SIGPIPE)
    os._exit(code)


class Terminated(BaseException):
    """SIGTERM arrived (see `run`)."""



def _quiet_after_termination() -> None:
    """SIGTERM may land inside a library's constructor (multiprocessing's
    Finalize): the half-built object fails again when it is collected, which
    Python reports as "Exception ignored in ...". After "terminated", that
    is noise: the run is over."""
    sys.unraisablehook = lambda unraisable: None


def _while_terminating(exc: BaseException) -> bool:
    """Whether the error arose while a Terminated was being handled."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, Terminated):
            return True
        seen.add(id(current))
        current = current.__context__
    return False


def _raise_terminated(signum: int, frame: object) -> None:
    import signal

    from ..engine.lint import forking

    if forking():
        # The signal arrived inside an at-fork callback, which would swallow
        # the exception: raise it a moment later, in the run's own code.
        signal.signal(signal.SIGALRM, _raise_terminated)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    raise Terminated


if __name__ == "__main__":  # pragma: no cover
    run()
