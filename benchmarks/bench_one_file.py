"""One small file, whole process: what a pre-commit hook pays per invocation.

    python benchmarks/bench_one_file.py [--repeat 15] [--before PYTHON]

`--before PYTHON`: also an interpreter with an earlier autograd-lint
installed (`PYTHON -m autograd_lint`), in the same rounds.
Target (issue 40): autograd-lint <= 0.10 s for the whole process.
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
    parser.add_argument("--before", metavar="PYTHON",
                        help="also an interpreter with an earlier autograd-lint installed")
    args = parser.parse_args()
    target = str(ROOT / "examples" / "quantize_ste.py")
    check = ["check", target, "--no-cache", "--isolated", "-q"]
    commands = {
        "python -c pass (interpreter start)": [sys.executable, "-c", "pass"],
        "autograd-lint check FILE": [tool("autograd-lint"), *check],
        "ruff --select E9 FILE": [tool("ruff"), "check", "--select", "E9", "--no-cache",
                                  "--isolated", "-q", target],
    }
    if args.before:
        commands["before: autograd-lint check FILE"] = [args.before, "-m", "autograd_lint",
                                                        *check]
    with tempfile.TemporaryDirectory() as workdir:
        medians = compare(commands, args.repeat, Path(workdir))
    report("one file, whole process", medians, "ruff --select E9 FILE")
    verdict = "meets" if medians["autograd-lint check FILE"] <= 0.10 else "MISSES"
    print(f"  target <= 0.100 s: {verdict}")


if __name__ == "__main__":
    main()
