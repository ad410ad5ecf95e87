"""Server-side speed of the dashboard with a large scored run loaded.

Run from the project root: python bench/bench_dashboard.py [--rows 200000] [--repeats 7]

The sample data is scored once and its table tiled to ``--rows`` rows (new row
ids, steps shifted per copy so the step curves have many points); the tiled
run is put into the loader's cache under the sample's content key, exactly
where a scored upload would sit. Then Streamlit's AppTest runs the real page
scripts in-process and times, as medians over ``--repeats``:

- a page switch (each of Overview, Distributions, Format failures, Tuning
  opened from another page, cache warm) -- target < 500 ms;
- a page switch to the Overview right after a tuning change (its summaries
  are computed afresh for the new options) -- target < 500 ms;
- a tuning change (a Tuning control moved, the whole run re-weighted, the
  page redrawn) -- target < 300 ms;
- the re-weighting alone (``dashboard.tuning.compare`` on fresh options).

AppTest time is script time on the server (no browser); it includes building
every figure and table the page sends.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

COMMAND = "python bench/bench_dashboard.py"
PAGE_SWITCH_TARGET_MS = 500.0
TUNING_TARGET_MS = 300.0
PAGES = ("app.py", "pages/2_Distributions.py", "pages/3_Format_failures.py", "pages/4_Tuning.py")


def tiled_run(rows: int):
    """The scored sample tiled to ``rows`` rows, registered in the loader cache."""
    import numpy as np
    import pandas as pd

    from dashboard import loading

    source = loading.sample_source()
    base = loading.load(source)
    table = base.table
    copies = -(-rows // len(table))
    parts = []
    for k in range(copies):
        part = table.copy()
        part.index = pd.Index([f"{i}~{k}" for i in table.index], name="row_id", dtype="str")
        if "step" in part.columns:
            part["step"] = part["step"] + 1000 * k
        parts.append(part)
    big = pd.concat(parts).iloc[:rows]
    big.attrs = dict(table.attrs)
    assert big.index.is_unique and len(big) == rows
    run = loading.LoadedRun(
        key=loading.content_key(source), source=source, table=big, errors=base.errors, plans=base.plans,
        layouts=base.layouts, paths=base.paths, resolver=base.resolver,
    )
    loading.clear_cache()
    loading.remember(run)
    del np
    return run


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from streamlit.testing.v1 import AppTest

    from dashboard import tuning

    os.chdir(ROOT)
    t0 = time.perf_counter()
    run = tiled_run(args.rows)
    print(f"{COMMAND}: {len(run.table):,} scored rows (tiled sample) ready in {time.perf_counter() - t0:.1f}s")

    def check(at: AppTest) -> None:
        if at.exception:
            raise SystemExit(f"page failed: {at.exception[0].value}")

    at = AppTest.from_file(os.path.join(ROOT, "app.py"), default_timeout=120)
    at.run()
    check(at)
    rows_metric = next(m.value for m in at.metric if m.label == "Rows")
    assert rows_metric == f"{args.rows:,}", f"the app shows {rows_metric} rows, not the tiled run"
    for page in PAGES[1:]:  # first visit of every page (warms imports and per-table caches)
        at.switch_page(page)
        at.run()
        check(at)

    switch: dict[str, list[float]] = {p: [] for p in PAGES}
    for _ in range(args.repeats):
        for page in PAGES:
            at.switch_page(page)
            switch[page].append(timed(at.run))
            check(at)

    at.switch_page("pages/4_Tuning.py")
    at.run()
    tune_ms = []
    values = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45]
    for i in range(args.repeats):
        at.slider(key="tune_format_weight").set_value(values[i % len(values)])
        tune_ms.append(timed(at.run))
        check(at)
    at.selectbox(key="tune_mode").set_value("answer")
    mode_ms = timed(at.run)
    check(at)

    # a page switch right after a tuning change: that page's summaries are computed afresh
    fresh_ms = []
    for i in range(args.repeats):
        at.switch_page("pages/4_Tuning.py")
        at.run()
        at.slider(key="tune_answer_weight").set_value(round(0.05 + 0.05 * i, 2))
        at.run()
        at.switch_page("app.py")
        fresh_ms.append(timed(at.run))
        check(at)

    table = run.table
    baseline = tuning.scored_options(table)
    reweight_ms = []
    for i in range(args.repeats):
        options = dict(baseline, answer_weight=0.3 + 0.01 * i)
        reweight_ms.append(timed(lambda o=options: tuning.compare(table, baseline, o)))

    print(f"{'measure':<38}{'median ms':>10}{'target':>10}")
    worst_switch = 0.0
    for page, samples in switch.items():
        median = statistics.median(samples)
        worst_switch = max(worst_switch, median)
        print(f"{'page switch -> ' + page:<38}{median:>10.0f}{PAGE_SWITCH_TARGET_MS:>10.0f}")
    tune = statistics.median(tune_ms)
    print(f"{'tuning change (format_weight slider)':<38}{tune:>10.0f}{TUNING_TARGET_MS:>10.0f}")
    print(f"{'tuning change (mode select, once)':<38}{mode_ms:>10.0f}{TUNING_TARGET_MS:>10.0f}")
    fresh = statistics.median(fresh_ms)
    print(f"{'page switch -> app.py, new options':<38}{fresh:>10.0f}{PAGE_SWITCH_TARGET_MS:>10.0f}")
    print(f"{'re-weighting alone (compare)':<38}{statistics.median(reweight_ms):>10.1f}")
    worst_switch = max(worst_switch, fresh)
    ok = worst_switch < PAGE_SWITCH_TARGET_MS and tune < TUNING_TARGET_MS
    print("PASS" if ok else "FAIL", f"(worst page switch {worst_switch:.0f} ms, tuning change {tune:.0f} ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
