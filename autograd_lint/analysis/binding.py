"""Binding: what assigning a value to a target does.

A name takes the value (a new tensor becomes a root of its own, so that views
of it can be recognised); tuple, list and starred targets unpack it;
`ctx.attr = v` is a ctx store; `x.data = ...` a `.data` access; `t[i] = v`
changes the tensor t in place, or replaces a list slot; ctx stored where it
outlives the call (a global, a container not local to the method) escapes.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from .events import CtxEscape, CtxStore, DataAccess, Mutation
from .recorder import Room
from .syntax import constant_index
from .values import Kind, Value, element_of, list_slots, tuple_of

if TYPE_CHECKING:
    from .walker import State


class Binder(Room):
    """Assignments to names, tuples, attributes and subscripts."""

    def bind(self, target: ast.expr, value: Value, state: State, stmt: ast.AST,
             value_node: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self._bind_name(target.id, value, state, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._bind_many(target.elts, value, state, stmt, value_node)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, Value(value.kind if value.seq else Kind.UNKNOWN,
                                          value.roots, seq=True, taint=value.taint,
                                          item=value.item, is_list=True),
                      state, stmt, None)
        elif isinstance(target, ast.Attribute):
            base = self.evaluator.expr(target.value, state)
            if target.attr == "data" and base.src != "ctx":
                self.run.record(DataAccess(target, base))
            if base.src == "ctx":
                self.run.record(CtxStore(stmt, target.attr, value, value_node))
            elif value.src == "ctx" and self.declared_nonlocal(target.value, state):
                self.run.record(CtxEscape(stmt, f"stored on `{ast.unparse(target.value)}`"))
        elif isinstance(target, ast.Subscript):
            base = self.evaluator.expr(target.value, state)
            self.evaluator.expr(target.slice, state)
            if value.src == "ctx" and self.declared_nonlocal(target.value, state):
                self.run.record(CtxEscape(stmt, f"stored in `{ast.unparse(target.value)}`"))
            if base.seq:  # a list/dict slot is replaced: no tensor changes
                self._store_item(target, base, value, state)
            else:
                self.run.record(Mutation(stmt, target.value, base, "item assignment `[...] = ...`",
                                      False))

    def _bind_name(self, name: str, value: Value, state: State, stmt: ast.AST) -> None:
        if name in self.run.globals_declared and value.src == "ctx":
            self.run.record(CtxEscape(stmt, f"assigned to the global `{name}`"))
        if self.run.grad_off:
            value = replace(value, taint=value.taint | self.run.off_taint())
        if value.kind in (Kind.TENSOR, Kind.TENSORISH) and not value.roots and not value.seq:
            # A new tensor: its own root, so that views of it can be recognised.
            value = replace(value, roots=frozenset({f"local:{name}"}), view=False)
        state.vars[name] = value

    def declared_nonlocal(self, node: ast.expr, state: State) -> bool:
        """A container expression that lives beyond this call (a global, a closure)."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in state.vars

    @staticmethod
    def _store_item(target: ast.Subscript, container: Value, item: Value, state: State) -> None:
        """`lst[i] = v`: the list now holds v at i (or may hold it anywhere)."""
        if not isinstance(target.value, ast.Name):
            return
        index = constant_index(target.slice)
        elems = container.elems
        roots = container.roots | item.roots
        if elems is not None and index is not None and -len(elems) <= index < len(elems):
            elems = elems[:index % len(elems)] + (item,) + elems[index % len(elems) + 1:]
            updated = replace(container, elems=elems,
                              roots=frozenset().union(*(e.roots for e in elems)))
        elif container.is_list and index is not None and index >= 0:
            pinned, rest = list_slots(container)
            pinned[index] = item.roots
            updated = replace(container, elems=None, roots=roots, rest=rest, item=None,
                              pinned=tuple(sorted(pinned.items())))
        else:
            pinned, rest = list_slots(container) if container.is_list else ({}, container.roots)
            updated = replace(container, elems=None, roots=roots, rest=rest | item.roots,
                              item=None,
                              pinned=tuple((i, r | item.roots) for i, r in sorted(pinned.items())))
        state.vars[target.value.id] = replace(updated, taint=updated.taint | item.taint)

    def _bind_many(self, targets: list[ast.expr], value: Value, state: State, stmt: ast.AST,
                   value_node: ast.expr | None) -> None:
        value_elts = value_node.elts if isinstance(value_node, (ast.Tuple, ast.List)) else None
        starred = [i for i, t in enumerate(targets) if isinstance(t, ast.Starred)]
        elems = value.elems
        if elems is not None and not starred and len(elems) == len(targets):
            for i, (target, elem) in enumerate(zip(targets, elems, strict=False)):
                node = value_elts[i] if value_elts and len(value_elts) == len(targets) else None
                self.bind(target, elem, state, stmt, node)
            return
        if elems is not None and len(starred) == 1 and len(elems) >= len(targets) - 1:
            cut = starred[0]
            tail = len(targets) - cut - 1
            for target, elem in zip(targets[:cut], elems[:cut], strict=False):
                self.bind(target, elem, state, stmt, None)
            middle = elems[cut: len(elems) - tail]
            self.bind(targets[cut].value, tuple_of(middle), state, stmt, None)  # type: ignore[attr-defined]
            for target, elem in zip(targets[cut + 1:], elems[len(elems) - tail:], strict=False):
                self.bind(target, elem, state, stmt, None)
            return
        element = element_of(value)
        if len(targets) > 1 and len(element.roots) > 1:
            # `p, g = chunk` of a layout not known: each name is one of the
            # roots, none knows which; an alias needs a path (RULES.md).
            element = replace(element, roots=frozenset(), view=False)
        for target in targets:
            self.bind(target, element, state, stmt, None)
