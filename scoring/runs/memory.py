"""How the scoring processes take and give back memory: settings a process makes once, for itself.

A scoring allocates and frees the same large blocks over and over (a chunk's lines, its result's
buffers, a batch's Parquet pages). Allocators that hand freed pages back to the system at once make
every next block fault in and zero fresh pages, which costs as much as some of the work itself.
A worker process (its C heap) and a command-line scoring process (Arrow's buffers) keep what they
freed for the next block instead. A long-lived process that scores now and then -- the app, a
caller's notebook -- keeps the defaults: its memory is given back when it is done.
"""

from __future__ import annotations

import ctypes
import os
import sys

from ..allocator import ARROW_POOL_VARIABLE

#: A worker's C heap serves blocks up to this size itself (a chunk's lines and its pickled
#: result are 15-25 MB each) and keeps up to :data:`WORKER_HEAP_KEPT_BYTES` of freed memory,
#: instead of mapping fresh pages for every chunk and handing them back when it ends: the page
#: faults and zeroing of those fresh pages cost about as much as pickling the result itself.
WORKER_HEAP_BLOCK_BYTES = 32 << 20
WORKER_HEAP_KEPT_BYTES = 128 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def keep_freed_memory() -> bool:
    """Tune glibc's allocator of this process as :data:`WORKER_HEAP_BLOCK_BYTES` says (a worker's
    only: a long-lived process should give memory back). False where it is not glibc's."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # another C library
        return False
    return bool(
        mallopt(_M_MMAP_THRESHOLD, WORKER_HEAP_BLOCK_BYTES) and mallopt(_M_TRIM_THRESHOLD, WORKER_HEAP_KEPT_BYTES)
    )


def arrow_buffers_reused() -> str | None:
    """Make jemalloc this process's Arrow allocator, where pyarrow has it and the user did not pick
    one (:data:`ARROW_POOL_VARIABLE`): the allocator's name, None when left as it was.

    Arrow's default, mimalloc, hands a freed batch's pages back at once, and the next batch's
    Parquet encoding and compression fault them in and zero them again; jemalloc keeps them a
    while. Writing a big file's parts, the scoring process spends about 7% less CPU (most of it
    in the kernel) and holds about 35 MB less (``docs/benchmarks.md``). This sets pyarrow's
    default; Parquet's page buffers come from Arrow's C++ default, which only the environment
    picks, before pyarrow loads: the ``rolloutscope`` program does that (:mod:`scoring.allocator`)."""
    if os.environ.get(ARROW_POOL_VARIABLE):
        return None
    import pyarrow as pa

    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without it (Windows)
        return None
    pa.set_memory_pool(pool)
    return pool.backend_name


__all__ = ["ARROW_POOL_VARIABLE", "WORKER_HEAP_BLOCK_BYTES", "WORKER_HEAP_KEPT_BYTES", "arrow_buffers_reused",
           "keep_freed_memory"]  # fmt: skip
