"""The scan-agreement property of tests/test_fuzz.py, at scale.

    python benchmarks/bench_fuzz.py [--mutants 20000] [--seed 0] [--jobs N] [--show 5]

Each mutant is a rule fixture with one to three mutations (form feeds, line
endings, backslash continuations, comments, deep nesting, 3.12+ syntax,
tabs), padded past the sparse threshold half the time (see `mutant`). A
mutant agrees when a directory scan (byte prefilter, sparse parse) reports
what a run without the prefilter reports and, but for tree-only rules, what
the file reports named alone (see `disagreement`). Mutants are numbered
from --seed on, so a run is deterministic and any case can be replayed
alone with `--seed N --mutants 1`. Prints how many mutants ran, how many
disagree, and the first disagreeing cases; exits 1 if any disagrees.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_fuzz import disagreement, mutant  # (the repository on the path first)

Case = tuple[int, str, str]  # (seed, what was done, how the runs differ)


def check_seeds(seeds: range) -> tuple[int, list[Case]]:
    """(mutants checked, the disagreeing ones) for one slice of seeds."""
    found = []
    with tempfile.TemporaryDirectory() as directory:
        for seed in seeds:
            done, text = mutant(seed)
            problem = disagreement(text, Path(directory))
            if problem is not None:
                found.append((seed, done, problem))
    return len(seeds), found


def slices(first: int, count: int, size: int) -> Iterator[range]:
    for start in range(first, first + count, size):
        yield range(start, min(start + size, first + count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0, help="the first mutant's number")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--show", type=int, default=5, help="disagreeing cases to print")
    args = parser.parse_args()

    started = time.perf_counter()
    checked, cases = 0, []
    parts = list(slices(args.seed, args.mutants, 50))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for count, found in pool.map(check_seeds, parts):
            checked += count
            cases.extend(found)
    elapsed = time.perf_counter() - started
    print(f"mutants: {checked} (seeds {args.seed}..{args.seed + args.mutants - 1}), "
          f"{elapsed:.0f} s with {args.jobs} processes")
    print(f"disagreements: {len(cases)}")
    for seed, done, problem in sorted(cases)[:args.show]:
        print(f"  seed {seed} ({done}): {problem[:600]}")
    sys.exit(1 if cases else 0)


if __name__ == "__main__":
    main()
