"""The dynamic mode on kernel code it was not tuned on (issue 26): CUDA
queries in wrappers, packages whose initialiser needs an extension, parameter
bundles, recorded calls that skip an input, the edges of the inputs that
worked, ctx after backward, and a machine without torch."""
from __future__ import annotations

import io
import json
import shutil
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from autograd_lint.cli import entry as cli

from .test_dynamic import DYNAMIC, dynamic

UNSEEN = DYNAMIC / "unseen"


def _messages(*args: str) -> dict[str, list[tuple[str, str]]]:
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu", *args)
    found: dict[str, list[tuple[str, str]]] = {}
    for finding in findings:
        found.setdefault(finding["function"], []).append((finding["code"], finding["message"]))
    return found


@pytest.fixture(scope="module")
def edges() -> dict[str, list[tuple[str, str]]]:
    return _messages(str(UNSEEN / "edges.py"))


def test_cuda_queries_of_a_triton_wrapper_are_answered_on_the_cpu() -> None:
    pytest.importorskip("triton")
    found = _messages(str(UNSEEN / "cuda_wrappers.py"))
    assert "DeviceQueryTriple" not in found  # checked, and clean
    (code, message), = found["DeviceQueryWrong"]
    assert code == "AGD001"
    assert "CPU stand-ins" in message and "`torch.cuda.get_device_properties`" in message


def test_a_package_whose_initialiser_needs_a_missing_extension_is_checked() -> None:
    found = _messages(str(UNSEEN / "extpkg"))
    assert "Square" not in found
    (code, message), = found["SquareWrong"]
    assert code == "AGD001"
    assert "`extpkg/__init__.py`" in message and "left out" in message


def test_a_dataclass_parameter_bundle_is_built_from_its_fields(edges) -> None:
    assert "ScaledByBundle" not in edges
    assert [code for code, _ in edges["ScaledByBundleWrong"]] == ["AGD001"]


def test_a_parameter_no_guess_makes_is_named_in_agd900() -> None:
    found = _messages(str(UNSEEN / "needs_cuda.py"))
    (code, message), = found["ReadsCache"]
    assert code == "AGD900" and "`cache` is a `KVCache`" in message
    # What the machine lacks is said as such: declaring inputs would not help.
    (code, message), = found["RequiresGpu"]
    assert code == "AGD900" and "what this machine lacks" in message
    assert "declare" not in message
    assert "MovesToGpu" not in found  # `.cuda()` stood in on the CPU: checked, clean


def test_an_optional_input_the_recorded_calls_never_pass_is_still_probed() -> None:
    found = _messages(str(UNSEEN / "optional_bias.py"),
                      "--recorded", str(UNSEEN / "recorded-calls.json"))
    (code, message), = found["BiasedScale"]
    assert code == "AGD003"
    assert "with `bias` given, which the recorded calls leave None" in message


def test_recorded_calls_that_need_a_gpu_are_not_checked_rather_than_findings() -> None:
    found = _messages(str(UNSEEN / "needs_cuda.py"),
                      "--recorded", str(UNSEEN / "recorded-calls.json"))
    (code, message), = found["RequiresGpu"]
    assert code == "AGD900" and "a reason of this machine" in message


def test_a_gradient_wrong_only_for_a_size_one_dimension_is_caught(edges) -> None:
    assert "PreviousDifference" not in edges
    (code, message), = edges["PreviousDifferenceShortWrong"]
    assert code == "AGD001" and "cut to 1" in message


def test_a_forward_that_fails_when_no_input_requires_grad(edges) -> None:
    (code, message), = edges["ScalesOnlyForGradients"]
    assert code == "AGD003"
    assert "forward with no input requiring grad" in message and "UnboundLocalError" in message


def test_a_backward_that_stores_a_tensor_on_ctx(edges) -> None:
    (code, message), = edges["StoresOnCtxInBackward"]
    assert code == "AGD006"
    assert message.startswith("StoresOnCtxInBackward: after backward") and "`ctx.last_grad`" \
        in message


def test_a_kernel_that_reads_strided_inputs_as_contiguous(edges) -> None:
    codes = dict(edges["ContiguousOnlyKernel"])
    assert "transposed in memory" in codes["AGD001"]


def _check(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main(["check", "--isolated", "--no-cache", *args])
    return code, err.getvalue()


def test_dynamic_without_torch_is_one_error_line_and_exit_2(monkeypatch, tmp_path) -> None:
    from autograd_lint.dynamic import environment

    monkeypatch.setattr(environment, "_installed", lambda name: name != "torch")
    (tmp_path / "m.py").write_text("x = 1\n")
    code, err = _check("--dynamic", str(tmp_path / "m.py"))
    assert code == 2
    assert err.count("\n") == 1 and "--dynamic needs torch" in err


def test_triton_on_the_cpu_without_numpy_is_an_error(monkeypatch, tmp_path) -> None:
    from autograd_lint.dynamic import environment

    monkeypatch.setattr(environment, "_installed", lambda name: name != "numpy")
    (tmp_path / "m.py").write_text("x = 1\n")
    code, err = _check("--dynamic", "--device", "cpu", str(tmp_path / "m.py"))
    assert code == 2 and "needs numpy" in err
    code, _ = _check("--dynamic", "--device", "cpu", "--no-triton-interpreter",
                     str(tmp_path / "m.py"))
    assert code == 0


def test_selecting_agd_rules_without_dynamic_says_it_has_no_effect(tmp_path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    code, err = _check("--select", "AGD001,AGF", str(tmp_path / "m.py"))
    assert code == 0 and "AGD001" in err and "no effect without it" in err
    code, err = _check("--select", "AGF", str(tmp_path / "m.py"))
    assert err == ""


def test_a_recorded_parameter_bundle_is_rebuilt_from_its_fields() -> None:
    import torch

    from autograd_lint.dynamic.recording import describe, rebuild
    from tests.fixtures.dynamic.unseen.edges import NormParams

    spec = describe(NormParams(torch.ones(3, requires_grad=True), eps=1e-3))
    assert json.loads(json.dumps(spec)) == spec  # it goes into a JSON file
    (params,), _ = rebuild({"args": [spec]}, torch.device("cpu"))
    assert isinstance(params, NormParams) and params.eps == 1e-3
    assert params.weight.shape == (3,)


def test_a_probe_that_crashes_the_process_costs_no_verdict(edges) -> None:
    # AbortsOnSizeOne aborts on a size-1 input: only that probe is lost, not
    # the module's worker (every Function of edges.py keeps its verdict).
    assert not any(code == "AGD900" for found in edges.values() for code, _ in found)
    assert "AbortsOnSizeOne" not in edges


def test_an_output_buffer_is_not_made_up(edges) -> None:
    assert "WritesIntoOut" not in edges  # a made-up `out=` written by forward is no AGD011


def test_a_made_up_optional_value_that_explains_a_mismatch_is_no_finding(edges) -> None:
    assert "LogitsAgainstLse" not in edges  # a random `lse` is no logsumexp of the logits


def test_a_double_backward_that_raises_is_not_agd002(edges) -> None:
    assert "DoubleBackwardRaises" not in edges


def test_kernels_behind_a_backend_check_with_scalar_masks_and_per_row_weights() -> None:
    pytest.importorskip("triton")
    found = _messages(str(UNSEEN / "kernel_edges.py"))
    assert found == {}  # both checked (no AGD900), both clean


def test_an_object_on_ctx_is_looked_into_one_level(edges) -> None:
    (code, message), = edges["KeepsOutputInAnObject"]
    assert code == "AGD006" and "a `_Cache` whose attribute `output`" in message
    assert "KeepsATableInAnObject" not in edges  # a table with no graph is the object's


def test_on_a_guessed_optional_input_only_errors_no_guess_explains_count() -> None:
    found = _messages(str(UNSEEN / "optional_bias.py"))
    # BiasedScale: backward reads a ctx attribute forward never set (any bias).
    assert [code for code, _ in found["BiasedScale"]] == ["AGD003"]
    # RowBiased: a made-up bias of another shape gets a gradient of that other
    # shape; that is the guess's doing, not a finding.
    assert "RowBiased" not in found


def test_memory_a_backward_leaves_unwritten_is_seen_even_when_two_runs_agree() -> None:
    # Two runs may agree on unwritten `torch.empty` memory (the allocator
    # hands the second run the block the first freed): input synthesis then
    # took a guessed shape a kernel does not cover, and gradcheck's own
    # reentrancy check failed on it now and then (AGD900 on RowWeighting of
    # kernel_edges.py, under load). A run with new memory filled with NaN
    # shows it every time.
    torch = pytest.importorskip("torch")
    triton_before = "triton" in sys.modules  # Triton imported makes a run look emulated
    from autograd_lint.dynamic.probing import repeatable
    from autograd_lint.dynamic.target import Target

    class FirstRowsOnly(torch.autograd.Function):  # grad of weights: 3 of 4 entries written
        @staticmethod
        def forward(ctx, rows, weights):
            ctx.save_for_backward(rows)
            return rows * weights[: rows.shape[0], None]

        @staticmethod
        def backward(ctx, grad):
            (rows,) = ctx.saved_tensors
            grad_weights = torch.empty(4, dtype=grad.dtype)
            grad_weights[: rows.shape[0]] = (grad * rows).sum(dim=1)
            return None, grad_weights

    class EveryRow(FirstRowsOnly):
        @staticmethod
        def backward(ctx, grad):
            (rows,) = ctx.saved_tensors
            return None, (grad * rows).sum(dim=1)

    def target(cls: type) -> Target:
        return Target(cls, once_differentiable=False, has_jvp=False, has_vmap=False,
                      device=torch.device("cpu"))

    rows = torch.randn(3, 5, dtype=torch.float64)
    for _ in range(5):
        assert repeatable(target(FirstRowsOnly),
                          (rows, torch.randn(4, dtype=torch.float64, requires_grad=True))) is None
    results = repeatable(target(EveryRow),
                         (rows, torch.randn(3, dtype=torch.float64, requires_grad=True)))
    assert results is not None and results[-1].shape == (3,)
    assert not torch.are_deterministic_algorithms_enabled()  # the mode is put back
    assert "triton" not in sys.modules or triton_before  # nothing imported Triton


# -- third round: wrappers written for GPUs, blockers named, packages -----------------
@pytest.fixture(scope="module")
def wrappers() -> dict[str, list[tuple[str, str]]]:
    pytest.importorskip("triton")
    return _messages(str(UNSEEN / "cuda_wrappers.py"))


def test_allocations_on_a_named_cuda_device_are_made_on_the_cpu(wrappers) -> None:
    assert "CudaAllocTriple" not in wrappers  # checked, and clean
    (code, message), = wrappers["CudaAllocWrong"]
    assert code == "AGD001" and "device='cuda' allocations, made on the CPU" in message


def test_the_device_context_of_a_tensors_own_backend_is_stood_in(wrappers) -> None:
    assert "BackendContextTriple" not in wrappers  # `torch.cpu.device`, which torch lacks


def test_agd900_names_the_blocker_not_the_last_guess() -> None:
    pytest.importorskip("triton")
    found = _messages(str(UNSEEN / "blockers.py"))
    (code, message), = found["FastExp2"]
    assert code == "AGD900"
    assert "inline_asm not supported in interpreter mode" in message
    assert "blockers.py:12)" in message  # the kernel's line, not the interpreter's
    (code, message), = found["UnpacksThree"]
    assert code == "AGD900" and "(every try: ValueError" in message
    assert "not enough values to unpack (expected 3, got 2)" in message
    assert "blockers.py:39)" in message


def test_a_folder_without_init_inside_a_package_imports_as_part_of_it(tmp_path) -> None:
    # Checked from inside the folder, as `autograd-lint check --dynamic .` is.
    shutil.copytree(UNSEEN / "nsfolder", tmp_path / "nsfolder")
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu", ".",
                             cwd=tmp_path / "nsfolder")
    # `from ..utils import triple` resolves: pkg/ops/scale.py is `pkg.ops.scale`.
    assert [(f["function"], f["code"]) for f in findings] == [("TripleWrong", "AGD001")]


def test_an_import_error_names_the_file_and_line_that_raised() -> None:
    found = _messages(str(UNSEEN / "import_error"))
    (code, message), = found["Scaled"]
    assert code == "AGD900"
    assert "IndexError: list index out of range (at lib/helpers.py:4)" in message


def test_sizes_asserted_on_locals_and_through_helpers_are_learnt() -> None:
    """`head_dim in {16, 32, 64, 128}` on a local unpacked from `q.shape`,
    and `divisible_by(length, 16)`: synthesis meets both."""
    found = _messages(str(UNSEEN / "head_dims.py"))
    assert "BlockAttention" not in found
    assert [code for code, _ in found["BlockAttentionWrong"]] == ["AGD001"]
    assert "PairAttention" not in found  # `Dq, Dk = q.shape[-1], k.shape[-1]` too
    assert "ChainedSizes" not in found  # `Dq == Dk == Dv` then `Dk in {16, 32}`
    # A bare `assert q.dtype == torch.bfloat16 ...` moves down the dtypes as a
    # worded one does: half precision only, which needs a reference.
    (code, message), = found["HalfOnly"]
    assert code == "AGD900" and "computes only in bfloat16" in message


def test_a_string_parameter_takes_the_literals_its_callee_compares_it_with() -> None:
    found = _messages(str(UNSEEN / "strings.py"))
    assert "Activation" not in found
    (code, message), = found["ActivationWrong"]
    assert code == "AGD001" and "act='tanh'" in message


def test_a_package_without_init_files_imports_from_where_its_imports_say(tmp_path) -> None:
    """A namespace package (no `__init__.py` anywhere) whose modules import
    each other absolutely (`from nsroot.utils.scale import triple`): its top
    folder is where those imports lead, and its parent is put on sys.path."""
    shutil.copytree(UNSEEN / "nsroot", tmp_path / "src" / "nsroot")
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu", ".",
                             cwd=tmp_path / "src" / "nsroot")
    assert [(f["function"], f["code"]) for f in findings] == [("TripleWrong", "AGD001")]


def test_a_forward_wrapped_without_functools_wraps_keeps_its_parameters() -> None:
    found = _messages(str(UNSEEN / "wrapped_forward.py"))
    assert "ScaledRows" not in found
    (code, message), = found["ScaledRowsWrong"]
    assert code == "AGD001" and "input 1 (`weight`)" in message


def test_the_triton_drivers_device_query_at_import_is_answered_on_the_cpu() -> None:
    pytest.importorskip("triton")
    found = _messages(str(UNSEEN / "driver_query.py"))
    assert [code for code, _ in found["DoubleWrong"]] == ["AGD001"]
    # It names no target: code that picks its platform by asking picks the CPU's.
    assert "DoublePlatform" not in found


@pytest.fixture(scope="module")
def guessed_kinds() -> dict[str, list[tuple[str, str]]]:
    return _messages(str(UNSEEN / "guessed_kinds.py"))


@pytest.mark.parametrize("name", ["ScaleByNumber", "RotateByTable", "PackedCumsum",
                                  "BackendChosen"])
def test_what_forward_does_with_a_parameter_decides_its_kind(guessed_kinds, name) -> None:
    """A number forward tests (`if gain:`), a table it unpacks as 2-D (`h, d =
    theta.shape`), packed sequences (`cu_seqlens` without a default, with
    `max_seqlen`), a backend enum in a union with a sentinel: each is
    checked, clean, and its wrong twin is found."""
    assert name not in guessed_kinds
    (code, message), = guessed_kinds[f"{name}Wrong"]
    assert code == "AGD001", message


def test_the_guessed_kinds_are_those_forward_asked_for(guessed_kinds) -> None:
    messages = {name: found[0][1] for name, found in guessed_kinds.items()}
    assert "gain=0.5" in messages["ScaleByNumberWrong"]
    assert "x=float64[2, 2, 3, 4], theta=float64[3, 4]" in messages["RotateByTableWrong"]
    assert "cu_seqlens=int32[3], max_seqlen=2" in messages["PackedCumsumWrong"]
    assert "backend=<Backend.python: 'python'>" in messages["BackendChosenWrong"]


def test_an_annotated_optional_number_and_a_cuda_event_are_checked(guessed_kinds) -> None:
    assert "OptionalMultiplier" not in guessed_kinds  # `multiplier: float | None`
    assert "TimedSquare" not in guessed_kinds  # torch.cuda.Event, timed on the CPU


def test_what_no_machine_has_is_told_from_what_this_one_lacks(guessed_kinds) -> None:
    (code, removed), = guessed_kinds["RemovedFeature"]
    assert code == "AGD900"
    assert "the installed libraries no longer have" in removed
    assert "--device cuda" not in removed
    (code, lacking), = guessed_kinds["AssertsCuda"]
    assert code == "AGD900" and "what this machine lacks" in lacking
    assert "`assert x.is_cuda`" in lacking


def test_a_kernel_scale_guessed_as_a_tensor_becomes_a_number() -> None:
    """Triton refuses `sm_scale * log2e` on the pointer a guessed tensor is
    passed as ("invalid operands of type pointer<fp64> ..."): not a gap of
    the machine, nor a dtype to move down from."""
    pytest.importorskip("triton")
    found = _messages(str(UNSEEN / "kernel_scale.py"))
    assert "KernelScale" not in found
    (code, message), = found["KernelScaleWrong"]
    assert code == "AGD001" and "sm_scale=0.5" in message


@pytest.mark.parametrize(("annotation", "members"), [
    ("float", {"float"}), ("<class 'float'>", {"float"}), ("float | None", {"float", "None"}),
    ("typing.Optional[int]", {"int", "None"}), ("Union[int, float]", {"int", "float"}),
    ("torch.Tensor", None), ("Tensor | None", None), ("None", None), ("tuple[int]", None),
])
def test_an_annotation_of_numbers_is_read_whatever_its_spelling(annotation, members) -> None:
    pytest.importorskip("torch")
    from autograd_lint.dynamic.parameter_names import scalar_annotation

    assert scalar_annotation(annotation) == members


@pytest.mark.parametrize(("message", "guessed", "expected"), [
    ("InterpreterError: IncompatibleTypeErrorImpl('invalid operands of type pointer<fp16> "
     "and triton.language.float32')", True, False),
    ("InterpreterError: IncompatibleTypeErrorImpl('invalid operands of type pointer<fp16> "
     "and triton.language.float32')", False, True),
    ("InterpreterError: NotImplementedError('inline_asm not supported in interpreter mode')",
     True, True),
    ("NotImplementedError: Block pointers have been removed in favor of the tensor "
     "descriptor API", True, True),
    ("AssertionError: `assert a.is_cuda and b.is_cuda` (gemm.py:377)", True, True),
    ("ValueError: too many values to unpack (expected 3)", True, False),
])
def test_whose_gap_an_error_is(message, guessed, expected) -> None:
    """An error Triton's interpreter wraps is the machine's with the
    project's own inputs; with guessed ones only when it says it is the
    interpreter's gap (a type error on a kernel's line is the guess's)."""
    from autograd_lint.dynamic.errors import environmental

    assert environmental(message, guessed=guessed) is expected


def test_a_check_that_crashes_the_process_costs_only_its_own_verdict() -> None:
    """On a CPU each Function's checks run in a fork of the module's worker:
    a crash (SIGSEGV from an interpreted kernel) is that Function's AGD900,
    and the Functions after it in the module are still checked."""
    found = _messages(str(UNSEEN / "crash_in_check.py"))
    (code, message), = found["CrashesWhenCalled"]
    assert code == "AGD900" and "its check was killed by SIGSEGV" in message
    assert [code for code, _ in found["WrongAfterACrash"]] == ["AGD001"]
    assert "Doubled" not in found


def test_a_backward_whose_own_runs_differ_is_not_blamed_on_a_layout() -> None:
    """AGD014 compares backward on a strided gradient with a contiguous one;
    when two contiguous runs already differ (an interpreted kernel reading
    past its buffer), no layout is at fault."""
    torch = pytest.importorskip("torch")
    from autograd_lint.dynamic.grad_layouts import check_noncontiguous_grad_output
    from autograd_lint.dynamic.inputs import SYNTHESIZED, Inputs
    from autograd_lint.dynamic.target import Target

    calls = [0]

    class NoisyBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            calls[0] += 1
            return grad.contiguous() * 2 + 1e-2 * calls[0]

    target = Target(NoisyBackward, False, False, False, torch.device("cpu"))
    x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
    check_noncontiguous_grad_output(target, Inputs((x,), ["x"], SYNTHESIZED))
    assert calls[0] >= 2  # the probe ran backward
    assert [f for f in target.findings if f["code"] == "AGD014"] == []


def test_a_saved_nan_left_as_it_was_is_not_a_write() -> None:
    """AGD007 compares saved tensors before and after backward: a NaN that
    stays NaN is unchanged (NaN != NaN for `torch.equal`)."""
    found = _messages(str(UNSEEN / "saved_nan.py"))
    assert "SavesNaNStatistic" not in found
    assert [code for code, _ in found["WritesSavedStatistic"]] == ["AGD007"]


def test_a_kernel_reading_past_its_input_for_a_made_up_shape_is_not_blamed() -> None:
    """A kernel without a mask, written for hidden sizes its block divides,
    reads the next rows and past the end of `x` on a made-up size: its
    forward is then wrong for a shape outside its contract. Synthesis lays
    NaN around each input, sees it in the results, and moves on to
    power-of-two sizes; a backward wrong on those is still found."""
    pytest.importorskip("triton")
    found = _messages(str(UNSEEN / "unmasked_rows.py"))
    assert "BlockRMSNorm" not in found
    (code, message), = found["BlockRMSNormWrong"]
    assert code == "AGD001" and "x=float64[8, 16]" in message


def test_a_result_that_changes_with_what_lies_around_an_input_is_seen() -> None:
    """The probe behind the test above, on a Function that reads one element
    past its input: NaN laid there shows in its output."""
    torch = pytest.importorskip("torch")
    from autograd_lint.dynamic.probing import reads_past_inputs, repeatable
    from autograd_lint.dynamic.target import Target

    class NextElement(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            flat = x.reshape(-1)
            beyond = flat.as_strided((flat.numel(),), (1,), flat.storage_offset() + 1)
            return beyond.view(x.shape) * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad

    class SameElement(NextElement):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

    x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
    same = Target(SameElement, False, False, False, torch.device("cpu"))
    reference = repeatable(same, (x,))
    assert reference is not None and not reads_past_inputs(same, (x,), reference)
    # (NextElement cannot run on a plain copy: the results it would give
    # where the element past `x` is a number stand in for its own.)
    beyond = Target(NextElement, False, False, False, torch.device("cpu"))
    assert reads_past_inputs(beyond, (x,), reference)


def test_a_forward_computing_in_bf16_inside_is_no_gradcheck_verdict() -> None:
    """A forward that returns float32 but rounds its operands to bf16 inside
    is judged float32; gradcheck's float32-sized step then measures its
    rounding. Finite differences that do not settle between two steps are
    no verdict; a float32 forward with a wrong backward is still AGD001."""
    found = _messages(str(UNSEEN / "half_inside.py"))
    (code, message), = found["Bf16Product"]
    assert code == "AGD900" and "finite differences do not settle" in message
    assert [code for code, _ in found["Float32ProductWrong"]] == ["AGD001"]


def test_a_guess_read_only_in_its_leading_block_is_made_smaller() -> None:
    """A kernel reads `B` by its strides with the rank taken from `A`: a `B`
    guessed wider is read in its leading columns only, so backward's
    narrower gradient says the guess was too large (no AGD004)."""
    found = _messages(str(UNSEEN / "rank_from_another.py"))
    assert "LoRADelta" not in found
    (code, message), = found["LoRADeltaWrong"]
    assert code == "AGD001" and "B=float64[3, 3]" in message


def test_agd900_quotes_the_try_that_got_furthest_into_forward() -> None:
    """An error raised deeper in forward (a later line, or below it in a
    helper) got further than one on forward's first line; among equals the
    last is quoted."""
    pytest.importorskip("torch")
    from autograd_lint.dynamic.errors import raised
    from autograd_lint.dynamic.input_choice import _furthest

    def helper(x):
        raise ValueError("deep")

    def forward(ctx, x):
        if x == "unpack":
            a, b = x  # forward's first statement that can fail
        return helper(x)

    errors = []
    for value in ("unpack", "helper", "unpack"):
        try:
            forward(None, value)
        except ValueError as exc:
            errors.append(raised(exc, within=forward))
    assert [e.reach[1] for e in errors] == [0, 1, 0]
    assert _furthest(errors) == "ValueError: deep"
    assert _furthest(errors[:1] + errors[2:]) is errors[2]


def test_batch_norm_statistics_are_per_feature_vectors() -> None:
    pytest.importorskip("torch")
    from autograd_lint.dynamic.parameter_names import tensor_role

    assert [tensor_role(n) for n in ("running_mean", "running_var")] == ["vector", "vector"]
