"""The static engine: parse files, find Functions project-wide, run checkers.

Phase 1 parses every file into a module model (imports, classes); a file that
does not parse becomes an AGF000 finding. Phase 2 decides which classes are
Functions across all modules (a Function may derive from one defined in
another file), then runs each rule family over each module. An internal error
in one file is recorded for that file and the run goes on.

Nothing here imports torch or the code being checked.
"""
from __future__ import annotations

import ast
import gc
import io
import sys
from contextlib import contextmanager
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from .analysis.function_facts import FunctionFacts
from .findings import Finding, sort_findings
from .model import ModuleInfo, build_module, module_name_for
from .noqa import filter_findings
from .project import Project
from .registry import RULES, default_codes


_PYTHON = "{}.{}".format(*sys.version_info[:2])


@dataclass
class SourceInput:
    """One file to check: where it is, how to show it, which rules apply."""

    path: Path
    display: str
    codes: frozenset[str]


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    files_checked: int = 0


@dataclass
class ParsedFile:
    source: SourceInput
    text: str | None = None
    module: ModuleInfo | None = None
    findings: list[Finding] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------
def decode_source(data: bytes) -> str:
    """Decode like the interpreter does: BOM, then a coding cookie, then UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def syntax_finding(path: str, exc: BaseException) -> Finding:
    rule = RULES["AGF000"]
    line, column, end_line, end_column = 1, 0, None, None
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 1
        column = max((exc.offset or 1) - 1, 0)
        end_line = getattr(exc, "end_lineno", None)
        end_offset = getattr(exc, "end_offset", None)
        end_column = end_offset - 1 if end_offset and end_offset > 0 else None
        detail = f"{exc.msg or 'invalid syntax'} (parsed as Python {_PYTHON})"
    elif isinstance(exc, (UnicodeDecodeError, LookupError)):
        detail = f"cannot decode the file ({exc})"
    elif isinstance(exc, RecursionError):
        detail = "the code is nested too deeply for the parser"
    elif isinstance(exc, MemoryError):
        detail = "the file is too large to parse"
    else:
        detail = str(exc) or type(exc).__name__
    return Finding(path=path, line=line, column=column, end_line=end_line,
                   end_column=end_column, code="AGF000", name=rule.name,
                   severity=rule.severity, message=rule.format(detail=detail))


def parse_text(display: str, data: bytes | str) -> tuple[str | None, ast.Module | None,
                                                            Finding | None]:
    """(text, tree, None) or (text-or-None, None, AGF000 finding)."""
    text: str | None = None
    try:
        text = data if isinstance(data, str) else decode_source(data)
        tree = ast.parse(text, filename=display)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError,
            MemoryError) as exc:
        return text, None, syntax_finding(display, exc)
    return text, tree, None


# ---------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------
def check_module(module: ModuleInfo, project: Project, codes: frozenset[str]) -> list[Finding]:
    """Run every enabled rule family over one module."""
    from .checkers import CHECKERS, Reporter  # the rule families, loaded on first use

    reporter = Reporter(module.path, codes)
    checkers = [cls(reporter, project) for cls in CHECKERS if cls.codes() & codes]
    if not checkers:
        return []
    for fn in project.functions_in(module):
        facts = FunctionFacts(fn)
        for checker in checkers:
            try:
                checker.check_function(fn, facts)
            except RecursionError:
                # Pathologically deep expressions: say nothing rather than guess.
                continue
    for checker in checkers:
        checker.check_module(module)
    return reporter.findings


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during a batch run.

    Every parsed tree stays alive until the project is checked; with the
    collector on, its repeated scans of millions of (acyclic) AST nodes cost
    more than the parsing itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def lint_inputs(inputs: Iterable[SourceInput], *, scan_tree: bool = False) -> LintResult:
    """Check files as one project (Functions may cross files).

    scan_tree: the files are a whole tree (directories were given), so
    project-level rules (AGF301) apply."""
    with _gc_paused():
        return _lint_inputs(inputs, scan_tree)


def _lint_inputs(inputs: Iterable[SourceInput], scan_tree: bool) -> LintResult:
    result = LintResult()
    parsed: list[ParsedFile] = []
    for source in inputs:
        result.files_checked += 1
        entry = ParsedFile(source)
        try:
            data = source.path.read_bytes()
        except OSError as exc:
            result.errors.append((source.display, f"cannot read file: {exc.strerror or exc}"))
            continue
        try:
            entry.text, tree, syntax = parse_text(source.display, data)
            if syntax is not None:
                if "AGF000" in source.codes:
                    entry.findings.append(syntax)
            elif tree is not None:
                entry.module = _module(source.display, str(source.path), tree, entry.text)
        except Exception as exc:  # noqa: BLE001 - isolate one file's failure
            result.errors.append((source.display, _describe(exc)))
            continue
        parsed.append(entry)

    project = Project([p.module for p in parsed if p.module is not None], scan_tree=scan_tree)
    for entry in parsed:
        findings = entry.findings
        if entry.module is not None:
            try:
                checked = check_module(entry.module, project, entry.source.codes)
            except Exception as exc:  # noqa: BLE001 - isolate one file's failure
                result.errors.append((entry.source.display, _describe(exc)))
                checked = []
            findings = findings + filter_findings(checked, entry.text)
        result.findings.extend(findings)
    result.findings = sort_findings(result.findings)
    return result


def lint_source(source: str | bytes, path: str = "<string>",
                codes: Iterable[str] | None = None) -> list[Finding]:
    """Check one module given as text (tests, editors, flake8/pylint adapters)."""
    enabled = frozenset(codes) if codes is not None else default_codes()
    text, tree, syntax = parse_text(path, source)
    if syntax is not None:
        return [syntax] if "AGF000" in enabled else []
    assert tree is not None
    module = _module(path, path, tree, text)
    findings = check_module(module, Project([module]), enabled)
    return sort_findings(filter_findings(findings, text))


def _module(display: str, fs_path: str, tree: ast.Module, text: str | None) -> ModuleInfo:
    name, is_package = module_name_for(fs_path) if fs_path.endswith(".py") else ("__main__", False)
    return build_module(display, name, is_package, tree, text or "")


def _describe(exc: BaseException) -> str:
    return f"internal error: {type(exc).__name__}: {exc}"
