"""Shared helpers: run commands alternately, report medians and ratios."""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """A console script of this environment (or on PATH)."""
    candidate = BIN / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} is not installed: pip install -e '.[dev]'")
    return found


def torch_tree() -> Path:
    """The installed torch package's source tree, found without importing torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed: pip install -e '.[test]'")
    return Path(spec.origin).parent


def source_copy(tree: Path, into: Path) -> Path:
    """The .py files of `tree` copied under `into`, without `__pycache__`:
    what a user's clone holds (no bytecode for the engine to lean on)."""
    target = into / tree.name
    for path in tree.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        destination = target / path.relative_to(tree)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    return target


def stdlib_tree() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def run_once(command: Sequence[str], cwd: Path | None = None) -> float:
    return run_timed(command, cwd)[0]


def run_timed(command: Sequence[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run: user and system time of the
    command and of every process it waited for (its workers)."""
    import resource

    # Bytecode caching on, as in any pip install (some shells disable it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(list(command), cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env={**env, "PYTHONWARNINGS": "ignore"})
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): "
                         f"{proc.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def compare(commands: dict[str, Sequence[str]], repeat: int, cwd: Path | None = None,
            warmup: bool = True) -> dict[str, float]:
    """Median wall time of each command; runs alternate within each round."""
    return compare_timed(commands, repeat, cwd, warmup)[0]


def compare_timed(commands: dict[str, Sequence[str]], repeat: int, cwd: Path | None = None,
                  warmup: bool = True) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and median CPU time of each command; runs alternate
    within each round."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    if warmup:  # one untimed round: file caches warm for every tool alike
        for command in commands.values():
            run_once(command, cwd)
    for _ in range(repeat):
        for name, command in commands.items():
            wall, cpu = run_timed(command, cwd)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return ({name: statistics.median(values) for name, values in walls.items()},
            {name: statistics.median(values) for name, values in cpus.items()})


def report(title: str, medians: dict[str, float], baseline: str,
           cpu: dict[str, float] | None = None) -> None:
    """One line per command: median wall time and its ratio to `baseline`'s
    (and, given `cpu`, median CPU time and its ratio)."""
    print(f"\n{title}")
    width = max(len(name) for name in medians)
    for name, seconds in medians.items():
        ratio = seconds / medians[baseline]
        line = f"  {name:<{width}}  {seconds:7.3f} s   ratio vs {baseline}: {ratio:5.2f}"
        if cpu is not None:
            line += f"   CPU {cpu[name]:7.3f} s, ratio {cpu[name] / cpu[baseline]:5.2f}"
        print(line)
