"""`autograd-lint coverage`: which Functions and custom ops have their
gradients checked, and how (RULES.md, "The coverage report").

The question AGF301 asks, as coverage.py reports it: one row per Function
and op, with the check that covers it (a gradcheck, gradgradcheck or opcheck
call, a reference test, an in-module check, at file:line), a reason it needs
none (a deliberate gradient, no differentiable output), or "none"; a summary
line; `--fail-under PCT` for CI. The search is AGF301's
(checkers/usage.py), run once over the tree.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TextIO

from .arguments import EXIT_CLEAN, EXIT_FINDINGS

if TYPE_CHECKING:
    from ..core.project import FunctionClass, Project
    from ..engine.run_io import FunctionTarget, LintResult

CHECKED, NONE, EXEMPT = "checked", "none", "exempt"


@dataclass(frozen=True)
class CoverageRow:
    """One Function or op of the tree and how its gradients are checked."""

    path: str
    line: int
    name: str
    kind: str  # "Function" | "op"
    status: str  # CHECKED | NONE | EXEMPT
    how: str  # "gradcheck at tests/test_ops.py:12", "deliberate gradient", "none"


def coverage_rows(result: LintResult, project: Project) -> list[CoverageRow]:
    """A row per Function and op the run found, sorted by file and line."""
    from ..checkers.usage import gradchecked

    checks = _gradient_checks(project)
    exercised = gradchecked(project)
    classes = {(fn.module.path, fn.node.lineno): fn for module in project.modules
               for fn in project.functions_in(module)}
    rows = []
    for target in result.functions:
        if target.op is not None:
            rows.append(_op_row(target, project))
            continue
        fn = classes.get((target.display, target.line))
        rows.append(_function_row(target, fn, checks, exercised))
    return sorted(rows, key=lambda row: (row.path, row.line, row.name))


def _gradient_checks(project: Project) -> dict[tuple[str, str], Any]:
    """(file, class key) -> the check that covers it, where the search says
    how (`checkers.usage.gradient_checks`)."""
    from ..checkers import usage

    search = getattr(usage, "gradient_checks", None)
    return search(project) if search is not None else {}


def _function_row(target: FunctionTarget, fn: FunctionClass | None,
                  checks: dict[tuple[str, str], Any],
                  exercised: set[tuple[str, str]]) -> CoverageRow:
    def row(status: str, how: str) -> CoverageRow:
        return CoverageRow(target.display, target.line, target.qualname, "Function", status, how)

    key = (fn.module.path, fn.info.key) if fn is not None else None
    check = checks.get(key) if key is not None else None
    if check is not None:
        return row(CHECKED, f"{check.kind} at {check.path}:{check.line}")
    if key is not None and key in exercised:
        return row(CHECKED, "checked")
    namesake = _namesake(fn, exercised)
    if namesake is not None:  # a backend's copy of a checked class (usage.GradcheckAnswer)
        return row(CHECKED, f"checked as its namesake in {namesake}")
    exemption = _exemption(fn)
    return row(EXEMPT, exemption) if exemption is not None else row(NONE, "none")


def _namesake(fn: FunctionClass | None, exercised: set[tuple[str, str]]) -> str | None:
    from ..checkers.usage import GradcheckAnswer

    if fn is None or fn.project is None:
        return None
    answer = GradcheckAnswer(exercised, fn.project.root_of)
    if not answer.covers(fn.module.path, fn.info.key, fn.name):
        return None
    return answer.checked_names.get((fn.project.root_of(fn.module.path), fn.name))


def _exemption(fn: FunctionClass | None) -> str | None:
    """Why a Function no check exercises needs none (AGF301's silences), or
    None: it is untested."""
    if fn is None or fn.project is None:
        return None
    from ..checkers.usage import needs_no_gradient_check

    return needs_no_gradient_check(fn, fn.project)


def _op_row(target: FunctionTarget, project: Project) -> CoverageRow:
    """An op is checked when an `opcheck` call of the tree names it (its
    Python name or `torch.ops.NS.NAME`)."""
    qualified = target.op or ""
    namespace, _, name = qualified.partition("::")
    spelled = {f"{namespace}.{name}", name, target.qualname}
    for module in project.modules:
        if "opcheck" not in module.source:
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call) and _called(node) == "opcheck" and node.args:
                text = ast.unparse(node.args[0])
                if any(text == s or text.endswith(f".{s}") or f"{s}." in text
                       for s in spelled if s):
                    return CoverageRow(target.display, target.line, qualified or target.qualname,
                                       "op", CHECKED, f"opcheck at {module.path}:{node.lineno}")
    if _without_gradient(target, project):
        return CoverageRow(target.display, target.line, qualified or target.qualname, "op",
                           EXEMPT, "no autograd registration (not differentiable)")
    return CoverageRow(target.display, target.line, qualified or target.qualname, "op", NONE,
                       "none")


def _without_gradient(target: FunctionTarget, project: Project) -> bool:
    """Whether the op is known to have no gradient to check: no autograd
    formula and no implementation autograd differentiates anywhere in its
    project (op_model.OpsIndex.has_no_gradient)."""
    from ..analysis.op_model import ops_index

    index = ops_index(project)
    ops = [op for op in index.ops if op.qualified == target.op and
           op.module.path == target.display and getattr(op.anchor, "lineno", None) == target.line]
    return bool(ops) and all(index.has_no_gradient(op, project.root_of(op.module.path))
                             for op in ops)


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------
def percent(rows: list[CoverageRow]) -> float:
    counted = [row for row in rows if row.status != EXEMPT]
    checked = sum(row.status == CHECKED for row in counted)
    return 100.0 * checked / len(counted) if counted else 100.0


def summary(rows: list[CoverageRow]) -> str:
    parts = []
    for kind, plural in (("Function", "Functions"), ("op", "ops")):
        counted = [r for r in rows if r.kind == kind and r.status != EXEMPT]
        if counted or kind == "Function":
            checked = sum(r.status == CHECKED for r in counted)
            parts.append(f"{checked} of {len(counted)} {plural}")
    return f"checked {', '.join(parts)} ({percent(rows):.0f}%)"


def render_text(rows: list[CoverageRow], out: TextIO, *, show_missing: bool) -> None:
    shown = rows if show_missing else [row for row in rows if row.status != NONE]
    if shown:
        where = max(len(f"{row.path}:{row.line}") for row in shown)
        name = max(len(row.name) for row in shown)
        for row in shown:
            out.write(f"{row.path + ':' + str(row.line):<{where}}  {row.name:<{name}}  "
                      f"{row.how}\n")
        out.write("\n")
    out.write(summary(rows) + "\n")


def render_json(rows: list[CoverageRow], out: TextIO) -> None:
    data = {"rows": [asdict(row) for row in rows], "summary": summary(rows),
            "percent": round(percent(rows), 2)}
    json.dump(data, out, indent=2)
    out.write("\n")


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------
def _write_tests(args: argparse.Namespace, result: LintResult, rows: list[CoverageRow],
                 recording: dict[str, Any] | None, err: TextIO) -> None:
    """--write-tests: a test for each row checked by nothing (dynamic/written_tests.py)."""
    from ..core.config import ConfigError
    from ..dynamic.written_tests import write_tests

    untested = {(row.path, row.line) for row in rows if row.status == NONE}
    targets = [t for t in result.functions if (t.display, t.line) in untested]
    try:
        written = write_tests(targets, args.write_tests, recording=recording,
                              device=args.device, timeout=args.timeout)
    except OSError as exc:
        raise ConfigError(f"cannot write --write-tests {args.write_tests}: "
                          f"{exc.strerror or exc}") from None
    err.write(f"autograd-lint: wrote {written.written + written.skipped} test"
              f"{'' if written.written + written.skipped == 1 else 's'} to {written.path} "
              f"({written.skipped} skipped: no inputs could be built)\n")


def _recording(args: argparse.Namespace, plan: Any) -> dict[str, Any] | None:
    """The calls `autograd-lint record` kept in the cache directory, if any:
    the written tests' inputs come from them first."""
    from ..dynamic.recording import RECORDING_FILE, read_recording
    from .check_command import _cache_directory

    if args.no_cache:
        return None
    return read_recording(_cache_directory(args, plan) / RECORDING_FILE, strict=False) or None


def run_coverage(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The report (to `-o FILE` when given, written as `check -o` writes)."""
    if not args.output_file:
        return _coverage(args, out, err)
    import io

    from .check_command import _write_output_file

    report = io.StringIO()
    code = _coverage(args, report, err)
    _write_output_file(args.output_file, report.getvalue())
    return code


def _coverage(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from dataclasses import replace

    from ..core.findings import shown_text
    from ..engine.lint import lint_inputs
    from .check_command import _collect_inputs, _Plan

    if args.write_tests:  # what this machine lacks: one error before any report
        from ..core.config import ConfigError
        from ..dynamic.environment import missing_for_dynamic

        missing = missing_for_dynamic(args.device, True)
        if missing is not None:
            raise ConfigError(missing.replace("--dynamic", "--write-tests"))
    plan = _Plan(args, err)
    # The file --write-tests writes is not a check of what it is written for:
    # a second run writes the same tests again, not an empty file.
    written = os.path.realpath(args.write_tests) if args.write_tests else None
    inputs = [replace(i, codes=frozenset({"AGF301"})) for i in _collect_inputs(args, plan)
              if os.path.realpath(i.path) != written]
    keep: list[object] = []
    # One process, no cache: the run's project answers how each is checked.
    result = lint_inputs(inputs, scan_tree=True, jobs=1, cache=None, keep=keep, functions=True)
    project = getattr(keep[0], "project", None) if keep else None
    rows = coverage_rows(result, project) if project is not None else []
    rows = [replace(row, path=shown_text(row.path), name=shown_text(row.name),
                    how=shown_text(row.how)) for row in rows]
    if args.format == "json":
        render_json(rows, out)
    else:
        render_text(rows, out, show_missing=args.show_missing)
    if args.write_tests:
        _write_tests(args, result, rows, _recording(args, plan), err)
    for path, message in result.errors:
        err.write(f"autograd-lint: error: {shown_text(path)}: {shown_text(message)}\n")
    if args.fail_under is not None and percent(rows) < args.fail_under:
        err.write(f"autograd-lint: coverage {percent(rows):.1f}% is below "
                  f"--fail-under {args.fail_under:g}%\n")
        return EXIT_FINDINGS
    return EXIT_CLEAN
