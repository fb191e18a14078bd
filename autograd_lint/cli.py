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
import gc
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from . import __version__
from .config import (
    ConfigError,
    ConfigFinder,
    FileConfig,
    Selection,
    drop_matching,
    load_config_file,
    matches_any,
    resolve_codes,
    validate_selector,
)

if TYPE_CHECKING:  # the engine loads only when a check runs
    import tempfile

    from .engine import LintResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
COMMANDS = ("check", "rules", "rule", "server", "record")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} (see `{self.prog} --help`)")


def _codes_arg(text: str) -> list[str]:
    return [part for part in text.replace(" ", ",").split(",") if part]


def _number_arg(kind: type[int] | type[float], lowest: float, expected: str, *,
                strict: bool = False) -> Callable[[str], float]:
    """An argparse type: `kind(text)` at least `lowest` (above it when strict)."""
    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not (value > lowest if strict else value >= lowest):  # NaN too
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value
    return convert


_jobs_arg = _number_arg(int, 1, "a positive number of jobs")
_seconds_arg = _number_arg(float, 0, "a positive number of seconds", strict=True)
_megabytes_arg = _number_arg(int, 0, "megabytes (0: no limit)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="autograd-lint",
                     description="Find bugs in custom torch.autograd.Function classes.")
    parser.add_argument("--version", action="version", version=f"autograd-lint {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = commands.add_parser("check", help="lint files and directories",
                                description="Lint Python files for autograd.Function bugs.")
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or directories (default: .); `-` reads one file from stdin")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="with `-`: the path to show, and to find the configuration and "
                            "project by")
    check.add_argument("--format", "--output-format", dest="format", default="text",
                       choices=("text", "full", "concise", "json", "sarif", "github"),
                       help="output format: full (source line, caret, help), concise (one "
                            "line per finding), text (full on a terminal, else concise), "
                            "json, sarif (SARIF 2.1.0 for code scanning) or github "
                            "(workflow annotations); default: text")
    check.add_argument("--select", type=_codes_arg, action="append", metavar="CODES",
                       help="rules to enable: codes, prefixes (AGF0) or ALL; replaces the default")
    check.add_argument("--extend-select", type=_codes_arg, action="append", metavar="CODES",
                       help="rules to enable on top of the selection")
    check.add_argument("--ignore", type=_codes_arg, action="append", metavar="CODES",
                       help="rules to disable")
    check.add_argument("--exclude", type=_codes_arg, action="append", metavar="GLOBS",
                       help="paths to skip (replaces the configured exclude)")
    check.add_argument("--extend-exclude", type=_codes_arg, action="append", metavar="GLOBS",
                       help="paths to skip, on top of the configured ones")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclusions to files named on the command line too")
    check.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction,
                       help="skip what git ignores (.gitignore files, .git/info/exclude) "
                            "in directory scans (default: the respect-gitignore setting, "
                            "true); files named on the command line are checked anyway")
    check.add_argument("--config", metavar="FILE",
                       help="use this pyproject.toml instead of searching for one")
    check.add_argument("--isolated", action="store_true",
                       help="ignore every configuration file")
    check.add_argument("--statistics", action="store_true",
                       help="print a count per rule instead of the findings")
    check.add_argument("--no-cache", action="store_true",
                       help="do not read or write the cache (.autograd_lint_cache/)")
    check.add_argument("--cache-dir", metavar="DIR",
                       help="where to keep the cache (default: .autograd_lint_cache/ in the "
                            "project root; also AUTOGRAD_LINT_CACHE_DIR)")
    check.add_argument("--no-prefilter", action="store_true",
                       help="parse every file whole instead of only those that can matter "
                            "(slower; the findings are the same)")
    check.add_argument("--no-project-context", action="store_true",
                       help="when files are named, do not read the rest of their project "
                            "for the Functions and bases they import (they are never "
                            "reported either way)")
    check.add_argument("--jobs", type=_jobs_arg, metavar="N",
                       help="worker processes for scanning and analysing large trees "
                            "(default: one per core; 1: all in this process)")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="print findings only, no summary line")
    check.add_argument("--exit-zero", action="store_true",
                       help="exit 0 even when there are findings (2 still means an error)")
    check.add_argument("--fix", action="store_true",
                       help="apply safe fixes to the files, then report what remains")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff, apply unsafe fixes too")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff instead of writing them "
                            "(exit 1 when there is something to fix)")
    dynamic = check.add_argument_group(
        "dynamic mode", "import each module that defines Functions in a child process and "
                        "run gradcheck and the AGD checks (needs torch)")
    dynamic.add_argument("--dynamic", action="store_true",
                         help="run the dynamic checks too (runs your code)")
    dynamic.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                         help="where to run them (auto: CUDA when available)")
    dynamic.add_argument("--timeout", type=_seconds_arg, default=60.0, metavar="SECONDS",
                         help="per Function (default: 60)")
    dynamic.add_argument("--memory-limit", type=_megabytes_arg, default=None, metavar="MB",
                         help="address space a CPU worker's checked code may add, beyond "
                              "torch's own (default: 8192; 0: no limit)")
    dynamic.add_argument("--recorded", metavar="FILE",
                         help="calls recorded from the project's tests (default: "
                              "recorded-calls.json in the cache directory, when there is one)")
    dynamic.add_argument("--no-triton-interpreter", action="store_true",
                         help="on a CPU, do not run Triton kernels through Triton's "
                              "interpreter")
    check.add_argument("--baseline", metavar="FILE",
                       help="report only findings not recorded in this baseline")
    check.add_argument("--write-baseline", metavar="FILE",
                       help="record the current findings in FILE and exit 0")

    rules = commands.add_parser("rules", help="list the rules")
    rules.add_argument("--format", choices=("text", "json"), default="text")

    rule = commands.add_parser("rule", help="explain a rule")
    rule.add_argument("code", help="a rule code (AGF001) or name (ctx-tensor-attribute)")

    record = commands.add_parser(
        "record", help="run a command and record the calls of every Function",
        description="Run COMMAND (your tests) with torch.autograd.Function.apply observed, "
                    "and record a few distinct calls of each Function for `check --dynamic`.")
    record.add_argument("--output", metavar="FILE",
                        help="where to write (default: recorded-calls.json in the cache "
                             "directory)")
    record.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                        help="the command to run, after `--`")

    commands.add_parser("server", help="run the language server (LSP over stdio)",
                        description="Editor diagnostics and quick fixes over the Language "
                                    "Server Protocol on stdin/stdout (needs pygls: from "
                                    "a clone, pip install './autograd-lint[lsp]').")
    return parser


def _flatten(groups: list[list[str]] | None) -> list[str]:
    return [item for group in groups or [] for item in group]


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------
class _Plan:
    """Configuration for each file of a `check` run."""

    def __init__(self, args: argparse.Namespace, err: TextIO) -> None:
        self.cwd = Path(os.getcwd())
        self.finder: ConfigFinder | None = None
        self.fixed: FileConfig | None = None
        if args.isolated:
            self.fixed = FileConfig(root=self.cwd)
        elif args.config:
            self.fixed = load_config_file(Path(args.config))
        else:
            self.finder = ConfigFinder(
                self.cwd, warn=lambda message: err.write(f"autograd-lint: warning: {message}\n"))
        select = _flatten(args.select) if args.select is not None else None
        self.cli = Selection(
            select=None if select is None else [validate_selector(s, "--select") for s in select],
            extend_select=[validate_selector(s, "--extend-select")
                           for s in _flatten(args.extend_select)],
            ignore=[validate_selector(s, "--ignore") for s in _flatten(args.ignore)],
        )
        self.exclude = _flatten(args.exclude) if args.exclude is not None else None
        self.extend_exclude = _flatten(args.extend_exclude)
        self.respect_gitignore: bool | None = args.respect_gitignore  # None: as configured
        self._codes: dict[tuple[int, frozenset[str]], frozenset[str]] = {}
        # The directory holding stdin's text, for `-`, and the file holding
        # it by the name shown (what the output reads).
        self.temporary: tempfile.TemporaryDirectory[str] | None = None
        self.shown_text: dict[str, str] = {}

    def config_for(self, path: str | Path, is_dir: bool | None = None) -> FileConfig:
        if self.fixed is not None:
            return self.fixed
        assert self.finder is not None
        return self.finder.for_path(path, is_dir=is_dir)

    def excluded(self, path: str | Path, is_dir: bool | None = None, *,
                 parents: bool = True) -> bool:
        config = self.config_for(path, is_dir)
        if self.exclude is not None:
            patterns = [*self.exclude, *config.extend_exclude, *self.extend_exclude]
            return bool(patterns) and matches_any(path, patterns, config.root, parents=parents)
        return config.is_excluded(path, self.extend_exclude, parents=parents)

    def walk_excluded(self, path: str, is_dir: bool) -> bool:
        """What a directory walk skips: the entry itself, not the folders the
        walk started from (`check examples/` lints what `examples` excludes)."""
        return self.excluded(path, is_dir, parents=False)

    def respects_gitignore(self, directory: str) -> bool:
        """Whether a scan of `directory` skips what git ignores (the command
        line, else the configuration that applies to it, as ruff reads it)."""
        if self.respect_gitignore is not None:
            return self.respect_gitignore
        return self.config_for(directory, is_dir=True).respect_gitignore

    def codes_for(self, path: str | Path) -> frozenset[str]:
        config = self.config_for(path, is_dir=False)
        ignored = frozenset(config.ignored_for(path))
        key = (id(config), ignored)
        if key not in self._codes:
            codes = resolve_codes([config.selection, self.cli])
            self._codes[key] = drop_matching(codes, ignored)
        return self._codes[key]


def _command_hint(raw_path: str) -> str:
    """`chek`: a mistyped command rather than a missing path (ruff suggests so too)."""
    import difflib

    close = difflib.get_close_matches(raw_path, COMMANDS, n=1, cutoff=0.6)
    return f" (did you mean the command `{close[0]}`?)" if close else ""


def _collect_inputs(args: argparse.Namespace, plan: _Plan) -> list:
    from .engine import SourceInput
    from .files import iter_python_files

    raw = args.paths or ["."]
    if "-" in raw:
        return _stdin_inputs(args, plan)
    if args.stdin_filename:
        raise ConfigError("--stdin-filename is for `-` (reading the file from stdin)")
    for raw_path in raw:
        if not os.path.exists(raw_path):
            raise ConfigError(f"path not found: {raw_path}{_command_hint(raw_path)}")
        if not os.path.isdir(raw_path) and not os.path.isfile(raw_path):
            # A FIFO or a device: reading it could wait forever.
            raise ConfigError(f"not a regular file or directory: {raw_path}")
    inputs: list[SourceInput] = []
    seen: set[str] = set()
    here = os.getcwd()

    def add(path: str, explicit: bool) -> None:
        key = os.path.normpath(os.path.join(here, path))  # one file named twice
        if key not in seen:
            seen.add(key)
            inputs.append(SourceInput(path, path, plan.codes_for(path), explicit))

    for raw_path in raw:
        path = os.fspath(Path(raw_path))  # as pathlib shows it: no "./" prefix
        if os.path.isdir(path):
            for found in iter_python_files(path, plan.walk_excluded,
                                           respect_gitignore=plan.respects_gitignore(path)):
                add(found, explicit=False)
        elif not (args.force_exclude and plan.excluded(path, False)):
            add(path, explicit=True)
    if inputs and all(i.explicit for i in inputs) and not args.no_project_context:
        from .context import context_inputs

        inputs += context_inputs(inputs, plan.excluded, seen)
    return inputs




def _stdin_inputs(args: argparse.Namespace, plan: _Plan) -> list:
    """`-`: the source comes from stdin, as ruff reads it, shown as
    --stdin-filename or `-`. It is checked under --stdin-filename's name (its
    module name, relative imports, configuration and project context are that
    file's), and kept in a temporary file (removed with the plan) that the
    output reads and the dynamic mode imports."""
    import tempfile

    from .engine import SourceInput

    if args.paths != ["-"]:
        raise ConfigError("`-` reads one file from stdin: name no other path with it")
    if args.fix:
        raise ConfigError("--fix cannot write back to stdin; use --diff, or name the file")
    shown = args.stdin_filename or "-"
    plan.temporary = tempfile.TemporaryDirectory(prefix="autograd-lint-stdin-")
    name = os.path.basename(args.stdin_filename or "") or "stdin.py"
    path = os.path.join(plan.temporary.name, name)
    text = sys.stdin.buffer.read()
    with open(path, "wb") as handle:
        handle.write(text)
    where = args.stdin_filename or os.path.join(os.getcwd(), "stdin.py")
    plan.shown_text = {shown: path}
    if args.stdin_filename and not args.dynamic:
        inputs = [SourceInput(where, shown, plan.codes_for(where), explicit=True, text=text)]
    else:  # the dynamic mode imports what it checks: the text, from its file
        inputs = [SourceInput(path, shown, plan.codes_for(where), explicit=True)]
    if args.stdin_filename and not args.no_project_context:
        from .context import context_inputs

        # The file on disk under that name is the old text: not context.
        seen = {os.path.normpath(os.path.abspath(args.stdin_filename))}
        inputs += context_inputs([SourceInput(where, shown, frozenset())], plan.excluded, seen)
    return inputs


MAX_FIX_ROUNDS = 10  # fixes that overlap go in over several rounds


def run_check(args: argparse.Namespace, out: TextIO, err: TextIO,
              keep: list[object] | None = None) -> int:
    plan = _Plan(args, err)
    try:
        return _check(args, plan, out, err, keep)
    finally:
        if plan.temporary is not None:
            plan.temporary.cleanup()


def _check(args: argparse.Namespace, plan: _Plan, out: TextIO, err: TextIO,
           keep: list[object] | None) -> int:
    from .engine import lint_inputs
    from .lines import SourceLines
    from .output import fix_hint, render_statistics, render_text, statistics, summary_line

    if args.baseline:
        from .baseline import read_baseline

        read_baseline(args.baseline)  # a bad baseline fails before the run, not after
    inputs = _collect_inputs(args, plan)
    paths = args.paths or ["."]
    scan_tree = any(os.path.isdir(p) for p in paths)
    cache = None
    if not args.no_cache and paths != ["-"]:  # stdin's text has no file to key it by
        from .cache import Cache

        cache = Cache(_cache_directory(args, plan))
    if keep is not None:
        gc.disable()  # the process ends right after: no collection is worth it
    result = lint_inputs(inputs, scan_tree=scan_tree, prefilter=not args.no_prefilter,
                         jobs=args.jobs, cache=cache, keep=keep, functions=args.dynamic)
    paths = {i.display: i.path for i in inputs} | plan.shown_text
    if args.diff:
        return _show_diff(args, result, paths, out, err)
    fixed = 0
    if args.fix:
        from .files import fix_destination, fix_roots, write_atomically
        from .fixes import plan_changes

        roots = fix_roots(args.paths or ["."])
        refused: set[str] = set()  # links leading outside: warned about once, never written
        for _ in range(MAX_FIX_ROUNDS):
            changes = [change for change in plan_changes(
                result.findings, unsafe=args.unsafe_fixes, paths=paths)
                if change.path not in refused]
            written = False
            for change in changes:
                # Through a symlink: write the file it leads to (the link stays
                # a link), and only inside the scanned roots and project.
                destination = fix_destination(change.path, roots)
                if destination is None:
                    refused.add(change.path)
                    err.write(f"autograd-lint: warning: {change.display}: not fixed: it is "
                              f"a symlink to {os.path.realpath(change.path)}, outside the "
                              "checked folders and project\n")
                    continue
                write_atomically(destination, change.encoded())
                fixed += len(change.applied)
                written = True
            if not written:
                break
            # Check again: what remains, and fixes that waited for an overlapping one.
            result = lint_inputs(inputs, scan_tree=scan_tree, prefilter=not args.no_prefilter,
                                 jobs=args.jobs, cache=None, keep=keep, functions=args.dynamic)
    findings = result.findings
    if args.dynamic:
        findings = _run_dynamic(args, result, plan, err)
    lines = SourceLines(paths)
    if args.write_baseline:
        from .baseline import write_baseline

        write_baseline(args.write_baseline, findings, lines)
        for path, message in result.errors:
            err.write(f"autograd-lint: error: {path}: {message}\n")
        err.write(f"autograd-lint: wrote {len(findings)} finding"
                  f"{'' if len(findings) == 1 else 's'} to {args.write_baseline}\n")
        return EXIT_ERROR if result.errors else EXIT_CLEAN
    hidden = 0
    if args.baseline:
        from .baseline import new_findings

        kept = new_findings(args.baseline, findings, lines)
        hidden, findings = len(findings) - len(kept), kept
    if args.format == "sarif":
        from .output import render_sarif

        render_sarif(findings, lines, out)
    elif args.format == "github":
        from .output import render_github

        render_github(findings, lines, out)
    elif args.format == "json":
        import json

        if args.statistics:
            json.dump(statistics(findings), out, indent=2)
        else:
            from .output import json_findings

            json.dump(json_findings(findings, lines, dynamic=args.dynamic), out, indent=2)
        out.write("\n")
    elif args.statistics:
        render_statistics(findings, out)
    else:
        from .output import text_style

        render_text(findings, out, lines, text_style(args.format, out))
        if not args.quiet:
            out.write(summary_line(findings, result.files_checked, fixed=fixed if args.fix
                                   else None) + "\n")
            if args.baseline:
                out.write(f"{hidden} finding{'' if hidden == 1 else 's'} hidden by the "
                          f"baseline {args.baseline}.\n")
            hint = fix_hint(findings, unsafe=args.unsafe_fixes)
            if hint:
                out.write(hint + "\n")
    for path, message in result.errors:
        err.write(f"autograd-lint: error: {path}: {message}\n")
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def _cache_directory(args: argparse.Namespace, plan: _Plan) -> Path:
    """--cache-dir, else AUTOGRAD_LINT_CACHE_DIR, else the project's root
    (where its configuration lives, else the directory run in)."""
    from .cache import cache_directory

    return cache_directory(plan.config_for(Path((args.paths or ["."])[0])).root, args.cache_dir)


def _run_dynamic(args: argparse.Namespace, result: LintResult, plan: _Plan,
                 err: TextIO) -> list:
    """Run the dynamic checks on the Functions found; static findings they
    cover get `confirmed`."""
    from .dynamic.recording import RECORDING_FILE, RecordingError, read_recording
    from .dynamic.runner import DEFAULT_MEMORY_LIMIT_MB, DynamicOptions, confirm, run_dynamic
    from .findings import sort_findings

    memory = DEFAULT_MEMORY_LIMIT_MB if args.memory_limit is None else args.memory_limit
    try:
        recording = read_recording(args.recorded) if args.recorded else read_recording(
            _cache_directory(args, plan) / RECORDING_FILE, strict=False)
    except RecordingError as exc:
        raise ConfigError(str(exc)) from None
    options = DynamicOptions(
        device=args.device, timeout=args.timeout, jobs=args.jobs or os.cpu_count() or 1,
        memory_limit_mb=memory or None,
        progress=args.format in ("text", "full", "concise") and err.isatty(),
        triton_interpreter=not args.no_triton_interpreter, recording=recording or None)
    dynamic = run_dynamic(result.functions, plan.codes_for, options, err)
    static = confirm(result.findings, dynamic)
    return sort_findings(static + dynamic.findings)


def _show_diff(args: argparse.Namespace, result: LintResult, paths: dict[str, str],
               out: TextIO, err: TextIO) -> int:
    """--diff: the first round of fixes as a unified diff; nothing is written."""
    from .fixes import plan_changes, unified_diff

    changes = plan_changes(result.findings, unsafe=args.unsafe_fixes,
                           paths=paths)
    for change in changes:
        out.write(unified_diff(change))
    count = sum(len(change.applied) for change in changes)
    for path, message in result.errors:
        err.write(f"autograd-lint: error: {path}: {message}\n")
    if not args.quiet:
        from .output import fix_counts

        unsafe = 0 if args.unsafe_fixes else fix_counts(result.findings)[1]
        more = f" ({unsafe} more with `--unsafe-fixes`)" if unsafe else ""
        if count:
            err.write(f"Would fix {count} finding{'' if count == 1 else 's'}{more}.\n")
        elif unsafe:
            err.write(f"No safe fixes available ({unsafe} with `--diff --unsafe-fixes`).\n")
        else:
            err.write("No fixes available.\n")
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if count and not args.exit_zero else EXIT_CLEAN


# ---------------------------------------------------------------------------
# rules / rule
# ---------------------------------------------------------------------------
def run_rules(args: argparse.Namespace, out: TextIO) -> int:
    from .registry import all_rules

    rows = list(all_rules())
    if args.format == "json":
        import json

        json.dump([{"code": r.code, "name": r.name, "severity": r.severity,
                    "default": r.default, "summary": r.summary} for r in rows], out, indent=2)
        out.write("\n")
        return EXIT_CLEAN
    width = max(len(r.name) for r in rows)
    for r in rows:
        state = "" if r.default else "  (off by default)"
        out.write(f"{r.code}  {r.name:<{width}}  {r.severity:<7}  {r.summary}{state}\n")
    return EXIT_CLEAN


def run_rule(args: argparse.Namespace, out: TextIO) -> int:
    from .docs import rule_page
    from .registry import lookup

    rule = lookup(args.code)
    if rule is None:
        raise ConfigError(f"unknown rule {args.code!r} (see `autograd-lint rules`)")
    out.write(rule_page(rule))
    return EXIT_CLEAN


def run_record(args: argparse.Namespace, err: TextIO) -> int:
    """Run the command with every Function's calls recorded; its exit status."""
    from .dynamic.recording import RecordingError, default_path, record_command

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
        from .lsp import serve
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
        err.write("autograd-lint: terminated\n")
        return EXIT_TERMINATED
    except BrokenPipeError:
        # `autograd-lint check | head`: stop quietly.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return EXIT_ERROR
    except Exception as exc:
        if _while_terminating(exc):  # a pool's shutdown failing as SIGTERM unwound it
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
        except (OSError, ValueError):  # a closed pipe: nothing more to say
            pass
    if catch and code == EXIT_TERMINATED:  # die by the signal, as shells expect
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
    os._exit(code)


class Terminated(BaseException):
    """SIGTERM arrived (see `run`)."""


EXIT_TERMINATED = 128 + 15


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

    from .engine import forking

    if forking():
        # The signal arrived inside an at-fork callback, which would swallow
        # the exception: raise it a moment later, in the run's own code.
        signal.signal(signal.SIGALRM, _raise_terminated)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    raise Terminated


if __name__ == "__main__":  # pragma: no cover
    run()
