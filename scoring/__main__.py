"""``python -m scoring`` and the ``rolloutscope`` program: the command line (see :mod:`scoring.cli`),
once this process has chosen Arrow's allocator and OpenBLAS's thread count, which must come before
pyarrow and numpy load (:mod:`scoring.allocator`, :mod:`scoring.blas_threads`)."""

import sys

from .allocator import choose_for_command
from .blas_threads import one_blas_thread_for_command


def main() -> int:
    choose_for_command(sys.argv[1:])
    one_blas_thread_for_command(sys.argv[1:])
    from .cli import main as command_line

    return command_line()


if __name__ == "__main__":  # not when a worker process re-imports this module
    sys.exit(main())
