"""Helpers for adopting the linter on an existing codebase, as ruff has
them: --add-noqa, the unused-suppression rule AGF901 and its fix,
--statistics, --show-files, --show-settings and --watch."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main

from .helpers import PEDANTIC_AGF001, check_isolated

# BUGGY's findings are AGF001's, a pedantic rule: the project turns it on.
WITH_AGF001 = ("--extend-select", "AGF001")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return check_isolated(capsys, *WITH_AGF001, *args)

BUGGY = textwrap.dedent('''\
    import torch


    class Leaky(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.x = x  # noqa: E501
            ctx.y = x; ctx.v = x  # several findings, one line
            note = """a string
            that ends here"""; ctx.z = x
            return x * w

        @staticmethod
        def backward(ctx, grad):
            return grad * w, None  # noqa
    ''')


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ops.py").write_text(BUGGY, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(PEDANTIC_AGF001, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- --add-noqa ----------------------------------------------------------------
def test_add_noqa_silences_every_finding_once(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "ops.py", "--format", "json")
    before = json.loads(out)
    assert code == 1 and {(f["line"], f["code"]) for f in before} == {
        (7, "AGF001"), (8, "AGF001"), (10, "AGF001")} and len(before) == 4
    code, out, err = run(capsys, "ops.py", "--add-noqa")
    assert code == 0 and out == ""
    lines = (project / "ops.py").read_text(encoding="utf-8").splitlines()
    # Merged into the line's comment; one comment for two findings; the line
    # that ends a string takes a comment, as any line the tokenizer ends.
    assert lines[6] == "        ctx.x = x  # noqa: E501, AGF001"
    assert lines[7] == "        ctx.y = x; ctx.v = x  # several findings, one line  # noqa: AGF001"
    assert lines[9].endswith("that ends here\"\"\"; ctx.z = x  # noqa: AGF001")
    assert lines[14] == "        return grad * w, None  # noqa"  # bare: untouched
    assert "Added 4 noqa directives." in err
    code, out, _ = run(capsys, "ops.py")
    assert code == 0
    text = (project / "ops.py").read_text(encoding="utf-8")
    code, _, err = run(capsys, "ops.py", "--add-noqa")
    assert code == 0 and "Added 0 noqa directives." in err
    assert (project / "ops.py").read_text(encoding="utf-8") == text  # idempotent


def test_add_noqa_on_mixed_line_endings_silences_each_line_once(project: Path,
                                                                  capsys) -> None:
    """Lines ended by "\\n", "\\r\\n" and a lone "\\r" in one file: every
    finding's comment goes on its own line, and a second run adds none."""
    lines = BUGGY.splitlines()
    endings = ["\n", "\r", "\r\n"]
    (project / "ops.py").write_bytes("".join(
        line + endings[number % 3] for number, line in enumerate(lines)).encode("utf-8"))
    code, _, _ = run(capsys, "ops.py", "--add-noqa")
    assert code == 0
    code, out, _ = run(capsys, "ops.py", "--format", "json")
    assert code == 0 and json.loads(out) == []
    text = (project / "ops.py").read_bytes()
    assert text.count(b"AGF001") == 3  # one comment per line with findings
    code, _, err = run(capsys, "ops.py", "--add-noqa")
    assert "Added 0 noqa directives." in err and (project / "ops.py").read_bytes() == text


def test_add_noqa_skips_a_line_inside_a_string(project: Path, capsys) -> None:
    (project / "ops.py").write_text(textwrap.dedent('''\
        import torch


        class Leaky(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x = x; doc = """begins here
                and ends here"""
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad
        '''), encoding="utf-8")
    before = (project / "ops.py").read_text(encoding="utf-8")
    code, _, err = run(capsys, "ops.py", "--add-noqa")
    assert code == 0 and "Added 0 noqa directives." in err
    assert "ops.py:7: AGF001 not silenced: no comment can be written there" in err
    assert (project / "ops.py").read_text(encoding="utf-8") == before


def test_add_noqa_refuses_what_it_cannot_combine_with(project: Path, capsys) -> None:
    code, _, err = run(capsys, "ops.py", "--add-noqa", "--fix")
    assert code == 2 and err.startswith("autograd-lint: error: --add-noqa cannot be combined")


# -- AGF901 --------------------------------------------------------------------
def test_unused_noqa_codes_are_reported_and_removed_by_fix(project: Path, capsys) -> None:
    (project / "ops.py").write_text(textwrap.dedent('''\
        import torch
        # autograd-lint: noqa: AGF008


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)  # noqa: E501, AGF001
                ctx.w = w  # noqa: AGF001
                return x * w  # noqa: AGF002  # type: ignore[operator]

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad * w, grad * x  # noqa: AGD001, AGF301, B006
        '''), encoding="utf-8")
    code, out, _ = run(capsys, "ops.py", "--extend-select", "AGF901", "--format", "json")
    # AGF008 (pedantic) is not selected: its code is not judged.
    assert [(f["line"], f["code"]) for f in json.loads(out)] == [(8, "AGF901"), (10, "AGF901")]
    code, out, _ = run(capsys, "ops.py", "--extend-select", "AGF901,AGF008", "--format", "json")
    found = json.loads(out)
    assert code == 1 and [(f["line"], f["code"]) for f in found] == [
        (2, "AGF901"), (8, "AGF901"), (10, "AGF901")]
    assert all(f["fix"]["applicability"] == "safe" for f in found)
    # Off by default: an info rule.
    assert run(capsys, "ops.py")[0] == 0
    # --add-noqa never silences it: its fix removes the stale code instead.
    before = (project / "ops.py").read_text(encoding="utf-8")
    assert run(capsys, "ops.py", "--extend-select", "AGF901", "--add-noqa")[0] == 0
    assert (project / "ops.py").read_text(encoding="utf-8") == before
    code, _, _ = run(capsys, "ops.py", "--extend-select", "AGF901,AGF008", "--fix")
    assert code == 0
    assert (project / "ops.py").read_text(encoding="utf-8").splitlines()[1:10] == [
        "",
        "",
        "",
        "class Scale(torch.autograd.Function):",
        "    @staticmethod",
        "    def forward(ctx, x, w):",
        "        ctx.save_for_backward(x, w)  # noqa: E501",
        "        ctx.w = w  # noqa: AGF001",
        "        return x * w  # type: ignore[operator]",
    ]


def test_unused_noqa_ignores_codes_of_rules_not_selected(project: Path, capsys) -> None:
    (project / "ops.py").write_text(textwrap.dedent('''\
        import torch


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2  # noqa: AGF001

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''), encoding="utf-8")
    code, _, _ = check_isolated(capsys, "ops.py", "--select", "AGF1,AGF901")
    assert code == 0  # AGF001 is not selected: its code is not judged
    code, _, _ = check_isolated(capsys, "ops.py", "--extend-select", "AGF901")
    assert code == 0  # nor when it is off by default (pedantic)
    code, out, _ = check_isolated(capsys, "ops.py", "--extend-select", "AGF901,AGF001")
    assert code == 1 and "unused `noqa` code AGF001" in out


# -- --statistics, --show-files, --show-settings ------------------------------------
def test_statistics_mark_what_fix_can_fix_and_count(project: Path, capsys) -> None:
    (project / "fixable.py").write_text(textwrap.dedent('''\
        import torch


        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x ** 3

            @staticmethod
            def backward(ctx, grad):
                return 3 * grad


        def cube(x):
            return Cube()(x) + Cube()(x)
        '''), encoding="utf-8")
    code, out, _ = run(capsys, "ops.py", "fixable.py", "--statistics")
    assert code == 1
    assert out.splitlines() == [
        "4\tAGF001\t[ ] ctx-tensor-attribute",
        "2\tAGF105\t[*] function-instantiated",
        "Found 6 findings (6 errors) in 2 files.",
        "[*] 2 fixable with `--fix`.",
    ]
    _, out, _ = run(capsys, "ops.py", "fixable.py", "--statistics", "--format", "json")
    assert {r["code"]: (r["fixable"], r["fixable_count"]) for r in json.loads(out)} == {
        "AGF001": (False, 0), "AGF105": (True, 2)}


def test_show_files_lists_what_would_be_checked(project: Path, capsys) -> None:
    (project / "build").mkdir()
    (project / "build" / "copy.py").write_text(BUGGY, encoding="utf-8")
    (project / "pkg").mkdir()
    (project / "pkg" / "util.py").write_text("x = 1\n", encoding="utf-8")
    code, out, _ = run(capsys, "--show-files", ".")
    assert code == 0 and out.splitlines() == ["ops.py", "pkg/util.py"]


def test_show_settings_names_the_configuration_and_rules(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.autograd-lint]
        extend-select = ["AGF901"]
        extend-exclude = ["generated"]
        [tool.autograd-lint.per-file-ignores]
        "ops.py" = ["AGF001"]
        '''), encoding="utf-8")
    code = main(["check", "--show-settings", "ops.py"])
    out = capsys.readouterr().out
    settings = dict(line.split(": ", 1) for line in out.splitlines())
    assert code == 0
    assert settings["Settings path"] == str(project / "pyproject.toml")
    assert "AGF901" in settings["select"].split(", ")
    assert "AGF001" not in settings["select"].split(", ")
    assert settings["per-file-ignores here"] == "AGF001"
    assert settings["extend-exclude"] == "generated"
    assert settings["select with --dynamic"].startswith("AGD001")


# -- --watch ---------------------------------------------------------------------
def interruptible() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A test run started in
    the background of a script (`.ci/run &`) ignores SIGINT, and an ignored
    signal stays ignored in every program it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)



def test_watch_checks_again_after_a_change_and_stops_on_ctrl_c(project: Path) -> None:
    watcher = subprocess.Popen(
        [sys.executable, "-m", "autograd_lint", "check", "--no-cache", "--watch", "."],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=interruptible)
    try:
        time.sleep(3)  # the first run
        (project / "ops.py").write_text("x = 1\n", encoding="utf-8")
        time.sleep(3)  # seen within a poll, then settled
        # A configuration broken while editing is said; watching goes on.
        (project / "pyproject.toml").write_text(
            '[tool.autograd-lint]\nselect = ["NOPE"]\n', encoding="utf-8")
        time.sleep(3)
        assert watcher.poll() is None
    finally:
        watcher.send_signal(signal.SIGINT)
        out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, err
    first, _, second = out.partition("File change detected...")
    assert "Starting the linter in watch mode" in first and "AGF001" in first
    assert second and "All checks passed!" in second and "AGF001" not in second
    assert out.count("File change detected...") == 2
    assert "autograd-lint: error:" in err and "NOPE" in err
