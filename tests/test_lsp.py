"""The language server, started as a real subprocess and driven over LSP by
pygls' client: diagnostics on open / change / save, ranges, code actions
(quick fixes and fix-all), hover."""
from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from autograd_lint.core.lines import LineIndex
from autograd_lint.core.registry import RULES

BUGGY = textwrap.dedent('''\
    import torch


    class Scale(torch.autograd.Function):
        def forward(ctx, x):
            ctx.x = x
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_variables
            return grad * 2
    ''')
CLEAN = BUGGY.replace("    def forward", "    @staticmethod\n    def forward") \
             .replace("ctx.x = x", "ctx.save_for_backward(x)") \
             .replace("saved_variables", "saved_tensors")


class Session:
    """A client connected to `autograd-lint server`, collecting diagnostics."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.diagnostics: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()
        self.messages: asyncio.Queue[types.ShowMessageParams] = asyncio.Queue()
        self.capabilities = types.ServerCapabilities()  # the server's, once initialized

    async def next_diagnostics(self, timeout: float = 30) -> list[types.Diagnostic]:
        params = await asyncio.wait_for(self.diagnostics.get(), timeout)
        return list(params.diagnostics)


def run_session(root: Path, body: Callable[[Session], Awaitable[None]],
                capabilities: types.ClientCapabilities | None = None,
                command: Sequence[str] = ("-m", "autograd_lint", "server"),
                prefix: Sequence[str] = ()) -> None:
    """Run `body` against a server started as `prefix python command`."""
    async def main() -> None:
        client = LanguageClient("test-client", "1")
        session = Session(client)

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            session.diagnostics.put_nowait(params)

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            session.messages.put_nowait(params)

        program, *arguments = (*prefix, sys.executable, *command)
        await client.start_io(program, *arguments, cwd=str(root))
        try:
            initialized = await client.initialize_async(types.InitializeParams(
                capabilities=capabilities or types.ClientCapabilities(),
                root_uri=root.as_uri()))
            session.capabilities = initialized.capabilities
            client.initialized(types.InitializedParams())
            await body(session)
            await client.shutdown_async(None)
            client.exit(None)
        finally:
            await stop(client)

    asyncio.run(main())


async def stop(client: LanguageClient) -> None:
    """Wait for the server to end; kill it if it does not (a body that failed
    never said exit: the test must fail, not hang)."""
    process = client._server  # pygls' handle on the subprocess
    if process is not None and process.returncode is None:
        try:
            await asyncio.wait_for(process.wait(), 10)
        except asyncio.TimeoutError:
            process.kill()
    await client.stop()


# The rules these tests exercise are off by default (AGF001 and AGF008 pedantic, AGF103
# and AGF213 style, the last three with safe fixes): a project turns them on.
FIXABLE_RULES = \
    '[tool.autograd-lint]\nextend-select = ["AGF001", "AGF008", "AGF103", "AGF213"]\n'


def select_fixable(root: Path, *, ignore: str = "") -> None:
    (root / "pyproject.toml").write_text(FIXABLE_RULES + ignore)


def open_document(session: Session, uri: str, text: str) -> None:
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=text)))


def replace_all(session: Session, uri: str, old: str, new: str, version: int) -> None:
    lines = old.split("\n")
    end = types.Position(line=len(lines) - 1, character=len(lines[-1]))
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(0, 0), end=end), text=new)]))


def apply_edits(text: str, edits: list[types.TextEdit], unit: str = "utf-16") -> str:
    """Apply LSP edits whose columns count `unit`s (utf-8, utf-16 or utf-32)."""
    index = LineIndex(text)

    def offset(at: types.Position) -> int:
        codec, width = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2),
                        "utf-32": ("utf-32-le", 4)}[unit]
        prefix = index.line(at.line + 1).encode(codec)[:at.character * width]
        return index.starts[at.line] + len(prefix.decode(codec))

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def test_diagnostics_on_open_change_and_code_actions(tmp_path: Path) -> None:
    select_fixable(tmp_path, ignore='ignore = ["AGF008"]\n')
    uri = (tmp_path / "ops.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, uri, BUGGY)
        diagnostics = await session.next_diagnostics()
        by_code = {d.code: d for d in diagnostics}
        assert set(by_code) == {"AGF001", "AGF103", "AGF213"}
        leak = by_code["AGF001"]
        assert leak.range == types.Range(start=types.Position(5, 8), end=types.Position(5, 17))
        assert leak.severity == types.DiagnosticSeverity.Error
        assert leak.source == "autograd-lint"
        assert leak.code_description is not None
        assert leak.code_description.href.endswith("/docs/rules/AGF001.md")
        assert by_code["AGF103"].severity == types.DiagnosticSeverity.Warning
        assert by_code["AGF103"].range.start == types.Position(4, 4)

        # Quick fix: the safe rename, preferred, and a noqa suppression.
        actions = await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=by_code["AGF213"].range,
            context=types.CodeActionContext(diagnostics=[by_code["AGF213"]])))
        titles = [a.title for a in actions]
        assert titles == ["Use `saved_tensors` (AGF213)", "Suppress AGF213 on this line (# noqa)",
                          "autograd-lint: fix all (2 safe fixes)"]  # no kinds asked: all kinds
        fix, suppress, _ = actions
        assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
        fixed = apply_edits(BUGGY, fix.edit.changes[uri])
        assert "(x,) = ctx.saved_tensors\n" in fixed
        silenced = apply_edits(BUGGY, suppress.edit.changes[uri])
        assert "ctx.saved_variables  # noqa: AGF213\n" in silenced

        # The staticmethod fix inserts a decorator with the def's indentation.
        [add] = [a for a in await session.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=by_code["AGF103"].range,
                context=types.CodeActionContext(diagnostics=[by_code["AGF103"]])))
            if a.is_preferred]
        assert "    @staticmethod\n    def forward(ctx, x):" in \
            apply_edits(BUGGY, add.edit.changes[uri])

        # Apply it through the protocol: the next diagnostics drop AGF213.
        replace_all(session, uri, BUGGY, fixed, 2)
        assert {d.code for d in await session.next_diagnostics()} == {"AGF001", "AGF103"}
        replace_all(session, uri, fixed, CLEAN, 3)
        assert await session.next_diagnostics() == []

    run_session(tmp_path, body)


def test_half_typed_buffer_is_agf000_and_the_server_stays_up(tmp_path: Path) -> None:
    uri = (tmp_path / "ops.py").as_uri()
    half = BUGGY.replace("        return grad * 2\n", "        return grad * (\n")

    async def body(session: Session) -> None:
        open_document(session, uri, half)
        [syntax] = await session.next_diagnostics()
        assert syntax.code == "AGF000" and syntax.range.start.line == 11
        # Several quick edits: one debounced result, for the last text.
        replace_all(session, uri, half, half + "x = (", 2)
        replace_all(session, uri, half + "x = (", CLEAN, 3)
        assert await session.next_diagnostics() == []
        await asyncio.sleep(0.6)
        assert session.diagnostics.empty()  # the superseded change was never linted

    run_session(tmp_path, body)


def test_save_relints_and_close_clears(tmp_path: Path) -> None:
    uri = (tmp_path / "ops.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, uri, CLEAN)
        assert await session.next_diagnostics() == []
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert await session.next_diagnostics() == []
        session.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert await session.next_diagnostics() == []

    run_session(tmp_path, body)


def test_the_edited_code_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    source = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n" + BUGGY
    uri = (tmp_path / "ops.py").as_uri()
    (tmp_path / "ops.py").write_text(source)
    select_fixable(tmp_path)

    async def body(session: Session) -> None:
        open_document(session, uri, source)
        assert "AGF001" in {d.code for d in await session.next_diagnostics()}

    run_session(tmp_path, body)
    assert not marker.exists()


def test_a_bad_configuration_is_shown_once_and_the_server_stays_up(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.autograd-lint]\nselect = ["AGF999"]\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text(FIXABLE_RULES)
    bad, good = (tmp_path / "ops.py").as_uri(), (tmp_path / "sub" / "ops.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, bad, BUGGY)
        message = await asyncio.wait_for(session.messages.get(), 30)
        assert message.type == types.MessageType.Error
        assert "unknown rule code, prefix or tier 'AGF999'" in message.message
        replace_all(session, bad, BUGGY, CLEAN, 2)
        open_document(session, good, BUGGY)  # a file with a valid configuration still works
        assert "AGF001" in {d.code for d in await session.next_diagnostics()}
        assert session.messages.empty()  # the same error is not repeated

    run_session(tmp_path, body)


def test_a_buffer_sees_the_functions_of_its_project(tmp_path: Path) -> None:
    """`Cube()(x)` in the buffer is AGF105 although `Cube` is defined in
    another file of the project; that file's own defect is not reported."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "fns.py").write_text(
        "import torch\n\n\n"
        "class Cube(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        ctx.x = x\n"  # AGF001 in fns.py: not this buffer's
        "        return x ** 3\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad):\n"
        "        return grad\n")
    uri = (tmp_path / "use.py").as_uri()
    source = "from fns import Cube\n\n\ndef cube(x):\n    return Cube()(x)\n"

    async def body(session: Session) -> None:
        open_document(session, uri, source)
        diagnostics = await session.next_diagnostics()
        assert [(d.code, d.range.start.line) for d in diagnostics] == [("AGF105", 4)]

    run_session(tmp_path, body)


# -- position encodings, versions, configuration ----------------------------------
WIDE = BUGGY.replace("        ctx.x = x\n", "        s = \"héllo wörld 😀\"; y = x.data * 2\n"
                                            "        ctx.x = x\n")


def _client(encodings: list[str], document_changes: bool = False) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=encodings),
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=document_changes)))


def _apply(text: str, edits: list[types.TextEdit], unit: str) -> str:
    """Apply edits whose columns count `unit`s: bytes (utf-8) or characters (utf-32)."""
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        assert edit.range.start.line == edit.range.end.line
        line = lines[edit.range.start.line]
        if unit == "utf-8":
            raw = line.encode("utf-8")
            raw = raw[:edit.range.start.character] + edit.new_text.encode("utf-8") + \
                raw[edit.range.end.character:]
            lines[edit.range.start.line] = raw.decode("utf-8")
        else:
            lines[edit.range.start.line] = line[:edit.range.start.character] + \
                edit.new_text + line[edit.range.end.character:]
    return "\n".join(lines)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-32"])
def test_columns_and_fixes_follow_the_negotiated_encoding(tmp_path: Path, encoding: str) -> None:
    """Neovim 0.10+ offers utf-8 first: columns and fix edits must be in it."""
    select_fixable(tmp_path)
    uri = (tmp_path / "ops.py").as_uri()
    line = WIDE.splitlines()[5]
    data_at = line.index(".data")

    async def body(session: Session) -> None:
        open_document(session, uri, WIDE)
        diagnostics = await session.next_diagnostics()
        [data] = [d for d in diagnostics if d.code == "AGF008"]
        expected = len(line[:data_at].encode("utf-8")) if encoding == "utf-8" else data_at
        # The diagnostic spans `x.data`.
        assert data.range.start.character == expected - 1 and data.range.start.line == 5
        actions = await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=data.range,
            context=types.CodeActionContext(diagnostics=[data])))
        [fix] = [a for a in actions if a.is_preferred]
        fixed = _apply(WIDE, fix.edit.changes[uri], encoding)
        assert fixed.splitlines()[5] == line.replace("x.data", "x.detach()")
        [noqa] = [a for a in actions if "noqa" in a.title]
        silenced = _apply(WIDE, noqa.edit.changes[uri], encoding)
        assert silenced.splitlines()[5] == line + "  # noqa: AGF008"

    run_session(tmp_path, body, _client([encoding, "utf-16"]))


def test_fixes_during_the_debounce_use_the_new_text_and_its_version(tmp_path: Path) -> None:
    select_fixable(tmp_path)
    uri = (tmp_path / "ops.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, uri, BUGGY)
        old = {d.code: d for d in await session.next_diagnostics()}
        # Two lines inserted above; the code action comes before the debounce ends.
        moved = BUGGY.replace("import torch\n", "import torch\nimport math\nimport os\n")
        replace_all(session, uri, BUGGY, moved, 2)
        actions = await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(12, 0), end=types.Position(12, 40)),
            context=types.CodeActionContext(diagnostics=[old["AGF213"]])))
        [fix] = [a for a in actions if a.is_preferred]
        [change] = fix.edit.document_changes
        assert change.text_document.version == 2
        assert all(e.range.start.line == 12 for e in change.edits)
        assert "(x,) = ctx.saved_tensors\n" in apply_edits(moved, change.edits)

    run_session(tmp_path, body, _client(["utf-16"], document_changes=True))


def test_clients_that_drop_diagnostic_data_still_get_fixes(tmp_path: Path) -> None:
    select_fixable(tmp_path)
    uri = (tmp_path / "ops.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, uri, BUGGY)
        [rename] = [d for d in await session.next_diagnostics() if d.code == "AGF213"]
        rename.data = None
        actions = await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rename.range,
            context=types.CodeActionContext(diagnostics=[rename])))
        assert [a.title for a in actions] == ["Use `saved_tensors` (AGF213)",
                                              "Suppress AGF213 on this line (# noqa)",
                                              "autograd-lint: fix all (2 safe fixes)"]

    run_session(tmp_path, body)


def test_configuration_changes_are_read_without_a_restart(tmp_path: Path) -> None:
    uri = (tmp_path / "ops.py").as_uri()
    config = tmp_path / "pyproject.toml"
    select_fixable(tmp_path, ignore='ignore = ["AGF008"]\n')

    async def body(session: Session) -> None:
        open_document(session, uri, BUGGY)
        assert {d.code for d in await session.next_diagnostics()} == {
            "AGF001", "AGF103", "AGF213"}
        config.write_text('[tool.autograd-lint]\nselect = ["AGF103"]\n')
        replace_all(session, uri, BUGGY, BUGGY + "\n", 2)
        assert {d.code for d in await session.next_diagnostics()} == {"AGF103"}
        config.unlink()  # back to the defaults: the correctness tier, none of BUGGY's
        replace_all(session, uri, BUGGY + "\n", BUGGY, 3)
        assert {d.code for d in await session.next_diagnostics()} == set()

    run_session(tmp_path, body)


# -- a broken stream, bad positions, large projects, install instructions --------
def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


INITIALIZE = _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"capabilities": {}}})
SHUTDOWN = _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})


@pytest.mark.parametrize("frame, then_eof", [
    (b"Content-Length: abc\r\n\r\n{}", False),
    (b"Content-Length: -5\r\n\r\n{}", False),
    (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}", False),
    (b"Content-Length: 100\r\n\r\n{}", True),  # a body cut short by the end of the stream
], ids=["non-numeric", "negative", "missing", "short-body"])
def test_a_broken_stream_ends_the_server(tmp_path: Path, frame: bytes, then_eof: bool) -> None:
    """Past a frame it cannot read, no later message can be found: the server
    exits (non-zero, so the editor starts it again) instead of living on deaf."""
    proc = subprocess.Popen([sys.executable, "-m", "autograd_lint", "server"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(INITIALIZE + frame + (b"" if then_eof else SHUTDOWN))
        proc.stdin.flush()
        if then_eof:
            proc.stdin.close()
        try:
            code = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("the server lives on after a broken frame")
        assert code != 0
        assert b'"id": 1' in proc.stdout.read()  # initialize was answered: the stream was fine
        assert b"stream is broken" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


class RawServer:
    """`autograd-lint server` spoken to in hand-written JSON (lsprotocol's
    types refuse to hold what a faulty client may send)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.notifications: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(_frame({"jsonrpc": "2.0", **message}))

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = None
        while (line := await self.process.stdout.readline()).strip():
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        return json.loads(await self.process.stdout.readexactly(length))

    async def reply(self, msg_id: int) -> dict[str, Any]:
        """The reply to request `msg_id` (20 s at most), keeping the notifications."""
        async def wait() -> dict[str, Any]:
            while "method" in (message := await self.receive()) or message.get("id") != msg_id:
                self.notifications.append(message)
            return message

        return await asyncio.wait_for(wait(), 20)

    async def notification(self, method: str) -> dict[str, Any]:
        while not any(n.get("method") == method for n in self.notifications):
            self.notifications.append(await asyncio.wait_for(self.receive(), 20))
        found = next(n for n in self.notifications if n.get("method") == method)
        self.notifications.remove(found)
        return found["params"]


def run_raw(root: Path, body: Callable[[RawServer], Awaitable[None]]) -> None:
    async def main() -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "autograd_lint", "server", cwd=root,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        server = RawServer(process)
        try:
            server.send({"id": 0, "method": "initialize", "params": {"capabilities": {}}})
            await server.reply(0)
            server.send({"method": "initialized", "params": {}})
            await body(server)
            server.send({"id": 99, "method": "shutdown"})
            await server.reply(99)
            server.send({"method": "exit"})
            assert await asyncio.wait_for(process.wait(), 20) == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    asyncio.run(main())


def test_code_actions_with_negative_positions_are_answered(tmp_path: Path) -> None:
    select_fixable(tmp_path)
    uri = (tmp_path / "ops.py").as_uri()

    def code_action(msg_id: int, start: tuple[int, int], end: tuple[int, int],
                    diagnostics: list[dict[str, Any]]) -> dict[str, Any]:
        def position(at: tuple[int, int]) -> dict[str, int]:
            return {"line": at[0], "character": at[1]}

        return {"id": msg_id, "method": types.TEXT_DOCUMENT_CODE_ACTION, "params": {
            "textDocument": {"uri": uri},
            "range": {"start": position(start), "end": position(end)},
            "context": {"diagnostics": diagnostics}}}

    async def body(server: RawServer) -> None:
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": BUGGY}}})
        published = await server.notification("textDocument/publishDiagnostics")
        [rename] = [d for d in published["diagnostics"] if d["code"] == "AGF213"]
        rename["range"]["start"] = {"line": -1, "character": -4}
        rename["range"]["end"]["character"] = -1
        # Read as from the start of the file (and of the line): the fixes that apply.
        server.send(code_action(1, (-1, -3), (11, 40), [rename]))
        assert [a["title"] for a in (await server.reply(1))["result"]] == [
            "Use `saved_tensors` (AGF213)", "Suppress AGF213 on this line (# noqa)",
            "autograd-lint: fix all (2 safe fixes)"]
        server.send(code_action(2, (-5, -5), (-1, -1), []))
        # Nothing at the start: only the fix-all, which is the whole document's.
        assert [a["kind"] for a in (await server.reply(2))["result"]] == [
            "source.fixAll.autograd-lint"]
        # Params that cannot be read at all: an error, not silence.
        server.send(code_action(3, (0, 0), (2**40, 0), []))
        assert (await server.reply(3))["error"]["code"] == -32602  # invalid params
        server.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": CLEAN}]}})
        published = await server.notification("textDocument/publishDiagnostics")
        assert published["diagnostics"] == []  # and the server still works

    run_raw(tmp_path, body)


# Runs the server with each walk of a project's folders logged to argv[1].
COUNT_WALKS = """
import sys
import autograd_lint.core.files as files
from autograd_lint.cli.entry import run

log, walk = sys.argv.pop(1), files.iter_python_files


def counted(root, *args, **kwargs):
    with open(log, "a") as stream:
        stream.write(f"{root}\\n")
    return walk(root, *args, **kwargs)


files.iter_python_files = counted
sys.argv[1:] = ["server"]
run()
"""
SQUARE = ("import torch\n\n\n"
          "class Square(torch.autograd.Function):\n"
          "    @staticmethod\n"
          "    def forward(ctx, x):\n"
          "        ctx.save_for_backward(x)\n"
          "        return x * x\n\n"
          "    @staticmethod\n"
          "    def backward(ctx, grad):\n"
          "        (x,) = ctx.saved_tensors\n"
          "        return 2 * x * grad\n")


def test_typing_does_not_walk_the_project_again(tmp_path: Path) -> None:
    """The project's file list is kept while typing (and saving), however long
    the edits take; a file added or removed on disk is seen at the next lint."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    walks = tmp_path / "walks.txt"
    use = project / "use.py"
    uri = use.as_uri()
    source = "from pkg.square import Square\n\n\ndef square(x):\n    return Square()(x)\n"
    use.write_text(source)

    def walked() -> int:
        return len(walks.read_text().splitlines()) if walks.exists() else 0

    async def lint(session: Session, text: str, version: int) -> list[tuple[str, int]]:
        replace_all(session, uri, source, text, version)
        return [(d.code, d.range.start.line) for d in await session.next_diagnostics()]

    async def body(session: Session) -> None:
        open_document(session, uri, source)
        assert await session.next_diagnostics() == []  # no Square in the project yet
        assert walked() == 1
        for version in range(2, 6):  # typing, slower than any refresh period
            await asyncio.sleep(0.7)
            assert await lint(session, source + "#" * version, version) == []
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert await session.next_diagnostics() == []
        assert walked() == 1
        (project / "pkg" / "square.py").write_text(SQUARE)  # a new file: walked again
        assert await lint(session, source, 6) == [("AGF105", 4)]
        assert await lint(session, source + "\n", 7) == [("AGF105", 4)]
        assert walked() == 2
        (project / "pkg" / "square.py").unlink()
        assert await lint(session, source, 8) == []
        assert walked() == 3

    run_session(project, body, command=("-c", COUNT_WALKS, str(walks)))


def _install_commands(text: str) -> list[str]:
    """What each `pip install` in the text installs (its first requirement)."""
    return [next(group for group in match.groups() if group is not None) for match in
            re.finditer(r"""pip install\s+(?:'([^']+)'|"([^"]+)"|(\S+))""", text)]


def test_install_instructions_name_a_clone_or_the_git_url(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """autograd-lint is not on PyPI: the server's own message and the editor
    guide install the lsp extra from a clone or from its git URL, as the README."""
    from autograd_lint.cli.entry import run_server
    from autograd_lint.core.config import ConfigError

    editors = (Path(__file__).parent.parent / "docs" / "editors.md").read_text()
    server_section = editors.partition("\n## ")[0]
    monkeypatch.setitem(sys.modules, "autograd_lint.integrations.lsp", None)  # as without pygls
    with pytest.raises(ConfigError) as missing:
        run_server()
    for text in (server_section, str(missing.value)):
        installs = _install_commands(text)
        assert installs, text
        assert all("[lsp]" in spec for spec in installs), installs
        assert all(spec.startswith("./") or " @ git+" in spec for spec in installs), installs


# -- fix-all (source.fixAll, as editors run on save), hover ------------------------
# Four safe fixes (AGF103, AGF008, AGF213, AGF105) and two unsafe ones (AGF006,
# AGF101); the last line, changed by a fix, has no line break and wide characters.
FIXABLE = textwrap.dedent('''\
    import torch


    class Scale(torch.autograd.Function):
        def forward(ctx, x, factor: float):
            ctx.save_for_backward(x)
            ctx.factor = factor
            return x * x.data.sum() * factor

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_variables
            grad.mul_(ctx.factor)
            return grad * x


    def scale(x, factor):
        return Scale()(x, factor)  # héllo wörld 😀''')
FIX_ALL = "source.fixAll.autograd-lint"


def _fixed_by_the_command_line(folder: Path, source: str) -> str:
    """The file after `autograd-lint check --fix` in a project of its own."""
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'p'\n\n" + FIXABLE_RULES)
    (folder / "ops.py").write_text(source, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--fix", "ops.py"],
                   cwd=folder, capture_output=True, check=False)
    return (folder / "ops.py").read_text(encoding="utf-8")


async def _actions(session: Session, uri: str,
                   only: list[str] | None) -> list[types.CodeAction]:
    return list(await session.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[], only=only))) or [])


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_fix_all_changes_the_text_as_check_fix_does(tmp_path: Path, encoding: str) -> None:
    expected = _fixed_by_the_command_line(tmp_path / "cli", FIXABLE)
    assert expected != FIXABLE and "return Scale.apply(x, factor)" in expected
    assert "grad.clone()" not in expected and ", None" not in expected  # unsafe: never
    project = tmp_path / "editor"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n\n" + FIXABLE_RULES)
    uri = (project / "ops.py").as_uri()

    async def body(session: Session) -> None:
        options = session.capabilities.code_action_provider
        assert isinstance(options, types.CodeActionOptions)
        assert FIX_ALL in (options.code_action_kinds or [])
        open_document(session, uri, FIXABLE)
        await session.next_diagnostics()
        [fix_all] = await _actions(session, uri, ["source.fixAll"])
        assert fix_all.kind == FIX_ALL
        assert fix_all.title == "autograd-lint: fix all (4 safe fixes)"
        [change] = fix_all.edit.document_changes
        assert change.text_document.version == 1
        assert apply_edits(FIXABLE, change.edits, encoding) == expected

    run_session(project, body, _client([encoding], document_changes=True))


def test_fix_all_is_offered_for_the_kinds_that_contain_it(tmp_path: Path) -> None:
    uri = (tmp_path / "ops.py").as_uri()

    async def kinds(session: Session, only: list[str] | None) -> list[str]:
        return [str(action.kind) for action in await _actions(session, uri, only)]

    async def body(session: Session) -> None:
        open_document(session, uri, FIXABLE)
        await session.next_diagnostics()
        for only in (None, ["source"], ["source.fixAll"], [FIX_ALL], ["quickfix", "source"]):
            assert FIX_ALL in await kinds(session, only), only
        for only in (["quickfix"], ["source.fixAll.ruff"], ["source.organizeImports"],
                     ["source.fix"], ["refactor"]):
            assert FIX_ALL not in await kinds(session, only), only
        # Asking for fix-all only: no quick fix comes with it.
        line = types.Range(start=types.Position(11, 0), end=types.Position(11, 40))
        actions = await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=line,
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"])))
        assert [a.kind for a in actions] == [FIX_ALL]

    run_session(tmp_path, body)


def test_fix_all_skips_unsafe_fixes_and_offers_nothing_without_safe_ones(
        tmp_path: Path) -> None:
    """Only AGF006 and AGF101 are left: both fixes are unsafe."""
    only_unsafe = FIXABLE.replace("    def forward", "    @staticmethod\n    def forward") \
                         .replace("x.data", "x.detach()") \
                         .replace("saved_variables", "saved_tensors") \
                         .replace("Scale()(x, factor)", "Scale.apply(x, factor)")
    uri = (tmp_path / "ops.py").as_uri()
    (tmp_path / "pyproject.toml").write_text(  # AGF006 is pedantic
        '[tool.autograd-lint]\nextend-select = ["AGF006"]\n')

    async def body(session: Session) -> None:
        open_document(session, uri, only_unsafe)
        diagnostics = await session.next_diagnostics()
        assert {d.code for d in diagnostics} == {"AGF006", "AGF101"}
        [clone] = [d for d in diagnostics if d.code == "AGF006"]

        async def titles(only: list[str] | None) -> list[str]:
            return [a.title for a in await session.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), range=clone.range,
                    context=types.CodeActionContext(diagnostics=[clone], only=only)))]

        assert await titles(["source.fixAll"]) == []
        # The unsafe fix is still there, as a quick fix of its own.
        assert await titles(None) == ["Clone `grad` before changing it (AGF006) [unsafe]",
                                      "Suppress AGF006 on this line (# noqa)"]

    run_session(tmp_path, body)


SUPPRESSED = ("# autograd-lint: noqa: AGF008\n" +
              BUGGY.replace("        ctx.x = x\n", "        ctx.x = x  # noqa: AGF001, E501\n")
              + "\n\ny = Scale()(1)  # noqa: AGF105\n")


def test_hover_shows_the_rule_of_a_finding_and_of_a_noqa_code(tmp_path: Path) -> None:
    select_fixable(tmp_path)
    uri = (tmp_path / "ops.py").as_uri()
    lines = SUPPRESSED.splitlines()

    async def hover(session: Session, line: int, character: int) -> types.Hover | None:
        return await session.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line, character)))

    async def shown(session: Session, line: int, character: int) -> str:
        found = await hover(session, line, character)
        assert found is not None, (line, character)
        assert isinstance(found.contents, types.MarkupContent)
        assert found.contents.kind == types.MarkupKind.Markdown
        return found.contents.value

    async def body(session: Session) -> None:
        assert session.capabilities.hover_provider
        open_document(session, uri, SUPPRESSED)
        by_code = {d.code: d for d in await session.next_diagnostics()}
        assert set(by_code) == {"AGF103", "AGF213"}
        rename = by_code["AGF213"].range
        text = await shown(session, rename.start.line, rename.start.character + 3)
        rule = RULES["AGF213"]
        assert f"**AGF213** `{rule.name}`" in text and rule.summary in text
        assert f"]({rule.url})" in text
        assert (await hover(session, rename.start.line, rename.start.character + 3)).range == rename
        # A code in the list of a noqa comment, and in the file-level form.
        leak = lines.index("        ctx.x = x  # noqa: AGF001, E501")
        text = await shown(session, leak, lines[leak].index("AGF001") + 2)
        assert RULES["AGF001"].summary in text and "AGF213" not in text
        assert (await hover(session, leak, lines[leak].index("AGF001"))).range == types.Range(
            start=types.Position(leak, lines[leak].index("AGF001")),
            end=types.Position(leak, lines[leak].index("AGF001") + 6))
        assert RULES["AGF008"].summary in await shown(session, 0, lines[0].index("AGF008"))
        last = len(lines) - 1
        assert RULES["AGF105"].summary in await shown(session, last, lines[last].index("AGF105"))
        # Nothing elsewhere: another linter's code, the comment's words, plain code.
        assert await hover(session, leak, lines[leak].index("E501") + 1) is None
        assert await hover(session, leak, lines[leak].index("noqa")) is None
        assert await hover(session, 0, 2) is None
        assert await hover(session, 1, 3) is None  # `import torch`

    run_session(tmp_path, body)


# -- notebooks and other languages; a lint that fails -----------------------------
def _notebook_json(*cells: str) -> str:
    """A notebook (nbformat 4, nbformat's layout) of these code cells."""
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}",
                                  "metadata": {}, "outputs": [],
                                  "source": cell.splitlines(keepends=True)}
                                 for i, cell in enumerate(cells)],
                       "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                                   "display_name": "Python 3"}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_notebooks_and_other_languages_are_left_alone(tmp_path: Path) -> None:
    """A notebook's text is JSON and its cells' lines are not its lines:
    diagnostics, quick fixes, noqa edits and fix-all made at the Python
    view's lines would break it. The server publishes nothing for it (nor
    for a cell of one, nor for a document in another language) and offers
    no code action; the command line checks notebooks."""
    select_fixable(tmp_path)
    notebook = tmp_path / "nb.ipynb"
    text = _notebook_json(BUGGY, "y = Scale()(1)")
    notebook.write_text(text)
    cell = f"vscode-notebook-cell:{notebook.as_posix()}#W0sZmlsZQ%3D%3D"
    documents = [(notebook.as_uri(), "python", text),  # a client that attaches to any file
                 ((tmp_path / "other.ipynb").as_uri(), "json", text),
                 (cell, "python", BUGGY),
                 ((tmp_path / "notes.md").as_uri(), "markdown", BUGGY)]

    async def body(session: Session) -> None:
        for version, (uri, language, content) in enumerate(documents, start=1):
            session.client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language,
                                                     version=version, text=content)))
            published = await asyncio.wait_for(session.diagnostics.get(), 30)
            assert (published.uri, list(published.diagnostics)) == (uri, []), language
            assert await _actions(session, uri, None) == []
            assert await _actions(session, uri, ["source.fixAll"]) == []
            assert await session.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(5, 9))) is None
        replace_all(session, notebook.as_uri(), text, text.replace("Scale()", "Scale ()"), 9)
        assert await session.next_diagnostics() == []
        # A Python file beside them is linted as ever.
        open_document(session, (tmp_path / "ops.py").as_uri(), BUGGY)
        assert "AGF103" in {d.code for d in await session.next_diagnostics()}

    run_session(tmp_path, body)


# Runs the server with a failure planted: argv[1] says which.
PLANTED_FAILURE = """
import sys
import autograd_lint.engine.context as context
import autograd_lint.engine.lint as engine
from autograd_lint.cli.entry import run

which, lint_inputs = sys.argv.pop(1), engine.lint_inputs
failed = []


def walk_fails(root, excluded):  # every walk of the project (an unreadable tree)
    raise PermissionError(13, "Permission denied", root)


def fails_once(*args, **kwargs):  # the first lint only
    if not failed:
        failed.append(True)
        raise RuntimeError("a planted failure")
    return lint_inputs(*args, **kwargs)


if which == "walk":
    context.project_files = walk_fails
else:
    engine.lint_inputs = fails_once
sys.argv[1:] = ["server"]
run()
"""


@pytest.mark.parametrize("which", ["walk", "once"])
def test_a_lint_that_fails_never_silences_the_server(tmp_path: Path, which: str) -> None:
    """A lint that raises (every walk of the project, or the first lint) is
    logged; the buffer still gets its own findings, and every later change
    is linted and published."""
    select_fixable(tmp_path)
    uri = (tmp_path / "ops.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, uri, BUGGY)
        assert {d.code for d in await session.next_diagnostics(15)} >= {"AGF103", "AGF213"}
        replace_all(session, uri, BUGGY, CLEAN, 2)
        assert await session.next_diagnostics(15) == []
        replace_all(session, uri, CLEAN, BUGGY, 3)
        assert {d.code for d in await session.next_diagnostics(15)} >= {"AGF103", "AGF213"}
        [fix_all] = await _actions(session, uri, ["source.fixAll"])
        assert fix_all.title == "autograd-lint: fix all (2 safe fixes)"

    run_session(tmp_path, body, command=("-c", PLANTED_FAILURE, which))


def _unreadable_project(root: Path) -> Path:
    """A project with a folder no one may list (mode 000) and a Function in a
    readable file; the buffer's file uses it. Returns the locked folder."""
    select_fixable(root)
    (root / "fns.py").write_text(SQUARE)
    locked = root / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(BUGGY)
    locked.chmod(0)
    return locked


def _cannot_read_prefix(locked: Path) -> list[str]:
    """A command prefix under which `locked` cannot be read: none for a
    user; for root (who reads everything), setpriv dropping the capabilities
    that let it. Skips the test where there is no such way."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads every folder, and setpriv is missing")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    listing = "import os, sys; os.listdir(sys.argv[1])"
    probe = subprocess.run([*prefix, sys.executable, "-c", listing, str(locked)],
                           capture_output=True, text=True, check=False)
    if "PermissionError" not in probe.stderr:
        pytest.skip("root reads every folder, and setpriv cannot drop that here")
    return prefix


USE_SQUARE = "from fns import Square\n\n\ndef square(x):\n    return Square()(x)\n"


def test_an_unreadable_folder_never_silences_the_server(tmp_path: Path) -> None:
    """The language server's part: whatever reading the project raises, the
    buffer is linted and published, on open and on every change."""
    locked = _unreadable_project(tmp_path)
    prefix = _cannot_read_prefix(locked)
    uri = (tmp_path / "ops.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, uri, BUGGY)
        assert {d.code for d in await session.next_diagnostics(15)} >= {"AGF103", "AGF213"}
        replace_all(session, uri, BUGGY, CLEAN, 2)
        assert await session.next_diagnostics(15) == []

    try:
        run_session(tmp_path, body, prefix=prefix)
    finally:
        locked.chmod(0o755)


def test_an_unreadable_folder_leaves_the_rest_of_the_project_read(tmp_path: Path) -> None:
    """The file-reading layer's part (files.py, config.py): the folder is
    skipped, and the Functions of the project's readable files are known."""
    locked = _unreadable_project(tmp_path)
    prefix = _cannot_read_prefix(locked)
    uri = (tmp_path / "use.py").as_uri()

    async def body(session: Session) -> None:
        open_document(session, uri, USE_SQUARE)
        diagnostics = await session.next_diagnostics(15)
        assert [(d.code, d.range.start.line) for d in diagnostics] == [("AGF105", 4)]

    try:
        run_session(tmp_path, body, prefix=prefix)
    finally:
        locked.chmod(0o755)
