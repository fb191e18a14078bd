"""Which finding a failed probe becomes: an error raised by backward is
AGD003 (AGD004 for a gradient of the wrong shape), or not checked when it may
be about guessed inputs; a failed gradcheck is its own rule, AGD003, AGD004 or
AGD010 by its cause, and not checked when backward is not reentrant with
guessed inputs."""
from __future__ import annotations

import re
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from .errors import NotChecked, first_line
from .inputs import Inputs, argument_of_gradient
from .jacobian_error import WIDER, differences_settle, worst_error
from .target import Target

_SHAPE_ERROR = "returned an invalid gradient at index"


def report_backward_error(target: Target, inputs: Inputs, exc: Exception) -> None:
    message = first_line(exc)
    if not inputs.trusted and _raised_in_user_code(exc) and not _unset_ctx_attribute(exc):
        # With guessed inputs, only autograd's own verdict on what backward
        # returned is trusted; an error inside backward may be about the guess.
        where = _user_frame(exc)
        raise NotChecked(f"backward raised {message}{where} with {inputs.describe()}; "
                         "record the project's own calls (`pytest --autograd-record`) or "
                         "declare inputs (`@example_inputs(...)`) to check it")
    if _SHAPE_ERROR in message:
        # "... at index 0 - got [3] but expected shape compatible with [3, 4]"
        tail = message.split(_SHAPE_ERROR, 1)[1]
        index_text = tail.strip().split(" ", 1)[0]
        index = argument_of_gradient(inputs.args,
                                     int(index_text) if index_text.isdigit() else 0)
        got = tail.split("got", 1)[1].split("but", 1)[0].strip() if "got" in tail else "?"
        expected = tail.split("compatible with", 1)[1].strip() if "compatible with" in tail \
            else "?"
        target.report("AGD004", index=index, name=inputs.name(index),
                      got=f"shape {got}", expected=f"shape {expected}")
        return
    target.report("AGD003", where="backward", detail=message)


def _unset_ctx_attribute(exc: BaseException) -> bool:
    """backward read a ctx attribute that forward did not set on this call:
    no choice of values explains that (the path forward took did not set it)."""
    return isinstance(exc, AttributeError) and \
        re.search(r"'\w+Backward' object has no attribute", str(exc)) is not None


def _user_frames(exc: BaseException) -> list[Any]:
    """The traceback's frames outside autograd's machinery and this package."""
    import os

    ours = (os.path.join(os.path.dirname(torch.__file__), "autograd") + os.sep,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)
    frames = []
    frame = exc.__traceback__
    while frame is not None:
        filename = os.path.abspath(frame.tb_frame.f_code.co_filename)
        if not filename.startswith(ours) and not filename.startswith("<"):
            frames.append(frame)
        frame = frame.tb_next
    return frames


def _raised_in_user_code(exc: BaseException) -> bool:
    """Whether the traceback reaches code outside autograd's machinery and this
    package (backward's own body, wherever it lives: torch's own Functions too),
    rather than ending in autograd's checks of what backward returned."""
    return bool(_user_frames(exc))


def _user_frame(exc: BaseException) -> str:
    import os

    frames = _user_frames(exc)
    if not frames:
        return ""
    last = frames[-1]
    code = last.tb_frame.f_code
    return f" in {code.co_name} ({os.path.basename(code.co_filename)}:{last.tb_lineno})"


def gradcheck_failure(target: Target, inputs: Inputs, exc: BaseException, code: str,
                      **fields: Any) -> None:
    """Report a failed gradcheck-style check under the rule its cause
    belongs to: a mismatch is the check's own rule; an error raised by
    backward is AGD003 (AGD004 for a bad shape); a backward that gives
    different results for the same call changed its saved tensors (AGD007)
    or is not deterministic."""
    message = first_line(exc)
    if isinstance(exc, GradcheckError):
        if "not reentrant" in str(exc):
            if not inputs.trusted:
                raise NotChecked("backward is not reentrant with synthesized inputs (two "
                                 "identical calls differ: memory a kernel leaves unwritten "
                                 "for a guessed shape?); record the project's own calls to "
                                 "check it") from None
            detail = "backward is not reentrant: two calls with the same inputs give " \
                     "different values (it changes what it saved, or is nondeterministic)"
            target.report(code, detail=detail, **fields)
            return
        if code == "AGD001":
            unsettled = differences_settle(target, inputs)
            if unsettled is not None:
                raise NotChecked(
                    f"finite differences do not settle (the derivative along a random "
                    f"direction is {unsettled[0]:.3g} with gradcheck's step and "
                    f"{unsettled[1]:.3g} with one {WIDER:g} times wider): forward computes "
                    f"in bfloat16 or float16 inside, or is not smooth there, so gradcheck's "
                    f"mismatch is no verdict ({inputs.describe()})") from None
        detail = (worst_error(target, inputs) if code == "AGD001" else "") or message
        target.report(code, detail=f"{detail} ({inputs.describe()})", **fields)
        return
    if _SHAPE_ERROR in message:
        report_backward_error(target, inputs, exc)  # type: ignore[arg-type]
        return
    if "NoneType" in message:
        # backward worked when every incoming gradient was defined; gradcheck
        # leaves those of the outputs it is not differentiating undefined.
        target.report("AGD010", detail=message)
        return
    target.report("AGD003", where="backward", detail=message)
