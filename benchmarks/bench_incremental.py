"""Incremental runs on a copy of the torch tree: one file changed since the
last run, against a warm run with nothing changed and ruff's warm parse.

    python benchmarks/bench_incremental.py [--repeat 5] [--before PYTHON]

Each round appends a comment to one file (its content, so its stored result,
changes) and times a whole `autograd-lint check` process. Three files: one
that defines Functions (it and the files that read it are analysed again),
one that matters to none (only its byte scan is redone), and none at all.
`--before PYTHON`: also an interpreter with an earlier autograd-lint
installed (`PYTHON -m autograd_lint`), on a copy of its own (its own cache),
in the same rounds.
Targets (issue 40, 2-core machines): a file defining Functions changed
<= 0.5 s; nothing changed <= 0.10 s.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from _timing import run_once, tool, torch_tree

FILES = {
    "a file defining Functions changed": "nn/modules/_functions.py",
    "a file without Functions changed": "_tensor_str.py",
    "nothing changed": None,
}


def copy_sources(source: Path, target: Path) -> None:
    """The tree's Python files only (the package also holds large binaries)."""
    for path in source.rglob("*.py"):
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", metavar="PYTHON",
                        help="also an interpreter with an earlier autograd-lint installed")
    args = parser.parse_args()
    lint, ruff = tool("autograd-lint"), tool("ruff")
    versions = {"": [lint]}
    if args.before:
        versions["before: "] = [args.before, "-m", "autograd_lint"]
    with tempfile.TemporaryDirectory() as workdir:
        trees = {}
        for label, start in versions.items():  # each version its own copy and cache
            tree = trees[label] = Path(workdir) / f"copy{len(trees)}" / "torch"
            copy_sources(torch_tree(), tree)
            run_once([*start, "check", str(tree), "--isolated", "-q"], tree)  # fills the cache
        ruff_tree = trees[""]
        ruff_warm = [ruff, "check", "--select", "E9", "--isolated", "-q", str(ruff_tree)]
        run_once(ruff_warm, ruff_tree)
        times: dict[str, list[float]] = {
            f"{label}{name}": [] for name in FILES for label in versions}
        times["ruff --select E9 (warm cache)"] = []
        for round_number in range(args.repeat):
            for name, relative in FILES.items():
                for label, start in versions.items():
                    tree = trees[label]
                    if relative is not None:
                        with open(tree / relative, "a", encoding="utf-8") as handle:
                            handle.write(f"# edit {round_number}\n")
                    command = [*start, "check", str(tree), "--isolated", "-q"]
                    times[f"{label}{name}"].append(run_once(command, tree))
            times["ruff --select E9 (warm cache)"].append(run_once(ruff_warm, ruff_tree))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"\nincremental runs on a copy of the torch tree ({args.repeat} rounds)")
    width = max(len(name) for name in medians)
    baseline = medians["ruff --select E9 (warm cache)"]
    for name, seconds in medians.items():
        print(f"  {name:<{width}}  {seconds:7.3f} s   ratio vs ruff --select E9 (warm cache): "
              f"{seconds / baseline:5.2f}")


if __name__ == "__main__":
    main()
