"""The dynamic mode on real kernel libraries: how many Functions and custom ops
get a verdict.

    pip install liger-kernel fla-core triton packaging einops --no-deps   # beside torch
    python benchmarks/bench_kernels.py [--device cpu] [--recorded FILE] [--ops]
                                       [PACKAGE.SUB | DIR ...]

For each package (default: `liger_kernel.ops` and `fla.ops`) or folder (an
unpacked source tree, e.g. `mamba_ssm/ops/triton` of an sdist), runs `check
--dynamic --select AGD` over its source with nothing set by hand and prints
the Functions and custom ops found, how many got a verdict (were checked:
no AGD900 but for a probe that could not run here), the
findings by code, the reasons for AGD900 (most common first) and the wall
time. On a CPU, Triton kernels run through Triton's interpreter. `--ops`
keeps the files that define custom ops (opcheck's coverage). Not a CI
test: the packages are downloads CI does not make.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from _timing import tool

DEFAULT = ["liger_kernel.ops", "fla.ops"]


def source_of(name: str) -> Path:
    if Path(name).is_dir():
        return Path(name)  # an unpacked source tree (its package need not be installed)
    spec = importlib.util.find_spec(name.split(".")[0])
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed (see the docstring)")
    return Path(spec.submodule_search_locations[0], *name.split(".")[1:])


def python_files(paths: list[str]) -> list[str]:
    from autograd_lint.core.files import iter_python_files

    found = []
    for path in paths:
        found += list(iter_python_files(path, lambda p, is_dir: False)) \
            if Path(path).is_dir() else [path]
    return found


def discovered(paths: list[str], scan_tree: bool = False) -> list:
    """The Functions and custom ops `check --dynamic` looks at (static
    discovery, no import); `scan_tree`: ops made through a project's
    registration helper count too."""
    from autograd_lint.core.registry import DYNAMIC_CODES
    from autograd_lint.engine.lint import SourceInput, lint_inputs

    files = python_files(paths)
    return lint_inputs([SourceInput(p, p, DYNAMIC_CODES) for p in files], functions=True,
                       scan_tree=scan_tree).functions


def targets(paths: list[str]) -> dict[tuple[str, int], str]:
    """By (file, line): "Function" or "op"."""
    return {(t.display, t.line): "op" if getattr(t, "op", None) else "Function"
            for t in discovered(paths)}


def op_files(paths: list[str]) -> list[str]:
    """The files under `paths` that define custom ops."""
    return sorted({t.path for t in discovered(paths, scan_tree=True) if t.op})


# AGD900 on a target checked otherwise: one probe could not run here.
PARTIAL = ("not compared with torch.compile", "opcheck could not run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=DEFAULT)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--recorded", help="recorded calls to use (pytest --autograd-record)")
    parser.add_argument("--ops", action="store_true",
                        help="only the files that define custom ops (torch.library)")
    args = parser.parse_args()
    for name in args.packages:
        folder = source_of(name)
        # The top-level modules of liger_kernel.ops; all of fla.ops.
        paths = [str(p) for p in sorted(folder.glob("*.py"))] if name == "liger_kernel.ops" \
            else [str(folder)]
        if args.ops:
            paths = op_files(paths)
        command = [tool("autograd-lint"), "check", *paths, "--isolated", "--no-cache",
                   "--dynamic", "--select", "AGD", "--format", "json", "--device", args.device]
        if args.recorded:
            command += ["--recorded", args.recorded]
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        findings = json.loads(proc.stdout or "[]")
        found = targets(paths)
        unchecked = {(f["path"], f["line"]) for f in findings if f["code"] == "AGD900" and
                     not any(p in f["message"] for p in PARTIAL)}
        codes = Counter(f["code"] for f in findings if f["code"] != "AGD900")
        reasons = Counter(f["message"].split("not checked dynamically: ", 1)[-1][:70]
                          for f in findings if f["code"] == "AGD900")
        for kind in ("Function", "op"):
            total = sum(k == kind for k in found.values())
            if total or kind == "Function":
                checked = total - sum(found.get(key) == kind for key in unchecked)
                print(f"{name}: {total} {kind}s, {checked} with a verdict "
                      f"({100 * checked / max(total, 1):.0f}%), {elapsed:.0f} s")
        print("  findings: " + (", ".join(f"{c} {n}" for c, n in sorted(codes.items()))
                                or "none"))
        for reason, count in reasons.most_common(8):
            print(f"  AGD900 x{count}: {reason}")
        if proc.returncode not in (0, 1):
            print("  error: " + proc.stderr.strip().splitlines()[-1], file=sys.stderr)


if __name__ == "__main__":
    main()
