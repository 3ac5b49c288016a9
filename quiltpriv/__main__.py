"""``python -m quiltpriv``: the command line, as the ``quiltpriv`` script runs it."""

import sys

from quiltpriv.cli import main

sys.exit(main())
