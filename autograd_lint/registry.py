"""The rule registry: every rule declared once.

The CLI, the docs, the output formats and the editor/flake8/pylint adapters all
read this table; nothing else lists rule codes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    summary: str
    message: str  # str.format template; checkers fill the fields
    family: str  # module under autograd_lint.checkers ("engine" for AGF000)
    default: bool = True  # on unless selected (info rules are off)

    def format(self, **fields: object) -> str:
        return self.message.format(**fields)


_RULES: tuple[Rule, ...] = (
    Rule(
        "AGF000", "syntax-error", ERROR,
        "A file that does not parse.",
        "cannot parse this file: {detail}",
        "engine",
    ),
    # --- ctx and saved state -------------------------------------------------
    Rule(
        "AGF001", "ctx-tensor-attribute", ERROR,
        "A tensor stored as a ctx attribute instead of through save_for_backward.",
        "`ctx.{attr}` holds {what} as a plain attribute, escaping saved-tensor "
        "checks and hooks{cycle}; save it with `ctx.save_for_backward(...)` "
        "(or `ctx.save_for_forward(...)`) and read it from `ctx.saved_tensors`",
        "ctx_state",
    ),
    Rule(
        "AGF002", "save-non-tensor", ERROR,
        "A non-tensor passed to save_for_backward, save_for_forward, mark_dirty or "
        "mark_non_differentiable.",
        "`ctx.{method}` is given {what}, which is not a tensor (TypeError at run "
        "time); store it as a ctx attribute instead",
        "ctx_state",
    ),
    Rule(
        "AGF003", "saved-tensors-in-forward", ERROR,
        "ctx.saved_tensors read in forward or setup_context.",
        "`ctx.{attr}` is read in {method}, where nothing has been saved yet; use the "
        "tensors directly here and read `ctx.saved_tensors` only in backward or jvp",
        "ctx_state",
    ),
    Rule(
        "AGF004", "save-for-backward-twice", ERROR,
        "save_for_backward called more than once on one path through forward.",
        "`ctx.save_for_backward` runs again {where}; each call replaces the tensors "
        "saved before, so save everything in a single call",
        "ctx_state",
    ),
    Rule(
        "AGF005", "saved-tensor-inplace", ERROR,
        "A saved tensor (or a view of it) modified in place in backward or jvp.",
        "in-place {how} on `{target}` changes {source}{via}, so backward (or a "
        "later use) reads corrupted values; work on a clone (`{name} = "
        "{name}.clone()`) or use an out-of-place op",
        "inplace",
    ),
    Rule(
        "AGF006", "grad-output-inplace", ERROR,
        "The incoming gradient (or a view of it) modified in place in backward.",
        "in-place {how} on `{target}` changes the incoming gradient `{root}`{via}; "
        "another node may hold the same tensor, so clone it first (`{root} = "
        "{root}.clone()`) or use an out-of-place op",
        "inplace",
    ),
    Rule(
        "AGF007", "input-inplace-without-mark-dirty", ERROR,
        "A forward input modified in place without ctx.mark_dirty.",
        "in-place {how} on `{target}` changes forward's input `{root}`{via} without "
        "`ctx.mark_dirty({root})`, silently corrupting the caller's tensor; call "
        "`ctx.mark_dirty({root})` and return it, or work on a clone",
        "inplace",
    ),
    Rule(
        "AGF008", "data-attribute", WARNING,
        "`.data` used inside a Function.",
        "`.data` hides this {access} from autograd's version counter; {fix}",
        "ctx_state",
    ),
    # --- gradient arity ------------------------------------------------------
    Rule(
        "AGF101", "gradient-count-mismatch", ERROR,
        "backward returns a different number of gradients than forward has inputs.",
        "{method} returns {got} but forward takes {expected}{detail}; return one "
        "gradient per input, `None` for the non-differentiable ones",
        "arity",
    ),
    Rule(
        "AGF102", "grad-output-arity", ERROR,
        "backward's gradient parameters differ in number from forward's outputs.",
        "{method} takes {got} but forward returns {expected}, and autograd passes "
        "one gradient per output (TypeError); take one gradient argument per output "
        "(or `*grad_outputs`)",
        "arity",
    ),
    Rule(
        "AGF107", "needs-input-grad-index", ERROR,
        "ctx.needs_input_grad indexed past the number of inputs.",
        "`ctx.needs_input_grad[{index}]` is out of range (IndexError): forward takes "
        "{inputs}; use an index from 0 to {last}, one per input in forward's order",
        "arity",
    ),
    Rule(
        "AGF112", "keyword-only-input", ERROR,
        "Keyword-only parameters in forward.",
        "forward's keyword-only parameter{s} {names} can never be given because "
        "`apply` passes arguments by position only; make {them} positional",
        "arity",
    ),
    Rule(
        "AGF114", "gradient-for-non-tensor", ERROR,
        "backward returns a gradient for an input that is not a tensor.",
        "{method} returns a gradient at position {position} for input `{name}`, "
        "which is not a tensor ({why}); autograd raises there, return `None` instead",
        "arity",
    ),
    Rule(
        "AGF205", "backward-returns-literal", ERROR,
        "backward returns a non-None literal as a gradient.",
        "{method} returns the literal `{literal}` as a gradient{position}; autograd "
        "expects a Tensor or None, so return a tensor (e.g. `torch.zeros_like(x)`) "
        "or `None`",
        "arity",
    ),
)

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}
RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in _RULES}
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(r.family for r in _RULES if r.family != "engine"))


def all_rules() -> Iterable[Rule]:
    return _RULES


def lookup(code_or_name: str) -> Rule | None:
    """A rule by its code (case-insensitive) or its symbolic name."""
    return RULES.get(code_or_name.upper()) or RULES_BY_NAME.get(code_or_name.lower())


def default_codes() -> frozenset[str]:
    return frozenset(rule.code for rule in _RULES if rule.default)


def family_codes(family: str) -> frozenset[str]:
    return frozenset(rule.code for rule in _RULES if rule.family == family)
