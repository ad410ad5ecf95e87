"""Which allocator Arrow's C++ side takes memory from in a ``rolloutscope`` process.

Arrow picks its C++ default allocator once, from :data:`ARROW_POOL_VARIABLE`, when pyarrow
loads. Parquet's writer takes its page buffers from that allocator whatever pyarrow's own
default is set to afterwards (:func:`scoring.runs.arrow_buffers_reused`), and the default,
mimalloc, hands a written batch's pages back at once: the next batch's pages fault in and are
zeroed again. A command that scores asks for jemalloc before pyarrow loads (its worker
processes inherit the choice), which keeps them a while; ``docs/benchmarks.md`` has the figures.
Standard library only: this runs before pyarrow is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: The environment variable by which a user picks Arrow's allocator (Arrow reads it itself).
ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
#: What a command-line process other than the app asks for (Linux builds of pyarrow have it).
COMMAND_ALLOCATOR = "jemalloc"


def choose_for_command(argv: Sequence[str]) -> bool:
    """Ask Arrow for :data:`COMMAND_ALLOCATOR` in this process and the processes it starts,
    when ``argv`` (the command line after the program's name) is a command other than ``app``
    (a long-lived server gives memory back: it keeps the default), pyarrow is not loaded yet
    and the user picked no allocator. Whether it asked."""
    if (
        list(argv[:1]) == ["app"]
        or "pyarrow" in sys.modules
        or os.environ.get(ARROW_POOL_VARIABLE)
        or not sys.platform.startswith("linux")
    ):
        return False
    os.environ[ARROW_POOL_VARIABLE] = COMMAND_ALLOCATOR
    return True


__all__ = ["ARROW_POOL_VARIABLE", "COMMAND_ALLOCATOR", "choose_for_command"]
