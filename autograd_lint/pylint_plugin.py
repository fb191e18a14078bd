"""pylint's entry point, `load-plugins=autograd_lint.pylint_plugin`: the
plugin is `integrations/pylint_plugin.py`."""
from __future__ import annotations

from .integrations.pylint_plugin import register

__all__ = ["register"]
