"""`autograd-lint server`: a Language Server Protocol server over stdio (pygls).

Diagnostics on open, on change (debounced) and on save, from the same engine
and `[tool.autograd-lint]` configuration as the command line, for the text in
the editor (saved or not). Code actions: the rule's fix where one exists (safe
fixes preferred) and "suppress with `# noqa: CODE`", computed from the text
the request sees and sent as edits of that document version (a request that
arrives while a change waits for its debounce lints the new text first; a
client need not echo diagnostics' `data`), and `source.fixAll.autograd-lint`
(editors run `source.fixAll` on save): every safe fix of the document in one
edit, the text `autograd-lint check --fix` would leave. Hover: the rule of a
finding, or of a code in a `# noqa: ...` comment. Positions use the encoding the
client and server agreed on (UTF-8, UTF-16 or UTF-32). A change to a
pyproject.toml the configuration came from (or a new one nearer the file) is
read at the next lint, and the other open files are linted again. The
project's file list is walked once and walked again only when one of its
folders changed on disk (a file added, removed or renamed), not per lint. A
half-typed buffer is AGF000 at the error; an internal error on one buffer is
logged and the server stays up (a lint with the buffer's project that fails is
logged and the buffer linted alone: one bad lint never silences the server); a
request it cannot read is answered with an error; a stream whose framing broke
ends the server (status 2), so that the editor starts a new one. Notebooks
(`.ipynb`, their cells too) and documents in another language are left alone:
no diagnostics, no code actions (a notebook's text is JSON, and its cells'
lines are not its lines; the command line checks notebooks). The dynamic mode
never runs here: the server never imports or executes the code being edited.
"""
from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from ..core.files import is_notebook
from ..core.findings import Finding
from ..core.lines import LineIndex
from ..reporting.fixes import FixResult

DEBOUNCE_SECONDS = 0.3
SOURCE = "autograd-lint"
# The languages the server lints; a document that names none is judged by its path.
PYTHON_LANGUAGES = frozenset({"python"})
# Fix all as ruff's `source.fixAll.ruff`: a `source.fixAll` (run on save) of this server's own.
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"
SEVERITY = {"error": types.DiagnosticSeverity.Error,
            "warning": types.DiagnosticSeverity.Warning,
            "info": types.DiagnosticSeverity.Information}
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?",
                   re.IGNORECASE)
# A header line: a field name (an RFC 9110 token), a colon, a value.
_HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*\r?\n")
EXIT_BROKEN_STREAM = 2  # the command line's status for an error

log = logging.getLogger(__name__)


class BrokenStream(Exception):
    """The client's stream lost its framing: where the next message starts
    can no longer be known."""


class FramedInput:
    """stdin as pygls reads it (header lines, then `read` of the body),
    checking the framing pygls takes on trust. pygls skips a header block
    without a readable Content-Length and then reads every later body as
    header lines: the server would live on, deaf. Here that (and a body cut
    short) raises BrokenStream instead."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._length: int | None = None  # this message's Content-Length
        self._started = False  # a header line of this message was read

    def readline(self) -> bytes:
        line = self._stream.readline()
        if not self._started and not line.strip():
            return line  # the end of the stream, or a stray blank line, between messages
        self._started = True
        if not line.endswith(b"\n"):
            raise BrokenStream("the stream ended inside a message's headers")
        if not line.strip():
            if self._length is None:
                raise BrokenStream("a message without a Content-Length header")
            if self._length == 0:  # no body to read (nor a message to handle)
                self._length, self._started = None, False
            return b"\r\n"
        header = _HEADER.fullmatch(line)
        if header is None:
            raise BrokenStream(f"not a header line: {line[:60]!r}")
        if header.group(1).lower() != b"content-length":
            return line
        self._length = _content_length(header.group(2))
        return b"Content-Length: %d\r\n" % self._length  # the one spelling pygls reads

    def read(self, size: int) -> bytes:
        body = self._stream.read(size)
        self._length, self._started = None, False
        if len(body) != size:
            raise BrokenStream(f"the stream ended {len(body)} bytes into a body of {size}")
        return body


def _content_length(value: bytes) -> int:
    if not value.isdigit():  # ASCII digits only: no sign, no space
        raise BrokenStream(f"a bad Content-Length: {value[:30]!r}")
    return int(value)


class AutogradLintProtocol(LanguageServerProtocol):
    """pygls' protocol, answering the requests it would leave unanswered:
    lsprotocol refuses a negative position, and pygls then drops the whole
    request without a reply (the client waits for ever)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        # Called for every JSON object of a message, innermost first.
        if "jsonrpc" in data and data.get("method") == types.TEXT_DOCUMENT_CODE_ACTION:
            data = {**data, "params": _clamped(data.get("params"))}
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "method" in data and "id" in data:
                self._send_response(data["id"], error=exc.to_response_error())
            raise


def _clamped(value: Any) -> Any:
    """The JSON value with each position's negative line or character read
    as 0 (before the start of the file or line: its start)."""
    if isinstance(value, list):
        return [_clamped(item) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"line", "character"}:
        return {key: max(number, 0) if isinstance(number, int) else number
                for key, number in value.items()}
    return {key: _clamped(item) for key, item in value.items()}


Stamp = tuple[int, int, int] | None


class TreeStamps:
    """The folders the last walk of the projects listed, each with its stamp
    when first seen (before its listing was read). A file added, removed or
    renamed changes its folder's stamp, and so does an edit of the folder's
    .gitignore: comparing them costs two stats per folder, where walking
    again costs seconds in a large tree."""

    def __init__(self) -> None:
        self._stamps: dict[str, tuple[Stamp, Stamp]] = {}

    def note(self, directory: str) -> None:
        if directory not in self._stamps:
            self._stamps[directory] = _stamp(directory)

    def changed(self) -> bool:
        return any(_stamp(directory) != stamp for directory, stamp in self._stamps.items())

    def clear(self) -> None:
        self._stamps.clear()


def _stamp(directory: str) -> tuple[Stamp, Stamp]:
    """The folder's stamp and its .gitignore's (which entries a walk skips)."""
    return _stat(directory), _stat(os.path.join(directory, ".gitignore"))


def _stat(path: str) -> Stamp:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_size


class AutogradLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("autograd-lint", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=AutogradLintProtocol)
        self.pending: dict[str, asyncio.TimerHandle] = {}
        # By uri: the document version linted and its findings (code actions).
        self.linted: dict[str, tuple[int | None, list[Finding]]] = {}
        # By uri: the findings a fix-all was computed from (the same list
        # object as in `linted`) and its result: one computation per lint.
        self.fixed_all: dict[str, tuple[list[Finding], FixResult]] = {}
        self.reported_errors: set[str] = set()  # configuration errors already shown
        from ..core.config import ConfigFinder

        self.configs = ConfigFinder(Path.cwd())
        from ..engine.context import BufferLinter

        # Lints a buffer as the command line lints a named file, keeping each
        # project's file list (until `tree` says a folder changed) and scans
        # between lints.
        self.linter = BufferLinter(refresh_seconds=math.inf)
        self.tree = TreeStamps()

    def forget_files(self) -> None:
        """The projects' file lists may be stale: walk them at the next lint."""
        self.linter.forget()
        self.tree.clear()

    def forget_projects(self) -> None:
        """After a lint failed midway: what it kept of the projects (file
        lists, scans) may be half updated, so the next lint starts afresh."""
        from ..engine.context import BufferLinter

        self.linter = BufferLinter(refresh_seconds=math.inf)
        self.tree.clear()


def is_linted(document: Any) -> bool:
    """Whether the server lints a document (pygls' TextDocument): Python,
    and not a notebook. A notebook's text is JSON, and its cells' lines are
    not the file's: diagnostics and edits made at the Python view's lines
    would break it (the command line checks notebooks)."""
    path = str(getattr(document, "path", "") or document.uri)
    language = getattr(document, "language_id", None)
    return not is_notebook(path) and (not language or language in PYTHON_LANGUAGES)


def position_encoding(server: AutogradLintServer) -> str:
    try:
        return str(server.workspace.position_encoding)
    except Exception:  # before initialize: the protocol's default
        return str(types.PositionEncodingKind.Utf16)


def _column(lines: LineIndex, line: int, byte_column: int, encoding: str) -> int:
    """An ast column (UTF-8 bytes) in the negotiated encoding's units."""
    if encoding == types.PositionEncodingKind.Utf8:
        return byte_column
    if encoding == types.PositionEncodingKind.Utf32:
        return lines.characters(line, byte_column)
    return lines.utf16(line, byte_column)


def codes_for(server: AutogradLintServer, path: str) -> frozenset[str]:
    """The rules the command line would run on this file (a buffer is never a
    tree scan and never runs: tree-only and dynamic rules stay silent)."""
    from ..core.config import drop_matching, resolve_codes

    config = server.configs.for_path(path, is_dir=False)
    return drop_matching(resolve_codes([config.selection]), frozenset(config.ignored_for(path)))


def lint_document(server: AutogradLintServer, uri: str) -> list[Finding]:
    """The buffer's findings, as `autograd-lint check FILE` reports them for
    this text (the other files of its project as they are on disk)."""
    return lint_text(server, uri, server.workspace.get_text_document(uri).source)


def lint_text(server: AutogradLintServer, uri: str, source: str) -> list[Finding]:
    """The findings of `source` as the text of the document `uri`, with its
    project as context. Should that fail (an internal error: an unreadable
    folder, a file the walk cannot read), it is logged and the text is linted
    alone, as a file outside any project is: a failure must not silence the
    server for this buffer (a configuration error is the user's: raised)."""
    from ..core.config import ConfigError

    try:
        return _lint_in_project(server, uri, source)
    except ConfigError:
        raise
    except Exception:
        log.exception("autograd-lint: linting %s with its project failed; "
                      "linting the file alone", uri)
        server.forget_projects()
        return _lint_alone(server, uri, source)


def _lint_alone(server: AutogradLintServer, uri: str, source: str) -> list[Finding]:
    """The findings of `source`, nothing else of its project read."""
    from ..engine.lint import SourceInput, lint_inputs

    path = to_fs_path(uri) or uri
    buffer = SourceInput(path, path, codes_for(server, path), explicit=True,
                         text=source.encode("utf-8"))
    result = lint_inputs([buffer], jobs=1)
    for where, message in result.errors:
        log.error("autograd-lint: %s: %s", where, message)
    return [finding for finding in result.findings if finding.path == path]


def _lint_in_project(server: AutogradLintServer, uri: str, source: str) -> list[Finding]:
    from ..engine.context import project_root

    path = to_fs_path(uri) or uri
    config = server.configs.for_path(path, is_dir=False)
    if server.tree.changed():  # a file was added, removed or renamed
        server.forget_files()
    root = project_root(path)
    if root is not None:
        server.tree.note(root)  # stamped before a walk lists it

    def excluded(candidate: str, is_dir: bool) -> bool:
        skip = server.configs.for_path(candidate, is_dir=is_dir).is_excluded(candidate)
        if is_dir and not skip:  # the walk lists it next
            server.tree.note(candidate)
        return skip

    result = server.linter.lint(path, source.encode("utf-8"), codes_for(server, path),
                                excluded, config.root)
    for where, message in result.errors:  # internal errors: the log, as the CLI's stderr
        log.error("autograd-lint: %s: %s", where, message)
    return [finding for finding in result.findings if finding.path == path]


def to_diagnostic(finding: Finding, lines: LineIndex, encoding: str) -> types.Diagnostic:
    from ..core.registry import RULES

    start = _position(lines, finding.line, finding.column, encoding)
    if finding.end_line is not None and finding.end_column is not None:
        end = _position(lines, finding.end_line, finding.end_column, encoding)
    else:  # to the end of the line
        end = types.Position(start.line, _line_end(lines, finding.line, encoding))
    return types.Diagnostic(
        range=types.Range(start=start, end=end),
        message=finding.message,
        severity=SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=RULES[finding.code].url),
        source=SOURCE,
        data={"name": finding.name, "fix": finding.fix.to_json() if finding.fix else None},
    )


def _position(lines: LineIndex, line: int, byte_column: int, encoding: str) -> types.Position:
    """An ast position (1-based line, UTF-8 bytes) in LSP terms (0-based line,
    the negotiated encoding's units)."""
    return types.Position(line=max(line - 1, 0),
                          character=_column(lines, line, byte_column, encoding))


def _line_end(lines: LineIndex, line: int, encoding: str) -> int:
    return _column(lines, line, len(lines.line(line).encode("utf-8")), encoding)


def publish(server: AutogradLintServer, uri: str) -> None:
    """Lint the document and publish its diagnostics. Nothing it raises
    leaves it (it runs from timers and notifications): an internal error is
    logged, and the next change, save or open is linted as usual."""
    try:
        _publish(server, uri)
    except Exception:
        log.exception("autograd-lint failed on %s", uri)


def _publish(server: AutogradLintServer, uri: str) -> None:
    from ..core.config import ConfigError, ConfigFinder

    document = server.workspace.get_text_document(uri)
    if not is_linted(document):  # clear what an earlier server may have shown
        server.linted.pop(uri, None)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=[]))
        return
    if server.configs.stale():  # a pyproject.toml was edited, added or removed
        server.configs = ConfigFinder(Path.cwd())
        server.reported_errors.clear()
        server.forget_files()  # its exclusions may list other files
        for other in list(server.linted):
            if other != uri:
                schedule(server, other, 0)
    version = document.version
    try:
        findings = lint_document(server, uri)
    except ConfigError as exc:  # the user's to fix: say so once, as the CLI would
        message = f"autograd-lint: {exc}"
        if message not in server.reported_errors:
            server.reported_errors.add(message)
            server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                               message=message))
        return
    except Exception:  # one buffer's internal error must not take the server down
        log.exception("autograd-lint failed on %s", uri)
        server.forget_projects()
        return
    server.linted[uri] = (version, findings)
    lines = LineIndex(document.source)
    encoding = position_encoding(server)
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=version, diagnostics=[to_diagnostic(f, lines, encoding)
                                               for f in findings]))


def schedule(server: AutogradLintServer, uri: str, delay: float) -> None:
    """Lint `uri` after `delay` seconds unless another change comes first."""
    loop = asyncio.get_running_loop()
    cancel_pending(server, uri)
    server.pending[uri] = loop.call_later(delay, publish, server, uri)


def cancel_pending(server: AutogradLintServer, uri: str) -> None:
    handle = server.pending.pop(uri, None)
    if handle is not None:
        handle.cancel()


def current_findings(server: AutogradLintServer, uri: str) -> list[Finding] | None:
    """The findings of the document's text as it is now (linted again if it
    changed since its last lint); None when it could not be linted."""
    document = server.workspace.get_text_document(uri)
    if not is_linted(document):
        return None
    linted = server.linted.get(uri)
    if linted is None or linted[0] != document.version:
        cancel_pending(server, uri)
        publish(server, uri)
        linted = server.linted.get(uri)
    return None if linted is None else linted[1]


def code_actions(server: AutogradLintServer,
                 params: types.CodeActionParams) -> list[types.CodeAction]:
    """The kinds the request asks for (all when it names none): quick fixes
    for the findings in its range, and the document's fix-all. Computed
    from the findings of the text as it is now, as edits of this version."""
    uri = params.text_document.uri
    findings = current_findings(server, uri)
    if findings is None:
        return []
    actions: list[types.CodeAction] = []
    if wanted(types.CodeActionKind.QuickFix, params.context.only):
        actions += quick_fixes(server, params, findings)
    if wanted(FIX_ALL, params.context.only):
        fix_all = fix_all_action(server, uri, findings)
        if fix_all is not None:
            actions.append(fix_all)
    return actions


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether a code action of `kind` answers a request for the kinds
    `only`. Kinds are hierarchical: asking for `source` or `source.fixAll`
    asks for `source.fixAll.autograd-lint` too. No kinds named: all."""
    if not only:
        return True
    # The values: an f-string of lsprotocol's enum members gives their names.
    asked = {getattr(kind, "value", kind) for kind in only}
    return "" in asked or any(kind == prefix or kind.startswith(prefix + ".")
                              for prefix in asked)


def quick_fixes(server: AutogradLintServer, params: types.CodeActionParams,
                findings: list[Finding]) -> list[types.CodeAction]:
    """Each finding's fix and suppression, for the findings in the
    requested range (of the codes of its diagnostics, where it names some)."""
    uri = params.text_document.uri
    document = server.workspace.get_text_document(uri)
    lines = LineIndex(document.source)
    encoding = position_encoding(server)
    asked = {d.code for d in params.context.diagnostics if d.source == SOURCE}
    versioned = _supports_document_changes(server)
    actions: list[types.CodeAction] = []
    for finding in findings:
        diagnostic = to_diagnostic(finding, lines, encoding)
        if not _overlaps(diagnostic.range, params.range) or (asked and finding.code not in asked):
            continue
        if finding.fix is not None:
            fix = finding.fix
            edits = [types.TextEdit(range=types.Range(
                         start=_position(lines, e.line, e.column, encoding),
                         end=_position(lines, e.end_line, e.end_column, encoding)),
                         new_text=e.text)  # literal (see Reporter._literal)
                     for e in fix.edits]
            actions.append(types.CodeAction(
                title=f"{fix.title} ({finding.code})" + ("" if fix.safe else " [unsafe]"),
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                is_preferred=fix.safe,
                edit=_workspace_edit(uri, document.version, edits, versioned)))
        suppression = _suppression(lines, diagnostic, finding.code, encoding)
        actions.append(types.CodeAction(
            title=f"Suppress {finding.code} on this line (# noqa)",
            kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            edit=_workspace_edit(uri, document.version, [suppression], versioned)))
    return actions


def fix_all_action(server: AutogradLintServer, uri: str,
                   findings: list[Finding]) -> types.CodeAction | None:
    """Every safe fix of the document at once, as `autograd-lint check --fix`
    would leave the file (unsafe fixes never); None when there is none."""
    from ..reporting.fixes import fix_in_rounds

    document = server.workspace.get_text_document(uri)
    cached = server.fixed_all.get(uri)
    if cached is not None and cached[0] is findings:
        result = cached[1]
    else:
        try:
            result = fix_in_rounds(document.source, findings,
                                   lambda text: lint_text(server, uri, text), unsafe=False)
        except Exception:  # the quick fixes of the same request are still answered
            log.exception("autograd-lint: fix all failed on %s", uri)
            return None
        server.fixed_all[uri] = (findings, result)
    if not result.applied:
        return None
    lines = LineIndex(document.source)
    edit = _replacement(lines, result.text, position_encoding(server))
    count = len(result.applied)
    return types.CodeAction(
        title=f"autograd-lint: fix all ({count} safe fix{'' if count == 1 else 'es'})",
        kind=FIX_ALL, edit=_workspace_edit(uri, document.version, [edit],
                                           _supports_document_changes(server)))


def _replacement(lines: LineIndex, after: str, encoding: str) -> types.TextEdit:
    """One edit from the text of `lines` to `after`, over the lines from the
    first to the last that differ (as ruff's server sends its fix-all): the
    editor keeps its cursor, folds and marks on the lines around them."""
    before, new = _with_breaks(lines), _with_breaks(LineIndex(after))
    shorter = min(len(before), len(new))
    head = 0
    while head < shorter and before[head] == new[head]:
        head += 1
    tail = 0
    while tail < shorter - head and before[-1 - tail] == new[-1 - tail]:
        tail += 1
    kept = len(before) - tail  # the first line after the change (0-based)
    if kept < len(before):
        end = types.Position(kept, 0)
    else:  # to the end of the text
        end = types.Position(len(before) - 1, _line_end(lines, len(before), encoding))
    return types.TextEdit(range=types.Range(start=types.Position(head, 0), end=end),
                          new_text="".join(new[head:len(new) - tail]))


def _with_breaks(lines: LineIndex) -> list[str]:
    """The text's lines, each with its line break (the last one has none)."""
    return [lines.line_text(number) for number in range(1, len(lines.starts) + 1)]


def hover(server: AutogradLintServer, params: types.HoverParams) -> types.Hover | None:
    """The rule behind a code of a `# noqa` comment, or behind the findings
    at the position: code, name, summary and page, in Markdown."""
    from ..core.registry import RULES
    from ..engine.noqa import named_codes

    uri = params.text_document.uri
    document = server.workspace.get_text_document(uri)
    if not is_linted(document):
        return None
    lines = LineIndex(document.source)
    encoding = position_encoding(server)
    at = params.position
    number = at.line + 1
    text = lines.line(number)
    for start, end, code in named_codes(text):
        span = types.Range(
            start=types.Position(at.line, _column(lines, number, len(text[:start].encode()),
                                                  encoding)),
            end=types.Position(at.line, _column(lines, number, len(text[:end].encode()),
                                                encoding)))
        if code in RULES and _contains(span, at):
            return types.Hover(contents=_rules_markdown([code]), range=span)
    hits = [to_diagnostic(finding, lines, encoding)
            for finding in current_findings(server, uri) or []]
    hits = [diagnostic for diagnostic in hits if _contains(diagnostic.range, at)]
    if not hits:
        return None
    codes = list(dict.fromkeys(str(diagnostic.code) for diagnostic in hits))
    return types.Hover(contents=_rules_markdown(codes),
                       range=hits[0].range if len(hits) == 1 else None)


def _contains(span: types.Range, at: types.Position) -> bool:
    """Whether `at` is in `span` (its end excluded, unless it is empty)."""
    start = (span.start.line, span.start.character)
    end = (span.end.line, span.end.character)
    return start <= (at.line, at.character) < end or start == end == (at.line, at.character)


def _rules_markdown(codes: list[str]) -> types.MarkupContent:
    from ..core.registry import RULES

    parts = []
    for code in codes:
        rule = RULES[code]
        fix = f"\n\nFix: {rule.fix}." if rule.fix else ""
        parts.append(f"**{code}** `{rule.name}` ({rule.severity})\n\n{rule.summary}{fix}"
                     f"\n\n[Rule page]({rule.url})")
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts))


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _supports_document_changes(server: AutogradLintServer) -> bool:
    capabilities = getattr(server, "client_capabilities", None)
    workspace = getattr(capabilities, "workspace", None)
    edit = getattr(workspace, "workspace_edit", None)
    return bool(getattr(edit, "document_changes", False))


def _workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit],
                    versioned: bool) -> types.WorkspaceEdit:
    """Edits of one document version where the client takes them (it then
    refuses them if the text changed again), else plain `changes`."""
    if versioned:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri,
                                                                         version=version),
            edits=list(edits))])
    return types.WorkspaceEdit(changes={uri: list(edits)})


def _suppression(lines: LineIndex, diagnostic: types.Diagnostic, code: str,
                 encoding: str) -> types.TextEdit:
    """`# noqa: CODE` at the end of the diagnostic's first line (added to an
    existing `# noqa: ...` list)."""
    line_number = diagnostic.range.start.line + 1
    text = lines.line(line_number)
    at_end = types.Position(line_number - 1, _line_end(lines, line_number, encoding))
    existing = _NOQA.search(text)
    if existing is not None and existing.group("codes"):
        start = types.Position(line_number - 1, _column(
            lines, line_number, len(text[:existing.end()].encode("utf-8")), encoding))
        return types.TextEdit(range=types.Range(start=start, end=start), new_text=f", {code}")
    if existing is not None:  # a bare suppression comment already silences everything
        return types.TextEdit(range=types.Range(start=at_end, end=at_end), new_text="")
    return types.TextEdit(range=types.Range(start=at_end, end=at_end),
                          new_text=f"  # noqa: {code}")


def build_server() -> AutogradLintServer:
    server = AutogradLintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AutogradLintServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AutogradLintServer, params: types.DidChangeTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AutogradLintServer, params: types.DidSaveTextDocumentParams) -> None:
        # The project is not walked again: a new file shows in its folder's
        # stamp, and each lint reads the files that changed.
        schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AutogradLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        cancel_pending(ls, uri)
        ls.linted.pop(uri, None)
        ls.fixed_all.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri,
                                                                            diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    def code_action(ls: AutogradLintServer,
                    params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(ls, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: AutogradLintServer, params: types.HoverParams) -> types.Hover | None:
        return hover(ls, params)

    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client says exit. A broken
    stream ends the process with a non-zero status: editors then start the
    server again, as they do for other language servers."""
    try:
        build_server().start_io(stdin=FramedInput(sys.stdin.buffer))
    except BrokenStream as exc:
        sys.stderr.write(f"autograd-lint: error: the editor's stream is broken ({exc}); "
                         "exiting so that the editor starts the server again\n")
        raise SystemExit(EXIT_BROKEN_STREAM) from None
