"""`autograd-lint server`: a Language Server Protocol server over stdio (pygls).

Diagnostics on open, on change (debounced) and on save, from the same engine
and `[tool.autograd-lint]` configuration as the command line, for the text in
the editor (saved or not). Code actions: the rule's fix where one exists (safe
fixes preferred) and "suppress with `# noqa: CODE`". A half-typed buffer is
AGF000 at the error; an internal error on one buffer is logged and the server
stays up. The dynamic mode never runs here: the server never imports or
executes the code being edited.
"""
from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import __version__
from .findings import Finding, Fix
from .lines import LineIndex

DEBOUNCE_SECONDS = 0.3
SOURCE = "autograd-lint"
SEVERITY = {"error": types.DiagnosticSeverity.Error,
            "warning": types.DiagnosticSeverity.Warning,
            "info": types.DiagnosticSeverity.Information}
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?",
                   re.IGNORECASE)

log = logging.getLogger(__name__)


class AutogradLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("autograd-lint", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.findings: dict[str, list[Finding]] = {}  # by uri, for code actions
        self.reported_errors: set[str] = set()  # configuration errors already shown
        from .config import ConfigFinder

        self.configs = ConfigFinder(Path.cwd())
        from .context import BufferContext

        # The rest of each buffer's project (Functions, bases), as the command
        # line reads it for named files; kept parsed while unchanged on disk.
        self.context = BufferContext()


def codes_for(server: AutogradLintServer, path: str) -> frozenset[str]:
    """The rules the command line would run on this file (a buffer is never a
    tree scan and never runs: tree-only and dynamic rules stay silent)."""
    from .config import drop_matching, resolve_codes

    config = server.configs.for_path(path, is_dir=False)
    return drop_matching(resolve_codes([config.selection]), frozenset(config.ignored_for(path)))


def lint_document(server: AutogradLintServer, uri: str) -> list[Finding]:
    from .engine import lint_source

    document = server.workspace.get_text_document(uri)
    path = to_fs_path(uri) or uri
    context = server.context.modules_for(path) if path.endswith(".py") else []
    return lint_source(document.source, path, codes_for(server, path), context=context)


def to_diagnostic(finding: Finding, lines: LineIndex) -> types.Diagnostic:
    from .registry import RULES

    start = _position(lines, finding.line, finding.column)
    if finding.end_line is not None and finding.end_column is not None:
        end = _position(lines, finding.end_line, finding.end_column)
    else:  # to the end of the line
        end = types.Position(start.line, lines.utf16(finding.line, len(lines.line(finding.line)
                                                                      .encode("utf-8"))))
    return types.Diagnostic(
        range=types.Range(start=start, end=end),
        message=finding.message,
        severity=SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=RULES[finding.code].url),
        source=SOURCE,
        data={"name": finding.name, "fix": finding.fix.to_json() if finding.fix else None},
    )


def _position(lines: LineIndex, line: int, byte_column: int) -> types.Position:
    """An ast position (1-based line, UTF-8 bytes) in LSP terms (0-based, UTF-16)."""
    return types.Position(line=max(line - 1, 0), character=lines.utf16(line, byte_column))


def publish(server: AutogradLintServer, uri: str) -> None:
    from .config import ConfigError

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
        return
    server.findings[uri] = findings
    lines = LineIndex(server.workspace.get_text_document(uri).source)
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, diagnostics=[to_diagnostic(f, lines) for f in findings]))


def schedule(server: AutogradLintServer, uri: str, delay: float) -> None:
    """Lint `uri` after `delay` seconds unless another change comes first."""
    loop = asyncio.get_running_loop()
    previous = server.pending.pop(uri, None)
    if previous is not None:
        previous.cancel()
    server.pending[uri] = loop.call_later(delay, publish, server, uri)


def code_actions(server: AutogradLintServer,
                 params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = server.workspace.get_text_document(uri)
    lines = LineIndex(document.source)
    actions: list[types.CodeAction] = []
    for diagnostic in params.context.diagnostics:
        if diagnostic.source != SOURCE or not isinstance(diagnostic.code, str):
            continue
        code = diagnostic.code
        fix = _fix_of(diagnostic)
        if fix is not None:
            edits = [types.TextEdit(range=types.Range(
                         start=_position(lines, e.line, e.column),
                         end=_position(lines, e.end_line, e.end_column)),
                         new_text=lines.indent(e.text, e.line))
                     for e in fix.edits]
            actions.append(types.CodeAction(
                title=f"{fix.title} ({code})" + ("" if fix.safe else " [unsafe]"),
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                is_preferred=fix.safe,
                edit=types.WorkspaceEdit(changes={uri: edits})))
        actions.append(_suppression(uri, lines, diagnostic, code))
    return actions


def _fix_of(diagnostic: types.Diagnostic) -> Fix | None:
    data: Any = diagnostic.data
    if isinstance(data, dict) and data.get("fix"):
        try:
            return Fix.from_json(data["fix"])
        except ValueError:
            return None
    return None


def _suppression(uri: str, lines: LineIndex, diagnostic: types.Diagnostic,
                 code: str) -> types.CodeAction:
    """`# noqa: CODE` at the end of the diagnostic's first line (added to an
    existing `# noqa: ...` list)."""
    line_number = diagnostic.range.start.line + 1
    text = lines.line(line_number)
    width = lines.utf16(line_number, len(text.encode("utf-8")))
    existing = _NOQA.search(text)
    if existing is not None and existing.group("codes"):
        start = lines.utf16(line_number, len(text[:existing.end()].encode("utf-8")))
        edit = types.TextEdit(range=types.Range(start=types.Position(line_number - 1, start),
                                                end=types.Position(line_number - 1, start)),
                              new_text=f", {code}")
    elif existing is not None:  # a bare suppression comment already silences everything
        edit = types.TextEdit(range=types.Range(start=types.Position(line_number - 1, width),
                                                end=types.Position(line_number - 1, width)),
                              new_text="")
    else:
        edit = types.TextEdit(range=types.Range(start=types.Position(line_number - 1, width),
                                                end=types.Position(line_number - 1, width)),
                              new_text=f"  # noqa: {code}")
    return types.CodeAction(title=f"Suppress {code} on this line (# noqa)",
                            kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                            edit=types.WorkspaceEdit(changes={uri: [edit]}))


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
        schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AutogradLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        handle = ls.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        ls.findings.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri,
                                                                            diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: AutogradLintServer,
                    params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(ls, params)

    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client says exit."""
    build_server().start_io()
