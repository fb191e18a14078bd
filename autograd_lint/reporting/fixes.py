"""Automatic fixes applied to text.

Rules attach a `Fix` to a finding while they still hold the syntax tree
(`Reporter.add(..., autofix=...)`; the builders are the rules' own,
`checkers/fix_edits.py`). `apply_fixes` applies a file's fixes to its text:
edits that overlap an edit already taken wait for the next round (the CLI
re-checks and repeats, as ruff does), and the result must still parse or
nothing is changed.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..core.files import is_notebook, read_regular_file
from ..core.findings import Finding
from ..core.lines import LineIndex

MAX_FIX_ROUNDS = 10  # fixes that overlap go in over several rounds


# ---------------------------------------------------------------------------
# Applying
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FixResult:
    text: str
    applied: list[Finding]  # the findings whose fixes went in
    # The edits made: (start, end) offsets in the text given, and the new text.
    spans: tuple[tuple[int, int, str], ...] = ()


def fixable(findings: Iterable[Finding], *, unsafe: bool) -> list[Finding]:
    """The findings whose fix the run may apply."""
    return [f for f in findings if f.fix is not None and (f.fix.safe or unsafe)]


def apply_fixes(text: str, findings: list[Finding]) -> FixResult:
    """Apply as many of the findings' fixes as do not overlap, in one pass.

    Returns the text unchanged (and nothing applied) when the result would not
    parse: a fix must never turn a working file into a broken one.
    """
    lines = LineIndex(text)
    chosen: list[tuple[int, int, str]] = []
    applied: list[Finding] = []
    taken: list[tuple[int, int]] = []
    seen_edits: set[tuple[int, int, str]] = set()
    for finding in sorted(findings, key=lambda f: f.sort_key):
        assert finding.fix is not None
        spans = []
        try:
            for edit in finding.fix.edits:
                start = lines.offset(edit.line, edit.column)
                end = lines.offset(edit.end_line, edit.end_column)
                spans.append((start, end, edit.text))
        except IndexError:
            continue  # positions from another version of the file
        fresh = [span for span in spans if span not in seen_edits]
        if any(_overlaps(span, taken) for span in fresh):
            continue  # next round
        for span in fresh:
            seen_edits.add(span)
            taken.append((span[0], span[1]))
            chosen.append(span)
        applied.append(finding)
    if not chosen:
        return FixResult(text, [])
    new_text = text
    for start, end, replacement in sorted(chosen, key=lambda s: (s[0], s[1]), reverse=True):
        new_text = new_text[:start] + replacement + new_text[end:]
    try:
        ast.parse(new_text)
    except (SyntaxError, ValueError):
        return FixResult(text, [])
    return FixResult(new_text, applied, tuple(chosen))


def _overlaps(span: tuple[int, int, str], taken: list[tuple[int, int]]) -> bool:
    start, end, _ = span
    for other_start, other_end in taken:
        if start < other_end and other_start < end:
            return True
        if start == end == other_start == other_end:
            return True  # two insertions at one place: order would be a guess
        if start == end and other_start < start < other_end:
            return True
    return False


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FileChange:
    path: str  # on disk
    display: str
    before: str
    after: str
    applied: list[Finding]
    bom: bool
    # A notebook's: (cell number, its text before, after) of each cell changed.
    cells: tuple[tuple[int, str, str], ...] = ()

    def encoded(self) -> bytes:
        return ("\ufeff" if self.bom else "").encode() + self.after.encode("utf-8")


def plan_changes(findings: list[Finding], *, unsafe: bool,
                 paths: dict[str, str] | None = None) -> list[FileChange]:
    """One round of fixes over the files the findings are in. Files that are
    not UTF-8, or declare another encoding (a `coding:` cookie: the findings'
    positions count in that decoding), are left alone: rewriting them could
    change their bytes."""
    paths = paths or {}
    groups: dict[str, list[Finding]] = {}
    for finding in fixable(findings, unsafe=unsafe):
        groups.setdefault(finding.path, []).append(finding)
    changes = []
    for display, group in groups.items():
        path = paths.get(display, display)
        try:
            data = read_regular_file(path)
            if is_notebook(path):
                change = _notebook_change(path, display, data, group)
                changes += [change] if change is not None else []
                continue
        except OSError:
            continue
        decoded = utf8_text(data)
        if decoded is None:
            continue
        text, bom = decoded
        result = apply_fixes(text, group)
        if result.applied:
            changes.append(FileChange(path, display, text, result.text, result.applied, bom))
    return changes


def fix_in_rounds(text: str, findings: list[Finding], lint: Callable[[str], list[Finding]],
                  *, unsafe: bool) -> FixResult:
    """What `--fix` makes of one file's text, without writing it: rounds of
    fixes, the text linted again (`lint`) between them, until none applies.
    `applied`: the findings fixed, over all rounds. A text that declares
    another encoding than UTF-8 is left alone, as `plan_changes` leaves such
    a file."""
    try:
        if not declares_utf8(text.encode("utf-8")):
            return FixResult(text, [])
    except SyntaxError:  # an unknown encoding
        return FixResult(text, [])
    applied: list[Finding] = []
    for _ in range(MAX_FIX_ROUNDS):
        result = apply_fixes(text, fixable(findings, unsafe=unsafe))
        if not result.applied:
            break
        text = result.text
        applied += result.applied
        findings = lint(text)  # what remains, and fixes that waited for an overlapping one
    return FixResult(text, applied)


def _notebook_change(path: str, display: str, data: bytes,
                     findings: list[Finding]) -> FileChange | None:
    """Fixes in a notebook: applied to its Python view (where the findings'
    positions are), then made to the cells' own text, which is spliced into
    the file's JSON text (nothing else of it is written again: outputs with
    escapes UTF-8 cannot hold stay as they are); None when nothing applies,
    or when the cells would not read back as the fixed view (an edit across
    cells)."""
    from ..core.notebooks import NotebookError, read_notebook

    try:
        notebook = read_notebook(data)
    except NotebookError:
        return None
    result = apply_fixes(notebook.python, findings)
    edited = notebook.with_edits(list(result.spans)) if result.applied else None
    if edited is None or read_notebook(edited[0]).python != result.text:
        return None
    cells = tuple((cell.number, cell.before, cell.after) for cell in edited[1])
    return FileChange(path, display, notebook.raw, edited[0], result.applied,
                      data.startswith(b"\xef\xbb\xbf"), cells)


def utf8_text(data: bytes) -> tuple[str, bool] | None:
    """A source file's text and whether it starts with a BOM, where Python
    reads it as UTF-8; None for a file that is not UTF-8 or declares another
    encoding (a `coding:` cookie: positions count in that decoding, and
    rewriting it could change its bytes)."""
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        return (data[3 if bom else 0:].decode("utf-8"), bom) if declares_utf8(data) else None
    except (UnicodeDecodeError, SyntaxError):
        return None


def declares_utf8(data: bytes) -> bool:
    """Whether Python reads the file as UTF-8 (no cookie, or a UTF-8 one);
    raises SyntaxError for an unknown encoding."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return encoding in ("utf-8", "utf-8-sig")


def unified_diff(change: FileChange) -> str:
    """The change as a unified diff; a notebook's, cell by cell (`a/nb.ipynb:cell 2`,
    as ruff shows them)."""
    if change.cells:  # a cell's last line has no line break: none is shown missing
        return "".join(_diff(_ended(before), _ended(after), f"{change.display}:cell {number}")
                       for number, before, after in change.cells)
    return _diff(change.before, change.after, change.display)


def _ended(text: str) -> str:
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


def _diff(before: str, after: str, name: str) -> str:
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(line if line.endswith(("\n", "\r")) else
                   line + "\n\\ No newline at end of file\n" for line in lines)
