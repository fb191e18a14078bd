"""Rendering findings: text (ruff-like lines), JSON, statistics, SARIF, GitHub."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from .findings import Finding
from .lines import SourceLines
from .registry import DOCS_URL, RULES


def render_text(findings: list[Finding], stream: TextIO) -> None:
    """`path:line:col: CODE [name] message`, the column 1-based as ruff and
    flake8 display it (so editors and terminals jump to the right place)."""
    for f in findings:
        stream.write(f"{f.path}:{f.line}:{f.column + 1}: {f.code} [{f.name}] {f.message}\n")


def summary_line(findings: list[Finding], files_checked: int, *,
                 fixed: int | None = None) -> str:
    if fixed:  # after --fix, as ruff words it
        total = fixed + len(findings)
        return (f"Found {total} finding{'s' if total != 1 else ''} "
                f"({fixed} fixed, {len(findings)} remaining).")
    if not findings:
        files = f"{files_checked} file{'s' if files_checked != 1 else ''}"
        return f"All checks passed! ({files} checked)"
    severities = Counter(f.severity for f in findings)
    parts = [f"{severities[s]} {s}{'s' if severities[s] != 1 else ''}"
             for s in ("error", "warning", "info") if severities[s]]
    files = len({f.path for f in findings})
    return (f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} "
            f"({', '.join(parts)}) in {files} file{'s' if files != 1 else ''}.")


def fix_hint(findings: list[Finding], *, unsafe: bool) -> str | None:
    """`[*] 2 fixable with --fix (1 more with --unsafe-fixes).`"""
    safe = sum(1 for f in findings if f.fix is not None and f.fix.safe)
    risky = sum(1 for f in findings if f.fix is not None and not f.fix.safe)
    if unsafe:
        safe, risky = safe + risky, 0
    if not safe and not risky:
        return None
    more = f" ({risky} more with `--fix --unsafe-fixes`)" if risky else ""
    flag = "`--fix --unsafe-fixes`" if unsafe else "`--fix`"
    if not safe:
        return f"[*] {risky} fixable with `--fix --unsafe-fixes`."
    return f"[*] {safe} fixable with {flag}{more}."


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


# ---------------------------------------------------------------------------
# CI formats
# ---------------------------------------------------------------------------
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def sarif_log(findings: list[Finding], lines: SourceLines) -> dict[str, object]:
    """A SARIF 2.1.0 log: every rule in the driver's table (so code scanning
    shows names, help and severity), one result per finding."""
    from . import __version__
    from .baseline import fingerprints
    from .docs import rule_page
    from .registry import all_rules

    rules = list(all_rules())
    index = {rule.code: i for i, rule in enumerate(rules)}
    driver = {
        "name": "autograd-lint",
        "version": __version__,
        "informationUri": DOCS_URL,
        "rules": [{
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "helpUri": rule.url,
            "help": {"text": rule.summary, "markdown": rule_page(rule)},
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity],
                                     "enabled": rule.default},
            "properties": {"tags": [rule.family], "fix": rule.fix or "none"},
        } for rule in rules],
    }
    prints = fingerprints(findings, lines, os.getcwd())
    results = []
    for finding, fingerprint in zip(findings, prints, strict=True):
        region: dict[str, int] = {
            "startLine": finding.line,
            "startColumn": lines.utf16_column(finding.path, finding.line, finding.column) + 1,
        }
        if finding.end_line is not None and finding.end_column is not None:
            region["endLine"] = finding.end_line
            region["endColumn"] = lines.utf16_column(finding.path, finding.end_line,
                                                     finding.end_column) + 1
        results.append({
            "ruleId": finding.code,
            "ruleIndex": index[finding.code],
            "level": _SARIF_LEVEL[finding.severity],
            "message": {"text": finding.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(finding.path),
                "region": region,
            }}],
            "partialFingerprints": {"autogradLint/v1": fingerprint},
        })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
            "columnKind": "utf16CodeUnits",
            "results": results,
        }],
    }


def _artifact(path: str) -> dict[str, str]:
    if os.path.isabs(path):
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(Path(path).as_posix()), "uriBaseId": "%SRCROOT%"}


def render_sarif(findings: list[Finding], lines: SourceLines, stream: TextIO) -> None:
    import json

    json.dump(sarif_log(findings, lines), stream, indent=2)
    stream.write("\n")


def render_github(findings: list[Finding], lines: SourceLines, stream: TextIO) -> None:
    """GitHub Actions workflow commands: one annotation per finding."""
    for f in findings:
        props = [f"file={_escape_property(f.path)}", f"line={f.line}",
                 f"col={lines.character_column(f.path, f.line, f.column) + 1}"]
        if f.end_line is not None and f.end_column is not None:
            props += [f"endLine={f.end_line}",
                      f"endColumn={lines.character_column(f.path, f.end_line, f.end_column) + 1}"]
        props.append(f"title={_escape_property(f'{f.code} ({f.name})')}")
        stream.write(f"::{_GITHUB_LEVEL[f.severity]} {','.join(props)}::"
                     f"{_escape_data(f'{f.code} {f.message}')}\n")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
