"""autograd-lint: find bugs in custom torch.autograd.Function classes.

The static checker never imports torch or the code it checks.
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
