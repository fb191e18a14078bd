"""pytest's entry point (the `pytest11` plugin `autograd_lint.pytest_plugin`):
its hooks are those of `integrations/pytest_plugin.py`."""
from __future__ import annotations

from .integrations.pytest_plugin import (
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_unconfigure,
)

__all__ = ["pytest_addoption", "pytest_collection_modifyitems", "pytest_configure",
           "pytest_unconfigure"]
