"""Where a cold scan spends its time, phase by phase (one process, one worker).

    python benchmarks/profile_scan.py [--tree PATH] [--top 25]

Prints the cumulative seconds of each phase of a run (file walk, byte scan,
relevance, parsing, rules, suppressions) and how many files each phase saw,
then the most expensive functions. Run with one worker so that the profile
sees every phase; a normal run scans with one worker per core.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

from _timing import torch_tree

PHASES = [  # (label, file suffix, function name) of the functions that make up a run
    ("walk the tree, read configuration", "cli.py", "_collect_inputs"),
    ("byte scan of every file", "scan.py", "scan_all"),
    ("relevance (names, aliases, attribute paths)", "relevance.py", "judge"),
    ("  of which attribute-path search", "relevance.py", "dotted_references"),
    ("read + decode + parse relevant files", "engine_parse.py", "_parse"),
    ("  of which sparse parses", "engine_parse.py", "_sparse"),
    ("  of which ast.parse", "ast.py", "parse"),
    ("rules", "engine.py", "check_module"),
    ("  of which AGF301 gradcheck search", "usage.py", "gradchecked"),
    ("noqa suppressions", "noqa.py", "apply_noqa"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    tree = str(args.tree or torch_tree())

    from autograd_lint.cli import entry as cli

    profile = cProfile.Profile()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the findings are not the point
        profile.enable()
        code = cli.main(["check", tree, "--isolated", "-q", "--no-cache", "--jobs", "1"])
        profile.disable()
    total = time.perf_counter() - start
    print(f"autograd-lint on {tree}: exit {code}, {total:.2f} s under the profiler")

    stats = pstats.Stats(profile, stream=io.StringIO())
    by_name = {}
    for (filename, _, function), (_, ncalls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        for label, suffix, name in PHASES:
            if function == name and filename.endswith(suffix):
                calls, seconds = by_name.get(label, (0, 0.0))
                by_name[label] = (calls + ncalls, seconds + cumulative)
    print(f"\n{'phase':<42} {'calls':>6} {'seconds':>8} {'share':>6}")
    for label, _, _ in PHASES:
        calls, seconds = by_name.get(label, (0, 0.0))
        print(f"{label:<42} {calls:>6} {seconds:8.3f} {seconds / total:6.1%}")

    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
    print("\nmost expensive functions (own time):")
    print("\n".join(out.getvalue().splitlines()[4:]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
