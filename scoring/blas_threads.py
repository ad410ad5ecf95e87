"""How many threads OpenBLAS starts in a ``rolloutscope`` process.

numpy's and scipy's wheels each bundle OpenBLAS, which starts a thread per core when it loads
and lets each spin a while before it sleeps: about 0.1 s of CPU per thread, in the command's
process and in its worker pool's server, for nothing -- scoring does no linear algebra that a
second thread would speed up. A command other than ``app`` asks for one thread before numpy
loads (its worker processes inherit the choice). ``docs/benchmarks.md`` has the figures.
Standard library only: this runs before numpy is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: The variable OpenBLAS reads its thread count from, set when no variable below is.
BLAS_THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"
#: Every variable OpenBLAS takes a thread count from (in its order): a user's own choice wins.
THREAD_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
COMMAND_BLAS_THREADS = "1"


def one_blas_thread_for_command(argv: Sequence[str]) -> bool:
    """Ask OpenBLAS for :data:`COMMAND_BLAS_THREADS` thread in this process and the processes it
    starts, when ``argv`` (the command line after the program's name) is a command other than
    ``app``, numpy is not loaded yet and the user set no thread count. Whether it asked."""
    if (
        list(argv[:1]) == ["app"]
        or "numpy" in sys.modules
        or any(os.environ.get(variable) for variable in THREAD_COUNT_VARIABLES)
    ):
        return False
    os.environ[BLAS_THREADS_VARIABLE] = COMMAND_BLAS_THREADS
    return True


__all__ = ["BLAS_THREADS_VARIABLE", "COMMAND_BLAS_THREADS", "THREAD_COUNT_VARIABLES", "one_blas_thread_for_command"]
