"""Run flake8, optionally hiding the autograd-lint plugin from discovery."""
from __future__ import annotations

import importlib.metadata as metadata
import sys

if "--without-autograd-lint" in sys.argv:
    sys.argv.remove("--without-autograd-lint")
    _distributions = metadata.distributions

    def _without_us(**kwargs):  # type: ignore[no-untyped-def]
        return [d for d in _distributions(**kwargs) if d.metadata["Name"] != "autograd-lint"]

    metadata.distributions = _without_us  # type: ignore[assignment]

from flake8.main.cli import main

sys.exit(main(sys.argv[1:]))
