"""`[tool.autograd-lint]` in pyproject.toml, and rule selection semantics."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli import main
from autograd_lint.config import Selection, resolve_codes
from autograd_lint.registry import RULES, default_codes

from .test_cli import LEAKY


def lint_json(capsys, *args: str) -> tuple[int, list[dict], str]:
    code = main(["check", "--format", "json", "--ignore", "AGF301", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else [], captured.err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ops.py").write_text(LEAKY)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(LEAKY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_config(directory: Path, body: str) -> None:
    """A pyproject.toml; project-level AGF301 is left to its own tests."""
    (directory / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n\n[tool.autograd-lint]\n" + textwrap.dedent(body))


def test_select_and_ignore_from_pyproject(project: Path, capsys) -> None:
    write_config(project, 'select = ["AGF0"]\nignore = ["AGF008"]\n')
    _, findings, _ = lint_json(capsys, ".")
    assert {f["code"] for f in findings} == {"AGF001", "AGF002"}


def test_command_line_overrides_configuration(project: Path, capsys) -> None:
    write_config(project, 'select = ["AGF0"]\n')
    _, findings, _ = lint_json(capsys, ".", "--select", "AGF101")
    assert {f["code"] for f in findings} == {"AGF101"}
    _, findings, _ = lint_json(capsys, ".", "--extend-select", "AGF101", "--ignore", "AGF00")
    assert {f["code"] for f in findings} == {"AGF101"}


def test_exclude_and_per_file_ignores(project: Path, capsys) -> None:
    write_config(project, '''\
        extend-exclude = ["build_artifacts"]

        [tool.autograd-lint.per-file-ignores]
        "tests/*" = ["AGF0"]
        "ops.py" = ["AGF101"]
        ''')
    (project / "build_artifacts").mkdir()
    (project / "build_artifacts" / "gen.py").write_text(LEAKY)
    _, findings, _ = lint_json(capsys, ".")
    by_file: dict[str, set[str]] = {}
    for f in findings:
        by_file.setdefault(Path(f["path"]).as_posix(), set()).add(f["code"])
    assert by_file == {"src/ops.py": {"AGF001", "AGF002", "AGF008"},
                       "tests/test_ops.py": {"AGF101"}}


def test_exclude_replaces_the_configured_list(project: Path, capsys) -> None:
    write_config(project, 'exclude = ["tests"]\n')
    _, findings, _ = lint_json(capsys, ".")
    assert {Path(f["path"]).parts[0] for f in findings} == {"src"}


def test_nearest_pyproject_wins(project: Path, capsys) -> None:
    write_config(project, 'select = ["AGF001"]\n')
    write_config(project / "tests", 'select = ["AGF101"]\n')
    _, findings, _ = lint_json(capsys, ".")
    codes = {(Path(f["path"]).parts[0], f["code"]) for f in findings}
    assert codes == {("src", "AGF001"), ("tests", "AGF101")}


def test_pyproject_without_our_table_is_skipped(project: Path, capsys) -> None:
    write_config(project, 'select = ["AGF001"]\n')
    (project / "src" / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    _, findings, _ = lint_json(capsys, "src")
    assert {f["code"] for f in findings} == {"AGF001"}


def test_explicit_config_and_isolated(project: Path, capsys, tmp_path_factory) -> None:
    write_config(project, 'select = ["AGF001"]\n')
    other = tmp_path_factory.mktemp("other")
    write_config(other, 'select = ["AGF002"]\n')
    _, findings, _ = lint_json(capsys, "src", "--config", str(other / "pyproject.toml"))
    assert {f["code"] for f in findings} == {"AGF002"}
    _, findings, _ = lint_json(capsys, "src", "--isolated")
    assert {f["code"] for f in findings} == {"AGF001", "AGF002", "AGF008", "AGF101"}


@pytest.mark.parametrize(("body", "message"), [
    ('selct = ["AGF001"]\n', "unknown key 'selct'"),
    ('select = "AGF9"\n', "unknown rule code or prefix 'AGF9'"),
    ("select = 3\n", "expected a list of strings"),
    ('ignore = ["AGF001", 7]\n', "expected a list of strings"),
    ('per-file-ignores = ["x"]\n', "per-file-ignores: expected a table"),
    ('[tool.autograd-lint.per-file-ignores]\n"a.py" = ["NOPE1"]\n', "'NOPE1'"),
    ("select = [\n", "invalid TOML"),
])
def test_bad_configuration_is_one_line_exit_2(project: Path, capsys, body: str,
                                              message: str) -> None:
    write_config(project, body)
    code, findings, err = lint_json(capsys, ".")
    assert code == 2 and findings == []
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert "pyproject.toml" in err and "Traceback" not in err


def test_missing_config_file_is_exit_2(project: Path, capsys) -> None:
    code, _, err = lint_json(capsys, ".", "--config", "nope.toml")
    assert code == 2 and "config file not found: nope.toml" in err


# -- selection semantics (ruff's) ----------------------------------------------
def test_default_selection_is_every_default_rule() -> None:
    assert resolve_codes([]) == default_codes()
    assert default_codes() == {c for c, r in RULES.items() if r.default}


def test_more_specific_selector_wins_and_ignore_wins_ties() -> None:
    assert resolve_codes([Selection(ignore=["AGF0"], extend_select=["AGF001"])]) >= {"AGF001"}
    assert "AGF001" not in resolve_codes([Selection(select=["AGF001"], ignore=["AGF001"])])
    assert "AGF001" in resolve_codes([Selection(select=["ALL"], ignore=["AGF1"])])
    assert resolve_codes([Selection(select=["ALL"])]) == frozenset(RULES)


def test_layers_apply_in_order() -> None:
    config = Selection(select=["AGF0"])
    cli = Selection(extend_select=["AGF101"])
    assert resolve_codes([config, cli]) == {c for c in RULES if c.startswith("AGF0")} | {"AGF101"}
    assert resolve_codes([config, Selection(select=["AGF1"])]) == {
        c for c in RULES if c.startswith("AGF1")}
