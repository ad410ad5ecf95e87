"""The app at scale: a million scored rollouts opened from the dataset on disk, ten million as copies,
and a live run followed.

    python bench/bench_dashboard.py                          # 1,000,000 rows, then 10 copies (long)
    python bench/bench_dashboard.py --rows 50000 --copies 2  # quicker
    python bench/bench_dashboard.py --dataset /data/bench1m  # keep the data: later runs skip the build

1. Build: ``--rows`` mixed rollouts (bench_batch.make_row: ~1.5 KB responses, all annotation types)
   written as ``--files`` step files, scored by the app's loader (``loading.prepare``, which calls
   ``scoring.engines.score_to_dataset``) into a dataset in the app's cache folder. Target for 1M rows:
   <= 60 s on 2 cores.
2. In a fresh process, as a server holds it: RSS of the idle server (every page run with no data
   chosen), then ``ROLLOUTSCOPE_DATA=<the dataset>`` and the real page scripts under AppTest (server
   time, no browser): RSS growth above idle (target <= 1 GB per million rows), the first Overview
   (opening included; target <= 1.5 s per million rows: 3 s at two million; the dataset's kept table read -- and, without a target, the same for the dataset
   without its table: decoded, then from the snapshot the app keeps) and the Overview warm, a page switch to each page (cache warm; <= 1 s), a tuning
   change (a Tuning slider moved; <= 500 ms), a page switch right after one, one row shown in the
   Inspector (<= 300 ms), the re-weighting alone, and the Gallery: its first page with no thumbnail
   drawn yet (<= 2 s), the next page and another sort once drawn (<= 1 s each; also their first,
   drawing, time), and the first page of its image and object modes. Baselines from the same run: ``open_dataset``
   alone in a fresh process (time, RSS), a page run with no data (Streamlit's own cost), the
   re-weighting alone, and reading + explaining one row without the page.
3. ``--copies K`` (default 10): the dataset copied K times under other run names (each numbers part
   rewritten with its run and file renamed, the text parts linked) -> K x rows, its opened table
   kept as scoring keeps it; in a fresh process its RSS growth above idle when the app opens it
   (target <= 3 GB for 10M rows) and a tuning change (<= 2 s), beside ``open_dataset`` alone; the
   same without its table (decoded), then after a restart (the snapshot the app kept).
4. Follow: the app on the folder of step files with follow on every ``--follow-seconds`` N (AppTest
   reruns the page every 0.5 s, as the browser's timer would); a new 10,000-row step file appears on
   the page within N + 5 s (target). Measured from right after a check: the worst case.

Every figure is a median over ``--repeats`` (the build, the first open and the follow: once) and
printed with the machine's core count; each target gets PASS or FAIL, then a closing line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import STEP_ROWS_NEW, in_child, rss_bytes, table_hidden  # noqa: E402
from dashboard_data import MB, build, build_copies, cores, follow_name, restore  # noqa: E402

COMMAND = "python bench/bench_dashboard.py"
PAGES = (
    "app.py",
    "pages/1_Inspector.py",
    "pages/2_Gallery.py",
    "pages/3_Distributions.py",
    "pages/4_Format_failures.py",
    "pages/5_Tuning.py",
    "pages/7_Compare.py",
    "pages/8_Groups.py",
)
TUNING_PAGE, INSPECTOR_PAGE, GALLERY_PAGE = "pages/5_Tuning.py", "pages/1_Inspector.py", "pages/2_Gallery.py"
#: Targets of issue 18, for 1M rows (the copies: for 10M).
BUILD_TARGET_S = 60.0
RSS_TARGET_MB = 1000.0
OVERVIEW_TARGET_MS = 1500.0
SWITCH_TARGET_MS = 1000.0
TUNING_TARGET_MS = 500.0
ROW_TARGET_MS = 300.0
#: Issue 31: the gallery's first page (thumbnails drawn) and a rerun with its thumbnails cached.
GALLERY_FIRST_TARGET_MS = 2000.0
GALLERY_WARM_TARGET_MS = 1000.0
COPIES_RSS_TARGET_MB = 3000.0
COPIES_TUNING_TARGET_MS = 2000.0
FOLLOW_MARGIN_S = 5.0
#: AppTest reruns the page this often while following (the browser's timer fires every N s).
FOLLOW_POLL_S = 0.5
APPTEST_TIMEOUT_S = 900
SLIDER_VALUES = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45)


def _proc_bytes(path: str, field: str) -> int:
    """A ``kB`` field of a /proc status file, in bytes."""
    with open(path) as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def peak_rss_bytes() -> int:
    """VmHWM: the most this process has held."""
    return _proc_bytes("/proc/self/status", "VmHWM")


def available_bytes() -> int:
    return _proc_bytes("/proc/meminfo", "MemAvailable")


def timed_ms(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1e3


def median(values) -> float:
    return float(statistics.median(values))


# --------------------------------------------------------------------------- the app, in a child process


def _apptest_setup() -> None:
    import logging
    import warnings

    from streamlit import config

    warnings.filterwarnings("ignore")
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    config.set_option("server.address", "localhost")  # as the bundled config serves it: the path box is on
    os.chdir(ROOT)


_COMPONENTS = None


def new_app(page: str):
    """AppTest of ``page``, sharing one discovery of the installed Streamlit components: a server
    scans every installed package's metadata for them once, as it starts (``Runtime``), but each
    AppTest does so on its first run -- about half a second here, which no page load pays."""
    global _COMPONENTS
    from streamlit.components.v2.component_manager import BidiComponentManager
    from streamlit.testing.v1 import AppTest

    if _COMPONENTS is None:
        _COMPONENTS = BidiComponentManager()
        _COMPONENTS.discover_and_register_components(start_file_watching=False)
    at = AppTest.from_file(str(ROOT / page), default_timeout=APPTEST_TIMEOUT_S)
    at._bidi_component_manager = _COMPONENTS  # what AppTest.run would discover itself (streamlit 1.67)
    return at


def _ok(at) -> None:
    if at.exception:
        raise SystemExit(f"the page failed: {at.exception[0].value}")
    if at.error:
        raise SystemExit(f"the page shows an error: {at.error[0].value}")


def _shown_rows(at) -> int:
    """The row count the sidebar shows for the loaded run ("… (N rollouts)")."""
    labels = [t.value for t in at.sidebar.text if t.value.endswith("rollouts)")]
    if not labels:
        raise SystemExit("the sidebar shows no run")
    return int(labels[0].rsplit("(", 1)[1].split()[0].replace(",", ""))


def idle_server(repeats: int) -> dict:
    """Every page run with no data chosen (Streamlit, the dashboard and each page's imports
    loaded): the server's RSS before a run is opened, and what a page run costs without data."""

    from dashboard import state

    os.environ.pop(state.DATA_ENV, None)
    runs = []
    for page in PAGES:
        at = new_app(page)
        at.session_state[state.K_KIND] = state.KIND_PATH
        at.session_state[state.K_PATH_TEXT] = ""
        at.run()
        _ok(at)
        if not any("Choose the data" in i.value for i in at.info):
            raise SystemExit(f"{page} did not stop for want of data")
        runs.append(at)
    empty_ms = [timed_ms(runs[0].run) for _ in range(repeats)]
    del runs, at
    gc.collect()
    return {"idle_rss": rss_bytes(), "empty_page_ms": median(empty_ms)}


def _open_app(dataset: str):
    """AppTest of the Overview on ``ROLLOUTSCOPE_DATA=dataset``: ``(at, first run ms, the run)``."""

    from dashboard import loading, state

    os.environ[state.DATA_ENV] = dataset
    at = new_app("app.py")
    first = timed_ms(at.run)
    _ok(at)
    [key] = at.session_state[state.K_KEYS].values()
    return at, first, loading.cached(key)


def _tuning_changes(at, repeats: int) -> list[float]:
    from dashboard import state

    at.switch_page(TUNING_PAGE)
    at.run()
    _ok(at)
    samples = []
    for i in range(repeats):
        value = SLIDER_VALUES[i % len(SLIDER_VALUES)]
        at.slider(key="tune_format_weight").set_value(value)
        samples.append(timed_ms(at.run))
        _ok(at)
        if at.session_state[state.K_OPTIONS]["format_weight"] != value:
            raise SystemExit("the slider did not change the tuning options")
    return samples


def _gallery(at, repeats: int) -> dict:
    """The Gallery on the open run: a page's rerun, the next page and another sort -- the first
    time (thumbnails drawn) and once their thumbnails are cached -- and the other two modes."""
    out = {}
    at.switch_page(GALLERY_PAGE)
    out["gallery_rerun_ms"] = median([timed_ms(at.run) for _ in range(repeats)])
    _ok(at)

    def timed(change) -> float:
        change()
        took = timed_ms(at.run)
        _ok(at)
        return took

    out["gallery_next_first_ms"] = timed(lambda: at.button(key="gal_next_top").click())
    warm = []
    for _ in range(repeats):
        timed(lambda: at.button(key="gal_prev_top").click())
        warm.append(timed(lambda: at.button(key="gal_next_top").click()))
    out["gallery_next_ms"] = median(warm)
    out["gallery_sort_first_ms"] = timed(lambda: at.selectbox(key="gal_sort_w").set_value("score"))
    warm = []
    for _ in range(repeats):
        timed(lambda: at.selectbox(key="gal_sort_w").set_value("annotation_reward"))
        warm.append(timed(lambda: at.selectbox(key="gal_sort_w").set_value("score")))
    out["gallery_sort_ms"] = median(warm)
    if not any(t.value.startswith("Page 1 of ") for t in at.text):
        raise SystemExit("the gallery does not show its first page after a new sort")
    out["gallery_images_first_ms"] = timed(lambda: at.segmented_control(key="gal_mode_w").set_value("images"))
    out["gallery_objects_first_ms"] = timed(lambda: at.segmented_control(key="gal_mode_w").set_value("patches"))
    at.segmented_control(key="gal_mode_w").set_value("rows")
    at.run()
    return out


def child_app(dataset: str, repeats: int, probes: int, seed: int) -> dict:
    """Step 2: the 1M-row dataset opened in the app, every page, tuning, rows shown."""
    from dashboard import state, tuning
    from dashboard.gallery import cache
    from scoring.runs import explain_row

    _apptest_setup()
    shutil.rmtree(cache.folder_for(None), ignore_errors=True)  # the gallery's first page draws every thumbnail
    out = idle_server(repeats)
    at, out["first_overview_ms"], run = _open_app(dataset)
    rows = len(run.table)
    if _shown_rows(at) != rows:
        raise SystemExit("the sidebar does not show the opened run")
    gc.collect()
    out["rss_open"] = rss_bytes()
    out["rows"] = rows
    out["overview_warm_ms"] = median([timed_ms(at.run) for _ in range(repeats)])

    first_visit = {}
    for page in PAGES[1:]:  # first visit of every page: its imports and per-table summaries
        at.switch_page(page)
        first_visit[page] = timed_ms(at.run)
        _ok(at)
    switch: dict[str, list[float]] = {p: [] for p in PAGES}
    for _ in range(repeats):
        for page in PAGES:
            at.switch_page(page)
            switch[page].append(timed_ms(at.run))
            _ok(at)
    out["first_visit_ms"] = first_visit
    out["switch_ms"] = {p: median(s) for p, s in switch.items()}
    out.update(_gallery(at, repeats))

    out["tuning_ms"] = median(_tuning_changes(at, repeats))
    at.selectbox(key="tune_mode").set_value("answer")
    out["mode_ms"] = timed_ms(at.run)
    _ok(at)
    fresh = []
    for i in range(repeats):  # a page switch right after a tuning change: its summaries computed afresh
        at.switch_page(TUNING_PAGE)
        at.run()
        at.slider(key="tune_answer_weight").set_value(round(0.05 + 0.05 * i, 2))
        at.run()
        at.switch_page("app.py")
        fresh.append(timed_ms(at.run))
        _ok(at)
    out["fresh_switch_ms"] = median(fresh)
    table = run.table
    baseline = tuning.scored_options(table)
    out["reweight_ms"] = median(
        [timed_ms(lambda o=dict(baseline, answer_weight=0.3 + 0.01 * i): tuning.compare(table, baseline, o))
         for i in range(repeats)]
    )

    # one row shown: the Inspector on a random row (other random rows for the bare baseline)
    rng = random.Random(seed)
    chosen = [table.index[rng.randrange(rows)] for _ in range(2 * probes)]
    at.switch_page(INSPECTOR_PAGE)
    at.run()
    _ok(at)
    shown = []
    for row_id in chosen[:probes]:
        at.session_state[state.K_SELECTED] = row_id
        shown.append(timed_ms(at.run))
        _ok(at)
        if at.session_state[state.K_SELECTED] != row_id:
            raise SystemExit(f"the Inspector did not show the selected row {row_id}")
    out["row_ms"] = median(shown)
    out["row_max_ms"] = max(shown)
    out["row_bare_ms"] = median(
        [timed_ms(lambda r=row_id: explain_row(run.with_text([r]), r)) for row_id in chosen[probes:]]
    )
    gc.collect()
    out["rss_end"] = rss_bytes()
    out["rss_peak"] = peak_rss_bytes()
    return out


def child_copies(dataset: str, repeats: int, copies: int) -> dict:
    """Step 3: the K copies opened in the app (RSS, first Overview) and a tuning change."""
    _apptest_setup()
    out = idle_server(1)
    at, out["first_overview_ms"], run = _open_app(dataset)
    gc.collect()
    out["rss_open"] = rss_bytes()
    opened = run.datasets[0].table  # what open_dataset gave
    out["rows"] = len(run.table)
    out["dataset_rows"] = len(opened)
    out["dataset_runs"] = int(opened["run"].nunique())
    out["runs_metric"] = next(m.value for m in at.metric if m.label == "Runs")
    if out["dataset_runs"] != copies:
        raise SystemExit(f"open_dataset gives {out['dataset_runs']} run labels, not {copies}")
    out["tuning_ms"] = median(_tuning_changes(at, repeats))
    gc.collect()
    out["rss_end"] = rss_bytes()
    out["rss_peak"] = peak_rss_bytes()
    return out


def child_reopen(dataset: str, repeats: int) -> dict:
    """A server restarted on a run it opened before: the first Overview (from the run's table
    snapshot), the RSS then and after a tuning change, the tuning change itself."""
    _apptest_setup()
    out = idle_server(1)
    at, out["first_overview_ms"], run = _open_app(dataset)
    gc.collect()
    out["rss_open"] = rss_bytes()
    out["rows"] = len(run.table)
    out["tuning_ms"] = median(_tuning_changes(at, repeats))
    gc.collect()
    out["rss_end"] = rss_bytes()
    out["rss_peak"] = peak_rss_bytes()
    return out


def keep_table_in_child(dataset: str) -> float:
    """``datasets.write_table`` of ``dataset`` in a process of its own (its decoding peak is not this
    one's): seconds."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sys; from scoring import datasets; datasets.write_table(sys.argv[1])",
                    dataset], check=True, cwd=ROOT)
    return time.perf_counter() - started


def forget_snapshots(cache: Path) -> None:
    """No table snapshot kept: the next open decodes the dataset (a run never opened before)."""
    shutil.rmtree(cache / "opened", ignore_errors=True)


def child_follow(run_dir: str, pending: str, seconds: int, expected: int) -> dict:
    """Step 4: the app on the step folder, follow on; a new step file moved in right after a
    check; the time until the sidebar shows its rows."""

    from dashboard import loading, state

    _apptest_setup()
    calls: list[tuple[str, float, int]] = []  # (what, seconds, rows scored) of each look at the files
    prepare, open_prepared = loading.prepare, loading.open_prepared

    def timed_prepare(*a, **k):
        started = time.perf_counter()
        prepared = prepare(*a, **k)
        calls.append(("prepare", time.perf_counter() - started, sum(u.rows_scored for u in prepared.updates)))
        return prepared

    def timed_open(*a, **k):
        started = time.perf_counter()
        opened = open_prepared(*a, **k)
        calls.append(("open", time.perf_counter() - started, 0))
        return opened

    loading.prepare, loading.open_prepared = timed_prepare, timed_open  # timed, not changed
    os.environ[state.DATA_ENV] = run_dir
    at = new_app("app.py")
    open_ms = timed_ms(at.run)
    _ok(at)
    before = _shown_rows(at)
    at.session_state[state.K_FOLLOW_SECONDS] = seconds
    at.toggle(key="rs_follow_w").set_value(True)
    at.run()  # follow switched on: the folder is checked at once
    _ok(at)
    target = Path(run_dir) / Path(pending).name
    os.replace(pending, target)  # the trainer's new step file, whole
    written = time.monotonic()
    calls.clear()
    last_ms = 0.0
    while _shown_rows(at) == before:
        if time.monotonic() - written > seconds + 300:
            raise SystemExit("the new step file never appeared")
        time.sleep(FOLLOW_POLL_S)
        last_ms = timed_ms(at.run)
        _ok(at)
    appeared = time.monotonic() - written
    shown = _shown_rows(at)
    if shown != expected:
        raise SystemExit(f"after the new file the app shows {shown:,} rows, not {expected:,}")
    notes = [re.sub(r"\\(.)", r"\1", c.value) for c in at.sidebar.caption if c.value.startswith("Checked at")]
    return {"open_ms": open_ms, "before": before, "appeared_s": appeared, "check_ms": last_ms, "calls": calls,
            "note": notes[0] if notes else ""}


def in_app_child(mode: str, env: dict, *args) -> dict:
    """Run ``mode`` of this script in a fresh process; its JSON result."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, json.dumps(args)],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"the {mode} measurement failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


CHILDREN = {"app": child_app, "copies": child_copies, "reopen": child_reopen, "follow": child_follow}


# --------------------------------------------------------------------------- report


class Report:
    """Rows of ``measure | figure | target | verdict``, and the verdicts for the closing line."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.skipped: list[str] = []
        self.passed = 0

    def line(self, measure: str, figure: str, target: str = "", ok: bool | None = None, note: str = "") -> None:
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        if ok is not None:
            if ok:
                self.passed += 1
            else:
                self.failed.append(measure)
        print(f"  {measure:<50}{figure:>14}  {target:<12}{verdict:<6}{note}")

    def ms(self, measure: str, value: float, target: float | None = None, note: str = "") -> None:
        self.line(measure, f"{value:,.0f} ms", "" if target is None else f"<= {target:,.0f} ms",
                  None if target is None else value <= target, note)


def ratio(value: float, base: float) -> str:
    return f"{value / base:.1f}x" if base > 0 else "n/a"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=20, help="step files the rows are written as")
    parser.add_argument("--copies", type=int, default=10, help="copies of the dataset for the large case (0: skip)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--probes", type=int, default=10, help="random rows shown in the Inspector")
    parser.add_argument("--follow-seconds", type=int, default=5, help="the follow interval N (0: skip)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=None, help="scoring processes (default: every core)")
    parser.add_argument(
        "--dataset", type=Path, default=None,
        help="keep the data in this folder and reuse it: the step files, the app's cache holding their scored "
        "dataset, the copies (a later run with the same --rows/--files/--seed only re-checks them). A scored "
        "dataset folder (rolloutscope score -o DIR/) is opened as it is; the follow measurement, which needs "
        "step files, is then skipped.",
    )
    args = parser.parse_args(argv)
    shown_args = sys.argv[1:] if argv is None else argv
    print(f"command: {COMMAND} {' '.join(shown_args)}".rstrip())
    print(f"machine: {cores()} cores, python {sys.version.split()[0]}, "
          f"{available_bytes() / 1e9:.1f} GB memory available")
    report = Report()
    with tempfile.TemporaryDirectory(prefix="bench_dashboard_") as scratch:
        from scoring import datasets

        given = args.dataset
        work = given if given is not None and not datasets.is_dataset(given) else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        cache = work / "cache"
        os.environ["ROLLOUTSCOPE_CACHE_DIR"] = str(cache)
        env = dict(os.environ)
        run_dir = None
        print()
        if given is not None and datasets.is_dataset(given):
            dataset = given.resolve()
            rows = sum(e["rows"] for e in datasets.read_manifest(dataset)["files"])
            print(f"build: skipped, the scored dataset {dataset} ({rows:,} rows) opened as it is")
        else:
            run_dir, dataset, built = build(work, args.rows, args.files, args.seed, args.workers)
            rows = args.rows
            if built["rows_scored"]:
                print(f"build: {rows:,} rows in {args.files} step files ({built['jsonl_mb']:,.0f} MB JSONL, written "
                      f"in {built['write_s']:.0f} s)")
                report.line("score into the dataset (score_to_dataset)", f"{built['score_s']:,.1f} s",
                            f"<= {BUILD_TARGET_S:.0f} s" if rows == 1_000_000 else "",
                            built["score_s"] <= BUILD_TARGET_S if rows == 1_000_000 else None,
                            f"{rows / built['score_s']:,.0f} rows/s; the app's loader in all "
                            f"{built['prepare_s']:.1f} s")
            else:
                print(f"build: reused {work} ({built['describe']})")
                report.line("re-check of the unchanged step files", f"{built['score_s'] * 1e3:,.0f} ms")
        started = time.perf_counter()
        kept = datasets.write_table(dataset)  # a dataset scored before it kept its table: kept now
        disk = sum(p.stat().st_size for p in (dataset / datasets.PARTS).iterdir()) / MB
        table_mb = sum(p.stat().st_size for p in kept.iterdir()) / MB
        print(f"dataset: {dataset} ({disk:,.0f} MB; its opened table {table_mb:,.0f} MB, checked or written in "
              f"{time.perf_counter() - started:.1f} s)")

        print(f"\nthe app on {rows:,} rows (fresh process; medians of {args.repeats}):")
        # memory and the first open follow the rows: their targets are per million rows (a smaller run keeps
        # the million's); the other targets hold at any size
        per_million = max(1.0, rows / 1_000_000)
        rss_target_mb, first_overview_target_ms = RSS_TARGET_MB * per_million, OVERVIEW_TARGET_MS * per_million
        if rows > 1_000_000:
            print(f"  (memory and first-Overview targets are per million rows: here {rss_target_mb:,.0f} MB and "
                  f"{first_overview_target_ms:,.0f} ms)")
        bare = in_child("dataset", str(dataset))
        forget_snapshots(cache)
        app = in_app_child("app", env, str(dataset), args.repeats, args.probes, args.seed)
        again = in_app_child("reopen", env, str(dataset), args.repeats)
        with table_hidden(dataset):  # a dataset without its table: decoded, then from the app's snapshot
            forget_snapshots(cache)
            decoded = in_app_child("reopen", env, str(dataset), 1)
            snapped = in_app_child("reopen", env, str(dataset), 1)
        forget_snapshots(cache)
        growth = (app["rss_end"] - app["idle_rss"]) / MB
        report.line("idle server RSS (every page, no data)", f"{app['idle_rss'] / MB:,.0f} MB")
        report.line("RSS growth above idle, run opened", f"{(app['rss_open'] - app['idle_rss']) / MB:,.0f} MB",
                    note=f"open_dataset alone: {bare['rss_growth'] / MB:,.0f} MB")
        report.line("RSS growth above idle, after every page", f"{growth:,.0f} MB", f"<= {rss_target_mb:,.0f} MB",
                    growth <= rss_target_mb,
                    f"{growth * MB / rows:,.0f} B/row; {ratio(growth, bare['rss_growth'] / MB)} open_dataset "
                    f"alone; peak {(app['rss_peak'] - app['idle_rss']) / MB:,.0f} MB")
        report.ms("first Overview, run never opened", app["first_overview_ms"], first_overview_target_ms,
                  f"{ratio(app['first_overview_ms'], bare['seconds'] * 1e3)} open_dataset alone "
                  f"({bare['seconds'] * 1e3:,.0f} ms); the table the dataset keeps, read")
        report.ms("first Overview after a restart", again["first_overview_ms"], first_overview_target_ms,
                  f"{ratio(again['first_overview_ms'], app['first_overview_ms'])} the first open")
        report.ms("first Overview, dataset without its table (decoded)", decoded["first_overview_ms"],
                  note=f"{ratio(decoded['first_overview_ms'], app['first_overview_ms'])} with it; a snapshot kept")
        report.ms("  then after a restart (snapshot mapped)", snapped["first_overview_ms"],
                  note=f"{ratio(snapped['first_overview_ms'], app['first_overview_ms'])} the table read")
        report.line("RSS growth above idle, after a restart", f"{(again['rss_open'] - again['idle_rss']) / MB:,.0f} MB",
                    f"<= {rss_target_mb:,.0f} MB", again["rss_open"] - again["idle_rss"] <= rss_target_mb * MB,
                    f"after a tuning change {(again['rss_end'] - again['idle_rss']) / MB:,.0f} MB; peak "
                    f"{(again['rss_peak'] - again['idle_rss']) / MB:,.0f} MB")
        report.ms("Overview warm (rerun)", app["overview_warm_ms"], OVERVIEW_TARGET_MS)
        report.ms("a page run with no data (baseline)", app["empty_page_ms"])
        for page, value in app["switch_ms"].items():
            report.ms(f"page switch -> {page}", value, SWITCH_TARGET_MS,
                      f"{ratio(value, app['empty_page_ms'])} no data; first visit "
                      f"{app['first_visit_ms'].get(page, app['first_overview_ms']):,.0f} ms")
        report.ms("page switch -> app.py after a tuning change", app["fresh_switch_ms"], SWITCH_TARGET_MS)
        report.ms("tuning change (format_weight slider)", app["tuning_ms"], TUNING_TARGET_MS,
                  f"{ratio(app['tuning_ms'], app['reweight_ms'])} the re-weighting alone")
        report.ms("tuning change (output mode, once)", app["mode_ms"], TUNING_TARGET_MS)
        report.line("re-weighting alone (tuning.compare)", f"{app['reweight_ms']:,.1f} ms")
        report.ms("gallery, first page (every thumbnail drawn)", app["first_visit_ms"][GALLERY_PAGE],
                  GALLERY_FIRST_TARGET_MS, "the first visit of the page, 48 tiles sorted by annotation reward")
        report.ms("gallery, the same page again", app["gallery_rerun_ms"], GALLERY_WARM_TARGET_MS)
        report.ms("gallery, next page (thumbnails cached)", app["gallery_next_ms"], GALLERY_WARM_TARGET_MS,
                  f"the first time, drawing them: {app['gallery_next_first_ms']:,.0f} ms")
        report.ms("gallery, another sort (thumbnails cached)", app["gallery_sort_ms"], GALLERY_WARM_TARGET_MS,
                  f"the first time, sorting and drawing: {app['gallery_sort_first_ms']:,.0f} ms")
        report.ms("gallery, one tile per image (first page)", app["gallery_images_first_ms"])
        report.ms("gallery, one tile per object (first page)", app["gallery_objects_first_ms"])
        report.ms(f"one row shown (Inspector, {args.probes} random rows)", app["row_ms"], ROW_TARGET_MS,
                  f"{ratio(app['row_ms'], app['row_bare_ms'])} reading + explaining it alone "
                  f"({app['row_bare_ms']:,.0f} ms); slowest {app['row_max_ms']:,.0f} ms")

        if args.copies > 1:
            total = args.copies * rows
            print(f"\n{args.copies} copies: {total:,} rows under {args.copies} run names (fresh process; "
                  f"tuning: median of {args.repeats}):")
            need = 600 * total + 1e9  # the opened table, its row ids and the page's working copies
            if available_bytes() < need:
                print(f"  skipped: {available_bytes() / 1e9:.1f} GB memory available, about {need / 1e9:.1f} GB "
                      "needed")
                report.skipped.append(f"{args.copies} copies (memory)")
            else:
                seconds, reused = build_copies(dataset, work / "copies", args.copies)
                print(f"  built from the dataset in {seconds:.0f} s" if not reused else "  reused")
                copies_dir = str(work / "copies")
                kept_s = keep_table_in_child(copies_dir)
                print(f"  its opened table kept (score_to_dataset's last step) in {kept_s:.0f} s")
                bare = in_child("dataset", copies_dir)
                forget_snapshots(cache)
                big = in_app_child("copies", env, copies_dir, args.repeats, args.copies)
                with table_hidden(work / "copies"):  # without its table: decoded, then the app's snapshot
                    forget_snapshots(cache)
                    decoded = in_app_child("copies", env, copies_dir, args.repeats, args.copies)
                    again = in_app_child("reopen", env, copies_dir, args.repeats)
                    bare_decoded = in_child("dataset", copies_dir)
                forget_snapshots(cache)
                if bare["rows"] != total or big["rows"] != total or decoded["rows"] != total:
                    raise SystemExit(f"open_dataset gives {bare['rows']:,} rows and the app {big['rows']:,}, "
                                     f"not {total:,}")
                print(f"  open_dataset: {bare['rows']:,} rows, {big['dataset_runs']} run labels "
                      f"(Overview 'Runs': {big['runs_metric']})")
                for label, opened in (("its table kept", bare), ("decoded", bare_decoded)):
                    peak = opened["rss_peak_growth"] / MB
                    report.line(f"open_dataset alone, {label}: peak RSS growth", f"{peak:,.0f} MB",
                                f"<= {COPIES_RSS_TARGET_MB:,.0f} MB", peak <= COPIES_RSS_TARGET_MB,
                                f"{opened['seconds']:.1f} s; {opened['rss_growth'] / MB:,.0f} MB held after")
                for label, child in (("never opened", big), ("without its table (decoded)", decoded)):
                    growth = (child["rss_end"] - child["idle_rss"]) / MB
                    report.line(f"{label}: RSS growth + Tuning", f"{growth:,.0f} MB",
                                f"<= {COPIES_RSS_TARGET_MB:,.0f} MB", growth <= COPIES_RSS_TARGET_MB,
                                f"{growth * MB / total:,.0f} B/row; peak {(child['rss_peak'] - child['idle_rss']) / MB:,.0f} MB"
                                + (f"; open_dataset alone {bare['rss_growth'] / MB:,.0f} MB" if child is big else ""))
                    report.ms(f"{label}: first Overview", child["first_overview_ms"],
                              note=f"open_dataset alone {bare['seconds'] * 1e3:,.0f} ms" if child is big else "")
                    report.ms(f"{label}: tuning change (format_weight slider)", child["tuning_ms"],
                              COPIES_TUNING_TARGET_MS)
                regrowth = (again["rss_end"] - again["idle_rss"]) / MB
                report.line("decoded, after a restart (snapshot): RSS growth + Tuning", f"{regrowth:,.0f} MB",
                            f"<= {COPIES_RSS_TARGET_MB:,.0f} MB", regrowth <= COPIES_RSS_TARGET_MB,
                            f"peak {(again['rss_peak'] - again['idle_rss']) / MB:,.0f} MB")
                report.ms("decoded, after a restart (snapshot): first Overview", again["first_overview_ms"])
                report.ms("decoded, after a restart (snapshot): tuning change", again["tuning_ms"],
                          COPIES_TUNING_TARGET_MS)

        if args.follow_seconds > 0 and run_dir is not None:
            n = args.follow_seconds
            print(f"\nfollow: the app on the step folder, follow every {n} s, a new {STEP_ROWS_NEW:,}-row step file:")
            try:
                follow = in_app_child("follow", env, str(run_dir), str(work / "pending" / follow_name(args.files)),
                                      n, rows + STEP_ROWS_NEW)
            finally:
                restore(run_dir, args.files, args.workers)
            report.ms("opening the step folder (re-check + open + Overview)", follow["open_ms"])
            report.line("new rows shown after the file was written", f"{follow['appeared_s']:,.1f} s",
                        f"<= {n + FOLLOW_MARGIN_S:.0f} s", follow["appeared_s"] <= n + FOLLOW_MARGIN_S,
                        f"the interval {n} s, then the page run that checked: {follow['check_ms']:,.0f} ms")
            looks = "; ".join(f"{what} {seconds:,.1f} s" + (f" ({rows:,} rows scored)" if rows else "")
                              for what, seconds, rows in follow["calls"])
            print(f"  {'':<50}{'':>14}  {'':<18}in it: {looks}; the sidebar then says: {follow['note']!r}")
        elif args.follow_seconds > 0:
            print("\nfollow: skipped (a scored dataset was given: no step files to follow)")
    verdict = "PASS" if not report.failed else "FAIL"
    print(f"\n{verdict}: {report.passed} of {report.passed + len(report.failed)} targets met on {cores()} cores, "
          f"{rows:,} rows" + (f"; missed: {', '.join(report.failed)}" if report.failed else "")
          + (f"; not measured: {', '.join(report.skipped)}" if report.skipped else ""))
    return 0 if not report.failed else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        result = CHILDREN[sys.argv[2]](*json.loads(sys.argv[3]))
        print(json.dumps(result))
        raise SystemExit(0)
    raise SystemExit(main())
