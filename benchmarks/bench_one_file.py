"""One small file, whole process: what a pre-commit hook pays per invocation.

    python benchmarks/bench_one_file.py [--repeat 15]

Target: autograd-lint <= 0.15 s for the whole process.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _timing import compare, report, tool

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    target = str(ROOT / "examples" / "quantize_ste.py")
    with tempfile.TemporaryDirectory() as workdir:
        medians = compare({
            "python -c pass (interpreter start)": [sys.executable, "-c", "pass"],
            "autograd-lint check FILE": [tool("autograd-lint"), "check", target, "--no-cache",
                                         "--isolated", "-q"],
            "ruff --select E9 FILE": [tool("ruff"), "check", "--select", "E9", "--no-cache",
                                      "--isolated", "-q", target],
        }, args.repeat, Path(workdir))
    report("one file, whole process", medians, "ruff --select E9 FILE")
    verdict = "meets" if medians["autograd-lint check FILE"] <= 0.15 else "MISSES"
    print(f"  target <= 0.150 s: {verdict}")


if __name__ == "__main__":
    main()
