"""`python -m autograd_lint`."""
import sys

from .cli import main

sys.exit(main())
