"""Custom ops in the dynamic mode (issue 27): opcheck on recorded or
synthesized inputs (AGD016). The comparison with torch.compile (AGD017) is
exercised in tests/test_dynamic.py (agd_cases)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .test_dynamic import DYNAMIC
from .test_dynamic_unseen import _messages as _found

OPS = DYNAMIC / "ops"

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def op_defects() -> dict[str, list[tuple[str, str]]]:
    return _found(str(OPS / "op_defects.py"))


def test_an_undeclared_write_fails_test_schema(op_defects) -> None:
    (code, message), = op_defects["scale_into"]
    assert code == "AGD016"
    assert "`test_schema`" in message and "Argument out is not defined as mutable" in message
    assert "scale_into_declared" not in op_defects


def test_a_fake_of_the_wrong_shape_fails_test_faketensor(op_defects) -> None:
    (code, message), = op_defects["row_sums"]
    assert code == "AGD016"
    assert "`test_faketensor`" in message and "Shapes" in message
    assert "row_sums_right" not in op_defects


def test_correct_ops_get_nothing(op_defects) -> None:
    # An op with a fake and an autograd formula (opcheck with inputs that
    # require grad, and the compiled comparison), a Library.define op, and
    # `doubled`, whose fake's strides differ only for a layout no caller
    # passes (the made-up non-contiguous inputs), and `cast_add`, whose dtype
    # parameter comes before a tensor.
    assert not {"rms_scale", "twice", "doubled", "cast_add"} & set(op_defects)
    assert set(op_defects) == {"scale_into", "row_sums", "int8_rows"}


def test_made_up_inputs_the_fake_refuses_are_not_used(op_defects) -> None:
    """The fake's own checks state the op's contract: a float `q` it refuses
    is no test of the fake (nor of the op); the op is not checked, and says why."""
    (code, message), = op_defects["int8_rows"]
    assert code == "AGD900"
    assert "the op's fake refuses them: RuntimeError: q must be int8" in message


def test_recorded_op_calls_are_checked_first(tmp_path) -> None:
    """`pytest --autograd-record` keeps the ops' calls too (by op name, in the
    callers' dtype); the dynamic mode opchecks the op with them."""
    (tmp_path / "op_defects.py").write_text((OPS / "op_defects.py").read_text())
    (tmp_path / "test_calls.py").write_text(
        "import torch\nimport op_defects\n\n\ndef test_calls():\n"
        "    x = torch.randn(5, 6)\n"
        "    op_defects.scale_into(x, torch.empty(5, 6))\n"
        "    torch.ops.agl_fx.row_sums_right(x)\n")
    recording = tmp_path / "calls.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "test_calls.py", f"--autograd-record-file={recording}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ops = json.loads(recording.read_text())["ops"]
    assert set(ops) == {"agl_fx::scale_into", "agl_fx::row_sums_right"}
    (call,) = ops["agl_fx::scale_into"][0]["calls"]
    assert call["args"][0]["tensor"]["shape"] == [5, 6]
    found = _found("--recorded", str(recording), str(tmp_path / "op_defects.py"))
    (code, message), = found["scale_into"]
    assert code == "AGD016" and "recorded inputs x=float32[5, 6]" in message
    assert "row_sums_right" not in found


def test_pytest_plugin_opchecks_each_op(tmp_path) -> None:
    (tmp_path / "op_defects.py").write_text((OPS / "op_defects.py").read_text())
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-rf", "--autograd-gradcheck", "op_defects.py", "-k",
                           "scale_into or twice"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert "1 failed, 2 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "FAILED op_defects.py::opcheck[agl_fx::scale_into]" in proc.stdout
    assert "AGD016 [opcheck-failed]" in proc.stdout


def test_triton_ops_are_synthesized_from_their_own_signature() -> None:
    """A triton_op registers a wrapper of the decorated function (its
    parameters come from the decorated one, a dtype default included) and is
    its own fake, traced through the kernels: on a CPU, where Triton's
    interpreter runs them, only the eager tests are a verdict."""
    pytest.importorskip("triton")
    found = _found(str(OPS / "triton_ops.py"))
    assert "scaled" not in found
    (code, message), = found["scaled_in_place"]
    assert code == "AGD016" and "`test_schema`" in message
    assert "factor=2.0" in message
