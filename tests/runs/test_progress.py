"""Progress of a scoring: rows done, of how many, and the rate -- for one big file as for many."""

from __future__ import annotations

import io
import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rollout_fixtures import diverse_rows, write_jsonl

from scoring import engines
from scoring.cli import ProgressBar
from scoring.rollouts import Source
from scoring.runs import Progress


def test_rows_expected_follow_the_rows_per_byte_read_and_end_at_the_rows_done():
    start = Progress(0, 0, 0, 1000, "a", 0, 1, rows_total=40)
    assert start.rows_expected == 40  # nothing read: the estimate
    middle = Progress(30, 1, 250, 1000, "a", 0, 1, rows_total=40, seconds=2.0)
    assert middle.rows_expected == 120 and middle.rate == 15.0  # 30 rows per 250 bytes
    end = Progress(118, 2, 1000, 1000, "", 1, 1, rows_total=40, seconds=4.0)
    assert end.rows_expected == 118 and end.fraction == 1.0


def test_a_report_reads_rows_of_how_many_the_rate_and_the_errors():
    assert Progress(30, 1, 250, 1000, "a", 0, 1, 40, 2.0).describe() == "30 of ~120 rows, 15 rows/s, 1 error"
    assert (
        Progress(840_000, 12, 420, 1000, "a", 0, 1, 1_900_000, 20.5).describe()
        == "840,000 of ~2,000,000 rows, 40,976 rows/s, 12 errors"
    )
    assert Progress(0, 0, 0, 1000, "a", 0, 1, 40, 0.1).describe() == "0 of ~40 rows, 0 errors"
    assert Progress(118, 0, 1000, 1000, "", 1, 1, 40, 4.0).describe() == "118 rows, 30 rows/s, 0 errors"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 50), st.integers(1, 10**9)), min_size=1, max_size=6))
def test_parts_of_a_job_add_up_to_the_jobs_progress(parts):
    """Each part's last report, as the job's: the rows, errors and bytes of the parts so far."""
    bytes_total = sum(size for _, _, size in parts)
    before = Progress(0, 0, 0, bytes_total, "", 0, len(parts))
    for position, (rows, errors, size) in enumerate(parts):
        last = Progress(rows, errors, size, size, "", 1, 1, rows_total=rows)
        before = last.after(before, bytes_total, len(parts), seconds=1.0)
        assert before.rows == sum(r for r, _, _ in parts[: position + 1])
        assert before.errors == sum(e for _, e, _ in parts[: position + 1])
        assert before.bytes_done == sum(s for _, _, s in parts[: position + 1])
        assert before.files_done == position + 1 and before.files_total == len(parts)
    assert before.rows_total == before.rows == before.rows_expected  # all read: no estimate left


def one_big_file(tmp_path, n: int = 1200):
    rng = random.Random(3)
    rows = []
    for i, row in enumerate(diverse_rows() * (n // len(diverse_rows()) + 1)):
        if i == n:
            break
        rows.append(dict(row, id=f"r{i}", response=row["response"] + " " * rng.randint(0, 400)))
    return write_jsonl(tmp_path / "big.jsonl", rows), len(rows)


def test_a_single_big_file_reports_its_rows_of_how_many_as_it_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(Source, "jsonl_read_bytes", 2048)  # the position follows the lines closely
    path, n = one_big_file(tmp_path)
    seen: list[Progress] = []
    update = engines.score_to_dataset([path], tmp_path / "ds", workers=1, chunk_rows=40, progress=seen.append)
    assert update.rows == n and len(seen) == n // 40 + 1
    assert [p.rows for p in seen] == sorted(p.rows for p in seen) and seen[-1].rows == n
    assert all(p.files_total == 1 and p.bytes_total == path.stat().st_size for p in seen)
    assert [p.seconds for p in seen] == sorted(p.seconds for p in seen) and seen[-1].rate > 0
    assert 0.5 * n < seen[0].rows_total < 2 * n  # estimated from the file's size and first records
    for p in seen[len(seen) // 5 : -1]:  # past a fifth of the file: within a tenth of the truth
        assert abs(p.rows_expected - n) < n / 10, p
        of = f" of ~{p.rows_expected:,}" if p.rows_expected > p.rows else ""  # the last chunk: all read
        assert re.fullmatch(rf"{p.rows:,}{of} rows(, [\d,]+ rows/s)?, 0 errors", p.describe())
    assert seen[-1].describe().startswith(f"{n:,} rows")


def test_the_command_line_bar_shows_rows_of_how_many_and_the_rate():
    stream = io.StringIO()
    bar = ProgressBar(stream)
    bar(Progress(840_000, 12, 420, 1000, "big.jsonl", 0, 1, 1_900_000, 20.5))
    bar(Progress(900_000, 12, 450, 1000, "big.jsonl", 0, 1, 1_900_000, 20.55))  # within 0.1 s: not drawn
    bar(Progress(2_000_000, 30, 1000, 1000, "", 1, 1, 1_900_000, 50.0))  # the last: always drawn
    bar.close()
    first, last = stream.getvalue().rstrip("\n").split("\r")[1:]
    assert first == "scoring [############------------------]  42%  840,000 of ~2,000,000 rows, 40,976 rows/s, 12 errors"
    assert last.rstrip() == "scoring [##############################] 100%  2,000,000 rows, 40,000 rows/s, 30 errors"
    assert len(last) == len(first)  # padded over the longer line before it


def test_the_apps_loading_text_says_rows_of_how_many(tmp_path, monkeypatch):
    from dashboard import loading, sources

    monkeypatch.setattr(Source, "jsonl_read_bytes", 2048)
    path, n = one_big_file(tmp_path, 400)
    source = sources.stage_uploads([("big.jsonl", path.read_bytes())], root=tmp_path / "staged")
    texts = []
    loading.load(source, progress=lambda fraction, text: texts.append(text))
    scoring = [t for t in texts if t.startswith("scoring big.jsonl")]
    assert scoring and re.fullmatch(rf"scoring big\.jsonl — {n:,} rows(, [\d,]+ rows/s)?, 0 errors", scoring[-1])
