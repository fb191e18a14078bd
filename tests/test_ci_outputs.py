"""CI outputs: SARIF, GitHub annotations, --exit-zero, baselines."""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.registry import RULES, all_rules

BUGGY = textwrap.dedent('''\
    import torch


    class Leaky(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x  # é: a non-ASCII comment after the finding
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            grad.mul_(2)
            return grad
    ''')


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    # BUGGY's findings, AGF001 and AGF006, are pedantic (off by default).
    code = main(["check", "--isolated", "--no-cache", "--extend-select", "AGF001,AGF006", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ops.py").write_text(BUGGY, encoding="utf-8")
    # Scanned with a test of its own: AGF301 asks what tests check.
    (tmp_path / "src" / "test_smoke.py").write_text("def test_imports():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- SARIF -------------------------------------------------------------------
def test_sarif_has_the_rule_table_and_one_result_per_finding(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "--format", "sarif", "src/ops.py")
    assert code == 1
    log = json.loads(out)
    assert log["version"] == "2.1.0" and "sarif" in log["$schema"]
    [sarif_run] = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "autograd-lint"
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [r.code for r in all_rules()]
    agf001 = rules[[r["id"] for r in rules].index("AGF001")]
    assert agf001["name"] == "ctx-tensor-attribute"
    assert "helpUri" not in agf001  # the page itself is in help.markdown
    assert agf001["fullDescription"]["text"].startswith("Flags a tensor stored as a plain")
    assert agf001["help"]["markdown"].startswith("# AGF001 ctx-tensor-attribute")
    assert agf001["defaultConfiguration"]["level"] == "error"
    results = sarif_run["results"]
    assert [r["ruleId"] for r in results] == ["AGF001", "AGF006"]
    first = results[0]
    assert rules[first["ruleIndex"]]["id"] == "AGF001"
    assert first["level"] == "error" and first["message"]["text"].startswith("`ctx.x` holds")
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/ops.py", "uriBaseId": "%SRCROOT%"}
    # The assignment `ctx.x = x`, end exclusive.
    assert location["region"] == {"startLine": 7, "startColumn": 9, "endLine": 7,
                                  "endColumn": 18}
    assert sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.as_uri() + "/"
    assert len(first["partialFingerprints"]["autogradLint/v1"]) == 20


# Microsoft's SARIF multitool (npm's @microsoft/sarif-multitool) ships the
# SARIF 2.1.0 JSON schema and GitHub code scanning's rules; .ci/run installs it
# where npm is available and names its folder here.
MULTITOOL_DIR = os.environ.get("AUTOGRAD_LINT_SARIF_MULTITOOL", "")


def _multitool(name: str) -> Path:
    path = Path(MULTITOOL_DIR) / name
    if not MULTITOOL_DIR or not path.exists():
        pytest.skip("the SARIF multitool is not installed (.ci/run installs it from npm "
                    "and sets AUTOGRAD_LINT_SARIF_MULTITOOL)")
    return path


def _sarif_with_every_kind_of_result(project: Path, capsys) -> Path:
    (project / "src" / "info.py").write_text(BUGGY.replace("ctx.x = x", "ctx.save_for_backward(x)"))
    _, out, _ = run(capsys, "--format", "sarif", "--select", "ALL", "src")
    log = project / "out.sarif"
    log.write_text(out, encoding="utf-8")
    assert {r["level"] for r in json.loads(out)["runs"][0]["results"]} >= {"error", "note"}
    return log


def test_sarif_matches_the_sarif_2_1_0_schema(project: Path, capsys) -> None:
    import jsonschema

    schema = json.loads(_multitool("sarif-2.1.0.json").read_text(encoding="utf-8-sig"))
    log = json.loads(_sarif_with_every_kind_of_result(project, capsys).read_text())
    validator = jsonschema.Draft7Validator(schema)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
    assert errors == []


def test_sarif_passes_github_code_scanning_rules(project: Path, capsys) -> None:
    tool = _multitool("Sarif.Multitool")
    if not os.access(tool, os.X_OK):
        tool.chmod(0o755)
    log = _sarif_with_every_kind_of_result(project, capsys)
    report = project / "validation.sarif"
    proc = subprocess.run([str(tool), "validate", "--rule-kind", "Sarif;Gh", str(log),
                           "-o", str(report)], capture_output=True, text=True,
                          env={**os.environ, "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads(report.read_text(encoding="utf-8-sig"))["runs"][0]["results"]
    problems = [f"{r['ruleId']}: {r['message'].get('text', r['message'])}" for r in found
                if r.get("level", "warning") == "error" or r["ruleId"].startswith("GH")]
    assert problems == []
    # What is left is advice: a public page for the tool (it has none yet).
    assert {r["ruleId"] for r in found} <= {"SARIF2005"}


def test_sarif_columns_count_utf16_units(project: Path, capsys) -> None:
    (project / "src" / "ops.py").write_text(
        BUGGY.replace("ctx.x = x  #", "ctx.x = x;é = 1  #"), encoding="utf-8")
    (project / "src" / "wide.py").write_text(BUGGY.replace(
        "        grad.mul_(2)", "        ü = 0; grad.mul_(2)"), encoding="utf-8")
    _, out, _ = run(capsys, "--format", "sarif", "src/wide.py")
    [result] = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "AGF006"]
    region = result["locations"][0]["physicalLocation"]["region"]
    # `ü = 0; ` is 7 characters (8 UTF-8 bytes): the call starts at character 16.
    assert region["startColumn"] == 16


def test_clean_sarif_still_lists_rules(project: Path, capsys) -> None:
    (project / "src" / "ops.py").write_text("x = 1\n")
    code, out, _ = run(capsys, "--format", "sarif", "src")
    log = json.loads(out)
    assert code == 0 and log["runs"][0]["results"] == []
    assert len(log["runs"][0]["tool"]["driver"]["rules"]) == len(RULES)


# -- GitHub annotations ---------------------------------------------------------
def test_github_annotations(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "--format", "github", "src/ops.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(
        "::error file=src/ops.py,line=7,col=9,endLine=7,endColumn=18,"
        "title=AGF001 (ctx-tensor-attribute)::AGF001 `ctx.x` holds")
    assert lines[1].startswith("::error file=src/ops.py,line=12,col=9,")
    assert len(lines) == 2


def test_github_escapes_workflow_command_syntax(project: Path, capsys) -> None:
    odd = project / "src" / "a,b:c%.py"
    odd.write_text(BUGGY)
    _, out, _ = run(capsys, "--format", "github", str(odd.relative_to(project)))
    assert "file=src/a%2Cb%3Ac%25.py," in out


def test_info_findings_are_notices(project: Path, capsys) -> None:
    _, out, _ = run(capsys, "--format", "github", "--select", "AGF303", "src/ops.py")
    assert out.startswith("::notice file=src/ops.py,")


# -- exit status --------------------------------------------------------------
def test_exit_zero_reports_but_succeeds(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "--exit-zero", "src/ops.py")
    assert code == 0 and "AGF001" in out
    (project / "src" / "broken.py").write_text("def f(:\n")
    code, _, _ = run(capsys, "--exit-zero", "src")
    assert code == 0  # AGF000 is a finding, not an error
    code, _, err = run(capsys, "--exit-zero", "missing.py")
    assert code == 2 and "path not found" in err


# -- baseline -----------------------------------------------------------------
def test_baseline_round_trip_survives_shifted_lines(project: Path, capsys) -> None:
    code, _, err = run(capsys, "--write-baseline", "baseline.json", "src")
    assert code == 0 and "wrote 2 findings to baseline.json" in err
    recorded = json.loads((project / "baseline.json").read_text())
    assert [e["code"] for e in recorded["findings"]] == ["AGF001", "AGF006"]
    assert recorded["findings"][0]["path"] == "src/ops.py"

    code, out, _ = run(capsys, "--baseline", "baseline.json", "src")
    assert code == 0 and "All checks passed" in out

    # Unrelated edits above the findings move them down: still known.
    ops = project / "src" / "ops.py"
    ops.write_text('"""Docs."""\nimport math\n\n\nSCALE = math.pi\n' + BUGGY)
    code, out, _ = run(capsys, "--baseline", "baseline.json", "src")
    assert code == 0, out

    # A new bug is reported; the known ones stay quiet.
    ops.write_text(ops.read_text().replace("return grad\n", "grad.add_(1)\n        return grad\n"))
    code, out, _ = run(capsys, "--baseline", "baseline.json", "--format", "json", "src")
    assert code == 1
    assert [(f["code"], f["line"]) for f in json.loads(out)] == [("AGF006", 18)]


def test_baseline_counts_identical_lines(project: Path, capsys) -> None:
    run(capsys, "--write-baseline", "baseline.json", "src")
    twice = BUGGY.replace("        grad.mul_(2)\n", "        grad.mul_(2)\n        grad.mul_(2)\n")
    (project / "src" / "ops.py").write_text(twice)
    code, out, _ = run(capsys, "--baseline", "baseline.json", "--format", "json", "src")
    # Same text as a recorded finding, but one more of it: the second is new.
    assert code == 1 and [(f["code"], f["line"]) for f in json.loads(out)] == [("AGF006", 13)]


def test_baseline_paths_are_relative_to_the_baseline_file(project: Path, capsys,
                                                         monkeypatch) -> None:
    run(capsys, "--write-baseline", "baseline.json", "src")
    monkeypatch.chdir(project / "src")
    code, out, _ = run(capsys, "--baseline", "../baseline.json", "ops.py")
    assert code == 0, out


@pytest.mark.parametrize("content, message", [
    (None, "baseline not found: nope.json"),
    ("{", "cannot read baseline nope.json"),
    ('{"format": 99, "findings": []}', "is not an autograd-lint baseline"),
])
def test_bad_baselines_are_one_line_errors(project: Path, capsys, content: str | None,
                                           message: str) -> None:
    if content is not None:
        (project / "nope.json").write_text(content)
    code, out, err = run(capsys, "--baseline", "nope.json", "src")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


# -- GitLab, JUnit, pylint, JSON Lines, --output-file ---------------------------
def test_gitlab_code_quality_report(project: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("CI_PROJECT_DIR", str(project))
    code, out, _ = run(capsys, "--format", "gitlab", str(project / "src" / "ops.py"))
    assert code == 1
    issues = json.loads(out)
    assert sorted(i["check_name"] for i in issues) == ["AGF001", "AGF006"]
    agf001 = next(i for i in issues if i["check_name"] == "AGF001")
    # Relative to the checkout GitLab made, 1-based columns, GitLab's severities.
    assert agf001["location"]["path"] == "src/ops.py"
    assert agf001["location"]["positions"]["begin"] == {"line": 7, "column": 9}
    assert agf001["severity"] == "major" and agf001["description"].startswith("AGF001: ")
    assert len({i["fingerprint"] for i in issues}) == 2
    # The fingerprint survives lines moving above the finding.
    ops = project / "src" / "ops.py"
    ops.write_text("# a comment\n" + ops.read_text(encoding="utf-8"), encoding="utf-8")
    _, moved, _ = run(capsys, "--format", "gitlab", str(ops))
    assert {i["fingerprint"] for i in json.loads(moved)} == {i["fingerprint"] for i in issues}


def test_junit_report_has_a_failed_case_per_finding(project: Path, capsys) -> None:
    import xml.etree.ElementTree as ElementTree

    code, out, _ = run(capsys, "--format", "junit", "src/ops.py")
    assert code == 1
    suites = ElementTree.fromstring(out)
    assert suites.tag == "testsuites" and suites.get("failures") == "2"
    [suite] = suites.findall("testsuite")
    assert suite.get("name") == "src/ops.py"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["autograd-lint.AGF001", "autograd-lint.AGF006"]
    failure = cases[0].find("failure")
    assert failure is not None and failure.text.startswith("line 7, col 9, ")
    _, clean, _ = run(capsys, "--format", "junit", "src/test_smoke.py")
    assert ElementTree.fromstring(clean).find("testsuite/testcase").get("name") == "No findings"


def test_pylint_and_json_lines_formats(project: Path, capsys) -> None:
    _, out, _ = run(capsys, "--format", "pylint", "src/ops.py")
    assert out.splitlines()[0].startswith("src/ops.py:7: [AGF001] `ctx.x` holds input `x`")
    assert len(out.splitlines()) == 2
    _, lines, _ = run(capsys, "--format", "json-lines", "src/ops.py")
    _, whole, _ = run(capsys, "--format", "json", "src/ops.py")
    assert [json.loads(line) for line in lines.splitlines()] == json.loads(whole)


def test_output_file_holds_the_report(project: Path, capsys) -> None:
    code, out, err = run(capsys, "--format", "json", "-o", "reports/lint.json", "src/ops.py")
    assert code == 1 and out == "" and err == ""
    written = json.loads((project / "reports" / "lint.json").read_text(encoding="utf-8"))
    assert [f["code"] for f in written] == ["AGF001", "AGF006"]
    code, _, _ = run(capsys, "--output-file", "text.txt", "src/ops.py")
    text = (project / "text.txt").read_text(encoding="utf-8")
    assert code == 1 and "\x1b[" not in text and "\nFound 2 findings" in text
    (project / "blocked").write_text("a file, not a folder")
    code, _, err = run(capsys, "-o", "blocked/lint.txt", "src/ops.py")
    assert code == 2 and err.startswith("autograd-lint: error: cannot write --output-file")


def test_exit_non_zero_on_fix(project: Path, capsys) -> None:
    fixable = project / "src" / "fixable.py"
    fixable.write_text(textwrap.dedent('''\
        import torch


        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 3 * x * x * grad


        def cube(x):
            return Cube()(x)
        '''), encoding="utf-8")
    original = fixable.read_text(encoding="utf-8")
    code, _, _ = run(capsys, "--fix", "src/fixable.py")
    assert code == 0 and fixable.read_text(encoding="utf-8") != original  # fixed, none left
    fixable.write_text(original, encoding="utf-8")
    code, _, _ = run(capsys, "--fix", "--exit-non-zero-on-fix", "src/fixable.py")
    assert code == 1
    code, _, _ = run(capsys, "--fix", "--exit-non-zero-on-fix", "src/fixable.py")
    assert code == 0  # nothing left to fix
