"""``python -m scoring`` runs the command line (see :mod:`scoring.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":  # not when a worker process re-imports this module
    sys.exit(main())
