"""A synthetic 100,000-file tree: wall time and peak memory of a cold scan.

    python benchmarks/bench_big_tree.py [--files 100000] [--repeat 3] [--keep DIR]

The tree mixes plain modules (most of it), modules defining Functions, modules
importing them and tests calling gradcheck, in packages 3 levels deep. The
script prints autograd-lint's median wall time next to ruff --select E9, and
the peak resident memory of each (the largest process of the run, workers
included). Memory should stay in the low hundreds of MiB: per-file state is a
small scan record, and only files that can matter are parsed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _timing import tool

PLAIN = '''\
"""Module {n}."""
import math

from .helpers_{m} import scale


def area_{n}(radius: float) -> float:
    return math.pi * scale(radius) ** 2


class Shape{n}:
    def __init__(self, size):
        self.size = size

    def grow(self, factor):
        return Shape{n}(self.size * factor)
'''
FUNCTION = '''\
import torch


class Op{n}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2
'''
USER = '''\
from .ops_{n} import Op{n}


def run(x):
    return Op{n}.apply(x)
'''
TEST = '''\
import torch
from pkg_{a}.sub_{b}.ops_{n} import Op{n}


def test_op():
    assert torch.autograd.gradcheck(Op{n}.apply, (torch.randn(2, dtype=torch.double),))
'''


def build(root: Path, files: int) -> None:
    per_dir = 100
    written = 0
    while written < files:
        index = written // per_dir
        directory = root / f"pkg_{index // 100}" / f"sub_{index % 100}"
        directory.mkdir(parents=True, exist_ok=True)
        for parent in (directory.parent, directory):
            (parent / "__init__.py").touch()
        for n in range(written, min(written + per_dir, files)):
            if n % 500 == 0:
                (directory / f"ops_{n}.py").write_text(FUNCTION.format(n=n))
                (directory / f"use_{n}.py").write_text(USER.format(n=n))
                if n % 1000 == 0:
                    (directory / f"test_ops_{n}.py").write_text(
                        TEST.format(a=index // 100, b=index % 100, n=n))
            else:
                (directory / f"mod_{n}.py").write_text(PLAIN.format(n=n, m=n % 7))
        written += per_dir


def measure(command: list[str]) -> tuple[float, float]:
    """(wall seconds, peak MiB of the largest process) of one run."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # a fresh child, so that its peak is its own
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.execve(command[0], command, env)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{command} failed with {status}")
    return elapsed, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch) / "tree"
        if not (root / "pkg_0").exists():
            start = time.perf_counter()
            build(root, args.files)
            print(f"built {args.files} files in {time.perf_counter() - start:.1f} s")
        commands = {
            "autograd-lint (cold)": [tool("autograd-lint"), "check", str(root), "--isolated",
                                     "-q", "--no-cache"],
            "ruff --select E9": [tool("ruff"), "check", "--select", "E9", "--isolated",
                                 "--no-cache", "-q", str(root)],
        }
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, command in commands.items():
                runs[name].append(measure(command))
        print(f"\n{args.files} files under {root}")
        base = statistics.median(t for t, _ in runs["ruff --select E9"])
        for name, results in runs.items():
            wall = statistics.median(t for t, _ in results)
            peak = max(m for _, m in results)
            print(f"  {name:<22} {wall:7.2f} s  ratio vs ruff E9: {wall / base:5.2f}  "
                  f"peak {peak:7.1f} MiB")


if __name__ == "__main__":
    main()
