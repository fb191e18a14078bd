"""Dynamic mode on PyTorch's reference Functions (torch.testing._internal.autograd_function_db).

    python benchmarks/bench_dynamic_db.py [--repeat 3] [--device auto]

Runs `autograd-lint check --dynamic` on the module (15 Functions, one worker:
the module is one job) and prints the median wall time, the time per Function,
and the ratio to a bare `python -c "import torch"` (the fixed cost of a worker).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from _timing import tool


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - start, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    import torch.testing._internal.autograd_function_db as db

    lint = [tool("autograd-lint"), "check", db.__file__, "--isolated", "--no-cache",
            "--dynamic", "--select", "AGD", "--format", "json", "--device", args.device]
    bare = [sys.executable, "-c", "import torch"]
    runs, imports, output = [], [], "[]"
    for _ in range(args.repeat):  # alternating, so drift hits both alike
        seconds, output = timed(lint)
        runs.append(seconds)
        imports.append(timed(bare)[0])
    findings = json.loads(output)
    functions = 15
    median = statistics.median(runs)
    print(f"autograd_function_db: {functions} Functions, {len(findings)} AGD findings "
          f"({sum(f['code'] == 'AGD900' for f in findings)} not checked)")
    print(f"  dynamic run        {median:6.2f} s  ({median / functions:.2f} s per Function)")
    print(f"  import torch       {statistics.median(imports):6.2f} s")
    print(f"  ratio run / import {median / statistics.median(imports):6.2f}")
    for finding in findings:
        print(f"    {finding['function']}: {finding['code']}")


if __name__ == "__main__":
    main()
