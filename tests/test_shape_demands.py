"""Synthesis that reads shape contracts written as code: the failing assert,
view, unpacking or convolution of forward (demands.py), power-of-two sizes,
process groups and string modes (fixtures/dynamic/shape_contracts.py)."""
from __future__ import annotations

import pytest

from .helpers import FIXTURES
from .test_dynamic import by_function, dynamic

torch = pytest.importorskip("torch")

from autograd_lint.dynamic.demands import Demand, DemandReader, fit  # noqa: E402
from autograd_lint.dynamic.inputs import Synthesis, compared_strings  # noqa: E402


def demands_of(forward, *args) -> list[Demand]:
    """Run `forward(*args)`; the demands its exception carries."""
    reader = DemandReader(forward, list(forward.__code__.co_varnames[:len(args)]))
    with pytest.raises(Exception) as caught:
        forward(*args)
    return reader.read(caught.value, args)


def test_fit_keeps_leading_dims_that_hold_as_many_elements() -> None:
    assert fit((2, 2, 3, 4), (4, 3, 3)) == (2, 2, 3, 3)
    assert fit((2, 3, 4), (-1, 3, 3)) == (2, 3, 3)
    assert fit((2, 3, 4), (2, 3)) == (2, 3)  # nothing lines up: the wanted shape
    assert fit((3, 4), (-1, 5, -1)) == (2, 5, 2)


def test_a_failing_shape_assert_is_evaluated_in_its_frame() -> None:
    def forward(x, h):
        n, hc, _ = x.shape
        assert h.shape == (n, hc)

    assert demands_of(forward, torch.ones(2, 3, 4), torch.ones(2, 3, 4)) == [Demand("h", (2, 3))]


def test_only_the_failing_parts_of_an_assert_are_demands() -> None:
    def forward(phi, b):
        assert phi.dim() == 2 and phi.shape[0] == 12 and b.shape == (4,)

    # dim() and shape[0] fail on phi and combine (rank 2, then 12 rows); b holds
    assert demands_of(forward, torch.ones(2, 3, 4), torch.ones(4)) == [Demand("phi", (12, 4))]
    assert demands_of(forward, torch.ones(12, 5), torch.ones(3)) == [Demand("b", (4,))]


def test_a_view_error_names_the_viewed_parameter() -> None:
    def forward(scores):
        *batch, length, _ = scores.shape
        return scores.view(batch[0] * batch[1], length, length)

    assert demands_of(forward, torch.ones(2, 2, 3, 4)) == [Demand("scores", (2, 2, 3, 3))]


def test_a_view_of_a_parameter_and_a_copy_under_its_name_reach_it() -> None:
    def check(f_flat, h_post):
        assert f_flat.shape == (2, 4)
        assert h_post.shape == (2, 3)

    def forward(x, f_out, h_post):
        f_flat = f_out.view(-1, 4)  # a view: found by its base
        check(f_flat, h_post.view(-1, 3).to(torch.float32))  # a copy: by its name

    x = torch.ones(2, 3, 4, dtype=torch.float64)
    assert demands_of(forward, x, torch.ones(2, 3, 4), torch.ones(2, 3)) == \
        [Demand("f_out", (2, 4))]
    assert demands_of(forward, x, torch.ones(2, 4), torch.ones(2, 3, 4)) == \
        [Demand("h_post", (2, 3))]


def test_a_convolution_asks_for_torchs_weight_and_bias_shapes() -> None:
    def forward(x, weight, bias):
        return torch.nn.functional.conv2d(x, weight, bias)

    found = demands_of(forward, torch.ones(2, 3, 4, 4), torch.ones(4), torch.ones(4))
    assert found == [Demand("weight", (3, 3, 1, 1)), Demand("bias", (3,))]


def test_nothing_is_demanded_from_errors_that_state_no_contract() -> None:
    def forward(x):
        raise RuntimeError("out of luck")

    assert demands_of(forward, torch.ones(3)) == []

    def calls_user_code(x, n):
        assert x.shape == (n.pop(),)  # evaluating this would change `n`: not evaluated

    assert demands_of(calls_user_code, torch.ones(3), [5]) == []


def test_string_parameters_take_the_literals_forward_compares_them_with() -> None:
    def forward(ctx, x, mode, level="token"):
        if mode not in ("global", "partition"):
            raise ValueError(mode)
        return x if level == "sequence" or mode == "global" else x * 2

    assert compared_strings(forward) == {"mode": ["global", "partition"],
                                         "level": ["sequence"]}


def test_process_groups_are_a_one_process_group() -> None:
    class TensorParallel(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, tp_group):
            return x

    synthesis = Synthesis(TensorParallel, torch.device("cpu"))
    candidate = next(iter(synthesis))
    group = candidate.args[1]
    assert torch.distributed.get_world_size(group) == 1
    assert "tp_group=<one-process group>" in candidate.describe()


def test_a_group_defaulting_to_none_gets_a_group_of_its_own() -> None:
    """`group=None` means the default group, which no check initialises."""
    class Copy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, group=None):
            return x.view_as(x)

    candidate = next(iter(Synthesis(Copy, torch.device("cpu"))))
    assert torch.distributed.get_world_size(candidate.args[1]) == 1
    assert "group=<one-process group>" in candidate.describe()


# -- end to end: the fixture's Good Functions get a verdict, Bad ones a finding ------
@pytest.fixture(scope="module")
def contracts() -> dict[str, set[str]]:
    _, findings, _ = dynamic("--select", "AGD",
                             str(FIXTURES / "dynamic" / "shape_contracts.py"))
    return by_function(findings)


@pytest.mark.parametrize("name", ["StreamMix", "SquareScores", "PointwiseConv",
                                  "PowerOfTwoRows", "GroupSum", "ModeScale"])
def test_contracts_written_as_code_are_met_and_checked(name: str, contracts) -> None:
    assert f"Good{name}" not in contracts  # a verdict (no AGD900) and no finding
    assert contracts[f"Bad{name}"] == {"AGD001"}


def test_names_say_flags_tolerances_and_recurrent_states() -> None:
    class Recurrent(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, initial_state, output_final_state, eps_low, rms_eps):
            return q

    parameters = {p.name: p for p in Synthesis(Recurrent, torch.device("cpu")).parameters}
    assert parameters["initial_state"].none_first  # a state: None first, then a tensor
    assert parameters["output_final_state"].flag  # a flag, though it ends in "state"
    assert parameters["eps_low"].values == [0.1] and parameters["rms_eps"].values == [0.1]
