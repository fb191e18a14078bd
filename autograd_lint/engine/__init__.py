"""The engine: a run from files to findings (`lint.py`), with which files
matter (`scope.py`, `relevance.py`, `sparse.py`), parsing and AGF000
(`parse.py`, `syntax.py`), analysis in forked workers (`parts.py`,
`workers.py`), what a run remembers (`incremental.py`, `cache.py`), noqa
comments (`noqa.py`) and the project around named files or a buffer
(`context.py`).

`lint_inputs`, `lint_source`, `SourceInput`, `LintResult` and
`FunctionTarget` are also reachable as `autograd_lint.engine.NAME`, loaded on
first use: importing one of the engine's rooms does not load the run."""
from __future__ import annotations

from typing import Any

_PUBLIC = {"lint_inputs": "lint", "lint_source": "lint", "check_module": "lint",
           "SourceInput": "run_io", "LintResult": "run_io", "FunctionTarget": "run_io"}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
