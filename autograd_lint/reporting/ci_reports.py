"""Reports that CI systems read, beside SARIF and GitHub's annotations
(output.py): GitLab's Code Quality JSON, JUnit XML, pylint's parseable
one-line format and JSON Lines. Shapes follow ruff's formats of the same
names, so a pipeline set up for ruff reads ours unchanged; columns are
1-based characters as those consumers count them, and a notebook's lines
count within their cell (output.cell_line), the cell named beside them.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ..core.findings import Finding
    from ..core.lines import SourceLines

# GitLab's Code Quality severities: info, minor, major, critical, blocker.
_GITLAB_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def render_json_lines(findings: list[Finding], lines: SourceLines, stream: TextIO, *,
                      dynamic: bool = False) -> None:
    """One JSON object per line: the objects of `--format json`."""
    from .output import json_findings

    for data in json_findings(findings, lines, dynamic=dynamic):
        stream.write(json.dumps(data, separators=(",", ":")) + "\n")


def render_pylint(findings: list[Finding], lines: SourceLines, stream: TextIO) -> None:
    """`path:line: [CODE] message`, the parseable format editors and CI
    problem matchers know from pylint (`path:cell 2:5: ...` in a notebook)."""
    from .output import line_label

    for f in findings:
        stream.write(f"{f.path}:{line_label(lines, f.path, f.line)}: [{f.code}] {f.message}\n")


def render_gitlab(findings: list[Finding], lines: SourceLines, stream: TextIO) -> None:
    """A GitLab Code Quality report (artifacts: reports: codequality). Paths
    are relative to the project GitLab checked out (CI_PROJECT_DIR), else to
    the working directory; fingerprints are the baseline's: stable while the
    finding's line moves."""
    from .baseline import fingerprints

    root = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    issues = []
    for f, fingerprint in zip(findings, fingerprints(findings, lines, root), strict=True):
        begin = _position(lines, f.path, f.line, f.column)
        end = begin if f.end_line is None or f.end_column is None else \
            _position(lines, f.path, f.end_line, f.end_column)
        cell = begin.pop("cell", None)
        end.pop("cell", None)
        issues.append({
            "check_name": f.code,
            "description": f"{f.code}: {f.message}" + (f" (cell {cell})" if cell else ""),
            "severity": _GITLAB_SEVERITY[f.severity],
            "fingerprint": fingerprint,
            "location": {"path": _relative(f.path, root),
                         "positions": {"begin": begin, "end": end}},
        })
    json.dump(issues, stream, indent=2)
    stream.write("\n")


def render_junit(findings: list[Finding], lines: SourceLines, stream: TextIO) -> None:
    """JUnit XML: a test suite per file, a failed test case per finding (a
    single passing case when there is none, so the report is never empty)."""
    import xml.etree.ElementTree as ElementTree

    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_file[f.path].append(f)
    suites = ElementTree.Element("testsuites", name="autograd-lint", tests=str(len(findings)),
                                 failures=str(len(findings)), errors="0")
    if not findings:
        suite = ElementTree.SubElement(suites, "testsuite", name="autograd-lint", tests="1",
                                       failures="0", errors="0")
        ElementTree.SubElement(suite, "testcase", name="No findings", classname="autograd-lint")
    for path, found in by_file.items():
        suite = ElementTree.SubElement(suites, "testsuite", name=path, tests=str(len(found)),
                                       failures=str(len(found)), errors="0",
                                       package="autograd-lint")
        for f in found:
            at = _position(lines, f.path, f.line, f.column)
            case = ElementTree.SubElement(
                suite, "testcase", name=f"autograd-lint.{f.code}",
                classname=str(Path(path).with_suffix("")), line=str(at["line"]),
                column=str(at["column"]))
            properties = ElementTree.SubElement(case, "properties")
            ElementTree.SubElement(properties, "property", name="severity", value=f.severity)
            where = f"cell {at['cell']}, " if "cell" in at else ""
            if where:
                ElementTree.SubElement(properties, "property", name="cell", value=str(at["cell"]))
            failure = ElementTree.SubElement(case, "failure", message=f.message)
            failure.text = f"{where}line {at['line']}, col {at['column']}, {f.message}"
    ElementTree.indent(suites, space="    ")
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ElementTree.tostring(suites, encoding="unicode") + "\n")


def _position(lines: SourceLines, path: str, line: int, column: int) -> dict[str, int]:
    """{line, column} as shown (1-based characters; a notebook's line within
    its cell, with the cell)."""
    from .output import cell_line

    cell, shown = cell_line(lines, path, line)
    position = {"line": shown, "column": lines.character_column(path, line, column) + 1}
    return position if cell is None else {**position, "cell": cell}


def _relative(path: str, root: str) -> str:
    relative = os.path.relpath(os.path.abspath(path), root)
    return Path(path if relative.startswith("..") else relative).as_posix()
