"""The rule registry: every rule declared once.

The CLI, the docs, the output formats and the editor/flake8/pylint adapters all
read this table; nothing else lists rule codes.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)

# Tiers (RULES.md, "Tiers"), as clippy's lint groups and ruff's categories:
# only the correctness tier runs by default; a tier name is a selector.
CORRECTNESS = "correctness"
PEDANTIC = "pedantic"
COVERAGE = "coverage"
STYLE = "style"
TIERS = (CORRECTNESS, PEDANTIC, COVERAGE, STYLE)

# Codes split off a parent code (RULES.md, "Tiers"): a noqa comment naming
# the parent also silences them on its line, so no suppression breaks.
SPLIT_FROM: dict[str, frozenset[str]] = {
    "AGF009": frozenset({"AGF001"}),
    "AGF010": frozenset({"AGF005", "AGF006", "AGF007"}),
    "AGF011": frozenset({"AGF005", "AGF006", "AGF007"}),
    "AGF012": frozenset({"AGF007"}),
}

# Rules with an automatic fix, and whether it is safe (`--fix`) or unsafe
# (`--unsafe-fixes`); the checkers build the edits (checkers/fix_edits.py).
FIX_SAFETY: dict[str, str] = {
    "AGF006": "unsafe",
    "AGF008": "safe",
    "AGF101": "unsafe",
    "AGF103": "safe",
    "AGF105": "safe",
    "AGF213": "safe",
    "AGF901": "safe",
}


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    summary: str
    message: str  # str.format template; checkers fill the fields
    family: str  # module under autograd_lint.checkers ("engine" for AGF000)
    tier: str = CORRECTNESS

    @property
    def default(self) -> bool:
        """On unless deselected: the correctness tier only."""
        return self.tier == CORRECTNESS

    def format(self, **fields: object) -> str:
        return self.message.format(**fields)

    @property
    def url(self) -> str:
        """The rule page this install ships (a `file:` URI: the project is not
        published anywhere a link could point to); terminals and editors open it."""
        from .docs import page_uri

        return page_uri(self.code)

    @property
    def fix(self) -> str | None:
        """'safe', 'unsafe', or None when the rule has no automatic fix."""
        return FIX_SAFETY.get(self.code)


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
        tier=PEDANTIC,
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
        tier=PEDANTIC,
    ),
    Rule(
        "AGF006", "grad-output-inplace", ERROR,
        "The incoming gradient (or a view of it) modified in place in backward.",
        "in-place {how} on `{target}` changes the incoming gradient `{root}`{via}; "
        "another node may hold the same tensor, so clone it first (`{root} = "
        "{root}.clone()`) or use an out-of-place op",
        "inplace",
        tier=PEDANTIC,
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
        tier=PEDANTIC,
    ),
    # --- by design, split off AGF001 and AGF005-AGF007 (pedantic) --------------
    Rule(
        "AGF009", "ctx-constant-tensor", WARNING,
        "A constant tensor (no gradient, integer/bool or scalar) kept as a ctx attribute.",
        "`ctx.{attr}` holds {what}, which {why}; as a plain attribute it still escapes "
        "saved-tensor hooks (checkpoint offload keeps it alive) and version checks, so "
        "save it with `ctx.save_for_backward(...)`",
        "ctx_state",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF010", "inplace-collective", WARNING,
        "An in-place collective on a forward input, a saved tensor or the incoming gradient.",
        "in-place collective {how} on `{target}` overwrites {source}{via}, which is right "
        "only while nothing else holds that tensor; reduce into a new tensor (or "
        "`ctx.mark_dirty` the input) if callers may share it",
        "inplace",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF011", "inplace-opt-in", WARNING,
        "An in-place change that happens only under a caller's opt-in flag.",
        "in-place {how} on `{target}` changes {source}{via} only when the caller sets "
        "{flag}: callers that opt in must not share that tensor; document it, or clone "
        "under the flag",
        "inplace",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF012", "inplace-returned-input", WARNING,
        "forward changes an input in place and returns it without ctx.mark_dirty.",
        "in-place {how} on `{target}` changes forward's input `{root}`{via}, which forward "
        "returns, without `ctx.mark_dirty({root})`: autograd does not know, so a node that "
        "saved `{root}` earlier silently reads the new values; call "
        "`ctx.mark_dirty({root})`",
        "inplace",
        tier=PEDANTIC,
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
        "one gradient per output{unboxed} (TypeError); take one gradient argument per output "
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
        "AGF115", "custom-bwd-without-custom-fwd", ERROR,
        "backward decorated custom_bwd while forward lacks custom_fwd.",
        "backward is decorated `{decorator}` but forward has no `custom_fwd`: `custom_bwd` "
        "reads what `custom_fwd` leaves on ctx, so every backward raises AttributeError "
        "(`_fwd_used_autocast`); decorate forward with `{forward_decorator}` too",
        "structure",
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

_RULES = _RULES + (
    # --- class structure and signatures -----------------------------------------
    Rule(
        "AGF103", "not-staticmethod", WARNING,
        "forward, backward, setup_context, jvp, vjp or vmap defined without @staticmethod.",
        "`{method}` is not a `@staticmethod`: legacy style that only works through `apply` "
        "(instantiating the Function raises); decorate it with `@staticmethod`",
        "structure",
        tier=STYLE,
    ),
    Rule(
        "AGF104", "ctx-signature-mismatch", ERROR,
        "forward / setup_context signatures that do not match what autograd passes.",
        "{problem}; {fix}",
        "structure",
    ),
    Rule(
        "AGF106", "missing-backward", WARNING,
        "forward defined but neither backward nor vjp.",
        "`{name}` defines forward but neither backward nor vjp, so backpropagating through "
        "it raises NotImplementedError; implement backward (or mark every output "
        "non-differentiable)",
        "structure",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF108", "vmap-rule-conflict", ERROR,
        "generate_vmap_rule = True beside a vmap staticmethod or a ctx-style forward.",
        "`generate_vmap_rule = True` {conflict}, so `torch.vmap` raises; {fix}",
        "structure",
    ),
    Rule(
        "AGF110", "backward-and-vjp", ERROR,
        "Both backward and vjp defined.",
        "`{name}` defines both backward and vjp (an alias of backward), which autograd "
        "rejects; keep only one of them",
        "structure",
    ),
    Rule(
        "AGF111", "missing-forward", ERROR,
        "A Function subclass without forward.",
        "`{name}` has no forward (here or in a known base), so `{name}.apply(...)` raises "
        "NotImplementedError; define a `forward` staticmethod",
        "structure",
    ),
    Rule(
        "AGF207", "vmap-signature", ERROR,
        "A vmap staticmethod whose signature or return does not fit forward.",
        "{problem}; {fix}",
        "structure",
    ),
    # --- call sites and project ----------------------------------------------------
    Rule(
        "AGF105", "function-instantiated", ERROR,
        "Instantiating a Function, or calling its forward/backward directly.",
        "{what} {why}; call `{name}.apply(...)` instead",
        "usage",
    ),
    Rule(
        "AGF301", "no-gradcheck", WARNING,
        "A Function whose gradients nothing in the scanned tree checks (gradcheck, opcheck, "
        "or a reference test).",
        "nothing in the scanned tree checks the gradients of `{name}` (no `gradcheck`, "
        "`gradgradcheck` or `opcheck`, no test that differentiates it and compares with a "
        "reference); add a test such as `torch.autograd.gradcheck({name}.apply, inputs)` with "
        "float64 inputs",
        "usage",
        tier=COVERAGE,
    ),
    # --- more ctx and saved state ----------------------------------------------------
    Rule(
        "AGF109", "jvp-without-save-for-forward", ERROR,
        "jvp reads ctx.saved_tensors but nothing is saved with save_for_forward.",
        "jvp reads `ctx.{attr}` but forward never calls `ctx.save_for_forward`, so the tuple "
        "is empty in jvp; save what jvp needs with `ctx.save_for_forward(...)`",
        "ctx_state",
    ),
    Rule(
        "AGF203", "mark-non-differentiable-input", WARNING,
        "mark_non_differentiable applied to an input instead of an output.",
        "`ctx.mark_non_differentiable({name})` marks forward's input `{name}`, which autograd "
        "ignores (it applies to outputs only); mark the output instead",
        "ctx_state",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF206", "setup-context-compute", WARNING,
        "Tensor computation inside setup_context.",
        "setup_context computes `{expr}`, but it must only save and mark (torch.func runs "
        "forward without it); compute it in forward and return it as an extra output, or "
        "compute it in backward",
        "ctx_state",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF210", "saved-tensors-read-twice", WARNING,
        "ctx.saved_tensors evaluated more than once on one path.",
        "`ctx.{attr}` is read again {where}; each read unpacks anew, which raises under "
        "non-reentrant checkpointing and `clear_saved_tensors_on_access`, so unpack it once "
        "into local names",
        "ctx_state",
    ),
    Rule(
        "AGF211", "ctx-escapes", WARNING,
        "ctx stored where it outlives the call.",
        "ctx is {how}, so the graph node and its saved tensors outlive the graph (a leak); "
        "keep the values you need instead of ctx itself",
        "ctx_state",
    ),
    Rule(
        "AGF212", "setup-context-saves-returned-input", ERROR,
        "setup_context saves an input that forward returns unchanged.",
        "forward returns its input `{name}` unchanged and setup_context saves it, which "
        "raises a RuntimeError; return `{name}.view_as({name})` from forward instead",
        "ctx_state",
    ),
    Rule(
        "AGF213", "deprecated-ctx-api", WARNING,
        "ctx.saved_variables, ctx.mark_shared_storage, or torch.cuda.amp's custom_fwd / "
        "custom_bwd.",
        "`{what}` is deprecated{detail}; {fix}",
        "ctx_state",
        tier=STYLE,
    ),
    Rule(
        "AGF216", "grad-to-contiguous-kernel", WARNING,
        "backward hands a gradient to a Triton kernel that indexes it by shape.",
        "`{arg}` (the incoming gradient{via}) goes to `{kernel}`, whose `{param}` is indexed "
        "by shape (no stride of it is passed): autograd may hand backward a narrow view, an "
        "expanded stride-0 or a transposed gradient, and the kernel reads the wrong "
        "elements; pass `{arg}.contiguous()`, or the tensor's strides",
        "kernels",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF215", "saved-output-view", WARNING,
        "save_for_backward of a view of forward's output.",
        "`{arg}` is a view of forward's output `{name}`; saving it keeps the output's graph "
        "alive in a reference cycle (a leak), so save `{name}` itself and take the view in "
        "backward",
        "ctx_state",
    ),
    # --- mark_dirty -------------------------------------------------------------------
    Rule(
        "AGF208", "mark-dirty-non-input", WARNING,
        "mark_dirty applied to something that is not a forward input.",
        "`ctx.mark_dirty({arg})` marks {what}, not one of forward's inputs ({consequence}); "
        "mark the input that was changed in place",
        "inplace",
    ),
    Rule(
        "AGF209", "dirty-input-not-returned", ERROR,
        "An input marked dirty is not returned by forward.",
        "forward marks input `{name}` dirty but does not return it, which raises a "
        "RuntimeError; return `{name}` itself as an output",
        "inplace",
    ),
    # --- arity --------------------------------------------------------------------------
    Rule(
        "AGF113", "jvp-output-count", ERROR,
        "jvp returns a different number of tangents than forward has outputs.",
        "jvp returns {got} but forward returns {expected}; return exactly one tangent per "
        "output (unlike backward, extra `None`s are an error here)",
        "arity",
    ),
    # --- differentiability ----------------------------------------------------------------
    Rule(
        "AGF201", "materialize-grads-unchecked", WARNING,
        "set_materialize_grads(False) while backward uses a gradient without a None test.",
        "forward calls `ctx.set_materialize_grads(False)`, so `{name}` may be None, but "
        "backward uses it here without an `is None` test; check `{name} is not None` first",
        "differentiability",
    ),
    Rule(
        "AGF202", "needs-input-grad-unchecked", INFO,
        "backward computes several gradients without checking ctx.needs_input_grad.",
        "backward computes {count} gradients without checking `ctx.needs_input_grad`; skip "
        "the ones autograd does not need (`if ctx.needs_input_grad[i]: ...`)",
        "differentiability", tier=STYLE,
    ),
    Rule(
        "AGF204", "backward-not-differentiable", WARNING,
        "backward computes its result outside autograd without @once_differentiable.",
        "{how} computes the returned gradient outside autograd, so double backward silently "
        "gives wrong (zero) gradients; decorate backward with `@once_differentiable` or keep "
        "the computation differentiable",
        "differentiability",
        tier=PEDANTIC,
    ),
    Rule(
        "AGF214", "backward-accumulates-grad", ERROR,
        "backward returns `.grad` of tensors that its own backward call accumulated into.",
        "backward runs `{call}` and returns `.grad` of tensors it did not detach, so each "
        "gradient is accumulated into `.grad` and also returned (counted twice); use "
        "`torch.autograd.grad(outputs, inputs, grads)`, or detach copies first",
        "differentiability",
    ),
    Rule(
        "AGF302", "builtin-reimplementation", INFO,
        "A Function that reimplements one built-in op with its textbook derivative.",
        "`{name}` reimplements `{op}` with its textbook derivative, which autograd already "
        "does (faster, and composable with torch.func); call `{op}` directly",
        "differentiability", tier=STYLE,
    ),
    Rule(
        "AGF303", "ctx-style-not-functorch", INFO,
        "A ctx-style forward without setup_context: torch.func transforms raise.",
        "`{name}` takes ctx in forward and has no setup_context, so torch.func transforms "
        "(vmap, grad, jacrev) raise on it; use `forward(*inputs)` plus "
        "`setup_context(ctx, inputs, output)`",
        "differentiability", tier=STYLE,
    ),
    # --- custom operators (torch.library): the op, its fake, its autograd ------
    Rule("AGF401", "fake-signature-mismatch", ERROR,
         "A custom op's fake takes other parameters than the op.",
         "the fake `{fake}` of op `{op}` {why}: under torch.compile the arguments land in "
         "the wrong parameters, or the call raises; give the fake the op's exact signature",
         "custom_ops"),
    Rule("AGF402", "mutates-args-unknown", ERROR,
         "A mutates_args entry names no Tensor parameter of the op.",
         "`mutates_args` entry {entry} of op `{op}` {why}", "custom_ops"),
    Rule("AGF403", "undeclared-mutation", ERROR,
         "A custom op changes a Tensor parameter in place without declaring it.",
         "op `{op}` changes its Tensor parameter `{param}` in place (`{how}`) without "
         "declaring it in `mutates_args`: functionalization and torch.compile assume it "
         "unchanged and may reorder or drop the write; declare it", "custom_ops"),
    Rule("AGF404", "mutation-declared-unused", INFO,
         "A custom op declares a parameter mutated and never writes it.",
         "op `{op}` declares `{param}` mutated but never writes it: torch.compile clones it "
         "for nothing", "custom_ops", tier=STYLE),
    Rule("AGF405", "op-missing-fake", WARNING,
         "A custom op that returns tensors has no fake registered in the scanned tree.",
         "op `{op}` returns tensors but no fake is registered for it anywhere in the scanned "
         "tree: torch.compile and torch.export fail (\"no fake impl registered\"); register "
         "one with `register_fake`", "custom_ops"),
    Rule("AGF406", "op-backward-gradient-count", ERROR,
         "A custom op's registered backward returns fewer gradients than the op has inputs.",
         "the backward registered for op `{op}` returns {got} gradient(s), but the op takes "
         "{wanted} inputs {names}: {consequence}; return one gradient (or None) per "
         "input", "custom_ops"),
    Rule("AGF407", "op-setup-context-signature", ERROR,
         "A registered setup_context does not take (ctx, inputs, output).",
         "`{name}` is registered as setup_context with parameters ({got}), but torch calls it "
         "with the keywords ({wanted}): every forward under autograd raises", "custom_ops"),
    Rule("AGF408", "needs-input-grad-default", WARNING,
         "ctx.needs_input_grad indexed at a parameter that has a default.",
         "`ctx.needs_input_grad[{index}]` reads the flag of `{param}`, which has a default: "
         "torch leaves trailing inputs equal to their defaults out of `needs_input_grad`, so "
         "this raises IndexError when callers omit it; guard it with "
         "`len(ctx.needs_input_grad) > {index}`", "custom_ops"),
    Rule("AGF409", "fake-returns-input", WARNING,
         "A custom op's fake returns one of its inputs or a view of it.",
         "the fake `{fake}` returns its input `{param}` (or a view of it): an op's outputs "
         "must be new tensors, and a compiled graph built on an aliasing fake is wrong; "
         "return `torch.empty_like(...)` or `{param}.new_empty(...)`", "custom_ops"),
    Rule("AGF410", "fake-default-mismatch", ERROR,
         "A custom op's fake has parameter defaults that differ from the op's.",
         "the fake `{fake}` gives `{param}` {fake_default} where op `{op}` gives it "
         "{op_default}: under torch.compile a call that leaves it out runs the fake with "
         "another value than the kernel, so shapes and dtypes disagree; give the fake the "
         "op's defaults", "custom_ops"),
    Rule("AGF411", "op-registered-twice", WARNING,
         "The same op, or one of its fakes, kernels or autograd registrations, registered "
         "twice.",
         "{what} for op `{op}` is registered again (first at line {first_line} of "
         "{first_path}): since torch 2.13 (`allow_override=True`) the later one silently "
         "replaces the first; keep one", "custom_ops", tier=PEDANTIC),
    # --- suppressions ---------------------------------------------------------
    Rule("AGF901", "unused-noqa", INFO,
         "A code in a `# noqa:` comment that silences no finding.",
         "unused `noqa` code{s} {codes}: no such finding {where}; remove {it}, so that "
         "the comment does not hide a finding that appears later", "engine", tier=STYLE),
    # --- dynamic mode (`--dynamic`): found by running the Function ------------
    Rule("AGD001", "gradcheck-failed", ERROR,
         "gradcheck disagrees with backward, at the precision the Function computes in.",
         "gradcheck fails in {precision}: {detail}", "dynamic"),
    Rule("AGD002", "gradgradcheck-failed", WARNING,
         "gradgradcheck disagrees for a backward not decorated @once_differentiable.",
         "second derivatives through backward are wrong (gradgradcheck in {precision}: "
         "{detail}): backward computes its result outside autograd (a kernel, `.detach()`, "
         "`no_grad`, saved intermediates) so double backward silently differs; recompute "
         "from the saved inputs/outputs with differentiable ops in backward, or decorate it "
         "`@once_differentiable` so double backward raises", "dynamic"),
    Rule("AGD003", "backward-raised", ERROR,
         "forward or backward raised on valid inputs.",
         "{where} raised on valid inputs: {detail}", "dynamic"),
    Rule("AGD004", "grad-shape-mismatch", ERROR,
         "A returned gradient's shape, dtype or device differs from its input's.",
         "backward's gradient for input {index} (`{name}`) has {got}, but the input has "
         "{expected}", "dynamic"),
    Rule("AGD005", "grad-output-mutated", ERROR,
         "backward changed the gradient tensor it was given.",
         "backward changed incoming gradient {index} in place (max change {error}); another "
         "node may hold the same tensor: clone it first", "dynamic"),
    Rule("AGD006", "ctx-tensor-attribute-runtime", ERROR,
         "After forward or backward, ctx holds a tensor (or a container of tensors) as an "
         "attribute.",
         "{when}, `ctx.{attr}` holds {what}; save tensors with "
         "`ctx.save_for_backward(...)`", "dynamic"),
    Rule("AGD007", "saved-tensor-mutated", ERROR,
         "backward changed a saved tensor (its version, or its values through a kernel).",
         "backward changed saved tensor {index} in place ({how}): a second backward "
         "(`retain_graph=True`) or double backward reads the changed values; write results "
         "into new tensors", "dynamic"),
    Rule("AGD008", "forward-ad-failed", ERROR,
         "jvp is defined and gradcheck(check_forward_ad=True) fails.",
         "forward-mode AD check fails: {detail}", "dynamic"),
    Rule("AGD009", "vmap-failed", ERROR,
         "vmap (or generate_vmap_rule) disagrees with a Python loop.",
         "torch.vmap {detail}", "dynamic"),
    Rule("AGD010", "undefined-grad-unhandled", ERROR,
         "gradcheck(check_undefined_grad=True) fails.",
         "backward does not handle undefined (None or zero) incoming gradients: {detail}",
         "dynamic"),
    Rule("AGD011", "input-mutated", ERROR,
         "forward changed a tensor input it did not pass to mark_dirty.",
         "forward changed input {index} (`{name}`) in place without `ctx.mark_dirty` (max "
         "change {error})", "dynamic"),
    Rule("AGD012", "optional-input-none", ERROR,
         "forward or backward fail when inputs that default to None are left None.",
         "with {names} left as None, {where} raises: {detail}", "dynamic"),
    Rule("AGD013", "partial-requires-grad", ERROR,
         "gradcheck with only one input requiring grad at a time disagrees or raises.",
         "with only input {index} (`{name}`) requiring grad, {detail} (check the "
         "`ctx.needs_input_grad` indices)", "dynamic"),
    Rule("AGD014", "noncontiguous-grad-output", ERROR,
         "backward gives different gradients for a non-contiguous incoming gradient.",
         "backward {detail} when the incoming gradient is {layout} instead of a contiguous "
         "tensor of the same values{also}; autograd hands backward such gradients "
         "(`.sum()`'s backward an expanded one, `torch.cat`'s a narrow view): call "
         "`.contiguous()` first, or pass the gradient's strides to the kernel", "dynamic"),
    Rule("AGD015", "none-gradient-but-dependent", INFO,
         "backward returns None for a floating-point input the outputs depend on.",
         "backward returns None for input {index} (`{name}`), yet the outputs depend on it "
         "({detail}): its gradient is silently zero; return its gradient, or turn AGD015 off "
         "where that input is never differentiated (a loss target, a cos/sin table)",
         "dynamic", tier=PEDANTIC),
    Rule("AGD016", "opcheck-failed", ERROR,
         "torch.library.opcheck fails for a custom op on its recorded or synthesized inputs.",
         "`torch.library.opcheck` fails {test} ({on}): {detail}", "dynamic"),
    Rule("AGD017", "compile-gradient-mismatch", ERROR,
         "Outputs or gradients under torch.compile(backend=\"aot_eager\") differ from eager.",
         "under `torch.compile(backend=\"aot_eager\")` the {what} differ from eager ({detail}, "
         "in {precision}): the compiled graph computes something else than the code runs "
         "eagerly (a `torch.compiler.is_compiling()` path, state read while tracing)",
         "dynamic"),
    Rule("AGD900", "not-checked", WARNING,
         "The dynamic checks could not run: import failed, no inputs, timeout, crash.",
         "not checked dynamically: {reason}", "dynamic"),
)
# Static rules first, then the dynamic ones (AGD), each by code.
_RULES = tuple(sorted(_RULES, key=lambda rule: (rule.family == "dynamic", rule.code)))

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}
RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in _RULES}
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(
    r.family for r in _RULES if r.family not in ("engine", "dynamic")))
# Reported by directory scans only (`check DIR`): one file cannot show them.
TREE_ONLY_CODES: frozenset[str] = frozenset({"AGF301", "AGF405", "AGF411"})
DYNAMIC_CODES: frozenset[str] = frozenset(r.code for r in _RULES if r.family == "dynamic")


def all_rules() -> Iterable[Rule]:
    return _RULES


def lookup(code_or_name: str) -> Rule | None:
    """A rule by its code (case-insensitive) or its symbolic name."""
    return RULES.get(code_or_name.upper()) or RULES_BY_NAME.get(code_or_name.lower())


def default_codes() -> frozenset[str]:
    return frozenset(rule.code for rule in _RULES if rule.default)


def family_codes(family: str) -> frozenset[str]:
    return frozenset(rule.code for rule in _RULES if rule.family == family)


def tier_codes(tier: str) -> frozenset[str]:
    return frozenset(rule.code for rule in _RULES if rule.tier == tier)


def split_parents(code: str) -> frozenset[str]:
    """The codes a split-off code came from (a `# noqa` naming one silences it)."""
    return SPLIT_FROM.get(code, frozenset())
