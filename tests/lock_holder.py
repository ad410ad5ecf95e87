"""Another process holding a dataset folder's writer lock (scoring.datasets.writing), for the
tests of what waits for it and what leaves it alone."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

#: A process that takes the folder's lock, says so by creating the file ``held``, then waits for
#: the file ``release`` (or is killed); with ``remove``, it removes the folder before letting go.
HOLDER = """
import pathlib, shutil, sys, time
from scoring.datasets import writing
folder, held, release = (pathlib.Path(a) for a in sys.argv[1:4])
with writing(folder):
    held.write_text("held")
    while not release.exists():
        time.sleep(0.02)
    if sys.argv[4:] == ["remove"]:
        shutil.rmtree(folder)
"""

#: A process that says whether it could take the folder's lock at once: prints True or False.
PROBE = """
import sys
from scoring.datasets import writing_if_free
with writing_if_free(sys.argv[1]) as free:
    print(free)
"""


class Holder:
    """Another process holding ``folder``'s lock until :meth:`release` (or :meth:`kill`)."""

    def __init__(self, folder: Path, signals: Path, *, remove: bool = False):
        signals.mkdir(parents=True, exist_ok=True)
        self.held, self.release_file = signals / "held", signals / "release"
        args = [str(folder), str(self.held), str(self.release_file), *(["remove"] if remove else [])]
        self.process = subprocess.Popen([sys.executable, "-c", HOLDER, *args])
        deadline = time.monotonic() + 60
        while not self.held.exists():
            assert self.process.poll() is None, "the holder exited before taking the lock"
            assert time.monotonic() < deadline, "the holder did not take the lock within a minute"
            time.sleep(0.02)

    def release(self) -> None:
        self.release_file.write_text("go")
        assert self.process.wait(timeout=60) == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)


def free_for_another_process(folder: Path) -> bool:
    out = subprocess.run([sys.executable, "-c", PROBE, str(folder)], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"
