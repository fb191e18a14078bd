"""The command line's grammar: commands, options, how their values are
checked, and the exit statuses (see cli.py for what each command does)."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from .. import __version__
from ..core.config import ConfigError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_TERMINATED = 128 + 15  # SIGTERM, as shells report it
EXIT_BROKEN_PIPE = 128 + 13  # SIGPIPE: the reader of stdout went away (`| head`)
COMMANDS = ("check", "coverage", "rules", "rule", "server", "record")


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
    _add_inputs(check)
    _add_selection(check)
    _add_output(check)
    _add_fixes(check)
    _add_dynamic(check)
    _add_coverage(commands)
    _add_other_commands(commands)
    return parser


def _add_inputs(check: argparse.ArgumentParser) -> None:
    """What to check: paths, exclusions, configuration, cache, workers."""
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or directories (default: .); `-` reads one file from stdin")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="with `-`: the path to show, and to find the configuration and "
                            "project by")
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
    check.add_argument("--target-torch", metavar="VERSION",
                       help="the oldest torch the project supports, e.g. 2.13 (default: the "
                            "target-torch setting, else the newest torch this release knows); "
                            "rules whose truth depends on the version read it")
    check.add_argument("--config", metavar="FILE",
                       help="use this pyproject.toml instead of searching for one")
    check.add_argument("--isolated", action="store_true",
                       help="ignore every configuration file")
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


def _add_selection(check: argparse.ArgumentParser) -> None:
    """Which rules run."""
    check.add_argument("--select", type=_codes_arg, action="append", metavar="CODES",
                       help="rules to enable: codes, prefixes (AGF0) or ALL; replaces the default")
    check.add_argument("--extend-select", type=_codes_arg, action="append", metavar="CODES",
                       help="rules to enable on top of the selection")
    check.add_argument("--ignore", type=_codes_arg, action="append", metavar="CODES",
                       help="rules to disable")


def _add_output(check: argparse.ArgumentParser) -> None:
    """What is printed, and the exit status."""
    check.add_argument("--format", "--output-format", dest="format", default="text",
                       choices=("text", "full", "concise", "json", "json-lines", "sarif",
                                "github", "gitlab", "junit", "pylint"),
                       help="output format: full (source line, caret, help), concise (one "
                            "line per finding), text (full on a terminal, else concise), "
                            "json, json-lines (one JSON object per line), sarif (SARIF "
                            "2.1.0 for code scanning), github (workflow annotations), gitlab "
                            "(Code Quality), junit (JUnit XML) or pylint (path:line: [CODE] "
                            "message); default: text")
    check.add_argument("-o", "--output-file", metavar="FILE",
                       help="write the report to FILE instead of standard output")
    check.add_argument("-w", "--watch", action="store_true",
                       help="check again whenever a file under the paths changes (Ctrl-C "
                            "stops)")
    check.add_argument("--show-files", action="store_true",
                       help="list the files the run would check, and exit")
    check.add_argument("--show-settings", action="store_true",
                       help="print the configuration and rules that apply to each path, "
                            "and exit")
    check.add_argument("--statistics", action="store_true",
                       help="print a count per rule instead of the findings ([*]: all "
                            "fixable with --fix, [-]: some)")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="print findings only, no summary line")
    check.add_argument("--exit-zero", action="store_true",
                       help="exit 0 even when there are findings (2 still means an error)")
    check.add_argument("--baseline", metavar="FILE",
                       help="report only findings not recorded in this baseline")
    check.add_argument("--write-baseline", metavar="FILE",
                       help="record the current findings in FILE and exit 0")


def _add_fixes(check: argparse.ArgumentParser) -> None:
    check.add_argument("--fix", action="store_true",
                       help="apply safe fixes to the files, then report what remains")
    check.add_argument("--exit-non-zero-on-fix", action="store_true",
                       help="with --fix, exit 1 when a file was fixed, even if no finding "
                            "remains")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff, apply unsafe fixes too")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff instead of writing them "
                            "(exit 1 when there is something to fix)")
    check.add_argument("--add-noqa", action="store_true",
                       help="write `# noqa: CODE` on the line of each finding (merged with "
                            "the line's noqa comment), then exit 0")


def _add_dynamic(check: argparse.ArgumentParser) -> None:
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


def _add_coverage(commands: Any) -> None:
    """`coverage`: which Functions and ops have their gradients checked."""
    coverage = commands.add_parser(
        "coverage", help="report which Functions and ops have their gradients checked",
        description="A row per Function and custom op with how its gradients are checked "
                    "(gradcheck, opcheck, a reference test ...) or `none`, and a summary, "
                    "as coverage.py reports lines.")
    _add_inputs(coverage)
    coverage.add_argument("--format", choices=("text", "json"), default="text")
    coverage.add_argument("-o", "--output-file", metavar="FILE",
                          help="write the report to FILE instead of stdout")
    coverage.add_argument("--fail-under", type=_number_arg(float, 0, "a percentage"),
                          metavar="PCT", help="exit 1 when fewer than PCT%% are checked")
    coverage.add_argument("--show-missing", action=argparse.BooleanOptionalAction, default=True,
                          help="list the rows checked by nothing (default: on)")
    coverage.add_argument("--write-tests", metavar="FILE",
                          help="write a pytest test for each Function and op checked by "
                               "nothing (runs your code to find inputs: needs the dynamic "
                               "extra)")
    coverage.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu",
                          help="where the written tests run (default: cpu)")
    coverage.add_argument("--timeout", type=_seconds_arg, default=60.0, metavar="SECONDS",
                          help="per Function, to find its inputs (default: 60)")
    # What a check run's configuration reading expects (coverage selects AGF301 itself).
    coverage.set_defaults(select=None, extend_select=[], ignore=[], fix=False, add_noqa=False,
                          dynamic=False, no_project_context=True)


def _add_other_commands(commands: Any) -> None:
    """`rules`, `rule`, `record` and `server`."""
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
