"""Parameters that bundle other values: a dataclass or NamedTuple of tensors
and settings, passed to forward as one argument (`params: AttnParams`).

Synthesis builds one from its fields, the way forward's own parameters are
built: a field's default where it has one, a tensor for a field annotated
as a tensor, a number or a flag for the rest (one level of nesting). A
parameter annotated with some other class (a module, a callable, a state
object) cannot be made up: `Unsynthesizable` names it and its type.
"""
from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

import torch

from .errors import Unsynthesizable

MAX_DEPTH = 2


def annotated_class(function: Any, name: str) -> type | None:
    """The class forward's parameter `name` is annotated with, resolved
    (string annotations too); None for no annotation or not a class."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # an annotation that does not resolve: as if there were none
        raw = inspect.signature(function).parameters.get(name)
        hints = {name: raw.annotation} if raw is not None else {}
    hint = hints.get(name)
    hint = _unoptional(hint)
    return hint if isinstance(hint, type) else None


def _unoptional(hint: Any) -> Any:
    """`X | None` and `Optional[X]`: X; `Choice | Sentinel` with one Enum
    among its members: the Enum (its members are the values to try)."""
    arguments = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint
    if len(arguments) == 1:
        return arguments[0]
    enums = [a for a in arguments if isinstance(a, type) and issubclass(a, enum.Enum)]
    return enums[0] if len(enums) == 1 else hint


def is_bundle(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))


def refuse(name: str, cls: type) -> None:
    """Unsynthesizable for a parameter annotated with a class that is neither
    a tensor, a number, a string nor a bundle."""
    module = cls.__module__ or ""
    if is_bundle(cls) or issubclass(cls, (torch.Tensor, enum.Enum)) or \
            module in ("builtins", "typing", "collections.abc") or \
            module.split(".")[0] == "torch":
        return
    raise Unsynthesizable(f"`{name}` is a `{cls.__qualname__}`, which cannot be made up")


def build(cls: type, tensor: Callable[[str], torch.Tensor],
          strings: dict[str, list[str]] | None = None, depth: int = 0) -> Any:
    """An instance of a bundle class, each field made by its annotation:
    `tensor(field_name)` makes a tensor field; a string field takes the
    first literal forward compares it with (`strings`, from
    `compared_strings`); an optional field is None, a container empty."""
    strings = strings or {}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        hints = {}
    values: dict[str, Any] = {}
    for name, default in _fields(cls):
        raw = hints.get(name)
        hint = _unoptional(raw)
        literals = strings.get(name) or strings.get(f".{name}")
        if default is not inspect.Parameter.empty:
            values[name] = default
        elif hint is not raw:
            values[name] = None  # `X | None`: None is the call that needs nothing made up
        elif isinstance(hint, type) and issubclass(hint, torch.Tensor) or hint is None:
            values[name] = tensor(name)
        elif hint is str and literals:
            values[name] = literals[0]
        elif isinstance(hint, type) and issubclass(hint, (tuple, list, dict)) and \
                not hasattr(hint, "_fields"):
            values[name] = hint()  # `batch_shape: torch.Size`: empty
        elif hint is bool:
            values[name] = False
        elif hint is int:
            values[name] = 1
        elif hint is float:
            values[name] = 1e-5 if "eps" in name.lower() else 0.5
        elif isinstance(hint, type) and is_bundle(hint) and depth < MAX_DEPTH:
            values[name] = build(hint, tensor, strings, depth + 1)
        else:
            raise Unsynthesizable(f"field `{name}` of `{cls.__qualname__}` cannot be made up")
    return cls(**values)


def _fields(cls: type) -> list[tuple[str, Any]]:
    """(name, default or empty) for each field the constructor takes."""
    if dataclasses.is_dataclass(cls):
        found = []
        for item in dataclasses.fields(cls):
            if not item.init:
                continue
            if item.default is not dataclasses.MISSING:
                default = item.default
            elif item.default_factory is not dataclasses.MISSING:
                default = item.default_factory()
            else:
                default = inspect.Parameter.empty
            found.append((item.name, default))
        return found
    defaults = getattr(cls, "_field_defaults", {})
    return [(name, defaults.get(name, inspect.Parameter.empty)) for name in cls._fields]
