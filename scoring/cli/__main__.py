"""``python -m scoring.cli``: the command line, as ``rolloutscope``."""

import sys

from . import main

sys.exit(main())
