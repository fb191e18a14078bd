"""The GitHub Action (action.yml): its structure, its docs, and its `run` steps
run as the runner runs them (`act` would need Docker): expressions substituted,
each script written to a file and run by `bash --noprofile --norc -eo pipefail
{0}` (the composite default) with the runner's environment variables and
GITHUB_OUTPUT file, in a workspace holding a buggy file.

`uses` steps (setup-python, upload-sarif) are not run; their `if` is evaluated
and their `with` recorded. The install step runs once per module, for real: a
fresh virtual environment and `pip install` from a clean copy of this checkout
(with pip's build isolation, as on a runner: a few seconds with pip's cache)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from .helpers import PEDANTIC_AGF001, ROOT, clean_copy, leaky_function

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict] = ACTION["runs"]["steps"]
INPUTS: dict[str, dict] = ACTION["inputs"]
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# The outputs of the actions the steps use (their action.yml's `outputs`).
USED_ACTION_OUTPUTS = {"actions/setup-python": {"python-version", "python-path", "cache-hit"},
                       "github/codeql-action/upload-sarif": {"sarif-id"}}


# -- the runner's expression language, the part action.yml uses --------------
@dataclass
class Runner:
    """One job's view of the action: inputs, step outputs, directories."""
    workspace: Path
    action_path: Path
    temp: Path
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)

    def value(self, expression: str) -> str:
        """A context's value. Unknown names fail the test instead of reading
        as '' (the runner's answer for a misspelt step output)."""
        if match := re.fullmatch(r"inputs\.([\w-]+)", expression):
            declared = {name: str(spec.get("default", "")) for name, spec in INPUTS.items()}
            assert match[1] in declared, f"undeclared input {match[1]!r}"
            return {**declared, **self.inputs}[match[1]]
        if match := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
            return self.outputs.get(match[1], {}).get(match[2], "")
        if expression == "github.action_path":
            return str(self.action_path)
        raise AssertionError(f"the test's runner cannot evaluate {expression!r}")

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda match: self.value(match[1]), str(text))

    def condition(self, text: str | None) -> bool:
        """`if:`: comparisons with a string literal, joined by `&&`."""
        if text is None:
            return True
        text = EXPRESSION.fullmatch(text.strip())[1] if "${{" in text else text
        result = True
        for part in text.split("&&"):
            match = re.fullmatch(r"\s*([\w.-]+)\s*(==|!=)\s*'([^']*)'\s*", part)
            assert match, f"the test's runner cannot evaluate if: {text!r}"
            equal = self.value(match[1]) == match[3]
            result = result and (equal if match[2] == "==" else not equal)
        return result


@dataclass
class StepRun:
    name: str
    returncode: int | None = None  # None: a `uses` step, not run
    stdout: str = ""
    stderr: str = ""
    with_: dict[str, str] = field(default_factory=dict)


def run_step(runner: Runner, step: dict, number: int) -> StepRun:
    """Run one step as the runner does: its script, expressions substituted,
    written to a file and run by the composite default shell."""
    if "uses" in step:
        return StepRun(step["name"], with_={key: runner.substitute(value)
                                            for key, value in step.get("with", {}).items()})
    script = runner.temp / f"step{number}.sh"
    script.write_text(runner.substitute(step["run"]), encoding="utf-8")
    output_file = runner.temp / f"output{number}"
    output_file.write_text("")
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV")}  # only the installed copy may run
    env.update({"PATH": f"{runner.temp / 'bin'}{os.pathsep}{env['PATH']}",
                "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(runner.workspace),
                "GITHUB_ACTION_PATH": str(runner.action_path), "RUNNER_TEMP": str(runner.temp),
                "GITHUB_OUTPUT": str(output_file)})
    env.update({key: runner.substitute(value) for key, value in step.get("env", {}).items()})
    assert step["shell"] == "bash"
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=runner.workspace, env=env, capture_output=True, text=True,
                          timeout=120)
    if "id" in step:
        outputs = {}
        for line in output_file.read_text().splitlines():
            name, sep, value = line.partition("=")
            assert sep, f"unsupported GITHUB_OUTPUT line {line!r}"
            outputs[name] = value
        runner.outputs[step["id"]] = outputs
    return StepRun(step["name"], proc.returncode, proc.stdout, proc.stderr)


def run_steps(runner: Runner, steps: list[dict]) -> dict[str, StepRun]:
    """The steps in order until one fails (each step's default `if` is
    success()); those skipped by their `if` are absent from the answer."""
    done: dict[str, StepRun] = {}
    for step in steps:
        if not runner.condition(step.get("if")):
            continue
        result = run_step(runner, step, STEPS.index(step))
        done[step["name"]] = result
        if result.returncode:
            break
    return done


# -- structure ----------------------------------------------------------------
def all_strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for value in node.values() for s in all_strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in all_strings(value)]
    return [node] if isinstance(node, str) else []


def test_action_is_composite_and_every_run_step_has_a_shell() -> None:
    assert ACTION["runs"]["using"] == "composite"
    ids = [step.get("id") for step in STEPS if "id" in step]
    assert len(ids) == len(set(ids))
    for step in STEPS:
        assert "name" in step and ("run" in step) != ("uses" in step), step
        if "run" in step:
            assert step["shell"] == "bash", step["name"]  # composite run steps need one


def test_every_expression_names_a_declared_input_or_an_earlier_steps_output() -> None:
    expressions = [m for s in all_strings(ACTION["runs"]) + all_strings(ACTION["outputs"])
                   for m in EXPRESSION.findall(s)]
    expressions += [step["if"] for step in STEPS if "if" in step]
    names = {name for e in expressions for name in re.findall(r"[a-z]+(?:\.[\w-]+)+", e)}
    assert names, "no expression found"
    by_id = {step["id"]: step for step in STEPS if "id" in step}
    for name in names:
        context, _, rest = name.partition(".")
        if context == "inputs":
            assert rest in INPUTS, name
        elif context == "steps":
            step_id, outputs, output = rest.split(".")
            assert outputs == "outputs" and step_id in by_id, name
            step = by_id[step_id]
            if "run" in step:
                assert f'echo "{output}=' in step["run"] and "$GITHUB_OUTPUT" in step["run"], name
            else:
                assert output in USED_ACTION_OUTPUTS[step["uses"].split("@")[0]], name
        else:
            assert name == "github.action_path", name
    # A step reads only the outputs of steps before it.
    for index, step in enumerate(STEPS):
        for read in re.findall(r"steps\.([\w-]+)\.", " ".join(all_strings(step))):
            assert read in [s.get("id") for s in STEPS[:index]], (step["name"], read)


def test_every_input_is_used_and_described() -> None:
    used = " ".join(all_strings(ACTION["runs"]))
    for name, spec in INPUTS.items():
        assert f"inputs.{name}" in used, f"input {name!r} is never read"
        assert spec["description"].strip() and "default" in spec, name


# -- the action run -------------------------------------------------------------
INSTALL = next(i for i, step in enumerate(STEPS) if step.get("id") == "install") + 1
CLEAN = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """The steps up to the install, run once: the action's checkout (a clean
    copy of this one), the runner's `python3` (this Python's base interpreter)."""
    action_path = tmp_path_factory.mktemp("action")
    clean_copy(action_path)
    shutil.copy2(ROOT / "action.yml", action_path / "action.yml")
    temp = tmp_path_factory.mktemp("runner-temp")
    (temp / "bin").mkdir()
    (temp / "bin" / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    runner = Runner(tmp_path_factory.mktemp("unused"), action_path, temp)
    done = run_steps(runner, STEPS[:INSTALL])
    assert list(done) == ["Install autograd-lint"]  # no python-version: no setup-python
    result = done["Install autograd-lint"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert runner.outputs["install"]["bin"].startswith(str(temp))
    # The linter alone: no torch (and nothing from this environment) in its venv.
    venv = Path(runner.outputs["install"]["bin"]).parent.parent
    assert list(venv.glob("lib/python*/site-packages/autograd_lint"))
    assert not list(venv.glob("lib/python*/site-packages/torch"))
    return runner


@pytest.fixture
def action(installed: Runner, tmp_path: Path):
    """Run the steps after the install with these inputs, in a workspace with
    a leaky Function (AGF001 at ops.py:7, turned on by the project) and a
    clean module."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text(PEDANTIC_AGF001)
    (workspace / "ops.py").write_text("import torch\n\n\n" + leaky_function())
    (workspace / "clean.py").write_text(CLEAN)

    def run(**inputs: str) -> tuple[dict[str, StepRun], Path]:
        inputs = {name.replace("_", "-"): value for name, value in inputs.items()}
        temp = tmp_path / f"temp{len(list(tmp_path.glob('temp*')))}"
        temp.mkdir()  # the runner's scratch files; the installed venv stays where it is
        runner = Runner(workspace, installed.action_path, temp, inputs,
                        {key: dict(value) for key, value in installed.outputs.items()})
        return run_steps(runner, STEPS[INSTALL:]), workspace
    return run


def test_findings_are_annotations_and_fail_the_step(action) -> None:
    done, workspace = action()
    assert list(done) == ["Write the SARIF log", "Check"]  # no upload: sarif is off
    check = done["Check"]
    assert check.returncode == 1, check.stderr
    annotations = [line for line in check.stdout.splitlines() if line.startswith("::")]
    assert annotations and all(line.startswith("::error file=ops.py,") for line in annotations)
    assert any(line.startswith("::error file=ops.py,line=7,col=9,")
               and "title=AGF001 (ctx-tensor-attribute)::AGF001" in line for line in annotations)
    assert not list(workspace.glob("*.sarif"))


def test_exit_zero_passes_with_findings(action) -> None:
    done, _ = action(exit_zero="true")
    check = done["Check"]
    assert check.returncode == 0, check.stderr
    assert "::error file=ops.py,line=7," in check.stdout


def test_without_annotations_the_log_has_one_line_per_finding(action) -> None:
    done, _ = action(annotations="false")
    check = done["Check"]
    assert check.returncode == 1
    assert "ops.py:7:9: AGF001 [ctx-tensor-attribute]" in check.stdout
    assert "::error" not in check.stdout


def test_paths_and_args_reach_the_command(action) -> None:
    clean, _ = action(paths="clean.py")
    assert clean["Check"].returncode == 0 and clean["Check"].stdout == ""
    # Whitespace-separated, and not globbed: `*.py` reaches the linter as written.
    both, _ = action(paths="clean.py\nops.py", args="--select AGF0 --ignore AGF001")
    assert both["Check"].returncode == 0, both["Check"].stdout + both["Check"].stderr
    globbed, _ = action(paths="*.py")
    assert globbed["Check"].returncode == 2 and "path not found: *.py" in globbed["Check"].stderr


def test_sarif_is_written_and_uploaded_before_the_verdict(action) -> None:
    done, workspace = action(sarif="true")
    assert list(done) == ["Write the SARIF log", "Upload the SARIF log", "Check"]
    assert done["Write the SARIF log"].returncode == 0, done["Write the SARIF log"].stderr
    assert done["Upload the SARIF log"].with_ == {"sarif_file": "autograd-lint.sarif",
                                                 "category": "autograd-lint"}
    assert done["Check"].returncode == 1  # the findings still fail the job
    log = json.loads((workspace / "autograd-lint.sarif").read_text())
    results = log["runs"][0]["results"]
    assert any(r["ruleId"] == "AGF001" and r["locations"][0]["physicalLocation"]
               ["artifactLocation"]["uri"] == "ops.py" for r in results), results


def test_sarif_at_a_path_of_ones_choice_without_upload(action) -> None:
    done, workspace = action(sarif="reports/lint.sarif", upload_sarif="false", exit_zero="true")
    assert list(done) == ["Write the SARIF log", "Check"]
    assert done["Check"].returncode == 0
    log = json.loads((workspace / "reports" / "lint.sarif").read_text())
    assert "AGF001" in {r["ruleId"] for r in log["runs"][0]["results"]}


@pytest.mark.parametrize("committed", ["autograd-lint.sarif", "reports"])
def test_a_committed_link_never_leads_the_sarif_log_out_of_the_workspace(
        action, tmp_path: Path, committed: str) -> None:
    """A link at the log's path (or on the way to it) that a repository
    commits: the log is not written through it (a shell's `>` truncated the
    file it led to, the Action's own venv binary among them)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "autograd-lint.sarif").write_text("the runner's own file\n")
    link = tmp_path / "workspace" / committed
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(outside / "autograd-lint.sarif" if committed.endswith(".sarif") else outside)
    sarif = committed if committed.endswith(".sarif") else f"{committed}/new/lint.sarif"
    done, _ = action(sarif=sarif)
    written = done["Write the SARIF log"]
    assert written.returncode == 2 and "outside the project" in written.stderr
    assert (outside / "autograd-lint.sarif").read_text() == "the runner's own file\n"
    assert sorted(p.name for p in outside.iterdir()) == ["autograd-lint.sarif"]


@pytest.mark.parametrize("sarif", ["false", "true"])
def test_an_error_fails_the_action_even_with_exit_zero(action, sarif: str) -> None:
    done, _ = action(args="--select NOPE", exit_zero="true", sarif=sarif)
    last = list(done.values())[-1]
    # With SARIF on, its step already fails: nothing is uploaded, no verdict runs.
    assert last.name == ("Check" if sarif == "false" else "Write the SARIF log")
    assert last.returncode == 2 and "unknown rule code" in last.stderr


# -- the docs -------------------------------------------------------------------
CI_DOC = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")


def test_docs_table_lists_every_input_with_its_default() -> None:
    section = CI_DOC.split("### Inputs\n", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \| `([^`]*)` \|", section, re.M)
    assert rows == [(name, str(spec["default"]) or '""') for name, spec in INPUTS.items()]


def test_docs_workflows_use_declared_inputs_and_a_pinned_ref() -> None:
    uses = [step for block in re.findall(r"```yaml\n(.*?)```", CI_DOC, re.S)
            for job in (yaml.safe_load(block).get("jobs") or {}).values()
            for step in job["steps"] if "autograd-lint@" in step.get("uses", "")]
    assert uses, "no workflow in docs/ci.md uses the action"
    for step in uses:
        assert step["uses"] == "OWNER/autograd-lint@COMMIT_SHA"
        assert set(step.get("with", {})) <= set(INPUTS), step
