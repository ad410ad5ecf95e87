"""scoring.engines.ray: ``--engine ray`` writes the local engine's dataset, through bad rows and a
killed worker, and a later local update reuses every part it wrote.

One local Ray (2 CPUs, a small object store) serves the whole session. Its workers carry the
faults of ``ray_faults`` (a setup hook of the test's Ray, not of the engine): a poison row whose
scoring raises, and a row that kills its worker once.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import ray_faults
from rollout_fixtures import diverse_rows, stringified, write_jsonl

from scoring import datasets, engines
from scoring.cli import EXIT_USAGE, main
from scoring.datasets import table as dataset_table
from scoring.runs import chunks

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="the ray extra is not installed")


@pytest.fixture(scope="session")
def local_ray():
    """A local Ray of 2 CPUs and a 100 MB object store, its workers carrying the planted faults."""
    import ray

    from scoring.engines import ray as ray_engine

    address = os.environ.pop("RAY_ADDRESS", None)
    try:
        ray_engine.init_ray(
            2,
            object_store_memory=100 * 1024 * 1024,
            include_dashboard=False,
            runtime_env={
                "worker_process_setup_hook": "ray_faults.install",
                "env_vars": {"PYTHONPATH": str(Path(ray_faults.__file__).resolve().parent)},
            },
        )
    finally:
        if address is not None:
            os.environ["RAY_ADDRESS"] = address
    yield ray
    ray.shutdown()


def mixed_rows(n: int, salt: int) -> list[dict]:
    """``n`` rows cycling through every annotation family and mode, with distinct ids and steps."""
    base = diverse_rows()
    rows = []
    for i in range(n):
        item = copy.deepcopy(base[i % len(base)])
        item["id"] = f"s{salt}-r{i}"
        item["step"] = i // 100
        rows.append(item)
    return rows


def write_inputs(folder: Path) -> list[Path]:
    """About 3,000 rows in every container (JSONL, gzipped JSONL, JSON array, Parquet, CSV),
    with broken lines, a file of only broken lines and an empty file."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [
        write_jsonl(folder / "step_0.jsonl", mixed_rows(900, 0), extra_lines=["{not json", "[1, 2]"]),
        write_jsonl(folder / "step_1.jsonl.gz", mixed_rows(700, 1), gz=True),
    ]
    array = folder / "step_2.json"
    array.write_text(json.dumps(mixed_rows(400, 2)), encoding="utf-8")
    table = folder / "step_3.parquet"
    pd.DataFrame(stringified(mixed_rows(600, 3))).to_parquet(table)
    csv = folder / "step_4.csv"
    pd.DataFrame(stringified(mixed_rows(400, 4))).drop(columns=["point_half_life_px"]).to_csv(csv, index=False)
    broken = folder / "broken.jsonl"
    broken.write_text("{cut off\nnot json at all\n", encoding="utf-8")
    empty = folder / "empty.jsonl"
    empty.write_bytes(b"")
    return [*paths, array, table, csv, broken, empty]


def assert_same_dataset(ours: Path, theirs: Path, unlike=("written",)) -> None:
    """Both folders open to equal tables and errors, and their manifests say the same (but
    the keys ``unlike``: when it was written...)."""
    a, b = datasets.open_dataset(ours), datasets.open_dataset(theirs)
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.errors, b.errors)
    assert {k: v for k, v in a.manifest.items() if k not in unlike} == {
        k: v for k, v in b.manifest.items() if k not in unlike
    }


@pytest.fixture(scope="module")
def scored(local_ray, tmp_path_factory):
    """The mixed inputs, scored into a dataset by each engine."""
    folder = tmp_path_factory.mktemp("ray_engine")
    inputs = write_inputs(folder / "run")
    local = engines.score_to_dataset(inputs, folder / "local", workers=1)
    on_ray = engines.score_to_dataset(inputs, folder / "ray", engine="ray")
    return inputs, folder, local, on_ray


@needs_ray
def test_both_engines_write_the_same_dataset(scored):
    inputs, folder, local, on_ray = scored
    assert_same_dataset(folder / "ray", folder / "local")
    opened = datasets.open_dataset(folder / "ray")
    assert len(opened.table) == 3000 and local.rows == on_ray.rows == 3000
    assert len(list((folder / "ray" / datasets.TABLE).iterdir())) == 1  # the opened table kept, as locally
    decoded = dataset_table.read_table(folder / "ray", opened.manifest, opened.on_disk, True)
    pd.testing.assert_frame_equal(opened.table, decoded)
    # every file is there with its own line numbers, and the bad lines are row errors
    counts = opened.table["source_file"].value_counts()
    assert {name: int(counts[name]) for name in map(str, inputs[:5])} == dict(
        zip(map(str, inputs[:5]), (900, 700, 400, 600, 400), strict=True)
    )
    errors = opened.errors
    step_0 = errors[errors["file"] == str(inputs[0])]
    assert step_0["line"].tolist() == [901, 902]
    file_level = errors[errors["line"].isna()]
    assert set(file_level["file"]) == {str(inputs[5]), str(inputs[6])}
    assert on_ray.describe().startswith("7 new, 0 changed, 0 removed, 0 unchanged file(s); 3,000 rows scored")


@needs_ray
def test_a_local_update_of_a_ray_written_dataset_reuses_every_part(scored, tmp_path):
    inputs, folder, _, _ = scored
    copy_of = tmp_path / "copy"
    shutil.copytree(folder / "ray", copy_of)
    parts = sorted(p.name for p in (copy_of / "parts").iterdir())
    update = engines.score_to_dataset(inputs, copy_of, workers=1)
    assert update.full_rescore is None
    assert update.unchanged == [str(p) for p in inputs] and update.rows_scored == 0
    assert sorted(p.name for p in (copy_of / "parts").iterdir()) == parts
    # the same entries as the local engine's dataset; nothing new, so the same generation
    assert_same_dataset(copy_of, folder / "local", unlike=("written", "generation"))
    assert datasets.read_manifest(copy_of)["generation"] == datasets.read_manifest(folder / "ray")["generation"]


def poisoned(folder: Path) -> list[Path]:
    """A file whose rows include broken JSON, a JSON value that is no record, and a row the scorer raises on."""
    folder.mkdir(parents=True, exist_ok=True)
    good = mixed_rows(300, 9)
    good[17] = dict(good[17], response=ray_faults.POISON)
    path = write_jsonl(
        folder / "bad_rows.jsonl", good, extra_lines=["{\"response\": \"cut", "", "42", json.dumps(good[3])]
    )
    return [path, write_jsonl(folder / "fine.jsonl", mixed_rows(200, 8))]


@needs_ray
def test_bad_rows_and_a_poison_row_are_row_errors_as_in_the_local_engine(local_ray, tmp_path, monkeypatch):
    inputs = poisoned(tmp_path / "run")
    update = engines.score_to_dataset(inputs, tmp_path / "ray", engine="ray")
    monkeypatch.setattr(chunks, "evaluate_resolved", ray_faults.faulty(chunks.evaluate_resolved))
    engines.score_to_dataset(inputs, tmp_path / "local", workers=1)
    assert_same_dataset(tmp_path / "ray", tmp_path / "local")
    errors = datasets.open_errors(tmp_path / "ray")
    poison = errors[errors["line"] == 18]
    assert poison["reason"].tolist() == ["could not be scored (RuntimeError: scorer bug)"]
    assert poison["file"].tolist() == [str(inputs[0])]
    assert {301, 303} <= set(errors.loc[errors["file"] == str(inputs[0]), "line"].dropna())
    assert update.rows == 300 - 1 + 1 + 200  # the poison row out, the repeated good row in


@needs_ray
def test_a_worker_killed_mid_job_still_gives_the_whole_dataset(scored, tmp_path):
    inputs, folder, _, _ = scored
    marker = tmp_path / "kill-once"
    marker.write_text("the first worker to score the row below removes this and dies", encoding="utf-8")
    rows = mixed_rows(500, 5)
    rows[250] = dict(rows[250], response=ray_faults.KILL_PREFIX + str(marker))
    killer = write_jsonl(tmp_path / "killer.jsonl", rows)
    with_killer = [*inputs, killer]
    engines.score_to_dataset(with_killer, tmp_path / "ray", engine="ray")
    assert not marker.exists()  # a worker took the marker, and with it the SIGKILL
    engines.score_to_dataset(with_killer, tmp_path / "local", workers=1)
    assert_same_dataset(tmp_path / "ray", tmp_path / "local")
    assert len(datasets.open_dataset(tmp_path / "ray").table) == 3500


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@needs_ray
def test_cli_engine_ray_end_to_end(scored, tmp_path):
    inputs, folder, _, _ = scored
    good = inputs[:5]
    out = f"{tmp_path / 'ds'}{os.sep}"
    code, _, err = run_cli("score", *good, "--engine", "ray", "-o", out, "--no-progress")
    assert code == 0, err
    update = datasets.DatasetUpdate(tmp_path / "ds", new=[str(p) for p in good], rows_scored=3000, rows=3000)
    assert update.describe() in err
    local = tmp_path / "local"
    engines.score_to_dataset(good, local, workers=1)
    assert_same_dataset(tmp_path / "ds", local)
    # a second run finds nothing to score, whichever engine runs it
    code, _, err = run_cli("score", *good, "--engine", "ray", "-o", out, "--no-progress")
    assert code == 0 and "0 new, 0 changed, 0 removed, 5 unchanged" in err


def test_cli_engine_ray_needs_an_output_folder(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", mixed_rows(3, 0))
    code, _, err = run_cli("score", path, "--engine", "ray", "-o", tmp_path / "a.parquet")
    assert code == EXIT_USAGE and "-o DIR/" in err


def test_engine_ray_without_ray_names_the_extra_to_install(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError, as when not installed
    path = write_jsonl(tmp_path / "a.jsonl", mixed_rows(3, 0))
    code, out, err = run_cli("score", path, "--engine", "ray", "-o", f"{tmp_path / 'ds'}{os.sep}")
    assert code == EXIT_USAGE and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "pip install 'rolloutscope[ray]'" in lines[0]
    from scoring.engines import RayUnavailable

    with pytest.raises(RayUnavailable, match=r"rolloutscope\[ray\]"):
        engines.score_to_dataset([path], tmp_path / "api", engine="ray")


def test_an_unknown_engine_is_refused(tmp_path):
    with pytest.raises(ValueError, match="engine must be one of local, ray"):
        engines.score_to_dataset([tmp_path / "a.jsonl"], tmp_path / "ds", engine="spark")


@needs_ray
def test_a_folder_uri_is_read_through_pyarrow_and_recorded_as_given(scored, tmp_path):
    """``file://`` stands in for ``s3://``: the folder URI is its rollout files (in name order),
    each read by Ray Data through pyarrow's filesystem and named by its URI; the values are the
    local engine's on the same files."""
    _, folder, _, _ = scored
    run = folder / "run"
    code, _, err = run_cli("score", f"{run.as_uri()}/", "--engine", "ray", "-o", f"{tmp_path / 'ds'}{os.sep}")
    assert code == 1, err  # broken.jsonl and empty.jsonl have file errors
    local = sorted(p for p in run.iterdir())
    engines.score_to_dataset(local, tmp_path / "local", workers=1)
    ours, theirs = datasets.open_dataset(tmp_path / "ds"), datasets.open_dataset(tmp_path / "local")
    assert [e["path"] for e in ours.manifest["files"]] == [p.as_uri() for p in local]
    as_path = {p.as_uri(): str(p) for p in local}
    for entry, expected in zip(ours.manifest["files"], theirs.manifest["files"], strict=True):
        assert {**entry, "path": as_path[entry["path"]]} == expected
    assert ours.table["source_file"].astype(str).map(as_path).tolist() == theirs.table["source_file"].astype(str).tolist()
    pd.testing.assert_frame_equal(ours.table.drop(columns="source_file"), theirs.table.drop(columns="source_file"))
    pd.testing.assert_frame_equal(
        ours.errors.assign(file=ours.errors["file"].map(as_path).astype("str")), theirs.errors
    )


def test_local_inputs_outside_the_data_roots_are_refused_before_ray_starts(tmp_path, monkeypatch):
    from scoring.rollouts.access import AccessDenied

    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    inside = write_jsonl(allowed / "a.jsonl", mixed_rows(3, 0))
    outside = write_jsonl(other / "b.jsonl", mixed_rows(3, 1))
    monkeypatch.setenv("ROLLOUTSCOPE_DATA_ROOTS", str(allowed))
    with pytest.raises(AccessDenied, match="b.jsonl"):
        engines.score_to_dataset([inside, outside], tmp_path / "ds", engine="ray")
    assert not (tmp_path / "ds").exists()
