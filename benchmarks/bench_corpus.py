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
import sys
import tarfile
import time
import zipfile
from pathlib import Path

from _timing import tool

# Libraries with many custom Functions: kernels, parallelism, quantization.
PACKAGES = [
    "accelerate", "bitsandbytes==0.42.0", "colossalai", "deepspeed", "diffusers", "einops",
    "fairscale", "flash-linear-attention", "gpytorch", "hqq", "kornia", "liger-kernel",
    "lightning-thunder", "local-attention", "megatron-core", "nvidia-modelopt",
    "optimum-quanto", "peft", "pyro-ppl", "rotary-embedding-torch", "timm", "torch-geometric",
    "torchao", "torchdiffeq", "transformers", "unsloth", "xformers",
]


def download(package: str, into: Path) -> Path | None:
    into.mkdir(parents=True, exist_ok=True)
    kept = _downloaded(package, into)
    if kept is not None:
        return kept  # the same archive every run, whatever pip would pick today
    before = set(into.iterdir())
    for flags in (["--no-binary", ":all:"], ["--only-binary", ":all:"]):
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                               *flags, "-d", str(into), package], capture_output=True)
        new = set(into.iterdir()) - before
        if proc.returncode == 0 and new:
            return new.pop()
    return None


def _downloaded(package: str, into: Path) -> Path | None:
    """An archive of the package already in `into`: the source distribution
    when there is one (it holds the tests), else a wheel."""
    name, _, version = package.partition("==")
    prefix = name.replace("-", "_").lower() + "-" + version
    found = sorted((p for p in into.iterdir()
                    if p.name.replace("-", "_").lower().startswith(prefix.replace("-", "_"))
                    and p.name[len(name) + 1:][:1].isdigit()),
                   key=lambda p: (not p.name.endswith(".tar.gz"), p.name))
    return found[0] if found else None


def unpack(archive: Path, into: Path) -> Path:
    name = archive.name
    for suffix in (".tar.gz", ".zip", ".whl"):
        name = name.removesuffix(suffix)
    target = into / name
    if not target.exists():
        target.mkdir(parents=True)
        if archive.name.endswith(".tar.gz"):
            with tarfile.open(archive) as handle:
                handle.extractall(target, filter="data")
        else:
            with zipfile.ZipFile(archive) as handle:
                handle.extractall(target)
    return target


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
