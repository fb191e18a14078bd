"""The incoming gradients autograd really hands backward (issue 38, AGD014):
an expanded stride-0 tensor (`.sum()`'s backward), a narrow view of a larger
buffer (`torch.cat`'s), a transposed tensor, besides a contiguous one of the
same values; a difference is AGD014 naming the layout. For Functions and for
custom ops' registered backward."""
from __future__ import annotations

import pytest

from .test_dynamic import DYNAMIC
from .test_dynamic_unseen import _messages

LAYOUTS = DYNAMIC / "layouts"

pytest.importorskip("torch")

EXPANDED = "an expanded stride-0 tensor"
NARROW = "a narrow view of a larger buffer"
TRANSPOSED = "a transposed tensor"


@pytest.fixture(scope="module")
def functions() -> dict[str, list[tuple[str, str]]]:
    pytest.importorskip("triton")
    return _messages(str(LAYOUTS / "triton_grad_layouts.py"))


def test_a_triton_backward_reading_the_gradient_by_shape_names_the_layout(functions) -> None:
    (code, message), = functions["KernelReadsGradAsContiguous"]
    assert code == "AGD014"
    assert f"when the incoming gradient is {EXPANDED} instead of a contiguous tensor" in message
    assert f"(also {NARROW}, {TRANSPOSED})" in message
    assert "returns a different gradient for input 0 (`x`)" in message


def test_its_contiguous_twin_gets_nothing(functions) -> None:
    assert "KernelMakesGradContiguous" not in functions


def test_view_of_the_gradient_raises_on_a_narrow_view_and_reshape_does_not(functions) -> None:
    (code, message), = functions["ViewsGrad"]
    assert code == "AGD014"
    assert "raises RuntimeError: view size is not compatible" in message
    assert f"when the incoming gradient is {NARROW}" in message
    assert "ReshapesGrad" not in functions


def test_a_custom_ops_registered_backward_gets_the_layouts_too() -> None:
    """opcheck feeds its backward contiguous gradients only; the layout
    probe runs on an op with an autograd formula, under AGD014."""
    pytest.importorskip("triton")
    found = _messages(str(LAYOUTS / "triton_op_grad_layouts.py"))
    messages = dict(found["tripled"])
    assert f"when the incoming gradient is {EXPANDED}" in messages["AGD014"]
    assert "tripled_contiguous" not in found
    assert "scale_by_shape" not in found  # no autograd formula: no backward of its own


def test_the_layouts_keep_values_apart_and_stay_inside_their_storage() -> None:
    """Each layout has the values it claims; a read of its storage as
    contiguous meets other values, never memory past its end."""
    torch = pytest.importorskip("torch")
    from autograd_lint.dynamic.grad_layouts import LAYOUTS as FED

    generator = torch.Generator().manual_seed(0)
    grad = torch.randn(3, 4, dtype=torch.float64, generator=generator)
    made = {layout.name: layout.make(grad, generator) for layout in FED}
    assert made["a strided view (every other element)"] is None  # a matrix is transposed
    for name in (NARROW, TRANSPOSED):
        assert torch.equal(made[name], grad) and not made[name].is_contiguous()
    assert made[NARROW].storage_offset() == 1
    expanded = made[EXPANDED]
    assert set(expanded.stride()) == {0} and torch.equal(expanded, grad[0, 0].expand(3, 4))
    behind = torch.as_strided(expanded, (12,), (1,))  # what a kernel reading by shape gets
    assert torch.equal(behind, grad.reshape(-1))
    vector = torch.randn(5, dtype=torch.float64, generator=generator)
    strided = FED[3].make(vector, generator)
    assert strided is not None and strided.stride() == (2,) and torch.equal(strided, vector)
    assert FED[2].make(vector, generator) is None
    scalar = torch.tensor(2.0)
    assert all(layout.make(scalar, generator) is None for layout in FED)
