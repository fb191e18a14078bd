"""The README's promises: its set-up commands are the ones CI runs."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def console_commands(text: str) -> list[str]:
    blocks = re.findall(r"```console\n(.*?)```", text, re.S)
    return [line.strip() for block in blocks for line in block.splitlines()
            if line.strip().startswith("python3 -m venv")]


def test_readme_has_the_two_setup_commands() -> None:
    commands = console_commands((ROOT / "README.md").read_text())
    assert len(commands) == 2
    example, tests = commands
    assert example.endswith("autograd-lint check examples/")
    assert tests.endswith("-m pytest") and '".[test]"' in tests


def test_ci_runs_the_readme_test_command() -> None:
    _, tests = console_commands((ROOT / "README.md").read_text())
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in [line.strip() for line in ci]


def test_test_extra_pins_the_cpu_torch_build() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"torch==2.13.0"' in pyproject
    runtime = re.search(r"^dependencies = \[(.*?)\]", pyproject, re.S | re.M)
    assert runtime is not None and "torch" not in runtime.group(1)


def test_readme_sample_output_is_the_real_output() -> None:
    """The console sample at the top: its lines are what the command prints
    (first lines, `...`, last lines), run as the README says."""
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    block = re.search(r"```console\n\$ autograd-lint (check --format concise examples/)\n(.*?)```",
                      text, re.S)
    assert block is not None
    sample = block.group(2).splitlines()
    cut = sample.index("...")
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", *block.group(1).split(),
                           "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    real = proc.stdout.splitlines()
    assert real[:cut] == sample[:cut]
    assert real[len(real) - (len(sample) - cut - 1):] == sample[cut + 1:]


# `autograd-lint` as a requirement: a clone's path (`./autograd-lint[lsp]`) or
# a git URL (`autograd-lint @ git+...`); a bare name would ask an index that
# does not have it.
_REQUIREMENT = re.compile(r"""(?P<before>[./\w-]*)autograd-lint(?P<extras>\[[\w,]+\])?"""
                          r"""(?P<after>['"]?\s*@?\s*(?:git\+)?)""")


def index_installs(text: str) -> list[str]:
    """`pip install` commands that would fetch autograd-lint from an index."""
    found = []
    for line in text.splitlines():
        command = line.partition("pip install")[2]
        if not line.count("pip install") or "autograd-lint" not in command:
            continue
        for match in _REQUIREMENT.finditer(command):
            from_clone = match.group("before").endswith("/")
            from_git = "git+" in match.group("after")
            if not (from_clone or from_git):
                found.append(line.strip())
    return found


def test_install_commands_never_ask_an_index_for_autograd_lint() -> None:
    texts = {path: path.read_text() for path in
             [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
              *sorted((ROOT / "autograd_lint").rglob("*.py"))]}
    bad = {str(path.relative_to(ROOT)): index_installs(text) for path, text in texts.items()}
    assert {path: lines for path, lines in bad.items() if lines} == {}
    bare = 'pip install "autograd-lint[lsp]"'
    assert index_installs(bare) == [bare]


def test_readme_coverage_sample_is_the_real_output() -> None:
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    block = re.search(r"```console\n\$ autograd-lint (coverage examples/)\n(.*?)```", text, re.S)
    assert block is not None
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", *block.group(1).split(),
                           "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == block.group(2)
