"""Whether this Python can run the dynamic mode at all, asked before any
Function is: a missing torch is one error for the run (exit 2), not one
AGD900 per Function; so is `--device cuda` where torch finds no CUDA.
Nothing here imports torch (the parent never does)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys


def missing_for_dynamic(device: str, triton_interpreter: bool) -> str | None:
    """One line saying what the dynamic mode lacks here, or None."""
    if not _installed("torch"):
        return (f"--dynamic needs torch, which {sys.executable} cannot import; install it "
                "(the `dynamic` extra of autograd-lint: pip install './autograd-lint[dynamic]' "
                "from a clone) or leave --dynamic out")
    if device == "cuda" and not _cuda_available(device):
        return ("--device cuda, but torch finds no CUDA device here; pass --device cpu, or "
                "--device auto to use CUDA where there is one")
    if triton_interpreter and device != "cuda" and _installed("triton") and \
            not _installed("numpy") and not _cuda_available(device):
        return ("--dynamic on the CPU runs Triton kernels through Triton's interpreter, which "
                "needs numpy; install it (pip install numpy) or pass --no-triton-interpreter")
    return None


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _cuda_available(device: str) -> bool:
    """`--device auto` finds CUDA in the worker; asked here only where the
    answer decides an error: `--device cuda`, and triton without numpy."""
    if device == "cpu":
        return False
    try:
        probe = subprocess.run([sys.executable, "-c",
                                # not the working directory's `types.py`
                                "import sys; sys.path.pop(0); import torch; "
                                "print(torch.cuda.is_available())"],
                               capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.stdout.strip() == "True"
