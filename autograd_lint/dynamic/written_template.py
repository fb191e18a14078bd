"""The fixed text of a test file `coverage --write-tests` writes: its
header, where the modules under test are imported from, Triton's
interpreter where the tests need it, and the helpers its tests call.

The helpers that build inputs (`_floats`, `_exact`) are also run in the
worker (`written_plans.py`) on the arguments a test will pass, before the test
is written: what the worker checks is what the test builds. Nothing here
imports torch.
"""
from __future__ import annotations

HEADER = '''\
"""Gradient tests for the custom autograd Functions and ops that no test
checked, written by `autograd-lint coverage --write-tests` ({count}).

Each test calls the Function (or op) on inputs autograd-lint's dynamic mode
built for it (calls recorded from the project's tests first, else inputs
synthesized from forward's signature) and checks its gradients at the
precision it computes in: `torch.autograd.gradcheck` in float64 for code that
keeps float64; with a finite-difference step and tolerances calibrated to
float32 for kernels that compute in float32; against its declared reference
implementation, in float64, for code that computes only in bfloat16/float16.
A Function the dynamic mode could not build inputs for has a test that is
skipped and says why.

They need torch and pytest{triton_needs}. Each `--write-tests` run
writes this file anew: move a test into the project's own suite to keep
what you change in it.
"""
from __future__ import annotations

import os
import sys
import warnings

import pytest

'''

IMPORT_ROOTS = '''\
# Where the modules under test are imported from (relative to this file).
_HERE = os.path.dirname(os.path.abspath(__file__))
for _root in {roots}:
    _root = os.path.normpath(os.path.join(_HERE, _root))
    if _root not in sys.path:
        sys.path.insert(0, _root)

'''

TRITON_NEEDS = " (and autograd-lint, for Triton's\ninterpreter: see below)"

TRITON = '''\
# The Triton kernels run on the CPU, in Triton's interpreter (switched on
# before any kernel is defined), with the gaps autograd-lint fills in it the
# way compiled Triton behaves (float scalar arguments, libdevice, autotune).
os.environ.setdefault("TRITON_INTERPRET", "1")
from autograd_lint.dynamic.triton_cpu import install  # noqa: E402

install()

'''

TORCH = '''\
torch = pytest.importorskip("torch")
DEVICE = torch.device({device})
'''

CUDA_ONLY = '''\
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="written for CUDA, which this machine lacks")
'''

# The helpers that build a test's inputs: run in the worker too.
FLOATS = '''

def _floats(shape, low, high, seed, dtype=torch.float64, requires_grad=True):
    """Values drawn uniformly from [low, high), the same on every run."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(shape, dtype=torch.float64, generator=generator) * (high - low) + low
    if dtype.is_complex:
        values = torch.complex(values, values.flip(-1) if values.dim() else values)
    return values.to(DEVICE, dtype).requires_grad_(requires_grad)
'''

EXACT = '''

def _exact(values, dtype, requires_grad=False):
    """A tensor of these values."""
    tensor = torch.tensor(values, dtype=dtype, device=DEVICE)
    return tensor.requires_grad_(requires_grad) if requires_grad else tensor
'''

BUILDERS = {"_floats": FLOATS, "_exact": EXACT}

GRADCHECK = '''

def _tensor_outputs(function, clone_inputs=False):
    """The function with its non-tensor outputs dropped (gradcheck takes
    tensors only); with `clone_inputs`, called on copies of its tensor
    inputs, as an in-place Function's callers pass them."""
    def call(*args):
        if clone_inputs:
            args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        output = function(*args)
        if isinstance(output, (tuple, list)):
            return tuple(t for t in output if isinstance(t, torch.Tensor))
        return output

    return call


def _gradcheck(function, inputs, clone_inputs=False, **tolerances):
    """torch.autograd.gradcheck at the step and tolerances of the precision
    the code computes in."""
    with warnings.catch_warnings():
        # float32 inputs are chosen on purpose for code that refuses float64.
        warnings.filterwarnings("ignore", message="Input #")
        assert torch.autograd.gradcheck(_tensor_outputs(function, clone_inputs), inputs,
                                        check_undefined_grad=False, check_batched_grad=False,
                                        **tolerances)
'''

REFERENCE = '''

def _floating(output, requiring_grad=False):
    """The floating-point tensors among a function's outputs (with
    `requiring_grad`, those autograd differentiates)."""
    items = output if isinstance(output, (tuple, list)) else (output,)
    return [t for t in items if isinstance(t, torch.Tensor) and t.is_floating_point() and
            (t.requires_grad or not requiring_grad)]


def _in_float64(inputs):
    """The same values in float64, as leaves of their own."""
    return tuple(a.detach().double().requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                 for a in inputs)


def _leaves(inputs):
    return [a for a in inputs if isinstance(a, torch.Tensor) and a.requires_grad]


def _random_like(tensors, seed=13):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(t.shape, dtype=torch.float64, generator=generator).to(t.device)
            for t in tensors]


def _assert_near(got, expected, tolerance, what):
    """Each of `got` within `tolerance` of the reference's value, relative to
    the reference's largest magnitude (at least 1)."""
    assert len(got) == len(expected), f"{len(got)} {what}s, the reference's {len(expected)}"
    for index, (a, b) in enumerate(zip(got, expected)):
        if a is None or b is None:
            continue  # an input one of them does not differentiate
        a, b = a.detach().double(), b.detach().double()
        assert a.shape == b.shape, f"{what} {index}: shape {list(a.shape)}, " \\
            f"the reference's {list(b.shape)}"
        scale = max(float(b.abs().max()) if b.numel() else 0.0, 1.0)
        gap = float((a - b).abs().max()) if a.numel() else 0.0
        assert gap <= tolerance * scale, f"{what} {index} differs from the reference's by {gap:.3g}"
'''


def helpers(body: str) -> str:
    """The helpers the tests in `body` call, each once."""
    chosen = [source for name, source in BUILDERS.items() if f"{name}(" in body]
    if "_gradcheck(" in body:
        chosen.append(GRADCHECK)
    if "_assert_near(" in body:
        chosen.append(REFERENCE)
    return "".join(chosen)
