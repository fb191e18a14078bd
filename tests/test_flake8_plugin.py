"""The flake8 plugin, through real `flake8` runs."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from autograd_lint.core.registry import all_rules
from autograd_lint.integrations.flake8_plugin import DEFAULT_IGNORED

from .helpers import leaky_function

BUGGY = "import torch\n\n\n" + leaky_function("Leaky") + textwrap.dedent('''\


    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            grad.mul_(2)
            return grad.data


    def scaled(x):
        return Scaled()(x)
    ''')
# BUGGY's findings: AGF105 (correctness, on by default) at line 25; AGF001 at 7:9
# and AGF006 at 20 are pedantic (off by default): the tests turn them on.
PEDANTIC = ("--extend-select", "AGF001,AGF006")


def flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flake8", *args], cwd=cwd,
                          capture_output=True, text=True)


def reported(proc: subprocess.CompletedProcess[str]) -> list[tuple[int, int, str]]:
    """(line, column, code) of each AGF line flake8 printed."""
    rows = []
    for line in proc.stdout.splitlines():
        _, row, column, rest = line.split(":", 3)
        code = rest.split()[0]
        if code.startswith("AGF"):
            rows.append((int(row), int(column), code))
    return rows


def test_findings_match_the_cli_with_flake8_columns(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BUGGY)
    proc = flake8(tmp_path, "--select", "AGF", *PEDANTIC, "ops.py")
    assert proc.returncode == 1, proc.stderr
    # `--select AGF` is every rule but the opt-in ones, as `--select AGF` is in
    # the command line; `--extend-select` names opt-in ones in both.
    cli = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--format", "json",
                          "--isolated", "--no-cache", "--select", "AGF", *PEDANTIC, "ops.py"],
                         cwd=tmp_path, capture_output=True, text=True)
    expected = [(f["line"], f["column"] + 1, f["code"]) for f in json.loads(cli.stdout)]
    assert sorted(reported(proc)) == sorted(expected)
    assert {code for _, _, code in expected} == {"AGF001", "AGF006", "AGF105"}
    # flake8's 1-based column points at `ctx.x` (5 spaces of indentation in the file).
    assert (7, 9, "AGF001") in reported(proc)
    assert "ops.py:7:9: AGF001 `ctx.x` holds" in proc.stdout


def test_select_narrows_to_one_code(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BUGGY)
    proc = flake8(tmp_path, "--select", "AGF006", "ops.py")
    assert [code for _, _, code in reported(proc)] == ["AGF006"]


def test_noqa_is_flake8s(tmp_path: Path) -> None:
    source = BUGGY.replace("ctx.x = x", "ctx.x = x  # noqa: AGF001") \
                  .replace("grad.mul_(2)", "grad.mul_(2)  # noqa: E501")
    (tmp_path / "ops.py").write_text(source)
    codes = [code for _, _, code in reported(flake8(tmp_path, "--select", "AGF", *PEDANTIC,
                                                    "ops.py"))]
    assert "AGF001" not in codes
    assert "AGF006" in codes  # a noqa for another code leaves it
    (tmp_path / "ops.py").write_text("# autograd-lint: noqa\n" + BUGGY)
    assert reported(flake8(tmp_path, "--select", "AGF", *PEDANTIC, "ops.py")) == []


def test_flake8_configuration_applies(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BUGGY)
    (tmp_path / "setup.cfg").write_text(
        "[flake8]\nselect = AGF\nextend-select = AGF001,AGF006\n"
        "extend-ignore = AGF008,AGF204,AGF3\nper-file-ignores =\n"
        "    legacy/*.py: AGF\n")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(BUGGY)
    proc = flake8(tmp_path, ".")
    codes = sorted(code for _, _, code in reported(proc))
    assert codes == ["AGF001", "AGF006", "AGF105"], proc.stdout
    assert "legacy/" not in proc.stdout


def test_info_rules_are_ignored_until_selected(tmp_path: Path) -> None:
    assert set(DEFAULT_IGNORED) == {r.code for r in all_rules() if not r.default}
    (tmp_path / "ops.py").write_text(BUGGY)
    quiet = flake8(tmp_path, "ops.py")
    assert "AGF303" not in quiet.stdout and "AGF001" not in quiet.stdout
    assert "AGF105" in quiet.stdout
    # Prefixes, as in the documented commands, keep them off.
    for selectors in (("--extend-select", "AGF"), ("--select", "AGF"),
                      ("--extend-select", "AGF0,AGF1,AGF2,AGF3")):
        assert "AGF303" not in flake8(tmp_path, *selectors, "ops.py").stdout
    loud = flake8(tmp_path, "--extend-select", "AGF303", "ops.py")
    assert "AGF303" in loud.stdout
    listed = flake8(tmp_path, "--select", "E9,AGF1,AGF303", "ops.py")
    assert "AGF303" in listed.stdout and "AGF105" in listed.stdout


def test_syntax_errors_are_flake8s_e999_only(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("class Broken(torch.autograd.Function:\n    pass\n")
    proc = flake8(tmp_path, "broken.py")
    assert "E999" in proc.stdout and "AGF" not in proc.stdout


def test_registered_under_the_agf_prefix() -> None:
    from importlib.metadata import entry_points

    [entry] = [e for e in entry_points(group="flake8.extension") if e.name == "AGF"]
    assert entry.value == "autograd_lint.flake8_plugin:Flake8Checker"


def test_a_forged_op_name_reaches_flake8_escaped(tmp_path: Path) -> None:
    """Text from the code (an op's name) never forges a line or a terminal
    escape in flake8's output."""
    (tmp_path / "ops.py").write_text(
        "import torch\n\n\n@torch.library.custom_op(\n"
        '    "ns::x\\n::error file=README.md::forged\\x1b[2J", mutates_args=())\n'
        "def scale(x: torch.Tensor) -> torch.Tensor:\n    x.mul_(2)\n    return x.clone()\n")
    proc = flake8(tmp_path, "--select", "AGF403", "ops.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("\n") == 1 and "\x1b" not in proc.stdout
    assert "ns::x\\n::error file=README.md::forged\\x1b[2J" in proc.stdout
