"""Rendering findings: text (ruff-like lines), JSON, statistics, SARIF, GitHub."""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from ..core.findings import Finding, shown_source_line
from ..core.lines import SourceLines
from ..core.registry import RULES, Rule


@dataclass(frozen=True)
class TextStyle:
    """How text output looks: `full` (the source line, a caret under the
    finding, the advice and the rule page, as ruff's `full`) or `concise`
    (one line per finding); ANSI colour and OSC 8 links only for terminals."""

    full: bool = False
    color: bool = False
    links: bool = False


def text_style(name: str, stream: TextIO, environ: Mapping[str, str] = os.environ) -> TextStyle:
    """`text` picks `full` on a terminal and `concise` elsewhere (pipes, CI
    logs, editors reading lines). Colour on a terminal unless NO_COLOR is set;
    FORCE_COLOR forces it (the conventions of no-color.org and force-color.org)."""
    terminal = stream.isatty()
    color = terminal and not environ.get("NO_COLOR")
    if environ.get("FORCE_COLOR"):
        color = True
    full = name == "full" or (name == "text" and terminal)
    # Hyperlinks where a terminal is known to show them (others print the URL).
    links = color and terminal and bool(environ.get("WT_SESSION") or environ.get("VTE_VERSION")
                                        or environ.get("TERM_PROGRAM") in _LINKING_TERMINALS
                                        or environ.get("TERM") in ("xterm-kitty", "wezterm"))
    return TextStyle(full=full, color=color, links=links)


_LINKING_TERMINALS = frozenset({"iTerm.app", "WezTerm", "vscode", "ghostty", "Hyper"})
_BOLD, _RED, _YELLOW, _CYAN, _BLUE, _RESET = (
    "\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[34m", "\x1b[0m")
_SEVERITY_COLOR = {"error": _RED, "warning": _YELLOW, "info": _CYAN}


def cell_line(lines: SourceLines, path: str, line: int) -> tuple[int | None, int]:
    """Where a line of a finding is shown: in a notebook, its cell (from 1)
    and its line in that cell, as ruff shows them; elsewhere (None, line).
    Every output shows lines through this."""
    position = lines.cell_of(path, line)
    return (None, line) if position is None else position


def line_label(lines: SourceLines, path: str, line: int) -> str:
    """`12`, or `cell 2:5` in a notebook (ruff's `nb.ipynb:cell 2:5:9`)."""
    cell, shown = cell_line(lines, path, line)
    return str(shown) if cell is None else f"cell {cell}:{shown}"


_OPENING, _CLOSING = "([{", ")]}"


def split_message(message: str) -> tuple[str, str | None]:
    """A message's finding and its advice: `...cycle (a leak); save it with
    ...`, split at the first `; ` outside brackets and quoted code (a `; `
    in `(...)` or in a quoted `a; b` belongs to the finding)."""
    depth, quoted = 0, False
    for index, char in enumerate(message):
        if char == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth = max(depth - 1, 0)
        elif char == ";" and depth == 0 and message.startswith("; ", index):
            advice = message[index + 2:]
            return (message[:index], advice) if advice else (message, None)
    return message, None


def render_text(findings: list[Finding], stream: TextIO, lines: SourceLines | None = None,
                style: TextStyle = TextStyle()) -> None:
    """`path:line:col: CODE [*] [name] message` per finding, the column
    1-based and counted in characters as ruff and flake8 show it (so editors
    and terminals jump to the right place); `[*]`: a safe fix exists. The
    concise style shows what is wrong; the full style adds the source line, a
    caret, the advice and the rule page."""
    lines = lines if lines is not None else SourceLines()

    def paint(text: str, *codes: str) -> str:
        return "".join(codes) + text + _RESET if style.color else text

    for f in findings:
        column = lines.character_column(f.path, f.line, f.column)
        fixable = " [*]" if f.fix is not None and f.fix.safe else ""
        code = paint(f.code, _BOLD, _SEVERITY_COLOR.get(f.severity, ""))
        if style.links:
            code = f"\x1b]8;;{RULES[f.code].url}\x1b\\{code}\x1b]8;;\x1b\\"
        where = paint(f"{f.path}:{line_label(lines, f.path, f.line)}:{column + 1}:", _BOLD)
        head, advice = split_message(f.message)
        if not style.full:  # one short line: the advice is the full format's `help`
            stream.write(f"{where} {code}{fixable} [{f.name}] {head}\n")
            continue
        stream.write(f"{where} {code}{fixable} [{f.name}] {head}\n")
        _write_source(stream, lines, f, column, paint)
        if advice:
            stream.write(f"  {paint('=', _BLUE)} {paint('help', _BOLD)}: {advice}\n")
        if not style.links:
            stream.write(f"  {paint('=', _BLUE)} {paint('docs', _BOLD)}: {RULES[f.code].url}\n")
        stream.write("\n")


def _write_source(stream: TextIO, lines: SourceLines, f: Finding, column: int,
                  paint: Callable[..., str]) -> None:
    """The finding's line, with carets under its first line's span."""
    text = shown_source_line(lines.line(f.path, f.line).rstrip("\r\n").expandtabs(1))
    if not text.strip():
        return
    if f.end_line == f.line and f.end_column is not None:
        end = lines.character_column(f.path, f.line, f.end_column)
    else:
        end = len(text)
    width = max(end - column, 1)
    number = str(cell_line(lines, f.path, f.line)[1])
    gutter = " " * len(number)
    bar = paint("|", _BLUE)
    stream.write(f"{gutter} {bar}\n{paint(number, _BLUE)} {bar} {text}\n")
    marker = paint("^" * width + " " + f.code, _BOLD, _SEVERITY_COLOR.get(f.severity, ""))
    stream.write(f"{gutter} {bar} {' ' * column}{marker}\n{gutter} {bar}\n")


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


def fix_counts(findings: list[Finding]) -> tuple[int, int]:
    """(findings with a safe fix, findings with only an unsafe one)."""
    safe = sum(1 for f in findings if f.fix is not None and f.fix.safe)
    return safe, sum(1 for f in findings if f.fix is not None) - safe


def fix_hint(findings: list[Finding], *, unsafe: bool) -> str | None:
    """`[*] 2 fixable with --fix (1 more with --unsafe-fixes).`"""
    safe, risky = fix_counts(findings)
    if unsafe:
        safe, risky = safe + risky, 0
    if not safe and not risky:
        return None
    more = f" ({risky} more with `--fix --unsafe-fixes`)" if risky else ""
    flag = "`--fix --unsafe-fixes`" if unsafe else "`--fix`"
    if not safe:
        return f"[*] {risky} fixable with `--fix --unsafe-fixes`."
    return f"[*] {safe} fixable with {flag}{more}."


MORE_HINT = "Each finding's fix: `--format full`; a rule's page: `autograd-lint rule CODE`."


def statistics(findings: list[Finding]) -> list[dict[str, object]]:
    """A row per rule, most frequent first: how many findings, and how many
    of them `--fix` can fix (ruff's `fixable` and `fixable_count`)."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.safe)
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = RULES[code]
        rows.append({"code": code, "name": rule.name, "severity": rule.severity, "count": count,
                     "fixable": fixable[code] > 0, "fixable_count": fixable[code]})
    return rows


def render_statistics(findings: list[Finding], stream: TextIO) -> None:
    """`2\tAGF005\t[*] saved-tensor-inplace`: [*] all of them fixable with
    --fix, [-] some, [ ] none."""
    rows = statistics(findings)
    width = max((len(str(r["count"])) for r in rows), default=1)
    for row in rows:
        marker = "[*]" if row["fixable_count"] == row["count"] else \
            "[-]" if row["fixable"] else "[ ]"
        stream.write(f"{row['count']:>{width}}\t{row['code']}\t{marker} {row['name']}\n")


# ---------------------------------------------------------------------------
# CI formats
# ---------------------------------------------------------------------------
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
def json_findings(findings: list[Finding], lines: SourceLines, *,
                  dynamic: bool = False) -> list[dict[str, Any]]:
    """The JSON output: columns (of findings and of their fixes' edits) are
    0-based and count characters, as ruff's do, not the UTF-8 bytes of the
    `ast` convention findings carry inside."""
    def character(path: str, line: int | None, column: int | None) -> int | None:
        if line is None or column is None:
            return column
        return lines.character_column(path, line, column)

    found = []
    for finding in findings:
        data = finding.to_json(dynamic=dynamic)
        data["column"] = character(finding.path, finding.line, finding.column)
        data["end_column"] = character(finding.path, finding.end_line, finding.end_column)
        for edit in data["fix"]["edits"] if data["fix"] else ():
            edit["column"] = character(finding.path, edit["line"], edit["column"])
            edit["end_column"] = character(finding.path, edit["end_line"], edit["end_column"])
        found.append(_in_cells(data, lines))
    return found


def render_json(findings: list[Finding], lines: SourceLines, stream: TextIO, *,
                dynamic: bool = False) -> None:
    import json

    json.dump(json_findings(findings, lines, dynamic=dynamic), stream, indent=2)
    stream.write("\n")


def _in_cells(data: dict[str, Any], lines: SourceLines) -> dict[str, Any]:
    """A JSON finding of a notebook: a `cell` (after `path`, as ruff adds
    one) and its lines, and its fix's, counted within the cell."""
    path = data["path"]
    cell, data["line"] = cell_line(lines, path, data["line"])
    if cell is None:
        return data
    if data["end_line"] is not None:
        data["end_line"] = cell_line(lines, path, data["end_line"])[1]
    for edit in data["fix"]["edits"] if data["fix"] else ():
        edit["cell"], edit["line"] = cell_line(lines, path, edit["line"])
        edit["end_line"] = cell_line(lines, path, edit["end_line"])[1]
    return {"path": path, "cell": cell, **data}


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _full_description(rule: Rule) -> str:
    """The rule page's "What it does" section, as plain text (GitHub code
    scanning requires a full description per rule)."""
    from ..core.docs import read_page

    page = read_page(rule.code) or ""
    section = page.partition("## What it does")[2].partition("\n## ")[0]
    text = " ".join(section.split())
    return text or rule.summary


def sarif_log(findings: list[Finding], lines: SourceLines) -> dict[str, object]:
    """A SARIF 2.1.0 log: every rule in the driver's table (so code scanning
    shows names, help and severity), one result per finding."""
    from .. import __version__
    from ..core.docs import rule_page
    from ..core.registry import all_rules
    from .baseline import fingerprints

    rules = list(all_rules())
    index = {rule.code: i for i, rule in enumerate(rules)}
    driver = {
        "name": "autograd-lint",
        "version": __version__,
        # No informationUri/helpUri: the project is not published at a URL code
        # scanning could open; each rule's page travels in `help.markdown`.
        "rules": [{
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": _full_description(rule)},
            "help": {"text": rule.summary, "markdown": rule_page(rule)},
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity],
                                     "enabled": rule.default},
            "properties": {"tags": [rule.family], "tier": rule.tier, "fix": rule.fix or "none"},
        } for rule in rules],
    }
    prints = fingerprints(findings, lines, os.getcwd())
    results = []
    for finding, fingerprint in zip(findings, prints, strict=True):
        cell, line = cell_line(lines, finding.path, finding.line)
        region: dict[str, int] = {
            "startLine": line,
            "startColumn": lines.utf16_column(finding.path, finding.line, finding.column) + 1,
        }
        if finding.end_line is not None and finding.end_column is not None:
            region["endLine"] = cell_line(lines, finding.path, finding.end_line)[1]
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
            # A notebook's region counts lines within this cell (as ruff's).
            **({"properties": {"cell": cell}} if cell is not None else {}),
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
        cell, line = cell_line(lines, f.path, f.line)
        props = [f"file={_escape_property(f.path)}", f"line={line}",
                 f"col={lines.character_column(f.path, f.line, f.column) + 1}"]
        if f.end_line is not None and f.end_column is not None:
            props += [f"endLine={cell_line(lines, f.path, f.end_line)[1]}",
                      f"endColumn={lines.character_column(f.path, f.end_line, f.end_column) + 1}"]
        title = f"{f.code} ({f.name})" + (f" in cell {cell}" if cell is not None else "")
        props.append(f"title={_escape_property(title)}")
        stream.write(f"::{_GITHUB_LEVEL[f.severity]} {','.join(props)}::"
                     f"{_escape_data(f'{f.code} {f.message}')}\n")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
