"""The `autograd-lint` command line (`main.py`), its arguments, the `check`
command (`check_command.py`, with `show.py` and `watch.py`) and the
`coverage` command. `autograd_lint.cli:run` is the console script."""
from __future__ import annotations

from .entry import main, run

__all__ = ["main", "run"]
