"""flake8's entry point, `autograd_lint.flake8_plugin:Flake8Checker`: the
plugin is `integrations/flake8_plugin.py`."""
from __future__ import annotations

from .integrations.flake8_plugin import Flake8Checker

__all__ = ["Flake8Checker"]
