"""The `autograd-lint` command line: flags, formats, exit codes, configuration."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli import main

LEAKY = textwrap.dedent('''\
    import torch


    class Leaky(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k=2):
            ctx.y = x.exp()
            ctx.save_for_backward(x, k)
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            return g * ctx.y.data
    ''')
# Findings in LEAKY: AGF001 line 7, AGF002 line 8, AGF101 line 13, AGF008 line 13.
CLEAN = textwrap.dedent('''\
    import torch


    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
    ''')


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small project: one buggy module, one clean one, and noise to skip."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "leaky.py").write_text(LEAKY)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg" / "notes.txt").write_text(LEAKY)
    for skipped in (".git", ".venv", "build", "node_modules", "__pycache__"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "leaky.py").write_text(LEAKY)
    (tmp_path / "myenv").mkdir()
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "myenv" / "leaky.py").write_text(LEAKY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_text_output_lines_and_summary(tree: Path, capsys) -> None:
    code, out, err = run(capsys, "check", "pkg/leaky.py")
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("pkg/leaky.py:7:9: AGF001 [ctx-tensor-attribute] `ctx.y`")
    assert any(line.startswith("pkg/leaky.py:8:34: AGF002 [save-non-tensor]") for line in lines)
    assert lines[-2] == "Found 4 findings (2 errors, 2 warnings) in 1 file."
    assert lines[-1] == "[*] 1 fixable with `--fix` (1 more with `--fix --unsafe-fixes`)."


def test_clean_file_exits_zero(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "pkg/clean.py")
    assert code == 0
    assert out.strip() == "All checks passed! (1 file checked)"


def test_directory_walk_skips_vcs_venvs_and_build_dirs(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", ".", "--format", "json", "--ignore", "AGF301")
    assert code == 1
    paths = {Path(f["path"]).as_posix() for f in json.loads(out)}
    assert paths == {"pkg/leaky.py"}


def test_default_path_is_current_directory(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--format", "json", "--ignore", "AGF301")
    assert code == 1
    assert {Path(f["path"]).as_posix() for f in json.loads(out)} == {"pkg/leaky.py"}


def test_bare_paths_mean_check(tree: Path, capsys) -> None:
    assert run(capsys, "pkg/clean.py")[0] == 0
    assert run(capsys, "pkg")[0] == 1


def test_json_output_schema(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "pkg/leaky.py", "--format", "json")
    findings = json.loads(out)
    assert code == 1 and len(findings) == 4
    first = findings[0]
    assert list(first) == ["path", "line", "column", "end_line", "end_column", "code", "name",
                           "severity", "message", "function", "fix"]
    assert (first["line"], first["column"], first["code"]) == (7, 8, "AGF001")
    assert first["end_line"] == 7 and first["end_column"] == len("        ctx.y = x.exp()")
    assert first["function"] == "Leaky" and first["severity"] == "warning"
    assert [f["line"] for f in findings] == sorted(f["line"] for f in findings)


def test_exclude_and_extend_exclude(tree: Path, capsys) -> None:
    (tree / "tests").mkdir()
    (tree / "tests" / "test_leaky.py").write_text(LEAKY)
    _, out, _ = run(capsys, "check", ".", "--format", "json", "--extend-exclude", "tests")
    assert {Path(f["path"]).parts[0] for f in json.loads(out)} == {"pkg"}
    _, out, _ = run(capsys, "check", ".", "--format", "json", "--exclude", "pkg/*.py")
    assert {Path(f["path"]).parts[0] for f in json.loads(out)} == {"tests"}


def test_explicit_files_are_checked_unless_force_exclude(tree: Path, capsys) -> None:
    assert run(capsys, "check", "pkg/leaky.py", "--exclude", "pkg")[0] == 1
    code, out, _ = run(capsys, "check", "pkg/leaky.py", "--exclude", "pkg", "--force-exclude")
    assert code == 0 and "0 files checked" in out


@pytest.mark.parametrize(("args", "expected"), [
    (["--select", "AGF001"], {"AGF001"}),
    (["--select", "AGF0"], {"AGF001", "AGF002", "AGF008"}),
    (["--select", "AGF001,AGF101"], {"AGF001", "AGF101"}),
    (["--select", "AGF001", "--select", "AGF101"], {"AGF001", "AGF101"}),
    (["--ignore", "AGF0"], {"AGF101"}),
    (["--ignore", "AGF00", "--extend-select", "AGF002"], {"AGF002", "AGF101"}),
    (["--select", "ALL", "--ignore", "AGF1,AGF3"], {"AGF001", "AGF002", "AGF008"}),
    (["--select", "AGF101", "--extend-select", "AGF008"], {"AGF008", "AGF101"}),
    (["--select", "agf001"], {"AGF001"}),
])
def test_rule_selection(tree: Path, capsys, args: list[str], expected: set[str]) -> None:
    _, out, _ = run(capsys, "check", "pkg/leaky.py", "--format", "json", *args)
    assert {f["code"] for f in json.loads(out)} == expected


@pytest.mark.parametrize("args", [
    ["--select", "AGF999"], ["--ignore", "XYZ"], ["--extend-select", "E501"],
    ["--format", "xml"], ["--no-such-flag"],
])
def test_usage_errors_are_one_line_exit_2(tree: Path, capsys, args: list[str]) -> None:
    code, out, err = run(capsys, "check", "pkg", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("autograd-lint: error: ")
    assert "Traceback" not in err


def test_missing_path_is_a_usage_error(tree: Path, capsys) -> None:
    code, _, err = run(capsys, "check", "nope/missing.py")
    assert code == 2 and err.strip() == "autograd-lint: error: path not found: nope/missing.py"


def test_statistics_text_and_json(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "pkg/leaky.py", "pkg/clean.py", "--statistics")
    assert code == 1
    assert out.splitlines()[0].split("\t") == ["1", "AGF001", "[ctx-tensor-attribute]"]
    assert len(out.splitlines()) == 4
    _, out, _ = run(capsys, "check", "pkg/leaky.py", "--statistics", "--format", "json")
    rows = json.loads(out)
    assert {r["code"]: r["count"] for r in rows} == {"AGF001": 1, "AGF002": 1, "AGF008": 1,
                                                    "AGF101": 1}


def test_no_cache_and_quiet_are_accepted(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "pkg", "--no-cache", "-q", "--ignore", "AGF301")
    assert code == 1 and len(out.splitlines()) == 4 and "Found" not in out


def test_unparsable_file_is_agf000_and_the_run_goes_on(tree: Path, capsys) -> None:
    header = b"import torch\n\n\nclass Broken(torch.autograd.Function):\n"
    (tree / "pkg" / "broken.py").write_bytes(header + b"    def forward(ctx, x:\n")
    (tree / "pkg" / "nul.py").write_bytes(header + b"    x = 1\x00\n")
    (tree / "pkg" / "latin.py").write_bytes(b"# -*- coding: nope -*-\n" + header)
    code, out, err = run(capsys, "check", "pkg", "--format", "json", "--ignore", "AGF301")
    findings = json.loads(out)
    assert code == 1 and err == ""
    syntax = {Path(f["path"]).name: f for f in findings if f["code"] == "AGF000"}
    assert set(syntax) == {"broken.py", "nul.py", "latin.py"}
    assert (syntax["broken.py"]["line"], syntax["broken.py"]["column"]) == (5, 15)
    assert any(f["code"] == "AGF001" for f in findings)  # leaky.py still checked


def test_agf000_covers_files_that_can_involve_functions(tree: Path, capsys) -> None:
    # A broken file with nothing autograd-related is other linters' business in
    # a directory walk (it is never parsed); named explicitly, it is reported.
    (tree / "pkg" / "unrelated.py").write_text("def f(:\n    pass\n")
    _, out, _ = run(capsys, "check", "pkg", "--format", "json", "--select", "AGF000")
    assert json.loads(out) == []
    code, out, _ = run(capsys, "check", "pkg/unrelated.py", "--format", "json")
    assert code == 1 and [f["code"] for f in json.loads(out)] == ["AGF000"]


def test_internal_error_in_one_file_is_reported_and_run_continues(tree: Path, capsys,
                                                                   monkeypatch) -> None:
    from autograd_lint.checkers.ctx_state import CtxStateChecker

    original = CtxStateChecker.check_function

    def explode_on_clean(self, fn, facts):
        if fn.name == "Exp":
            raise ValueError("synthetic failure")
        return original(self, fn, facts)

    monkeypatch.setattr(CtxStateChecker, "check_function", explode_on_clean)
    code, out, err = run(capsys, "check", "pkg", "--format", "json")
    assert code == 2
    assert "pkg/clean.py" in err and "synthetic failure" in err and "Traceback" not in err
    assert {f["code"] for f in json.loads(out)} >= {"AGF001", "AGF101"}


def test_rules_table_and_json(capsys) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0
    assert out.splitlines()[0].startswith("AGF000  syntax-error")
    assert any(line.startswith("AGF001  ctx-tensor-attribute") for line in out.splitlines())
    code, out, _ = run(capsys, "rules", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and {"code", "name", "severity", "default", "summary"} <= set(rows[0])


@pytest.mark.parametrize("name", ["AGF001", "agf001", "ctx-tensor-attribute"])
def test_rule_explains_by_code_or_name(capsys, name: str) -> None:
    code, out, _ = run(capsys, "rule", name)
    assert code == 0 and out.startswith("# AGF001")
    assert "ctx-tensor-attribute" in out


def test_unknown_rule_is_exit_2(capsys) -> None:
    code, out, err = run(capsys, "rule", "AGF999")
    assert code == 2 and out == "" and "unknown rule 'AGF999'" in err


def test_no_arguments_prints_help_and_exits_2(capsys) -> None:
    code, _, err = run(capsys)
    assert code == 2 and "usage:" in err


def test_module_entry_point_and_console_script(tree: Path) -> None:
    for command in ([sys.executable, "-m", "autograd_lint"],
                    [str(Path(sys.executable).with_name("autograd-lint"))]):
        proc = subprocess.run([*command, "check", "pkg/leaky.py", "--select", "AGF001"],
                              capture_output=True, text=True, cwd=tree)
        assert proc.returncode == 1, proc.stderr
        assert "AGF001" in proc.stdout


def test_paths_under_the_working_directory_show_without_dot_slash(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", ".", "--select", "AGF001", "-q", "--no-cache")
    assert code == 1
    assert out.startswith("pkg/leaky.py:7:"), out


@pytest.mark.parametrize("jobs", ["0", "-2", "two"])
def test_jobs_must_be_a_positive_number(tree: Path, capsys, jobs: str) -> None:
    code, _, err = run(capsys, "check", "pkg", "--jobs", jobs)
    assert code == 2
    assert err.count("\n") == 1 and "positive number of jobs" in err


def test_the_console_command_exits_with_the_status_and_all_output(tree: Path) -> None:
    """`run` leaves through os._exit: nothing printed may be lost on the way."""
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "pkg", "--no-cache"],
                          capture_output=True, text=True, cwd=tree)
    assert proc.returncode == 1
    assert "in 2 files.\n[*] 1 fixable" in proc.stdout and "AGF001" in proc.stdout
    piped = subprocess.run(f"{sys.executable} -m autograd_lint check pkg --no-cache | head -1",
                           shell=True, capture_output=True, text=True, cwd=tree)
    assert piped.stdout.count("\n") == 1 and "Traceback" not in piped.stderr


def test_server_without_pygls_is_a_one_line_error(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "pygls", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    monkeypatch.delitem(sys.modules, "autograd_lint.lsp", raising=False)
    code, out, err = run(capsys, "server")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "pip install 'autograd-lint[lsp]'" in err
