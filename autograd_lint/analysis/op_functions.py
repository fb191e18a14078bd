"""A custom op's registered autograd seen as a setup_context-style Function.

RULES.md ("Custom operators"): the `setup_context` and `backward` registered
for an op are checked like a setup_context-style Function's, with the op's
parameters as forward's inputs. The view is a FunctionClass whose forward is
the op's implementation (its annotated parameters make tensor-ness exact) and
whose setup_context and backward are the registered functions, so that the
ctx and backward rules run on it unchanged.

Only where the implementation and both registered functions are defined in
the module being checked (the usual layout, and where the findings point).
The rules that run are those about what setup_context and backward do with
ctx, the saved tensors and the incoming gradients (OP_CALLBACK_CODES): the
op's own body is the custom-op rules' (AGF403), and AGF001 in setup_context
is reported by them too.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..core.model import ClassInfo, ModuleInfo

if TYPE_CHECKING:
    from ..core.project import FunctionClass, Project

OP_CALLBACK_CODES = frozenset({
    "AGF002",  # a non-tensor saved
    "AGF003",  # saved_tensors read in setup_context
    "AGF004",  # save_for_backward twice
    "AGF005",  # a saved tensor changed in place in backward
    "AGF006",  # the incoming gradient changed in place
    "AGF201",  # set_materialize_grads(False), gradients used unchecked
    "AGF205",  # a literal returned as a gradient
    "AGF206",  # tensor computation in setup_context
    "AGF210",  # saved_tensors read twice
    "AGF211",  # ctx escapes
    "AGF213",  # deprecated ctx API
})


def op_functions(module: ModuleInfo, project: Project) -> list[FunctionClass]:
    """One Function view per autograd registration of an op of `module`."""
    from ..core.project import FunctionClass, Method
    from .op_model import module_ops, ops_index

    if module_ops(module, project) is None:
        return []
    views = []
    for op in ops_index(project).ops:
        impl = op.impl
        if not module.same_file(op.module) or impl is None or not module.same_file(impl.module):
            continue
        for _, backward, setup in op.autograd:
            if backward is None or setup is None or not module.same_file(backward.module) or \
                    not module.same_file(setup.module):
                continue
            name = op.python_name or (op.qualified or "op").rpartition("::")[2]
            anchor = impl.node
            node = ast.ClassDef(name=name, bases=[], keywords=[], body=[], decorator_list=[],
                                type_params=[])
            ast.copy_location(node, anchor)
            info = ClassInfo(name, f"{module.module_name}.<op {name}>@{anchor.lineno}", node,
                             module.scope, module.scope, [], module)
            view = FunctionClass(info, project=project)
            view.own = {method: Method(method, registration.node, view, ("staticmethod",))
                        for method, registration in (("forward", impl), ("backward", backward),
                                                     ("setup_context", setup))}
            views.append(view)
    return views
