"""flake8 with the autograd-lint plugin against flake8 alone, on the torch tree.

    python benchmarks/bench_flake8_plugin.py [--repeat 3] [--tree PATH]

Target: with plugin / alone <= 1.10. "Alone" runs the same flake8 with the
autograd-lint distribution hidden from plugin discovery.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _timing import compare, report, torch_tree

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", type=Path)
    args = parser.parse_args()
    tree = str(args.tree or torch_tree())
    runner = [sys.executable, str(HERE / "_flake8_runner.py")]
    flags = ["--jobs", "auto", "--select", "E9,F,AGF", tree]
    medians = compare({
        "flake8 alone": [*runner, "--without-autograd-lint", *flags],
        "flake8 + autograd-lint": [*runner, *flags],
    }, args.repeat, warmup=False)
    report(f"flake8 on {tree}", medians, "flake8 alone")
    ratio = medians["flake8 + autograd-lint"] / medians["flake8 alone"]
    print(f"  target <= 1.10: {'meets' if ratio <= 1.10 else 'MISSES'} ({ratio:.2f})")


if __name__ == "__main__":
    main()
