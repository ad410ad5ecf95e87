"""Faults planted in Ray's worker processes by the Ray engine tests (a worker setup hook: test
code only; the engine has no hooks).

A row whose response is :data:`POISON` makes the scorer raise. A row whose response is
``KILL_PREFIX + marker`` kills its worker process outright (SIGKILL, as the OOM killer would)
if it is the first to remove the marker file the test created; on the retry the marker is gone
and the row scores as any other text.
"""

from __future__ import annotations

import os
import signal

from scoring.runs import chunks

POISON = "scorer bug: this row raises"
KILL_PREFIX = "kill this worker once, marker: "


def faulty(evaluate):
    """``evaluate`` (scoring.runs.evaluate_resolved) with the planted faults."""

    def evaluate_with_faults(response, *args, **kwargs):
        if response == POISON:
            raise RuntimeError("scorer bug")
        if isinstance(response, str) and response.startswith(KILL_PREFIX):
            try:
                os.unlink(response[len(KILL_PREFIX) :])
                claimed = True
            except FileNotFoundError:  # claimed before: this is the retry, which scores the row
                claimed = False
            if claimed:
                os.kill(os.getpid(), signal.SIGKILL)
        return evaluate(response, *args, **kwargs)

    return evaluate_with_faults


def install() -> None:
    """Ray's ``worker_process_setup_hook``: plant the faults in this worker's scorer."""

    chunks.evaluate_resolved = faulty(chunks.evaluate_resolved)
