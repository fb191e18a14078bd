"""Rendering findings: text (ruff-like lines), JSON, statistics."""
from __future__ import annotations

from collections import Counter
from typing import TextIO

from .findings import Finding
from .registry import RULES


def render_text(findings: list[Finding], stream: TextIO) -> None:
    """`path:line:col: CODE [name] message`, the column 1-based as ruff and
    flake8 display it (so editors and terminals jump to the right place)."""
    for f in findings:
        stream.write(f"{f.path}:{f.line}:{f.column + 1}: {f.code} [{f.name}] {f.message}\n")


def summary_line(findings: list[Finding], files_checked: int) -> str:
    if not findings:
        files = f"{files_checked} file{'s' if files_checked != 1 else ''}"
        return f"All checks passed! ({files} checked)"
    severities = Counter(f.severity for f in findings)
    parts = [f"{severities[s]} {s}{'s' if severities[s] != 1 else ''}"
             for s in ("error", "warning", "info") if severities[s]]
    files = len({f.path for f in findings})
    return (f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} "
            f"({', '.join(parts)}) in {files} file{'s' if files != 1 else ''}.")


def statistics(findings: list[Finding]) -> list[dict[str, object]]:
    counts = Counter(f.code for f in findings)
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = RULES[code]
        rows.append({"code": code, "name": rule.name, "severity": rule.severity, "count": count})
    return rows


def render_statistics(findings: list[Finding], stream: TextIO) -> None:
    rows = statistics(findings)
    width = max((len(str(r["count"])) for r in rows), default=1)
    for row in rows:
        stream.write(f"{row['count']:>{width}}\t{row['code']}\t[{row['name']}]\n")
