"""docs/editors.md's Neovim snippets, run in a headless Neovim against the
real language server (where `nvim` is installed; Debian ships 0.7)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NVIM = shutil.which("nvim")

BUGGY = textwrap.dedent('''\
    import torch


    class Leaky(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x  # héllo wörld 😀
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    ''')

# Run after start-up, in the opened file: wait for diagnostics, write them, quit.
HARNESS = '''
vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 100)
local out = io.open({output!r}, "w")
for _, d in ipairs(vim.diagnostic.get(0)) do
  out:write(d.lnum .. ":" .. d.col .. ":" .. d.message:sub(1, 40) .. "\\n")
end
out:close()
vim.cmd("qa!")
'''


def _nvim_version() -> tuple[int, int]:
    assert NVIM is not None
    first = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout
    major, minor = re.search(r"NVIM v(\d+)\.(\d+)", first).groups()  # type: ignore[union-attr]
    return int(major), int(minor)


def _snippets() -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """(code, lowest version, highest version) of each Lua block, from the
    sentence before it ("Neovim 0.11 and later", "Neovim 0.7 to 0.10")."""
    text = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"Neovim (\d+)\.(\d+) (?:and later|to (\d+)\.(\d+))[^`]*```lua\n"
                             r"(.*?)```", text, re.S):
        low = (int(match.group(1)), int(match.group(2)))
        high = (int(match.group(3)), int(match.group(4))) if match.group(3) else (99, 0)
        found.append((match.group(5), low, high))
    return found


def test_the_guide_has_a_snippet_for_old_and_new_neovim() -> None:
    ranges = [(low, high) for _, low, high in _snippets()]
    assert ((0, 11), (99, 0)) in ranges and ((0, 7), (0, 10)) in ranges


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install neovim)")
def test_neovim_snippet_shows_the_servers_diagnostics(tmp_path: Path) -> None:
    version = _nvim_version()
    runnable = [code for code, low, high in _snippets() if low <= version <= high]
    assert runnable, f"no snippet in docs/editors.md covers Neovim {version}"
    (tmp_path / "pyproject.toml").write_text(  # BUGGY's AGF001 is pedantic: turned on
        "[project]\nname = 'demo'\n\n[tool.autograd-lint]\nextend-select = ['AGF001']\n")
    source = tmp_path / "ops.py"
    source.write_text(BUGGY, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
           f"{os.environ.get('PATH', '')}", "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    for index, code in enumerate(runnable):
        output = tmp_path / f"diagnostics{index}.txt"
        init = tmp_path / f"init{index}.lua"
        init.write_text(code)
        harness = tmp_path / f"harness{index}.lua"
        harness.write_text(HARNESS.format(output=str(output)))
        proc = subprocess.run([NVIM, "--headless", "-n", "-i", "NONE", "-u", str(init),
                               str(source), "-c", f"luafile {harness}"],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert output.exists(), proc.stdout + proc.stderr
        # Line 7, column 8 (0-based): `ctx.x`, before the non-ASCII comment.
        assert output.read_text().splitlines() == ["6:8:`ctx.x` holds input `x` as a plain attri"]
