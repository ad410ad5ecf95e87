"""Plotly figures: pre-binned bars that carry what a selection needs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard import figures, filters


def counts(facets=("a",), bins=10, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 200
    values = pd.Series(rng.random(n))
    keys = np.array([facets[i % len(facets)] for i in range(n)], dtype=object)
    return filters.binned(values, keys, bins=bins)


def test_histogram_one_panel():
    fig = figures.histogram(counts(), title="overall", threshold=0.9)
    assert isinstance(fig, go.Figure)
    assert len(fig.data) == 1
    bar = fig.data[0]
    assert len(bar.x) == 10 and sum(bar.y) == 200
    assert [tuple(c[:2]) for c in bar.customdata] == [("a", b) for b in range(10)]
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 1 and lines[0].x0 == 0.9
    assert fig.layout.title.text == "overall"


def test_histogram_facets_get_a_panel_each_and_a_threshold_each():
    fig = figures.histogram(counts(("x", "y", "z", "w")), title="by run", threshold=0.5)
    assert [t.name for t in fig.data] == ["w", "x", "y", "z"]
    assert len([s for s in fig.layout.shapes if s.type == "line"]) == 4
    assert {a.text for a in fig.layout.annotations} == {"w", "x", "y", "z"}
    xaxes = {t.xaxis for t in fig.data}
    assert len(xaxes) == 4


def test_histogram_selection_round_trip():
    c = counts(("p", "q"), bins=5)
    fig = figures.histogram(c, title="t")
    points = [{"customdata": list(fig.data[1].customdata[3])}]
    assert filters.selection_from_event(points) == [("q", 3)]


def test_histogram_payload_does_not_grow_with_rows():
    rng = np.random.default_rng(1)
    big = pd.Series(rng.random(200_000))
    c = filters.binned(big, None, bins=20)
    assert c["facet"].unique().tolist() == ["all"] and c["count"].sum() == len(big)
    fig = figures.histogram(c, title="overall")
    assert len(fig.to_json()) < 20_000


def test_before_after_histogram():
    before, after = counts(seed=1), counts(seed=2)
    fig = figures.before_after_histogram(before, after, title="x", threshold=0.999)
    assert [t.name for t in fig.data] == ["before", "after"]
    assert sum(fig.data[0].y) == sum(fig.data[1].y) == 200
    assert any(s.type == "line" and s.x0 == 0.999 for s in fig.layout.shapes)


def test_step_chart_spec_facets_by_metric():
    spec = figures.step_chart_spec(("mean overall", "solve rate"))
    assert spec["encoding"]["column"]["sort"] == ["mean overall", "solve rate"]
    assert spec["encoding"]["color"]["field"] == "run"
    assert spec["resolve"]["scale"]["y"] == "independent"


def test_delta_bars_and_reason_bars():
    per_task = pd.DataFrame({"task_id": ["a", "b"], "mean_delta": [0.2, -0.1], "mean_before": [0.5, 0.5],
                             "mean_after": [0.7, 0.4], "rows": [3, 4]})
    fig = figures.delta_bars(per_task)
    assert list(fig.data[0].y) == ["a", "b"]
    assert list(fig.data[0].marker.color) == ["#2b8a3e", "#c92a2a"]
    reasons = pd.DataFrame({"reason": ["text_after_object"], "rows": [5], "reward_positive": [2]})
    fig = figures.reason_bars(reasons)
    assert [list(t.y) for t in fig.data] == [[5], [2]]
