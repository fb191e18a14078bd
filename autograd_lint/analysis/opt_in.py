"""What a caller opts into: a Function's flags, and the in-place changes that
happen without them.

RULES.md (AGF011; "Precision first", the event): a write that happens only
when the caller passes a non-default value to a flag (`inplace=True`,
`in_place=True`, a mode string) of forward, or of the public function that
calls `apply`, is the caller's choice, not a defect every caller gets. To
tell, forward and backward are interpreted again, specialized to the values a
caller gets without opting in (walker.py and callees.py decide branches,
conditional aliases and callees' branches from them: `Recorder.decided`); a
write that no such run makes is opt-in.

A flag's values without opting in, in order of preference:
- the literals every `Fn.apply(...)` call of forward's module passes, or the
  literal defaults of the wrapper parameters passed there (`def rms_norm(...,
  in_place=True): return Fn.apply(..., in_place)`);
- forward's own literal default;
- unknown: then a write must happen whatever the flag is (each value its
  tests compare it with, and one other; `True` and `False` for a bare test).
"""
from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.model import all_parameter_defaults
from .apply_calls import apply_calls
from .events import CtxStore, MethodFacts, Mutation
from .guards import Other, Symbol
from .syntax import NOT_LITERAL as _NOT_LITERAL
from .syntax import is_hashable, literal_value
from .values import Kind

if TYPE_CHECKING:
    from ..core.project import FunctionClass
    from .function_facts import FunctionFacts

_MAX_RUNS = 16  # specialized runs per method; beyond that, every write counts
_UNSET = object()


@dataclass(frozen=True)
class FlagSpace:
    """The flags of one Function and their values without opting in."""

    # Flags whose values callers get are known: a write happens without
    # opting in when some of those values make it happen.
    known: dict[str, tuple[object, ...]] = field(default_factory=dict)
    # Flags nobody sets in sight: a write must happen under every value.
    unknown: dict[str, tuple[object, ...]] = field(default_factory=dict)
    # Every known value is a literal some `apply` call passes (no default a
    # caller could change): a write they all rule out is no write at all.
    closed: bool = False
    ctx_attrs: dict[str, str] = field(default_factory=dict)  # ctx attribute -> flag

    def describe(self, names: list[str] | None = None) -> str:
        chosen = names or sorted({*self.known, *self.unknown})
        return " or ".join(f"`{name}`" for name in chosen)


class OptIn:
    """The specialized runs of one Function's methods, computed on demand."""

    def __init__(self, facts: FunctionFacts) -> None:
        self.facts = facts
        self._space: FlagSpace | None | object = _UNSET
        self._runs: dict[tuple[str, tuple[tuple[str, object], ...]], MethodFacts | None] = {}

    @property
    def space(self) -> FlagSpace | None:
        if self._space is _UNSET:
            self._space = flag_space(self.facts)
        return self._space  # type: ignore[return-value]

    def verdict(self, method: str, mutation: Mutation, root: str) -> str:
        """"default": the write happens for callers that opt into nothing;
        "opt-in": only for callers that set a flag; "never": the literal
        arguments of every call rule it out."""
        return self._verdict(method, _writes(mutation, root))

    def store_verdict(self, method: str, store: CtxStore) -> str:
        """As `verdict`, for a ctx attribute store (`ctx.x = t` made only
        under `if solver == "cvxpy":`)."""
        def stores(run: MethodFacts) -> bool:
            return any(s.node is store.node and s.attr == store.attr for s in run.of(CtxStore))

        return self._verdict(method, stores)

    def _verdict(self, method: str, happens: Callable[[MethodFacts], bool]) -> str:
        space = self.space
        if space is None:
            return "default"
        known = list(itertools.product(*space.known.values()))
        unknown = list(itertools.product(*space.unknown.values()))
        if len(known) * len(unknown) > _MAX_RUNS:
            return "default"
        for known_values in known:
            if all(self._happens(method, space, {**dict(zip(space.known, known_values,
                                                                strict=True)),
                                                 **dict(zip(space.unknown, unknown_values,
                                                            strict=True))}, happens)
                   for unknown_values in unknown):
                return "default"
        return "never" if space.closed and not space.unknown else "opt-in"

    def deciding(self, method: str, mutation: Mutation, root: str) -> list[str]:
        """The flags a caller sets to make an opt-in write happen: each known
        flag that, changed alone from its value without opting in, makes it;
        and the flags nobody sets in sight."""
        space = self.space
        if space is None:
            return []
        base = {name: values[0] for name, values in space.known.items()}
        base.update({name: values[0] for name, values in space.unknown.items()})
        found = []
        for name, values in space.known.items():
            trials = _trial_values(self.facts, name, space.ctx_attrs)
            if any(self._happens(method, space, {**base, name: value}, _writes(mutation, root))
                   for value in trials if value not in values):
                found.append(name)
        return sorted({*found, *space.unknown})

    def _happens(self, method: str, space: FlagSpace, values: dict[str, object],
                 happens: Callable[[MethodFacts], bool]) -> bool:
        run = self._run(method, space, values)
        return True if run is None else happens(run)  # no run: as the plain run says

    def _run(self, method: str, space: FlagSpace, values: dict[str, object]
             ) -> MethodFacts | None:
        if method in ("forward", "setup_context"):
            decided = dict(values)
        else:
            decided = {f"ctx.{attr}": values[flag] for attr, flag in space.ctx_attrs.items()
                       if flag in values}
        key = (method, tuple(sorted(decided.items(), key=lambda item: item[0])))
        if key not in self._runs:
            self._runs[key] = self.facts.specialized(method, decided) if decided else None
        return self._runs[key]


def _writes(mutation: Mutation, root: str) -> Callable[[MethodFacts], bool]:
    """Whether a run makes this write (the same operation, on the same root)."""
    def writes(run: MethodFacts) -> bool:
        return any(m.node is mutation.node and root in m.value.roots for m in run.of(Mutation))

    return writes


def flag_space(facts: FunctionFacts) -> FlagSpace | None:
    """The flags of a Function (non-tensor inputs its branches test, or that
    forward passes on), with their values without opting in; None: no flag."""
    fn = facts.fn
    forward = fn.forward
    if forward is None or forward.node is None or fn.has_varargs:
        return None
    ctx_attrs = _ctx_flag_attrs(facts)
    tested_attrs, passed_attrs = _backward_flag_uses(fn)
    tested = _tested_names(forward.node) | {
        ctx_attrs[attr] for attr in tested_attrs if attr in ctx_attrs}
    passed = _passed_names(forward.node) | {
        ctx_attrs[attr] for attr in passed_attrs if attr in ctx_attrs}
    names = [arg.arg for arg in fn.inputs]
    candidates = [name for name in names if (name in tested or name in passed)
                  and facts.inputs[name].kind is not Kind.TENSOR
                  and name not in facts.evidence and not facts.inputs[name].seq]
    # A factory's parameter forward reads from its closure (`def QPFunction(...,
    # solver=QPSolvers.PDIPM_BATCHED): class Fn(Function): ...`): the caller of
    # the factory sets it.
    closure = {name: value for name, value in _factory_defaults(fn).items()
               if name in tested and name not in names}
    if not candidates and not closure:
        return None
    at_calls = _call_site_values(facts, names)
    known: dict[str, tuple[object, ...]] = dict(closure)
    unknown: dict[str, tuple[object, ...]] = {}
    closed = not closure
    for name in candidates:
        values, from_literals = at_calls.get(name, ((), False))
        if not values and (default := forward.defaults.get(name)) is not None:
            value = _default_value(default, forward.owner.info.scope)
            values, from_literals = ((value,), False) \
                if value is not _NOT_LITERAL and is_hashable(value) else ((), False)
        if values:
            known[name] = values
            closed = closed and from_literals
        elif name in tested:
            unknown[name] = _trial_values(facts, name, ctx_attrs)
    if not known and not unknown:
        return None
    return FlagSpace(known, unknown, closed and bool(known), ctx_attrs)


def _factory_defaults(fn: FunctionClass) -> dict[str, tuple[object, ...]]:
    """The parameters (with a literal or constant default) of the defs the
    Function's class is nested in, innermost first."""
    found: dict[str, tuple[object, ...]] = {}
    module = fn.module
    if any(statement is fn.node for statement in module.tree.body):
        return found  # a top-level class: no factory around it
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any(inner is fn.node for inner in ast.walk(node)):
            scope = module.scopes.get(id(node), module.scope)
            for name, default in all_parameter_defaults(node).items():
                value = _default_value(default, scope)
                if value is not _NOT_LITERAL and is_hashable(value):
                    found.setdefault(name, (value,))
    return found


def _default_value(default: ast.expr, scope) -> object:
    """A default's value: a literal, or a module-level constant (`Mode.FAST`)."""
    value = literal_value(default)
    if value is _NOT_LITERAL and isinstance(default, ast.Attribute) and \
            isinstance(default.value, ast.Name) and (qualified := scope.resolve(default)):
        return Symbol(qualified)
    return value


def _ctx_flag_attrs(facts: FunctionFacts) -> dict[str, str]:
    """ctx attributes forward (or setup_context) sets to an input as is."""
    found: dict[str, str] = {}
    for name in ("forward", "setup_context"):
        method = facts.facts(name)
        for store in method.of(CtxStore) if method else ():
            src = store.value.src or ""
            if src.startswith("input:") and store.value.kind is not Kind.TENSOR:
                found[store.attr] = src[6:]
    return found


def _tested_names(node: ast.AST) -> set[str]:
    """Names a branch test of this body reads (`if inplace:`, `x if mode == "a" else y`)."""
    names: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, (ast.If, ast.IfExp, ast.While)):
            names.update(n.id for n in ast.walk(inner.test) if isinstance(n, ast.Name))
    return names


def _backward_flag_uses(fn: FunctionClass) -> tuple[set[str], set[str]]:
    """Attributes (of ctx) that backward, vjp and jvp test in branches, and
    those they pass to calls (`helper(dy, ctx.in_place)`)."""
    tested: set[str] = set()
    passed: set[str] = set()
    for name in ("backward", "vjp", "jvp"):
        method = fn.method(name)
        for inner in ast.walk(method.node) if method is not None and method.node else ():
            if isinstance(inner, (ast.If, ast.IfExp, ast.While)):
                tested.update(n.attr for n in ast.walk(inner.test) if isinstance(n, ast.Attribute))
            elif isinstance(inner, ast.Call):
                passed.update(a.attr for a in (*inner.args, *(k.value for k in inner.keywords))
                              if isinstance(a, ast.Attribute))
    return tested, passed


def _passed_names(node: ast.AST) -> set[str]:
    """Names passed as arguments to calls (a flag handed on to a helper or kernel)."""
    names: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            for argument in (*inner.args, *(k.value for k in inner.keywords)):
                if isinstance(argument, ast.Name):
                    names.add(argument.id)
    return names


def _trial_values(facts: FunctionFacts, name: str, ctx_attrs: dict[str, str]
                  ) -> tuple[object, ...]:
    """Values that cover every branch a flag's tests tell apart: each literal
    it is compared with and one other value, or True and False."""
    attrs = {attr for attr, flag in ctx_attrs.items() if flag == name}
    literals: list[object] = []
    bare = False
    for method in ("forward", "backward", "vjp", "jvp"):
        found = facts.fn.method(method)
        if found is None or found.node is None:
            continue
        for node in ast.walk(found.node):
            if isinstance(node, ast.Compare) and _names_flag(node.left, name, attrs):
                for comparator in node.comparators:
                    value = literal_value(comparator)
                    if value is not _NOT_LITERAL:
                        literals.extend(value if isinstance(value, tuple) else (value,))
            elif any(_names_flag(test, name, attrs) for test in _truth_tests(node)):
                bare = True
    values: list[object] = list(dict.fromkeys(v for v in literals if is_hashable(v)))
    if literals:
        values.append(Other())
    if bare or not literals:
        values.extend(v for v in (True, False) if v not in values)
    return tuple(values)


def _truth_tests(node: ast.AST) -> list[ast.expr]:
    """The expressions a node tests for truth (`if flag:`, `not flag`, `a and flag`)."""
    if isinstance(node, (ast.If, ast.IfExp, ast.While)):
        return [node.test]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [node.operand]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    return []


def _names_flag(node: ast.expr, name: str, attrs: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id == name or \
        isinstance(node, ast.Attribute) and node.attr in attrs


def _call_site_values(facts: FunctionFacts, names: list[str]
                      ) -> dict[str, tuple[tuple[object, ...], bool]]:
    """Per input, the values the `apply` calls of forward's module pass (and
    whether all are literals, not defaults); inputs some call passes in a way
    not known, or leaves out, are left out."""
    calls = apply_calls(facts.fn)
    found: dict[str, tuple[tuple[object, ...], bool]] = {}
    if not calls:
        return found
    for index, name in enumerate(names):
        passed = [call.at(index) for call in calls]
        if any(p is None or p.how not in ("literal", "default") for p in passed):
            continue
        values = tuple(dict.fromkeys(p.value for p in passed if is_hashable(p.value)))
        found[name] = (values, all(p.how == "literal" for p in passed))  # type: ignore[union-attr]
    return found


def defaults_outranked(facts: FunctionFacts) -> frozenset[str]:
    """Inputs whose default no call uses: every `apply` call of forward's
    module passes them, and some passes a value that is not a literal (a
    default `0.0` says nothing of the tensor every caller gives)."""
    calls = apply_calls(facts.fn)
    if not calls:
        return frozenset()
    outranked = set()
    for index, arg in enumerate(facts.fn.inputs):
        passed = [call.at(index) for call in calls]
        if None not in passed and any(p.how not in ("literal", "default")
                                      for p in passed):  # type: ignore[union-attr]
            outranked.add(arg.arg)
    return frozenset(outranked)
