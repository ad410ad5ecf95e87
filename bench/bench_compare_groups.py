"""Speed of the Compare and Groups logic on large runs.

Run from the project root: python bench/bench_compare_groups.py [--rows 200000] [--repeats 7]

The scored sample's canonical rollouts (``ckpt-A`` and ``ckpt-B``, step 300:
45 prompts x 4 samples each) are tiled to ``--rows`` rows per run; every copy
gets its own instance ids and prompt texts, so a run of 200,000 rows holds
50,000 instances in GRPO groups of 4. Timed, as medians over ``--repeats``:

- **compare (instance id)**: :func:`dashboard.compare.compare_runs` of the two
  runs (join, per-instance means) plus :func:`dashboard.compare.all_deltas`
  (overall / per task / per annotation type, every component, CIs) and the
  improved/regressed lists -- target < 2 s for 200,000 + 200,000 rows. Timed
  cold: the remembered key codes are cleared before every repeat;
- **compare (prompt + image)**: the same with the prompt + image join forced;
- baseline: a bare pandas ``groupby(instance_id).mean()`` of each side and a
  ``merge`` of the two (what the join does, with no report, CI or list);
- **groups view**: :func:`dashboard.groups.detect_groups`,
  :func:`~dashboard.groups.group_stats`, :func:`~dashboard.groups.signal_summary`
  and :func:`~dashboard.groups.per_run_step` over one run of ``--rows`` rows --
  target < 1 s;
- baseline: a bare pandas ``groupby([run, step, file, instance_id])`` with
  mean / std / min / max of the score;
- **zero-signal sweep**: :func:`dashboard.groups.zero_signal_share` over the
  Groups page's grid (11 weights + 7 thresholds), reported, no target.

The ``scores`` frame (:func:`dashboard.tuning.scores`) is computed once
outside the timings, as the app caches it per table and options.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

COMMAND = "python bench/bench_compare_groups.py"
COMPARE_TARGET_S = 2.0
GROUPS_TARGET_S = 1.0


def tiled(rows: int):
    """Two runs of ``rows`` rows each, tiled from the sample's step-300 canonical rollouts."""
    import numpy as np
    import pandas as pd

    from dashboard import loading, sources

    table = loading.load_cached(sources.sample_source()).table
    keep = table["source_file"].isin(["rollouts_ckpt-A.jsonl", "rollouts_ckpt-B.jsonl"]).to_numpy() & (
        table["step"].to_numpy(dtype=np.float64, na_value=np.nan) == 300
    )
    text = ["response", "recovered_text", "scorer_kwargs", "format_detail"]  # the text is not compared
    base = table[keep].drop(columns=[c for c in text if c in table.columns])
    parts = []
    for run in ("ckpt-A", "ckpt-B"):
        side = base[base["run"].astype(str) == run]
        copies = -(-rows // len(side))
        tile = np.repeat(np.arange(copies), len(side))[:rows]
        source = side.iloc[np.tile(np.arange(len(side)), copies)[:rows]].copy()
        suffix = pd.Series(tile, index=source.index).astype(str)
        source["instance_id"] = source["instance_id"].astype(str).to_numpy() + "#" + suffix.to_numpy()
        source["prompt"] = source["prompt"].astype(str).to_numpy() + " (copy " + suffix.to_numpy() + ")"
        source.index = pd.Index([f"{run}:{i}" for i in range(rows)], name="row_id", dtype="str")
        parts.append(source)
    big = pd.concat(parts)
    big.attrs = dict(table.attrs)
    return big


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per run (default 200000)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    import pandas as pd

    from dashboard import compare, groups, tuning

    print(f"command: {COMMAND} --rows {args.rows} --repeats {args.repeats}")
    big = tiled(args.rows)
    options = tuning.scored_options(big)
    scores = tuning.scores(big, options)
    side_a, side_b = compare.Side("ckpt-A", 300), compare.Side("ckpt-B", 300)
    one_run = big[compare.run_labels(big) == "ckpt-A"]
    one_scores = scores.loc[one_run.index]
    print(f"table: {len(big):,} rows ({args.rows:,} per run), {os.cpu_count()} CPU(s)")

    def do_compare(join: str = compare.JOIN_AUTO):
        compare.clear_caches()  # cold: the key columns are hashed again, as on a newly loaded table
        joined = compare.compare_runs(big, scores, side_a, side_b, join=join)
        compare.all_deltas(joined)
        compare.changes(joined, "overall")
        return joined

    def baseline_merge():
        frame = pd.DataFrame({"run": big["run"].astype(str).to_numpy(), "instance_id": big["instance_id"].to_numpy(),
                              "score": scores["score"].to_numpy()})
        a = frame[frame["run"] == "ckpt-A"].groupby("instance_id", sort=False)["score"].mean()
        b = frame[frame["run"] == "ckpt-B"].groupby("instance_id", sort=False)["score"].mean()
        return pd.merge(a, b, left_index=True, right_index=True, suffixes=("_a", "_b"))

    def do_groups():
        grouping = groups.detect_groups(one_run)
        stats = groups.group_stats(grouping, one_scores)
        groups.signal_summary(stats)
        groups.per_run_step(stats)
        return stats

    def baseline_groupby():
        frame = one_run[["run", "step", "source_file", "instance_id"]].assign(score=one_scores["score"].to_numpy())
        return frame.groupby(["run", "step", "source_file", "instance_id"], sort=False, observed=True)["score"].agg(
            ["mean", "std", "min", "max"])

    grid = groups.weight_grid(options) + groups.threshold_grid(options)

    def do_sweep():
        return groups.zero_signal_share(one_run, grid, base=options)

    joined = do_compare()
    report = joined.report
    print(f"join: {report.summary()}")
    stats = do_groups()
    print(f"groups: {len(stats):,} groups over {len(one_run):,} rows")

    compare_s = median_seconds(do_compare, args.repeats)
    prompt_s = median_seconds(lambda: do_compare(compare.JOIN_PROMPT), args.repeats)
    merge_s = median_seconds(baseline_merge, args.repeats)
    groups_s = median_seconds(do_groups, args.repeats)
    groupby_s = median_seconds(baseline_groupby, args.repeats)
    sweep_s = median_seconds(do_sweep, max(3, args.repeats // 2))

    rows = [
        ("compare, instance-id join + deltas + CIs", compare_s, merge_s, COMPARE_TARGET_S),
        ("compare, prompt + image join + deltas + CIs", prompt_s, merge_s, COMPARE_TARGET_S),
        ("  baseline: bare pandas groupby-mean + merge", merge_s, None, None),
        ("groups view (detect, stats, summary, per step)", groups_s, groupby_s, GROUPS_TARGET_S),
        ("  baseline: bare pandas groupby mean/std/min/max", groupby_s, None, None),
        (f"zero-signal sweep ({len(grid)} option sets)", sweep_s, None, None),
    ]
    print(f"\n{'what':<50} {'median':>9} {'x baseline':>11} {'target':>8}")
    ok = True
    for name, seconds, baseline, target in rows:
        ratio = f"{seconds / baseline:.1f}x" if baseline else ""
        verdict = ""
        if target is not None:
            passed = seconds < target
            ok &= passed
            verdict = f"< {target:g} s {'ok' if passed else 'MISSED'}"
        print(f"{name:<50} {seconds * 1000:>7.0f} ms {ratio:>11} {verdict:>8}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
