"""A live Streamlit server for tests: started on a free port, ready once healthy, stopped afterwards.

Shared by the browser tests (``streamlit run app.py`` in the checkout) and the wheel tests
(``rolloutscope app`` from an installed wheel).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_health(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"streamlit did not become healthy within {timeout:.0f}s")


@contextlib.contextmanager
def serve(
    command: Sequence[str], *, port: int, cwd: str | Path, env: Mapping[str, str], log_path: Path,
    timeout: float = 60.0,
) -> Iterator[str]:
    """Run ``command`` (a server on ``port``) with its output in ``log_path``; yields the base URL
    once healthy, stops the server on exit. A log with a traceback is printed (pytest shows it when
    the test fails)."""
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_health(url, proc, timeout)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
            server_log = log_path.read_text(errors="replace")
            if "Traceback" in server_log:
                print(server_log[-4000:])
