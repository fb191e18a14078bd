"""The `autograd-lint` command line: flags, formats, exit codes, configuration."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.reporting.output import MORE_HINT

from .helpers import PEDANTIC_AGF001, ROOT

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


    def leaky(x):
        return Leaky.apply(x, 3)
    ''')
# Findings in LEAKY: AGF002 line 8, AGF101 line 13; AGF001 line 7 and AGF008 line 13 are
# pedantic, off by default: the `tree` project turns AGF001 on in its configuration.
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
    """A small project that turns AGF001 on: one buggy module, one clean one,
    and noise to skip."""
    (tmp_path / "pyproject.toml").write_text(PEDANTIC_AGF001)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "leaky.py").write_text(LEAKY)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg" / "notes.txt").write_text(LEAKY)
    # A project scanned with a test of its own: AGF301 asks what tests check.
    (tmp_path / "pkg" / "test_smoke.py").write_text("def test_imports():\n    pass\n")
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
    assert lines[-3] == "Found 3 findings (2 errors, 1 warning) in 1 file."
    assert lines[-2] == "[*] 1 fixable with `--fix --unsafe-fixes`."
    assert lines[-1] == MORE_HINT


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
    assert code == 1 and len(findings) == 3
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
    (["--select", "AGF0"], {"AGF002"}),  # a prefix selects no opt-in rule
    (["--extend-select", "pedantic"], {"AGF001", "AGF002", "AGF008", "AGF101"}),
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
    assert out.splitlines()[0].split("\t") == ["1", "AGF001", "[ ] ctx-tensor-attribute"]
    assert len(out.splitlines()) == 5 and out.splitlines()[3].startswith("Found 3 findings")
    assert out.splitlines()[4].startswith("[*] 1 fixable with `--fix --unsafe-fixes`")
    _, out, _ = run(capsys, "check", "pkg/leaky.py", "--statistics", "--format", "json")
    rows = json.loads(out)
    assert {r["code"]: r["count"] for r in rows} == {"AGF001": 1, "AGF002": 1, "AGF101": 1}


def test_no_cache_and_quiet_are_accepted(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "pkg", "--no-cache", "-q", "--ignore", "AGF301")
    assert code == 1 and len(out.splitlines()) == 3 and "Found" not in out


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
    assert "in 1 file.\n[*] 1 fixable" in proc.stdout and "AGF001" in proc.stdout
    piped = subprocess.run(f"{sys.executable} -m autograd_lint check pkg --no-cache | head -1",
                           shell=True, capture_output=True, text=True, cwd=tree)
    assert piped.stdout.count("\n") == 1 and "Traceback" not in piped.stderr


def test_server_without_pygls_is_a_one_line_error(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "pygls", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    monkeypatch.delitem(sys.modules, "autograd_lint.integrations.lsp", raising=False)
    code, out, err = run(capsys, "server")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "pip install './autograd-lint[lsp]'" in err


# -- inputs that are not plain files ------------------------------------------
def test_a_symlink_loop_reports_each_file_once(tree: Path, capsys) -> None:
    (tree / "pkg" / "up").symlink_to(tree, target_is_directory=True)
    (tree / "pkg" / "again").symlink_to(tree / "pkg", target_is_directory=True)
    code, out, err = run(capsys, "check", "--isolated", "--no-cache", "--format", "json",
                         "--extend-select", "AGF001", ".")
    assert code == 1 and err == ""
    paths = [f["path"] for f in json.loads(out) if f["code"] == "AGF001"]
    assert paths == ["pkg/leaky.py"]


def test_stdin_is_checked_as_the_module_its_filename_names(tree: Path, capsys,
                                                         monkeypatch) -> None:
    """An editor pipes a buffer of `pkg/use.py`: `from .leaky import Leaky` is
    pkg's module, and the text piped in, not the file on disk, is checked."""
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "use.py").write_text("from .leaky import Leaky\n")
    typed = "from .leaky import Leaky\n\n\ndef run(x):\n    return Leaky()(x)\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(typed.encode())))
    code, out, err = run(capsys, "check", "--no-cache", "--format", "json", "-",
                         "--stdin-filename", "pkg/use.py")
    assert (code, err) == (1, "")
    assert [(f["path"], f["line"], f["code"]) for f in json.loads(out)] == \
        [("pkg/use.py", 5, "AGF105")]


def test_a_fifo_named_on_the_command_line_is_an_error_not_a_hang(tree: Path, capsys) -> None:
    os.mkfifo(tree / "pipe.py")
    code, out, err = run(capsys, "check", "--isolated", "--no-cache", "pipe.py")
    assert code == 2 and out == ""
    assert err == "autograd-lint: error: not a regular file or directory: pipe.py\n"
    # In a directory scan it is not a Python file to read.
    code, _, err = run(capsys, "check", "--isolated", "--no-cache", ".")
    assert code == 1 and err == ""


def test_stdin_with_and_without_a_filename(tree: Path, capsys, monkeypatch) -> None:
    def from_stdin(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LEAKY.encode())))
        return run(capsys, "check", "--no-cache", "--format", "json", *args)

    code, out, err = from_stdin("-")
    assert code == 1 and err == "" and {f["path"] for f in json.loads(out)} == {"-"}
    lines = {f["line"] for f in json.loads(out) if f["code"] == "AGF001"}
    code, out, _ = from_stdin("-", "--stdin-filename", "pkg/leaky.py")
    assert {f["path"] for f in json.loads(out)} == {"pkg/leaky.py"}
    assert {f["line"] for f in json.loads(out) if f["code"] == "AGF001"} == lines
    # The configuration is the one --stdin-filename's place would get.
    (tree / "pkg" / "pyproject.toml").write_text('[tool.autograd-lint]\nselect = ["AGF008"]\n')
    _, out, _ = from_stdin("-", "--stdin-filename", "pkg/leaky.py")
    assert {f["code"] for f in json.loads(out)} == {"AGF008"}
    assert run(capsys, "check", "-", "pkg")[0] == 2
    code, _, err = run(capsys, "check", "--stdin-filename", "x.py", "pkg")
    assert code == 2 and "--stdin-filename is for `-`" in err
    code, _, err = from_stdin("-", "--fix")
    assert code == 2 and "--fix cannot write back to stdin" in err


def test_a_utf16_file_with_a_function_is_agf000_in_directory_scans(tree: Path, capsys) -> None:
    (tree / "pkg" / "wide.py").write_bytes(LEAKY.encode("utf-16"))
    code, out, _ = run(capsys, "check", "--isolated", "--no-cache", "--format", "json", ".")
    [finding] = [f for f in json.loads(out) if f["path"] == "pkg/wide.py"]
    assert code == 1 and finding["code"] == "AGF000" and "UTF-16" in finding["message"]


# -- text formats ----------------------------------------------------------------
def test_concise_is_one_line_per_finding_with_character_columns(tree: Path, capsys) -> None:
    (tree / "pkg" / "wide.py").write_text("é = 1\n" + LEAKY.replace(
        "        ctx.y = x.exp()", "        é = 1; ctx.y = x.exp()"), encoding="utf-8")
    code, out, _ = run(capsys, "check", "--isolated", "--no-cache", "--format", "concise",
                       "--select", "AGF001,AGF008", "pkg/wide.py")
    [line] = [x for x in out.splitlines() if "AGF001" in x]
    # `é = 1; ` is 7 characters (8 bytes): ctx starts at character 16, 1-based.
    assert line.startswith("pkg/wide.py:8:16: AGF001 [ctx-tensor-attribute] `ctx.y` holds")
    assert "\x1b[" not in out
    fixable = [x for x in out.splitlines() if "AGF008" in x]
    assert fixable and all(" AGF008 [*] [data-attribute] " in x for x in fixable)


def test_full_shows_the_source_a_caret_help_and_the_rule_page(tree: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--isolated", "--no-cache", "--format", "full",
                       "--select", "AGF001", "pkg/leaky.py")
    lines = out.splitlines()
    head = next(i for i, x in enumerate(lines) if " AGF001 " in x)
    assert lines[head].endswith("checks and hooks")  # the advice moves to `help`
    assert lines[head + 1:head + 5] == ["  |", "7 |         ctx.y = x.exp()",
                                        "  |         ^^^^^^^^^^^^^^^ AGF001", "  |"]
    assert lines[head + 5].startswith("  = help: save it with `ctx.save_for_backward(...)`")
    assert lines[head + 6].startswith("  = docs: file://") and \
        lines[head + 6].endswith("/AGF001.md")
    assert Path(lines[head + 6].split("file://", 1)[1]).is_file()


def test_colour_follows_the_terminal_and_the_environment() -> None:
    from autograd_lint.reporting.output import text_style

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert text_style("text", Terminal(), {}).full and text_style("text", Terminal(), {}).color
    assert not text_style("text", Terminal(), {"NO_COLOR": "1"}).color
    assert not text_style("text", io.StringIO(), {}).full
    assert not text_style("text", io.StringIO(), {}).color
    assert text_style("concise", io.StringIO(), {"FORCE_COLOR": "1"}).color
    assert text_style("full", Terminal(), {"TERM_PROGRAM": "WezTerm"}).links
    assert not text_style("full", Terminal(), {"TERM_PROGRAM": "WezTerm", "NO_COLOR": "1"}).links


def test_forced_colour_and_links_in_the_output(tree: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    _, out, _ = run(capsys, "check", "--isolated", "--no-cache", "--format", "concise",
                    "--select", "AGF001", "pkg/leaky.py")
    assert "\x1b[1m\x1b[33mAGF001\x1b[0m" in out  # a warning: yellow


def test_diff_says_when_only_unsafe_fixes_exist(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops.py").write_text(textwrap.dedent('''\
        import torch


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                grad.mul_(2)
                return grad
        '''))
    agf006 = ("--extend-select", "AGF006")  # pedantic, off by default
    code, out, err = run(capsys, "check", "--isolated", "--no-cache", *agf006, "--diff", "ops.py")
    assert code == 0 and out == ""
    assert err == "No safe fixes available (1 with `--diff --unsafe-fixes`).\n"
    code, out, err = run(capsys, "check", "--isolated", "--no-cache", *agf006, "--diff",
                         "--unsafe-fixes", "ops.py")
    assert code == 1 and "grad = grad.clone()" in out and err == "Would fix 1 finding.\n"


def test_baseline_run_says_how_many_it_hid(tree: Path, capsys) -> None:
    run(capsys, "check", "--isolated", "--no-cache", "--write-baseline", "base.json", "pkg")
    code, out, _ = run(capsys, "check", "--isolated", "--no-cache", "--baseline", "base.json",
                       "--format", "concise", "pkg")
    # (--isolated: AGF001, which the project's configuration turns on, is off)
    assert code == 0 and out.splitlines()[-1] == "2 findings hidden by the baseline base.json."


def test_a_mistyped_command_is_named(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "chek")
    assert code == 2 and err == "autograd-lint: error: path not found: chek " \
        "(did you mean the command `check`?)\n"
    code, _, err = run(capsys, "sources")
    assert code == 2 and err == "autograd-lint: error: path not found: sources\n"


def test_an_excluded_folder_named_on_the_command_line_is_checked(capsys, tmp_path,
                                                                 monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.autograd-lint]\n'
                                             'extend-exclude = ["examples", "tests/fixtures"]\n')
    buggy = "import torch\n\n\nclass F(torch.autograd.Function):\n    @staticmethod\n" \
            "    def forward(ctx, x):\n        ctx.x = x\n        return x * 2\n\n" \
            "    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n"
    for folder in ("examples", "tests/fixtures/deep"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "ops.py").write_text(buggy)
    assert run(capsys, "check", ".", "--no-cache")[0] == 0  # ruff's rule: excluded in a scan
    code, out, _ = run(capsys, "check", "examples", "--no-cache", "--select", "AGF001")
    assert code == 1 and "examples/ops.py:7:9: AGF001" in out  # named: checked
    code, out, _ = run(capsys, "check", "tests/fixtures", "--no-cache", "--select", "AGF001")
    assert code == 1 and "tests/fixtures/deep/ops.py:7:9" in out
    assert run(capsys, "check", "tests", "--no-cache")[0] == 0


def test_the_repository_lints_clean_on_itself(monkeypatch, capsys) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, "check", ".", "--no-cache")
    assert code == 0, out
