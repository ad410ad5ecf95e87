"""``python -m scoring`` and the ``rolloutscope`` program: the command line (see :mod:`scoring.cli`),
once this process has chosen Arrow's allocator, which must come before pyarrow loads
(:mod:`scoring.allocator`)."""

import sys

from .allocator import choose_for_command


def main() -> int:
    choose_for_command(sys.argv[1:])
    from .cli import main as command_line

    return command_line()


if __name__ == "__main__":  # not when a worker process re-imports this module
    sys.exit(main())
