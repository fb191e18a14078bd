"""`python -m autograd_lint`."""
import os
import sys

# `python -m` puts the working directory first on sys.path, so a project's
# own `ast.py` or `tokenize.py` would be imported in place of the standard
# library's: that would run the checked code. Drop it (as `python -P` does).
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from .cli.entry import run

run()
