"""The markers abstract values carry, and the tests on them.

A value's roots say what it may be, or be a view of ("input:x", "grad:g",
"saved", and "param:p" while a helper is summarized); its taint says what it
was computed from ("src:grad", "left:3", ...). FunctionFacts gives a method's
parameters their markers, the effect summaries give a helper's parameters
theirs; the interpreter and the rules read them.
"""
from __future__ import annotations

from .values import Value

# The root of a saved tensor forward allocated for this node alone (neither an
# input, an output nor a view of one): no other code holds it. Other saved
# tensors have the root "saved".
OWN_SAVED = "saved:own"

# Taint markers of the two kinds of gradient-carrying values in backward.
FROM_GRAD = "src:grad"
FROM_SAVED = "src:saved"


def param_names(markers: frozenset[str]) -> frozenset[str]:
    """The parameters named by `param:` roots or taint markers (a summary run
    gives each parameter both)."""
    return frozenset(m[6:] for m in markers if m.startswith("param:"))


def is_gradient(value: Value) -> bool:
    """The incoming gradient (or, summarizing a helper, one of its parameters)."""
    return any(r.startswith(("grad:", "param:")) for r in value.roots)


def carries_gradient(value: Value) -> bool:
    """Computed from the gradient or a saved tensor (or, summarizing a helper,
    from a parameter); integer tensors never carry a gradient."""
    return not value.integral and bool(
        value.taint & {FROM_GRAD, FROM_SAVED} or param_names(value.taint))


def taint_of(*values: Value) -> frozenset[str]:
    return frozenset().union(*(v.taint for v in values)) if values else frozenset()
