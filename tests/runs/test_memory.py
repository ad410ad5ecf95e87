"""The memory settings scoring processes make for themselves (scoring.runs.memory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from scoring import allocator, blas_threads
from scoring.cli import main
from scoring.runs import arrow_buffers_reused
from scoring.runs.memory import ARROW_POOL_VARIABLE


def jemalloc_available() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


@pytest.fixture
def arrow_pool_restored():
    before = pa.default_memory_pool()
    yield
    pa.set_memory_pool(before)


@pytest.mark.skipif(not jemalloc_available(), reason="this pyarrow is built without jemalloc")
def test_arrow_allocates_with_jemalloc_once_chosen(arrow_pool_restored, monkeypatch):
    monkeypatch.delenv(ARROW_POOL_VARIABLE, raising=False)
    pa.set_memory_pool(pa.system_memory_pool())
    assert arrow_buffers_reused() == "jemalloc"
    assert pa.default_memory_pool().backend_name == "jemalloc"
    before = pa.jemalloc_memory_pool().bytes_allocated()
    values = pa.array(["x" * 1000] * 1000)  # a new array's buffers come from the chosen pool
    assert pa.jemalloc_memory_pool().bytes_allocated() - before >= 1_000_000
    del values


def test_a_users_own_choice_of_allocator_is_kept(arrow_pool_restored, monkeypatch):
    monkeypatch.setenv(ARROW_POOL_VARIABLE, "system")
    pa.set_memory_pool(pa.system_memory_pool())
    assert arrow_buffers_reused() is None
    assert pa.default_memory_pool().backend_name == "system"


def test_main_called_from_python_leaves_the_callers_allocator_alone(arrow_pool_restored, tmp_path, monkeypatch):
    monkeypatch.delenv(ARROW_POOL_VARIABLE, raising=False)
    pa.set_memory_pool(pa.system_memory_pool())
    table = tmp_path / "t.csv"
    table.write_text("score\n0.5\n", encoding="utf-8")
    main(["summary", str(table)])
    assert pa.default_memory_pool().backend_name == "system"


@pytest.mark.skipif(not jemalloc_available(), reason="this pyarrow is built without jemalloc")
def test_the_command_line_scores_with_jemalloc_and_the_app_keeps_the_default(tmp_path):
    """What ``rolloutscope`` (its own process) allocates Arrow buffers with: jemalloc for a
    command that scores, Arrow's default for the long-lived app."""
    probe = (
        "import sys, pyarrow as pa, scoring.cli as cli\n"
        "cli.COMMANDS['summary'] = lambda args: print(pa.default_memory_pool().backend_name) or 0\n"
        "cli.COMMANDS['app'] = lambda args: print(pa.default_memory_pool().backend_name) or 0\n"
        "sys.argv = ['rolloutscope', *sys.argv[1:]]\n"
        "raise SystemExit(cli.main())\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE}

    def pool_of(*argv: str) -> str:
        done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=environment,
                              cwd=tmp_path, timeout=120, check=True)  # fmt: skip
        return done.stdout.strip()

    arrows_own = "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    default = subprocess.run([sys.executable, "-c", arrows_own], capture_output=True, text=True, env=environment,
                             timeout=120, check=True).stdout.strip()  # fmt: skip
    assert pool_of("summary", "t.csv") == "jemalloc"
    assert pool_of("app") == default


def test_a_scoring_command_asks_arrow_for_jemalloc_before_pyarrow_loads(monkeypatch):
    """Only where nothing has chosen yet: not for the app, not once pyarrow is loaded (it read the
    variable already), not over the user's own choice."""
    monkeypatch.delenv(ARROW_POOL_VARIABLE, raising=False)
    assert not allocator.choose_for_command(["score", "a.jsonl"])  # pyarrow is loaded in this process
    assert ARROW_POOL_VARIABLE not in os.environ
    monkeypatch.setattr(allocator.sys, "modules", {})
    assert not allocator.choose_for_command(["app"])
    assert ARROW_POOL_VARIABLE not in os.environ
    monkeypatch.setenv(ARROW_POOL_VARIABLE, "system")
    assert not allocator.choose_for_command(["score", "a.jsonl"])
    assert os.environ[ARROW_POOL_VARIABLE] == "system"
    monkeypatch.delenv(ARROW_POOL_VARIABLE)
    assert allocator.choose_for_command(["score", "a.jsonl"]) == sys.platform.startswith("linux")


@pytest.mark.skipif(not jemalloc_available(), reason="this pyarrow is built without jemalloc")
def test_the_program_writes_parquet_pages_from_jemalloc(tmp_path):
    """The ``rolloutscope`` program (``scoring.__main__``): Parquet's writer, which takes its
    pages from Arrow's C++ allocator whatever pyarrow's default is, takes them from jemalloc."""
    probe = (
        "import sys\n"
        "import scoring.__main__ as program\n"
        "sys.argv = ['rolloutscope', 'inspect', 'a.jsonl']\n"
        "assert program.main() == 0\n"
        "import pyarrow as pa, pyarrow.parquet as pq\n"
        "table = pa.table({'x': pa.array(['x' * 200 + str(i) for i in range(20000)])})\n"
        "jemalloc = pa.jemalloc_memory_pool()\n"
        "before = jemalloc.total_bytes_allocated()\n"
        "with pq.ParquetWriter('t.parquet', table.schema, compression='snappy') as writer:\n"
        "    writer.write_table(table)\n"
        "print(jemalloc.total_bytes_allocated() - before)\n"
    )
    (tmp_path / "a.jsonl").write_text('{"response": "x", "gold": "x"}\n', encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment,
                          cwd=tmp_path, timeout=120, check=True)  # fmt: skip
    assert int(done.stdout.split()[-1]) >= 4_000_000  # the pages of ~4 MB of text, compressed and not


def _run_probe(probe: str, environment: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment,
                          cwd=cwd, timeout=120, check=True)  # fmt: skip
    return done.stdout.split()[-1]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_program_starts_no_blas_threads_for_a_command_and_keeps_them_for_the_app(tmp_path):
    """The ``rolloutscope`` program asks OpenBLAS (numpy's and scipy's) for one thread before
    numpy loads, for every command but ``app``: their threads spin at start for nothing."""
    environment = {k: v for k, v in os.environ.items() if k not in blas_threads.THREAD_COUNT_VARIABLES}
    count_threads = "import numpy, scipy.optimize; print(len(os.listdir('/proc/self/task')))\n"
    unasked = int(_run_probe("import os\n" + count_threads, environment, tmp_path))
    if unasked == 1:
        pytest.skip("OpenBLAS starts no thread of its own here (one core)")
    asked = "import os, scoring.blas_threads as b\nassert b.one_blas_thread_for_command(['score'])\n"
    assert int(_run_probe(asked + count_threads, environment, tmp_path)) == 1

    (tmp_path / "a.jsonl").write_text('{"response": "x", "gold": "x"}\n', encoding="utf-8")

    def variable_after(*argv: str, environment: dict[str, str] = environment) -> str:
        probe = (
            "import os, sys\n"
            "import scoring.__main__ as program\n"
            f"sys.argv = ['rolloutscope', *{list(argv)!r}]\n"
            "status = program.main() if argv[0] != 'app' else 0\n"
            f"print(os.environ.get({blas_threads.BLAS_THREADS_VARIABLE!r}, 'unset'))\n"
        )
        return _run_probe(probe.replace("argv[0]", repr(argv[0])), environment, tmp_path)

    assert variable_after("inspect", "a.jsonl") == blas_threads.COMMAND_BLAS_THREADS
    assert variable_after("inspect", "a.jsonl", environment={**environment, "OMP_NUM_THREADS": "2"}) == "unset"


def test_the_blas_thread_count_is_asked_only_where_nothing_has_chosen(monkeypatch):
    """Not for the app, not once numpy is loaded (OpenBLAS read its variables already), not over
    the user's own count in any variable OpenBLAS reads."""
    for variable in blas_threads.THREAD_COUNT_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    assert not blas_threads.one_blas_thread_for_command(["score", "a.jsonl"])  # numpy is loaded here
    assert blas_threads.BLAS_THREADS_VARIABLE not in os.environ
    monkeypatch.setattr(blas_threads.sys, "modules", {})
    assert not blas_threads.one_blas_thread_for_command(["app"])
    for variable in blas_threads.THREAD_COUNT_VARIABLES:
        monkeypatch.setenv(variable, "4")
        assert not blas_threads.one_blas_thread_for_command(["score", "a.jsonl"])
        assert os.environ[variable] == "4"
        monkeypatch.delenv(variable)
    assert blas_threads.one_blas_thread_for_command(["score", "a.jsonl"])
    assert os.environ[blas_threads.BLAS_THREADS_VARIABLE] == blas_threads.COMMAND_BLAS_THREADS
