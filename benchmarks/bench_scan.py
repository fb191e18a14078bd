"""Whole-tree scans: autograd-lint (cold and warm cache) against ruff and flake8.

    python benchmarks/bench_scan.py [--repeat 5] [--trees torch-source torch stdlib]
                                    [--with-flake8] [--before PYTHON]

Trees: `torch-source` is a copy of the installed torch package's .py files
without `__pycache__`, as a user's clone is; `torch` is the installed
package itself; `stdlib` the standard library; or a folder.

Each command's median wall time and median CPU time (its workers' included)
over alternating rounds, with ratios to ruff --select E9 measured in the same
rounds. `--before PYTHON`: also an interpreter with an earlier autograd-lint
installed (`PYTHON -m autograd_lint`), in the same rounds. On the torch
source copy, `--select ALL` and `coverage` are measured too (no bar).

Targets (issue 40, 2-core machines): cold default rules / ruff --select E9
<= 2.0 in wall and in CPU time on the torch source copy, <= 0.5 on the
standard library; warm <= 0.15 s. flake8 --select B is slow on big trees,
so it runs only with --with-flake8. (One file changed since the last run:
bench_incremental.py.)
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _timing import compare, compare_timed, report, source_copy, stdlib_tree, tool, torch_tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trees", nargs="+", default=["torch-source", "torch", "stdlib"])
    parser.add_argument("--with-flake8", action="store_true")
    parser.add_argument("--before", metavar="PYTHON",
                        help="also an interpreter with an earlier autograd-lint installed")
    args = parser.parse_args()
    trees = {"torch": torch_tree, "stdlib": stdlib_tree}
    lint, ruff, flake8 = tool("autograd-lint"), tool("ruff"), tool("flake8")
    for name in args.trees:
        with tempfile.TemporaryDirectory() as workdir:
            tree = str(source_copy(torch_tree(), Path(workdir, "source"))
                       if name == "torch-source" else
                       trees[name]() if name in trees else Path(name))
            cold = {
                "autograd-lint (cold)": [lint, "check", tree, "--isolated", "-q", "--no-cache"],
                "ruff --select E9": [ruff, "check", "--select", "E9", "--isolated",
                                     "--no-cache", "-q", tree],
                "ruff (default rules)": [ruff, "check", "--isolated", "--no-cache", "-q", tree],
            }
            if args.before:
                cold["autograd-lint before (cold)"] = [
                    args.before, "-m", "autograd_lint", "check", tree, "--isolated", "-q",
                    "--no-cache"]
            if name == "torch-source":  # measured, no bar
                cold["autograd-lint --select ALL (cold)"] = [
                    lint, "check", tree, "--isolated", "-q", "--no-cache", "--select", "ALL"]
                cold["autograd-lint coverage (cold)"] = [
                    lint, "coverage", tree, "--isolated", "--no-cache"]
            if args.with_flake8:
                cold["flake8 --select B"] = [flake8, "--select", "B", "--jobs", "auto", tree]
            walls, cpus = compare_timed(cold, args.repeat, Path(workdir))
            report(f"{name} tree, cold ({tree})", walls, "ruff --select E9", cpus)
            warm = {  # the cache lives in the working directory of the run
                "autograd-lint (warm cache)": [lint, "check", tree, "--isolated", "-q"],
                "ruff --select E9 (warm cache)": [ruff, "check", "--select", "E9",
                                                  "--isolated", "-q", tree],
            }
            report(f"{name} tree, warm cache",
                   compare(warm, args.repeat, Path(workdir)), "ruff --select E9 (warm cache)")


if __name__ == "__main__":
    main()
