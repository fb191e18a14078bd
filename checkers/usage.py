"""How Functions are used: AGF105 (instantiated / forward called directly) and
AGF301 (no gradcheck exercises the Function, in project scans).

Both look at call sites anywhere in the scanned tree, so names are resolved
through each call site's own scope, and across modules through the project.
"""
from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from autograd_lint.analysis.function_facts import FunctionFacts, facts_of, only_raises
from autograd_lint.core.files import is_test_path
from autograd_lint.core.model import ModuleInfo, plain_name
from autograd_lint.core.project import GRADCHECK_READS, FunctionClass, Project

from .base import Checker, node_range, source_text
from .call_sites import CallSites, Site, function_of
from .fix_edits import instance_call_to_apply
from .gradient_tests import GradientCheck, gradient_answer, gradient_checks

__all__ = ["PENDING_AGF301", "GradcheckAnswer", "GradientCheck", "PendingAGF301",
           "UsageChecker", "gradchecked", "gradient_checks"]

_DIRECT_METHODS = frozenset({"forward", "backward", "vjp", "jvp"})


def _plain_call(fn: FunctionClass, method: str, call: ast.Call) -> bool:
    """A direct `forward(None, ...)` of a forward whose ctx parameter is never
    used: the project calls it as a plain function on purpose, outside
    autograd (with a ctx it used, the call would raise)."""
    found = fn.method(method)
    if method != "forward" or found is None or found.node is None or not call.args or \
            not (isinstance(call.args[0], ast.Constant) and call.args[0].value is None):
        return False
    ctx = fn.ctx_name(found)
    return ctx is not None and not any(isinstance(n, ast.Name) and n.id == ctx
                                       for n in ast.walk(found.node)
                                       if not isinstance(n, ast.arguments))


class UsageChecker(Checker):
    family = "usage"

    def check_module(self, module: ModuleInfo) -> None:
        if self.enabled("AGF105") and (module.reach is None or module.reach):
            called = _CalledAtOnce(module.tree)
            for call, site in CallSites(module, self.project, _names_used(module)):
                self.agf105_function_instantiated(module, call, site, called)
        if self.enabled("AGF301") and self.project.scan_tree and self.project.has_tests(module):
            pending = self.project.cache.get(PENDING_AGF301)
            if isinstance(pending, list):  # the run answers after its parts (engine_parts)
                self.project.reads.read(GRADCHECK_READS)
                answer = None
            else:
                answer = GradcheckAnswer(gradchecked(self.project), self.project.root_of)
            for fn in self.project.functions_in(module):
                self.agf301_no_gradcheck(fn, answer, pending)

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        """Usage rules work per module (see check_module)."""

    # -- AGF105 ----------------------------------------------------------------
    def agf105_function_instantiated(self, module: ModuleInfo, call: ast.Call, site: Site,
                                     called_at_once: _CalledAtOnce) -> None:
        target = function_of(self.project, module, site.scope, call.func)
        if target is not None:
            # Torch only warns when a Function is instantiated: the defect is
            # calling the instance (it raises), or passing inputs to the class
            # (an instance comes back, nothing is computed).
            at_once = called_at_once.contains(call)
            if not at_once and not call.args and not call.keywords:
                return
            autofix = instance_call_to_apply(call) if at_once else None
            why = ("which is the legacy API: calling the instance raises" if at_once else
                   "which returns an instance of the class instead of computing anything")
            self.reporter.add("AGF105", call, function=target.name, name=target.name,
                              autofix=autofix,
                              what=f"`{source_text(call.func)}(...)` instantiates a Function,",
                              why=why)
            return
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in _DIRECT_METHODS):
            return
        target = function_of(self.project, module, site.scope, func.value)
        if target is None or site.in_function_class or site.grad_off or site.expects_error:
            return
        if _plain_call(target, func.attr, call):
            return  # `Fn.forward(None, x)` of a forward that never touches ctx: a plain function
        self.reporter.add("AGF105", call, function=target.name, name=target.name,
                          what=f"`{source_text(func)}(...)` runs {func.attr} directly,",
                          why="so autograd records nothing and gradients silently stop here")

    # -- AGF301 ----------------------------------------------------------------
    def agf301_no_gradcheck(self, fn: FunctionClass, answer: GradcheckAnswer | None,
                            pending: list[PendingAGF301] | None) -> None:
        if answer is not None and answer.covers(fn.module.path, fn.info.key, fn.name) or \
                needs_no_gradient_check(fn, self.project) is not None:
            return
        self.reporter.add("AGF301", fn.node, function=fn.name, name=fn.name)
        if answer is None and pending is not None:
            line, column, _, _ = node_range(fn.node)
            pending.append(PendingAGF301(fn.module.path, line, column, fn.info.key, fn.name))


def needs_no_gradient_check(fn: FunctionClass, project: Project) -> str | None:
    """Why a Function needs no gradient check of its own (AGF301's silences,
    the coverage report's exempt rows), or None."""
    if project.has_subclasses(fn):
        return "a base class (its subclasses are checked)"
    backward = fn.method("backward") or fn.method("vjp")
    if fn.method("forward") is None or backward is None:
        return "no forward or backward"  # (AGF106 / AGF111 say why)
    facts = facts_of(fn)
    if facts.deliberate_gradient is not None:
        return "deliberate gradient"  # differs from the derivative on purpose
    if facts.outputs_non_differentiable:
        return "no differentiable output"  # backward never runs
    if backward.node is not None and only_raises(backward.node):
        return "inference only (backward raises)"
    return None


class GradcheckAnswer:
    """Whether the project's gradient checks cover a Function: its own class
    is exercised, or (backends that stand in for each other keep the public
    class name: a device's copy of `LigerRMSNormFunction` in a module of its
    own) the project's class of that name outside its tests is, which runs
    whichever one the device selects. Classes defined in tests are each
    their own."""

    def __init__(self, exercised: set[tuple[str, str]],
                 root_of: Callable[[str], str | None]) -> None:
        self.exercised = exercised
        self.root_of = root_of
        self.checked_names = {(root_of(path), key.rpartition(".")[2]): path
                              for path, key in exercised if not is_test_path(path)}

    def covers(self, path: str, key: str, name: str) -> bool:
        if (path, key) in self.exercised:
            return True
        namesake = self.checked_names.get((self.root_of(path), name))
        return namesake is not None and namesake != path and not is_test_path(path)


# project.cache[PENDING_AGF301], when set to a list, asks AGF301 to report the
# Functions it cannot clear without the gradcheck answer and to list them:
# a run in parts computes that answer once and settles them (engine_parts).
PENDING_AGF301 = "agf301-pending"


@dataclass(frozen=True)
class PendingAGF301:
    """An AGF301 finding that stands unless the gradcheck answer covers it."""

    path: str
    line: int
    column: int
    key: str
    name: str


def gradchecked(project: Project) -> set[tuple[str, str]]:
    """(file, class key) of every Function whose gradients something in the
    tree checks (gradient_tests.py says where and how). An incremental run
    may hand in the answer of an earlier run, with the files it read, as
    `project.cache["gradchecked"]`; a run in parts hands on this one."""
    if "gradchecked" not in project.cache:
        checks, reads = gradient_answer(project)
        project.cache["gradchecked"] = (set(checks), reads)
    found, reads = project.cache["gradchecked"]  # type: ignore[misc]
    project.reads.replay(reads)
    return found


class _CalledAtOnce:
    """Calls whose result is called right away (`Fn()` in `Fn()(x)`), found
    on first use: most modules never ask."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self._ids: set[int] | None = None

    def contains(self, call: ast.Call) -> bool:
        if self._ids is None:
            self._ids = {id(node.func) for node in ast.walk(self.tree)
                         if isinstance(node, ast.Call) and isinstance(node.func, ast.Call)}
        return id(call) in self._ids


def _names_used(module: ModuleInfo) -> tuple[str, ...] | None:
    """The Function names a module's calls could use: those in its reach and
    module-level aliases of them. None: unknown (no project scan judged it)."""
    if module.reach is None:
        return None
    aliases = {local for local, target in module.top_bindings.items()
               if target is not None and plain_name(target).rsplit(".", 1)[-1] in module.reach}
    return tuple(module.reach | aliases)
