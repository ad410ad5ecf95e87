"""bench/dashboard_data.build_copies: the ten-million-row case of bench_dashboard.py copies a scored
dataset under other run names; the copy must be a dataset the store opens, every copy's rows there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_store import SAMPLE_FILES

from scoring import datasets, engines

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def dashboard_data(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import dashboard_data

    yield dashboard_data
    sys.modules.pop("dashboard_data", None)


def test_copies_of_a_dataset_open_with_every_copy_under_its_own_run(tmp_path, dashboard_data):
    source = tmp_path / "scored"
    engines.score_to_dataset(SAMPLE_FILES[:2], source, keep_table=False)
    original = datasets.open_dataset(source).table
    seconds, reused = dashboard_data.build_copies(source, tmp_path / "copies", 3)
    assert not reused
    copied = datasets.open_dataset(tmp_path / "copies").table
    assert len(copied) == 3 * len(original)
    runs = set(copied["run"].astype(str))
    assert runs == {f"{run}-copy{k:02d}" for run in set(original["run"].astype(str)) for k in (1, 2, 3)}
    assert dashboard_data.build_copies(source, tmp_path / "copies", 3) == (0.0, True)  # the same source: reused
