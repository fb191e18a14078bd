"""Whole-tree scans: autograd-lint (cold and warm cache) against ruff and flake8.

    python benchmarks/bench_scan.py [--repeat 5] [--trees torch-source torch stdlib]
                                    [--with-flake8]

Trees: `torch-source` is a copy of the installed torch package's .py files
without `__pycache__`, as a user's clone is (the engine cannot skip the
whole-file syntax check of a file Python compiled); `torch` is the installed
package itself; `stdlib` the standard library; or a folder.

Targets (2-core machines): cold autograd-lint / ruff --select E9 <= 1.5 on the
torch tree (the source copy) and <= 1.0 on the standard library; warm <= 0.15 s.
flake8 --select B is slow on big trees, so it runs only with --with-flake8.
(One file changed since the last run: bench_incremental.py.)
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _timing import compare, report, source_copy, stdlib_tree, tool, torch_tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trees", nargs="+", default=["torch-source", "torch", "stdlib"])
    parser.add_argument("--with-flake8", action="store_true")
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
            if args.with_flake8:
                cold["flake8 --select B"] = [flake8, "--select", "B", "--jobs", "auto", tree]
            report(f"{name} tree, cold ({tree})",
                   compare(cold, args.repeat, Path(workdir)), "ruff --select E9")
            warm = {  # the cache lives in the working directory of the run
                "autograd-lint (warm cache)": [lint, "check", tree, "--isolated", "-q"],
                "ruff --select E9 (warm cache)": [ruff, "check", "--select", "E9",
                                                  "--isolated", "-q", tree],
            }
            report(f"{name} tree, warm cache",
                   compare(warm, args.repeat, Path(workdir)), "ruff --select E9 (warm cache)")


if __name__ == "__main__":
    main()
