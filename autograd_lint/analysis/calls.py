"""Calls: what calling torch's API, a tensor method, a builtin or a ctx method
does, from torch_api.py's tables: the result's value and what it is computed
from, in-place changes (`x.add_()`, `out=`, in-place collectives), values
leaving autograd (`.item()`, `np.*`, `.detach()` of the gradient), ctx method
calls, backward calls and the evidence that an input is a tensor. Helpers and
kernel launches of the project go through their summaries (callees.py).
"""
from __future__ import annotations

import ast
from dataclasses import replace
from functools import reduce
from typing import TYPE_CHECKING

from . import torch_api as api
from .callees import bind_arguments
from .events import (
    CTX_OTHER_METHODS,
    CTX_SAVE_METHODS,
    BackwardCall,
    Compute,
    CtxCall,
    CtxEscape,
    CtxStore,
    LeftAutograd,
    Mutation,
)
from .markers import carries_gradient, is_gradient, param_names, taint_of
from .recorder import Room
from .values import (
    NONE,
    NONTENSOR,
    UNKNOWN,
    Kind,
    Value,
    element_of,
    join,
    list_slots,
    tuple_of,
)

if TYPE_CHECKING:
    from .walker import State


# Tensor methods that also exist on modules, builtins or NumPy arrays under
# the same name: calling them is no evidence that the receiver is a tensor.
_AMBIGUOUS_METHODS = frozenset({
    "to", "float", "double", "half", "bfloat16", "cpu", "cuda", "type", "apply", "int",
    "long", "bool", "short", "char", "byte", "copy", "index", "count", "split", "real",
    "imag", "conj", "round", "new", "max", "min", "all", "any", "repeat", "put",
    "take", "item", "tolist", "std", "var", "prod", "cumsum", "cumprod", "dot",
    "nonzero", "trace", "clip", "argmax", "argmin", "argsort", "sort", "flatten",
    "diagonal", "transpose", "squeeze", "mean", "reshape", "astype", "fill",
    "requires_grad_", "backward",  # nn.Module and duck-typed wrappers have these too
})
EVIDENCE_METHODS = (api.TENSOR_METHODS | api.VIEW_METHODS | api.STRONG_TENSOR_METHODS
                    | api.SEQUENCE_METHODS) - _AMBIGUOUS_METHODS
# `.sum()` and `.view()` are named as tensor evidence by RULES.md.
EVIDENCE_METHODS = EVIDENCE_METHODS | {"sum", "view", "mean", "reshape", "transpose"}

# Methods that leave autograd: their result no longer carries a gradient.
_LEAVING_METHODS = frozenset({"numpy", "item", "tolist"})
# Methods whose receiver is kept: `x.requires_grad_()` returns x itself.
_CONTAINER_METHODS_STORING = frozenset({"append", "add", "extend", "insert", "setdefault",
                                        "update", "put", "put_nowait", "appendleft"})


class CallInterpreter(Room):
    """`e_Call`: calls of torch's API, tensor methods, builtins and ctx methods."""

    def e_Call(self, node: ast.Call, state: State) -> Value:
        func = node.func
        qualified = self.evaluator.qualname(func, state) \
            if isinstance(func, (ast.Name, ast.Attribute)) else None
        receiver: Value | None = None
        if qualified is None:
            if isinstance(func, ast.Attribute):
                receiver = self.evaluator.expr(func.value, state)
            elif not isinstance(func, ast.Name):
                self.evaluator.expr(func, state)
        args = [self.evaluator.expr(a, state) for a in node.args]
        kwargs = {kw.arg: self.evaluator.expr(kw.value, state) for kw in node.keywords}
        if "out" in kwargs and qualified is not None and qualified.startswith("torch."):
            # `out=` writes into a tensor for torch's functions; elsewhere it is
            # just a keyword (`Context(out=out)`).
            out_node = next(kw.value for kw in node.keywords if kw.arg == "out")
            self.run.record(Mutation(node, out_node, kwargs["out"], "`out=`", True))
        summary = self.callees.callee_summary(node, state) \
            if self.run.effects is not None and receiver is None and not (
                isinstance(func, ast.Name) and func.id in state.vars) else None
        bound = bind_arguments(node, summary, args, kwargs) if summary is not None else {}
        if summary is not None:
            self.callees.callee_writes(node, summary, bound)
        if receiver is not None:
            assert isinstance(func, ast.Attribute)
            result = self._method_call(node, func, receiver, args, kwargs, state)
            taint = _method_taint(func.attr, receiver, args, kwargs)
        elif qualified is not None:
            result = self._function_call(node, qualified, args, kwargs, state)
            taint = _function_taint(qualified, args, kwargs)
        elif isinstance(func, ast.Name) and func.id not in state.vars:
            result = self._builtin_call(node, func.id, args, state)
            taint = frozenset() if func.id in api.METADATA_BUILTINS \
                and not self.run.scope.lookup(func.id)[0] else taint_of(*args, *kwargs.values())
        else:
            result = UNKNOWN
            taint = taint_of(*args, *kwargs.values())
        if summary is not None:
            result = self.callees.aliased_result(summary, bound) or result
            taint = taint | self.callees.left_in_callee(node, summary, bound)
        return replace(result, taint=result.taint | taint)

    def _builtin_call(self, node: ast.Call, name: str, args: list[Value], state: State) -> Value:
        found, _ = self.run.scope.lookup(name)
        if found:
            return UNKNOWN  # a module-level def or import shadows the builtin
        if name == "setattr" and len(args) == 3 and args[0].src == "ctx":
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                self.run.record(CtxStore(node, attr.value, args[2], node.args[2]))
            return NONE
        if name in ("float", "int") and len(args) == 1 and args[0].kind is Kind.TENSOR:
            return self._leaving(node, f"`{name}()` of a tensor", args[0])
        if name in api.NON_TENSOR_BUILTINS:
            return NONTENSOR
        if name in api.SEQUENCE_BUILTINS:
            inner = args[0] if args else NONE
            kind = Kind.TENSORS if inner.kind.holds_tensor else Kind.UNKNOWN
            elems = inner.elems if name == "tuple" else None
            return Value(kind, inner.roots, elems, True, is_list=name == "list",
                         item=element_of(inner) if elems is None and args else None)
        return UNKNOWN

    def _method_call(self, node: ast.Call, func: ast.Attribute, receiver: Value,
                     args: list[Value], kwargs: dict[str | None, Value], state: State) -> Value:
        name = func.attr
        if receiver.src == "ctx":
            return self._ctx_call(node, name, args, state)
        if name in _CONTAINER_METHODS_STORING and any(a.src == "ctx" for a in args) and \
                self.binder.declared_nonlocal(func.value, state):
            self.run.record(CtxEscape(node, f"stored in `{ast.unparse(func.value)}`"))
        if receiver.seq:
            return self._container_call(node, func, receiver, args, state)
        if name in EVIDENCE_METHODS or (name.endswith("_") and not name.startswith("__")
                                        and name not in _AMBIGUOUS_METHODS):
            self.run.add_evidence(receiver)
        if name in api.TENSOR_ARGUMENTS_OF_METHODS and (
                receiver.kind is Kind.TENSOR or name not in _AMBIGUOUS_METHODS):
            self.run.add_evidence(receiver)  # `gather`, `scatter_add`: names only tensors have
            self.run.tensor_arguments(api.TENSOR_ARGUMENTS_OF_METHODS[name], args, kwargs)
        if name == "backward":
            # `t.backward(g)`; `Other.backward(ctx, g)` is a Function's backward.
            if not any(a.src == "ctx" for a in args):
                self.run.record(BackwardCall(node))
            return UNKNOWN
        if name.endswith("_") and not name.startswith("__") and name not in api.NOT_INPLACE_METHODS:
            return self._inplace_method(node, func, name, receiver, state)
        if name in api.NOT_INPLACE_METHODS:
            return replace(receiver, kind=Kind.TENSOR)  # `x.requires_grad_()` returns x
        self.run.grad_uses(node, state, receiver)
        tensor_receiver = receiver.kind in (Kind.TENSOR, Kind.TENSORISH)
        if name in _LEAVING_METHODS:
            return self._leaving(node, f"`.{name}()`", receiver)
        if name in api.NON_TENSOR_METHODS:
            return NONTENSOR
        if name in api.VIEW_SEQUENCE_METHODS:
            item = Value(Kind.TENSOR, receiver.roots, view=True, integral=receiver.integral)
            return Value(Kind.TENSORS, receiver.roots, None, True, item=item)
        if name in api.INDICES_PAIR_METHODS or \
                (name in api.SEQUENCE_WITH_DIM_METHODS and _has_dim(args, kwargs)):
            return values_and_indices()
        if name in api.SEQUENCE_METHODS:
            return Value(Kind.TENSORS, frozenset(), None, True)
        if name in api.SEQUENCE_WITH_DIM_METHODS:
            if not args and not kwargs:  # `x.max()`: one value
                return Value(Kind.TENSOR if tensor_receiver else Kind.UNKNOWN, single=True,
                             scalar=tensor_receiver)
            if args[0].kind is not Kind.TENSOR:
                return Value(Kind.TENSORISH)
        certain = tensor_receiver or name in api.STRONG_TENSOR_METHODS
        if name == "detach":
            return self._detach(node, receiver)
        if name in api.VIEW_METHODS:
            integral = receiver.integral or _converts_to_integral(name, node)
            aliases = name not in api.CONVERSION_METHODS
            return Value(Kind.TENSOR if certain else Kind.UNKNOWN,
                         receiver.roots if aliases else frozenset(), view=aliases,
                         integral=integral and name not in _FLOAT_CONVERSIONS,
                         detached=receiver.detached,
                         scalar=receiver.scalar and name not in api.GROWING_METHODS)
        if name in api.TENSOR_METHODS:
            if not certain:  # argmax/argsort/comparisons: integral whatever the receiver
                return Value(Kind.UNKNOWN, integral=name in api.INTEGRAL_METHODS)
            self.run.record(Compute(node))
            return Value(Kind.TENSOR, integral=name in api.INTEGRAL_METHODS or (
                receiver.integral and name not in _FLOAT_RESULTS),
                scalar=_scalar_method(name, receiver, args, kwargs))
        return UNKNOWN

    def _inplace_method(self, node: ast.Call, func: ast.Attribute, name: str, receiver: Value,
                        state: State) -> Value:
        if not _self_copy(name, func.value, node):
            self.run.record(Mutation(node, func.value, receiver, f"`.{name}()`", True))
        result = replace(receiver, kind=Kind.TENSOR)
        if isinstance(func.value, ast.Name) and receiver.kind is Kind.UNKNOWN \
                and func.value.id in state.vars:
            # Only tensors have `*_()` methods: the name holds a tensor.
            state.vars[func.value.id] = result
        return result

    def _detach(self, node: ast.Call, receiver: Value) -> Value:
        taint = receiver.taint
        if is_gradient(receiver):
            key = self.run.marker("left", node)
            self.run.record(LeftAutograd(node, "`.detach()` of the gradient", key,
                                      param_names(receiver.roots), True))
            taint = taint | {key}
        return Value(Kind.TENSOR, receiver.roots, view=True, detached=True, taint=taint,
                     integral=receiver.integral, scalar=receiver.scalar)

    def _leaving(self, node: ast.Call, how: str, receiver: Value) -> Value:
        """`.numpy()`, `.item()`, `.tolist()`, `float(t)`: the result is
        outside autograd (integer tensors never carry a gradient)."""
        taint = receiver.taint
        if carries_gradient(receiver):
            key = self.run.marker("left", node)
            self.run.record(LeftAutograd(node, how, key, param_names(taint)))
            taint = taint | {key}
        return Value(Kind.NONTENSOR, taint=taint)

    def _container_call(self, node: ast.Call, func: ast.Attribute, receiver: Value,
                        args: list[Value], state: State) -> Value:
        name = func.attr
        if receiver.is_list and isinstance(func.value, ast.Name) and name in _LIST_MUTATORS:
            state.vars[func.value.id] = _list_after(receiver, name, args)
        if name in ("pop", "get", "popleft"):
            return element_of(receiver)
        return UNKNOWN

    def _ctx_call(self, node: ast.Call, name: str, args: list[Value], state: State) -> Value:
        if name in CTX_SAVE_METHODS or name in CTX_OTHER_METHODS:
            entries = [(arg_node.value if isinstance(arg_node, ast.Starred) else arg_node, value,
                        isinstance(arg_node, ast.Starred))
                       for arg_node, value in zip(node.args, args, strict=False)]
            prior = state.add_fact(name, node)
            self.run.record(CtxCall(node, name, entries, prior))
            if name in CTX_SAVE_METHODS:
                for value in args:
                    self.run.add_evidence(value)
            return NONE
        return UNKNOWN

    def _function_call(self, node: ast.Call, qualified: str, args: list[Value],
                       kwargs: dict[str | None, Value], state: State) -> Value:
        last = qualified.rsplit(".", 1)[-1]
        if qualified in api.INPLACE_COLLECTIVES:
            index = api.INPLACE_COLLECTIVES[qualified]
            if index < len(node.args):
                self.run.record(Mutation(node, node.args[index], args[index], f"`{last}()`", True,
                                      collective=True))
        elif qualified.startswith("torch.") and last.endswith("_") and not last.startswith("__") \
                and node.args and last not in api.NOT_INPLACE_METHODS:
            self.run.record(Mutation(node, node.args[0], args[0], f"`{qualified}()`", True))
        elif qualified.startswith("torch.nn.functional.") and node.args and any(
                kw.arg == "inplace" and isinstance(kw.value, ast.Constant)
                and kw.value.value is True for kw in node.keywords):
            self.run.record(Mutation(node, node.args[0], args[0], f"`{last}(..., inplace=True)`",
                                  True))
        if qualified in ("torch.autograd.backward",):
            self.run.record(BackwardCall(node))
        if qualified in api.TENSOR_ARG_FUNCTIONS and args:
            self.run.add_evidence(args[0])
        if qualified in api.TENSOR_ARGUMENTS_OF_FUNCTIONS:
            self.run.tensor_arguments(api.TENSOR_ARGUMENTS_OF_FUNCTIONS[qualified], args, kwargs)
        if qualified in api.TENSOR_SEQUENCE_FUNCTIONS and args and args[0].elems:
            for value in args[0].elems:
                self.run.add_evidence(value)
        carrying = [v for v in (*args, *kwargs.values()) if carries_gradient(v)] \
            if qualified.startswith("numpy.") else []
        if carrying:
            key = self.run.marker("left", node)
            self.run.record(LeftAutograd(node, f"`{qualified.replace('numpy', 'np', 1)}()`", key,
                                      param_names(taint_of(*carrying))))
            return Value(Kind.UNKNOWN, taint=frozenset({key}))
        result = self._torch_result(node, qualified, last, args, kwargs)
        if result.kind in (Kind.TENSOR, Kind.TENSORISH) and not result.view and \
                qualified.startswith("torch."):
            self.run.grad_uses(node, state, *args)
            self.run.record(Compute(node))
        return result

    @staticmethod
    def _torch_result(node: ast.Call, qualified: str, last: str, args: list[Value],
                      kwargs: dict[str | None, Value]) -> Value:
        if not qualified.startswith("torch."):
            return UNKNOWN
        if qualified in api.NON_TENSOR_FUNCTIONS:
            return NONTENSOR
        if qualified in api.OPAQUE_FUNCTIONS:
            return Value(Kind.UNKNOWN, src="rng")
        first = args[0] if args else UNKNOWN
        if qualified in api.VIEW_FUNCTIONS:
            return Value(Kind.TENSOR, first.roots, view=True, integral=first.integral,
                         detached=first.detached)
        if qualified in api.VIEW_SEQUENCE_FUNCTIONS:
            item = Value(Kind.TENSOR, first.roots, view=True, integral=first.integral)
            return Value(Kind.TENSORS, first.roots, None, True, item=item)
        flagged = any(kw.arg in api.TUPLE_FLAGS and not (isinstance(kw.value, ast.Constant)
                                                         and not kw.value.value)
                      for kw in node.keywords)
        if qualified in api.INDICES_PAIR_FUNCTIONS or (
                qualified in api.SEQUENCE_WITH_DIM_FUNCTIONS and _has_dim(args[1:], kwargs)):
            return values_and_indices()
        if qualified in api.SEQUENCE_FUNCTIONS or flagged:
            return Value(Kind.TENSORS, seq=True)
        if qualified in api.SEQUENCE_WITH_DIM_FUNCTIONS:
            if len(args) == 1 and not kwargs:
                return Value(Kind.TENSOR, scalar=True)
            return Value(Kind.TENSOR) if len(args) > 1 and args[1].kind is Kind.TENSOR else \
                Value(Kind.TENSORISH)
        if qualified == "torch.where" and len(args) == 1:
            return Value(Kind.TENSORS, seq=True)
        if api.is_tensor_class(qualified):  # `torch.cuda.IntTensor(...)` holds integers
            return Value(Kind.TENSOR, integral=last in _INTEGRAL_TENSOR_CLASSES)
        if api.is_unknown_namespace(qualified):
            return UNKNOWN
        namespace = api.namespace_of(qualified)
        if namespace in api.TENSOR_NAMESPACES and last[:1].islower():
            integral = f"torch.{last}" in api.INTEGRAL_FUNCTIONS or _integral_dtype_kw(node) or \
                (last.endswith("_like") and first.integral and "dtype" not in kwargs)
            return Value(Kind.TENSOR, integral=integral,
                         scalar=_scalar_function(node, qualified, last, args, kwargs),
                         detached=_fresh_leaf(node, qualified))
        return UNKNOWN


def _fresh_leaf(node: ast.Call, qualified: str) -> bool:
    """`torch.tensor(data)` copies its data into a new tensor with no autograd
    history (a tensor given to it is copied detached), unless it is asked
    for `requires_grad=True`."""
    return qualified == "torch.tensor" and not any(
        kw.arg == "requires_grad" and not (isinstance(kw.value, ast.Constant)
                                           and kw.value.value is False)
        for kw in node.keywords)


def _scalar_method(name: str, receiver: Value, args: list[Value],
                   kwargs: dict[str | None, Value]) -> bool:
    """Whether `receiver.name(*args)` is a 0-d tensor: a full reduction
    (`x.sum()`), a dot product, or an elementwise op on a scalar with numbers
    or scalars (`total.sqrt()`, `total.clamp(min=1)`)."""
    if name in api.SCALAR_PRODUCTS:
        return True
    if name in api.FULL_REDUCTIONS and not args and not kwargs.keys() & {"dim", "axis"}:
        return True
    return receiver.scalar and name not in api.GROWING_METHODS and \
        all(v.kind is Kind.NONTENSOR or v.scalar for v in (*args, *kwargs.values()))


def _scalar_function(node: ast.Call, qualified: str, last: str, args: list[Value],
                     kwargs: dict[str | None, Value]) -> bool:
    """Whether `torch.name(*args)` is a 0-d tensor: `torch.tensor(1.0)`, a
    full reduction (`torch.sum(x)`), or an elementwise function of scalars."""
    if qualified in api.SCALAR_FROM_NUMBER_FUNCTIONS:
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and \
            isinstance(node.args[0].value, (int, float, bool))
    if last in api.SCALAR_PRODUCTS:
        return True
    if last in api.FULL_REDUCTIONS and len(args) == 1 and \
            not kwargs.keys() & {"dim", "axis"}:
        return True
    return bool(args) and args[0].scalar and last not in api.GROWING_METHODS and \
        all(v.kind is Kind.NONTENSOR or v.scalar for v in (*args[1:], *kwargs.values()))


def _method_taint(name: str, receiver: Value, args: list[Value],
                  kwargs: dict[str | None, Value]) -> frozenset[str]:
    """What `receiver.name(*args)` is computed from: values, not sizes."""
    if name in api.METADATA_METHODS or name in api.FRESH_METHODS:
        return frozenset()
    if name in api.SHAPE_ARGUMENT_METHODS:
        return receiver.taint
    if name == "new_full":
        return _fill_taint(args, kwargs)
    return receiver.taint | taint_of(*args, *kwargs.values())


def _function_taint(qualified: str, args: list[Value],
                    kwargs: dict[str | None, Value]) -> frozenset[str]:
    if qualified in api.FRESH_FUNCTIONS:
        return frozenset()
    if qualified in api.FILL_FUNCTIONS:
        return _fill_taint(args, kwargs)
    if qualified in api.SHAPE_ARGUMENT_FUNCTIONS:
        return args[0].taint if args else frozenset()
    return taint_of(*args, *kwargs.values())


def _fill_taint(args: list[Value], kwargs: dict[str | None, Value]) -> frozenset[str]:
    """`full(size, fill_value)`, `full_like(x, fill_value)`, `t.new_full(size,
    fill_value)`: only the fill value is a value."""
    return taint_of(*args[1:], *(v for k, v in kwargs.items() if k == "fill_value"))


def values_and_indices() -> Value:
    """`x.sort()`, `x.max(dim)`, `torch.topk(...)`: a (values, indices) pair."""
    return tuple_of([Value(Kind.TENSOR), Value(Kind.TENSOR, integral=True)])


_LIST_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort",
                            "reverse"})

_FLOAT_CONVERSIONS = frozenset({"float", "double", "half", "bfloat16"})
_INTEGRAL_TENSOR_CLASSES = frozenset({"IntTensor", "LongTensor", "ShortTensor", "CharTensor",
                                      "ByteTensor", "BoolTensor"})
_FLOAT_RESULTS = frozenset({"mean", "float", "double", "half", "bfloat16", "softmax",
                            "log_softmax", "sigmoid", "exp", "log", "sqrt", "rsqrt", "div",
                            "true_divide", "norm", "var", "std", "tanh"})


def _list_after(lst: Value, method: str, args: list[Value]) -> Value:
    """A list after `lst.append(v)`, `lst.extend(vs)`, `lst.sort()`, ...

    append and extend add at the end, so the positions already known stay
    known; the other methods move elements around."""
    added = frozenset().union(*(a.roots for a in args)) if args else frozenset()
    roots = lst.roots | added
    taint = lst.taint | taint_of(*args)
    if method == "append" and len(args) == 1 and lst.elems is not None:
        return replace(tuple_of(lst.elems + (args[0],)), is_list=True)
    if method == "extend" and len(args) == 1 and lst.elems is not None and \
            args[0].elems is not None:
        return replace(tuple_of(lst.elems + args[0].elems), is_list=True)
    new_items = [a if method == "append" else element_of(a) for a in args]
    item = reduce(join, [element_of(lst), *new_items]) if lst.elems or lst.item else None
    if method in ("append", "extend"):
        pinned, rest = list_slots(lst)
        return replace(lst, elems=None, roots=roots, pinned=tuple(sorted(pinned.items())),
                       rest=rest | added, item=item, taint=taint)
    return replace(lst, elems=None, roots=roots, pinned=(), rest=roots, item=item, taint=taint)


_INTEGRAL_DTYPES = frozenset({"int8", "uint8", "int16", "short", "int32", "int", "int64",
                              "long", "bool", "uint16", "uint32", "uint64"})


def _dtype_is_integral(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
        node.value.id == "torch" and node.attr in _INTEGRAL_DTYPES


def _integral_dtype_kw(node: ast.Call) -> bool:
    return any(kw.arg == "dtype" and _dtype_is_integral(kw.value) for kw in node.keywords)


def _converts_to_integral(method: str, node: ast.Call) -> bool:
    """`x.to(torch.long)`, `x.to(dtype=torch.int64)`, `x.type(torch.bool)`."""
    if method not in ("to", "type"):
        return False
    return any(_dtype_is_integral(a) for a in node.args) or _integral_dtype_kw(node)


def _has_dim(args: list[Value], kwargs: dict[str | None, Value]) -> bool:
    return "dim" in kwargs or bool(args and args[0].kind is Kind.NONTENSOR)


def _self_copy(method: str, receiver: ast.expr, call: ast.Call) -> bool:
    """`t.copy_(t)`: copies a tensor onto itself, no value changes."""
    return (method == "copy_" and len(call.args) == 1 and isinstance(receiver, ast.Name)
            and isinstance(call.args[0], ast.Name) and call.args[0].id == receiver.id)
