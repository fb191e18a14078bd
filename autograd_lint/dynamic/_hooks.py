"""Run a function on a module right after it is imported (if it ever is), so
that patching a library never means importing it first."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

Patch = Callable[[ModuleType], None]


def after_import(patches: dict[str, Patch]) -> None:
    """Apply each patch to its module: now if it is loaded, else once it is."""
    waiting = {}
    for name, patch in patches.items():
        module = sys.modules.get(name)
        if module is not None:
            try:
                patch(module)
            except Exception:  # as on import: a patch never breaks its host
                pass
        else:
            waiting[name] = patch
    if waiting:
        sys.meta_path.insert(0, _PatchOnImport(waiting))


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def __init__(self, patches: dict[str, Patch]) -> None:
        self.patches = patches

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        patch = self.patches.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, patch: Patch) -> None:
        self.loader = loader
        self.patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        try:
            self.patch(module)
        except Exception:  # a patch must never break the import it rides on
            pass
