"""Real projects from PyPI: internal errors, prefilter agreement, time.

    python benchmarks/bench_corpus.py [--dir benchmarks/.corpus] [PACKAGE ...]

Downloads each package's source distribution (`pip download --no-binary
:all: --no-deps`; the wheel when no sdist can be had without building it),
unpacks it, and checks the tree twice with every rule: with the prefilter and
with `--no-prefilter`. Prints, per package, the files, findings, internal
errors (must be 0), whether both runs agree (must be yes) and the two times.
Downloads are kept in --dir for the next run.
"""
from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

from _packages import download, unpack
from _timing import tool

# Libraries with many custom Functions: kernels, parallelism, quantization.
PACKAGES = [
    "accelerate", "bitsandbytes==0.42.0", "colossalai", "deepspeed", "diffusers", "einops",
    "fairscale", "flash-linear-attention", "gpytorch", "hqq", "kornia", "liger-kernel",
    "lightning-thunder", "local-attention", "megatron-core", "nvidia-modelopt",
    "optimum-quanto", "peft", "pyro-ppl", "rotary-embedding-torch", "timm", "torch-geometric",
    "torchao", "torchdiffeq", "transformers", "unsloth", "xformers",
]


def lint(tree: Path, *flags: str) -> tuple[float, int, str, str]:
    command = [tool("autograd-lint"), "check", str(tree), "--isolated", "--no-cache",
               "--select", "ALL", "--format", "json", *flags]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - start, proc.returncode, proc.stdout, proc.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=PACKAGES)
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / ".corpus")
    args = parser.parse_args()
    print(f"{'package':<48} {'files':>6} {'findings':>8} {'errors':>6} {'agree':>5} "
          f"{'prefilter':>9} {'whole':>7}")
    totals = [0, 0, 0, 0]
    for package in args.packages:
        archive = download(package, args.dir / "downloads")
        if archive is None:
            print(f"{package:<48} (could not download)")
            continue
        tree = unpack(archive, args.dir / "src")
        files = sum(1 for _ in tree.rglob("*.py"))
        fast, code, out, err = lint(tree)
        slow, code_whole, out_whole, err_whole = lint(tree, "--no-prefilter")
        internal = sum("internal error" in line for line in (err + err_whole).splitlines())
        agree = out == out_whole and code == code_whole
        findings = out.count('"code":')
        totals[0] += files
        totals[1] += findings
        totals[2] += internal
        totals[3] += not agree
        print(f"{tree.name[:48]:<48} {files:>6} {findings:>8} {internal:>6} "
              f"{'yes' if agree else 'NO':>5} {fast:8.2f}s {slow:6.2f}s")
    print(f"\n{totals[0]} files, {totals[1]} findings, {totals[2]} internal errors, "
          f"{totals[3]} packages where the prefilter changed the findings")


if __name__ == "__main__":
    main()
