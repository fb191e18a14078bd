"""`[tool.autograd-lint]` in pyproject.toml, and rule selection semantics."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.config import Selection, resolve_codes
from autograd_lint.core.registry import RULES, default_codes

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
    write_config(project, 'select = ["AGF0", "pedantic"]\nignore = ["AGF008"]\n')
    _, findings, _ = lint_json(capsys, ".")
    assert {f["code"] for f in findings} == {"AGF001", "AGF002"}
    write_config(project, 'select = ["AGF0"]\n')  # a prefix selects no opt-in rule
    _, findings, _ = lint_json(capsys, ".")
    assert {f["code"] for f in findings} == {"AGF002"}


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
    assert by_file == {"src/ops.py": {"AGF002"},
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
    assert {f["code"] for f in findings} == {"AGF002", "AGF101"}


@pytest.mark.parametrize(("body", "message"), [
    ('selct = ["AGF001"]\n', "unknown key 'selct'"),
    ('select = ["AGF8"]\n', "unknown rule code, prefix or tier 'AGF8'"),
    ('extend-select = ["pedantics"]\n', "unknown rule code, prefix or tier 'pedantics'"),
    ('select = "AGF006"\n', "expected a list of strings, got 'AGF006'"),
    ("select = 3\n", "expected a list of strings"),
    ('ignore = ["AGF001", 7]\n', "expected a list of strings"),
    ('per-file-ignores = ["x"]\n', "per-file-ignores: expected a table"),
    ('[tool.autograd-lint.per-file-ignores]\n"a.py" = ["NOPE1"]\n', "'NOPE1'"),
    ("select = [\n", "invalid TOML"),
    ('respect-gitignore = "no"\n', "respect-gitignore: expected true or false, got 'no'"),
    ("respect-gitignore = 1\n", "respect-gitignore: expected true or false, got 1"),
])
def test_bad_configuration_is_one_line_exit_2(project: Path, capsys, body: str,
                                              message: str) -> None:
    write_config(project, body)
    code, findings, err = lint_json(capsys, ".")
    assert code == 2 and findings == []
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert "pyproject.toml" in err and "Traceback" not in err


def test_non_utf8_pyproject_names_the_file(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_bytes(
        b"[tool.autograd-lint]\n# caf\xe9\nselect = [\"AGF001\"]\n")
    code, findings, err = lint_json(capsys, ".")
    assert code == 2 and findings == [] and len(err.strip().splitlines()) == 1
    assert "pyproject.toml: invalid TOML: not UTF-8" in err and "internal error" not in err


def test_underscore_table_is_a_warning_not_silence(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_text('[tool.autograd_lint]\nselect = ["AGF002"]\n')
    code, findings, err = lint_json(capsys, ".")
    _, defaults, _ = lint_json(capsys, ".", "--isolated")
    assert code == 1 and findings == defaults  # the misspelt `select` is not applied
    assert err.count("warning:") == 1 and "[tool.autograd_lint] is not read" in err
    code, _, err = lint_json(capsys, ".", "--config", "pyproject.toml")
    assert code == 2 and "no [tool.autograd-lint] table" in err and "misspelt" in err


def test_config_option_reads_pyprojects_under_any_name(project: Path, capsys) -> None:
    (project / "lint.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.autograd-lint]\nselect = ["AGF008"]\n')
    code, findings, err = lint_json(capsys, "src", "--config", "lint.toml")
    assert code == 1 and {f["code"] for f in findings} == {"AGF008"}, err
    (project / "bare.toml").write_text('select = ["AGF101"]\n')  # an autograd-lint.toml
    _, findings, _ = lint_json(capsys, "src", "--config", "bare.toml")
    assert {f["code"] for f in findings} == {"AGF101"}
    (project / "other.toml").write_text('[project]\nname = "demo"\n')
    code, _, err = lint_json(capsys, "src", "--config", "other.toml")
    assert code == 2 and "other.toml: no [tool.autograd-lint] table" in err
    assert "unknown key" not in err


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


def test_opt_in_rules_need_their_exact_code_their_tier_or_all() -> None:
    opt_in = {c for c, r in RULES.items() if not r.default}
    assert opt_in == {c for c, r in RULES.items() if r.tier != "correctness"}
    assert {"AGF008", "AGF009", "AGF010", "AGF011", "AGF012", "AGF106", "AGF203", "AGF204",
            "AGF206", "AGF103", "AGF213", "AGF301", "AGF202", "AGF302", "AGF303", "AGF404",
            "AGF901", "AGD015"} <= opt_in
    for selectors in (["AGF"], ["AGF2"], ["AGF0", "AGF1", "AGF2", "AGF3"], ["AGF20"]):
        assert not resolve_codes([Selection(select=selectors)]) & opt_in, selectors
        assert not resolve_codes([Selection(extend_select=selectors)]) & opt_in, selectors
    static_defaults = {c for c in default_codes() if c.startswith("AGF")}
    assert resolve_codes([Selection(select=["AGF"])]) == static_defaults
    assert resolve_codes([Selection(extend_select=["AGF202"])]) == default_codes() | {"AGF202"}
    assert resolve_codes([Selection(select=["ALL"])]) >= opt_in
    # Once selected, a later prefix layer keeps it (extend) or drops it (select).
    chosen = resolve_codes([Selection(extend_select=["AGF303"]), Selection(extend_select=["AGF3"])])
    assert "AGF303" in chosen
    assert "AGF303" not in resolve_codes([Selection(extend_select=["AGF303"]),
                                          Selection(select=["AGF3"])])


def test_the_default_selection_is_the_correctness_tier() -> None:
    assert default_codes() == {c for c, r in RULES.items() if r.tier == "correctness"}
    assert {RULES[c].tier for c in ("AGF008", "AGF106", "AGF203", "AGF204", "AGF206")} == \
        {"pedantic"}
    assert {RULES[c].tier for c in ("AGF103", "AGF213")} == {"style"}
    assert RULES["AGF301"].tier == "coverage"


def test_tier_names_are_selectors() -> None:
    pedantic = {c for c, r in RULES.items() if r.tier == "pedantic"}
    assert resolve_codes([Selection(select=["pedantic"])]) == pedantic
    assert resolve_codes([Selection(extend_select=["coverage"])]) == default_codes() | {"AGF301"}
    assert resolve_codes([Selection(extend_select=["style", "pedantic"]),
                          Selection(ignore=["style"])]) == default_codes() | pedantic
    assert resolve_codes([Selection(ignore=["correctness"])]) == set()
    # A code or a prefix is more specific than a tier name.
    assert "AGF008" not in resolve_codes([Selection(select=["pedantic"], ignore=["AGF008"])])
    assert "AGF008" not in resolve_codes([Selection(select=["pedantic"], ignore=["AGF0"])])
    assert "AGF008" in resolve_codes([Selection(select=["AGF008"], ignore=["pedantic"])])


def test_tiers_in_the_configuration_and_on_the_command_line(project: Path, capsys) -> None:
    write_config(project, 'extend-select = ["Pedantic"]\n')
    _, findings, _ = lint_json(capsys, "src")
    assert {f["code"] for f in findings} == {"AGF001", "AGF002", "AGF008", "AGF101"}
    _, findings, _ = lint_json(capsys, "src", "--ignore", "pedantic,AGF101")
    assert {f["code"] for f in findings} == {"AGF002"}
    # A code is more specific than a tier name, wherever each is written.
    _, findings, _ = lint_json(capsys, "src", "--ignore", "pedantic", "--extend-select", "AGF001")
    assert {f["code"] for f in findings} == {"AGF001", "AGF002", "AGF101"}


def test_readme_config_example_keeps_info_rules_off(project: Path, capsys) -> None:
    write_config(project, 'select = ["AGF"]\n')
    code, findings, _ = lint_json(capsys, "src")
    assert code == 1 and not {f["code"] for f in findings} & {"AGF202", "AGF302", "AGF303"}
    code, findings, _ = lint_json(capsys, "src", "--extend-select", "AGF0,AGF1,AGF2")
    assert not {f["code"] for f in findings} & {"AGF202", "AGF302", "AGF303"}


def test_layers_apply_in_order() -> None:
    config = Selection(select=["AGF0"])
    cli = Selection(extend_select=["AGF101"])
    assert resolve_codes([config, cli]) == {
        c for c in default_codes() if c.startswith("AGF0")} | {"AGF101"}
    assert resolve_codes([config, Selection(select=["AGF1"])]) == {
        c for c in default_codes() if c.startswith("AGF1")}
