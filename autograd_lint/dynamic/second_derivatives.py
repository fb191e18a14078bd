"""Second derivatives: gradgradcheck through backward (AGD002): a silent
disagreement is the finding; a double backward that raises says so itself."""
from __future__ import annotations

import torch
from torch.autograd.gradcheck import GradcheckError

from .errors import first_line
from .gradcheck import fast_failures
from .inputs import Inputs
from .probing import fresh
from .target import Target


def check_gradgradcheck(target: Target, inputs: Inputs) -> None:
    """AGD002."""
    precision = target.precision
    try:
        with fast_failures(target):
            torch.autograd.gradgradcheck(target.tensor_outputs, fresh(inputs.args),
                                         eps=precision.eps, atol=precision.atol,
                                         rtol=precision.rtol, nondet_tol=precision.nondet_tol,
                                         check_undefined_grad=False, check_batched_grad=False,
                                         fast_mode=target.fast)
        target.probed.add("AGD002")
    except GradcheckError as exc:
        target.probed.add("AGD002")
        target.report("AGD002", detail=first_line(exc))
    except Exception:
        # Double backward raises (an op with no autograd formula, a tensor
        # backward changed): loud, not the silent disagreement AGD002 is about.
        pass
