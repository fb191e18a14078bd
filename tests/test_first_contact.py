"""A newcomer's first hour and inputs that used to end a run: what a run
says and how it ends, for output that nobody reads to the end, configuration
and recordings nested too deeply, projects that need a newer Python, trees
with thousands of Functions in one file, and --watch on trees that never
hold still (issue 37)."""
from __future__ import annotations

import functools
import io
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main

INSTANTIATED = textwrap.dedent('''\
    import torch


    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2


    y = Double()(torch.ones(2))
    ''')


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "app.py").write_text(INSTANTIATED)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- what a concise run says last -------------------------------------------------
def test_a_concise_run_ends_saying_where_the_fixes_are(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "--format", "concise", ".")
    assert code == 1
    assert out.splitlines()[-1] == ("Each finding's fix: `--format full`; a rule's page: "
                                    "`autograd-lint rule CODE`.")
    code, out, _ = run(capsys, "--format", "full", ".")
    assert "= help: call `Double.apply(...)` instead" in out
    assert "a rule's page" not in out  # the full format shows both already
    (project / "app.py").write_text("x = 1\n")
    assert "a rule's page" not in run(capsys, "--format", "concise", ".")[1]


# -- a reader that goes away ------------------------------------------------------
def test_a_closed_stdout_ends_the_run_as_sigpipe_does(project: Path) -> None:
    """`autograd-lint check | head -1`: quiet, and the status a shell expects of
    a writer whose reader left (git's), not the error status 2."""
    # more output than a pipe holds (64 KiB), so the run is still writing when
    # `head` leaves, however late the scheduler lets `head` read
    many = "".join(INSTANTIATED.replace("Double", f"Double{i}") for i in range(800))
    (project / "many.py").write_text(many)
    piped = subprocess.run(
        f"{sys.executable} -m autograd_lint check --no-cache --format concise . | head -1; "
        'echo "status=${PIPESTATUS[0]}"',
        shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=project)
    assert piped.stdout.count("\n") == 2, piped.stdout
    assert piped.stdout.rstrip().endswith("status=141"), piped.stdout
    assert piped.stderr == ""


# -- configuration ----------------------------------------------------------------
def test_a_misspelt_table_beside_the_real_one_is_warned_about(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.autograd_lint]
        select = ["AGF002"]

        [tool.autograd-lint.per-file-ignores]
        "other.py" = ["AGF105"]
        '''))
    code, _, err = run(capsys, ".")
    assert code == 1
    assert err.count("warning:") == 1
    assert "[tool.autograd_lint] is not read (the table is [tool.autograd-lint])" in err


def test_deeply_nested_toml_is_one_error_line(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_text(
        "[tool.autograd-lint]\nselect = " + "[" * 100_000 + "]" * 100_000 + "\n")
    code, out, err = run(capsys, ".")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "nested too deeply" in err and "internal error" not in err


def test_a_deeply_nested_recording_is_one_error_line(project: Path, capsys) -> None:
    from autograd_lint.dynamic.recording import RecordingError, read_recording

    deep = project / "recorded.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RecordingError, match="nested too deeply"):
        read_recording(deep)


# -- a project that needs a newer Python ------------------------------------------
NEWER_SYNTAX = textwrap.dedent('''\
    import torch


    class Box[T](torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x
    ''')


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python parses PEP 695 generics")
@pytest.mark.parametrize(("requires", "set_aside"), [
    (">=3.12", True), ("~=3.12", True), (">3.11", True), (">=3.10,<4", False), (None, False)])
def test_a_file_of_a_newer_python_is_a_warning_not_a_syntax_error(
        project: Path, capsys, requires: str | None, set_aside: bool) -> None:
    (project / "generic.py").write_text(NEWER_SYNTAX)
    table = f'requires-python = "{requires}"\n' if requires else ""
    (project / "pyproject.toml").write_text(f'[project]\nname = "x"\n{table}')
    code, out, err = run(capsys, "--format", "concise", ".")
    assert code == 1  # app.py's finding still counts
    assert ("AGF000" not in out) is set_aside
    warned = "generic.py: Python 3.11 cannot parse it" in err
    assert warned is set_aside
    if set_aside:
        assert "requires Python >=3.12" in err and err.count("\n") == 1


def test_minimum_python_reads_the_lower_bound() -> None:
    from autograd_lint.core.config import minimum_python

    assert minimum_python(">=3.12") == (3, 12)
    assert minimum_python(">= 3.9, != 3.9.1") == (3, 9)
    assert minimum_python("<3.13") is None
    assert minimum_python("==3.13.*") == (3, 13)


# -- many Functions in one file ---------------------------------------------------
def _profiled(work: Callable[[], object]) -> Counter[str]:
    """Calls made by `work` (in every thread), by function name: a measure of
    work that, unlike time, is the same on every machine and every run."""
    calls: Counter[str] = Counter()

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call":
            calls[frame.f_code.co_name] += 1  # type: ignore[attr-defined]
        elif event == "c_call":
            calls[getattr(arg, "__name__", "?")] += 1

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return calls


def test_aliases_of_many_names_are_found_in_one_pass() -> None:
    """A file that gains thousands of names is not searched once per name."""
    from autograd_lint.engine.relevance import aliases_in

    text = b"import ops\nA = ops.F3\nB: T = C = F7  # alias\nx = F3 + 1\nD = other.G\n"
    for names in ({"F3", "F7"}, {f"F{i}" for i in range(40)}):
        found: dict[str, set[str]] = {}
        search = functools.partial(aliases_in, {"m.py": set(names)}, {"m.py": text})
        calls = _profiled(lambda search=search, found=found: found.update(search()))
        assert found == {"m.py": {"A", "B", "C"}}
        assert calls["find"] <= 4 * min(len(names), 8), calls["find"]


ONE_OF_MANY = textwrap.dedent('''\
    class Double{i}(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2


    Alias{i} = Double{i}


    def use{i}(x):
        return Alias{i}.apply(x) if x else Alias{i}()(x)


    ''')


def test_many_functions_in_one_file_cost_work_in_proportion(tmp_path: Path) -> None:
    """8,000 Functions in a file took 22 s: every statement was searched for
    every Function's name. Twelve times the Functions is about twelve times
    the work (counted in calls, not seconds), with the same findings."""
    from .helpers import lint_tree

    def work(count: int) -> int:
        root = tmp_path / str(count)
        root.mkdir()
        (root / "many.py").write_text(
            "import torch\n\n\n" + "".join(ONE_OF_MANY.format(i=i) for i in range(count)))
        findings: list = []
        calls = _profiled(lambda: findings.extend(lint_tree(root, jobs=1, prefilter=True)))
        assert [(f.code, f.function) for f in findings] == [
            ("AGF105", f"Double{i}") for i in range(count)]
        return sum(calls.values())

    work(5)  # what the first run alone does (imports, tables built once)
    small, large = work(50), work(600)
    assert large / small < 1.2 * 600 / 50


# -- --watch ----------------------------------------------------------------------
class _Clock:
    """A fake clock: each walk of the tree (`snapshot`) takes `walk` seconds."""

    def __init__(self, walk: float) -> None:
        self.now = 0.0
        self.walk = walk
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def snapshot(self, state: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        self.now += self.walk
        return state

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_watch_idles_longer_on_a_tree_that_takes_long_to_walk(tmp_path: Path,
                                                               monkeypatch) -> None:
    """Polling never takes more than a tenth of a core (a large tree's walk
    every half second took 29% of one)."""
    from autograd_lint.cli import watch as watching

    clock = _Clock(walk=0.3)
    runs: list[int] = []

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) >= 5:
            raise KeyboardInterrupt

    monkeypatch.setattr(watching, "_snapshot", lambda roots, skipped: clock.snapshot({}))
    assert watching.watch(lambda: runs.append(1) or 0, [str(tmp_path)], io.StringIO(),
                          sleep=sleep, clock=clock.time) == 0
    assert runs == [1]
    walking = 0.3 * len(clock.sleeps)  # a walk after each sleep
    assert walking / (walking + sum(clock.sleeps)) <= 0.1


def test_watch_runs_again_though_a_file_never_holds_still(tmp_path: Path,
                                                          monkeypatch) -> None:
    """A file rewritten every fraction of a second (a log, a generator) must
    not hold the next run back forever."""
    from autograd_lint.cli import watch as watching

    clock = _Clock(walk=0.0)
    runs: list[int] = []
    snapshots = iter(range(10_000))  # every walk sees the file changed again

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(runs) >= 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(watching, "_snapshot",
                        lambda roots, skipped: clock.snapshot({"log.py": (next(snapshots), 0)}))
    assert watching.watch(lambda: runs.append(1) or 0, [str(tmp_path)], io.StringIO(),
                          sleep=sleep, clock=clock.time) == 0
    assert len(runs) == 3
