"""Plotly figures for the pages (no Streamlit).

Histograms are pre-binned (:func:`dashboard.filters.binned`) and drawn as bars,
so a figure carries one number per bar however many rows the run has, and
every bar's ``customdata`` starts with ``[facet, bin]`` -- what a selection
event needs to list the rows behind it. Every label from data (titles, facet and
task names, reasons) is escaped with :func:`dashboard.plot_text.plotly_text`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.plot_text import plotly_text, plotly_texts

PALETTE = ("#2962eb", "#e8590c", "#2b8a3e", "#ae3ec9", "#f59f00", "#0c8599", "#c2255c", "#5c940d", "#495057",
           "#1864ab", "#d9480f", "#087f5b")
BEFORE_COLOUR = "#adb5bd"
AFTER_COLOUR = "#2962eb"
THRESHOLD_COLOUR = "#c92a2a"


def _base_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title={"text": plotly_text(title), "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        height=height,
        margin={"l": 40, "r": 16, "t": 48, "b": 36},
        bargap=0.05,
        showlegend=False,
    )
    return fig


def histogram(
    counts: pd.DataFrame,
    *,
    title: str,
    threshold: float | None = None,
    columns: int = 3,
    subplot_height: int = 210,
) -> go.Figure:
    """Bars of ``counts`` (facet, bin, lo, hi, count): one panel per facet, the threshold as a line."""
    facets = list(dict.fromkeys(counts["facet"])) or ["all"]
    n = len(facets)
    cols = 1 if n == 1 else min(columns, n)
    rows = math.ceil(n / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=None if n == 1 else plotly_texts(facets),
        shared_xaxes=True,
        horizontal_spacing=0.05,
        vertical_spacing=min(0.12, 0.5 / max(rows, 1)) if rows > 1 else 0.0,
    )
    for i, facet in enumerate(facets):
        part = counts[counts["facet"] == facet]
        lo = part["lo"].to_numpy(dtype=float)
        hi = part["hi"].to_numpy(dtype=float)
        fig.add_trace(
            go.Bar(
                x=(lo + hi) / 2,
                y=part["count"].to_numpy(),
                width=(hi - lo) * 0.95,
                marker_color=PALETTE[i % len(PALETTE)] if n > 1 else PALETTE[0],
                # [facet, bin] for selections (raw), lo, hi, and the facet escaped for the hover label
                customdata=np.column_stack(
                    [np.full(len(part), str(facet), dtype=object), part["bin"].to_numpy(), lo, hi,
                     np.full(len(part), plotly_text(facet), dtype=object)]
                ),
                hovertemplate=("%{customdata[4]}<br>" if n > 1 else "")
                + "[%{customdata[2]:.3f}, %{customdata[3]:.3f}): %{y} rows<extra></extra>",
                name=plotly_text(facet),
            ),
            row=i // cols + 1,
            col=i % cols + 1,
        )
    if threshold is not None:
        for i in range(n):
            fig.add_vline(
                x=threshold, line_dash="dash", line_color=THRESHOLD_COLOUR, line_width=1.5,
                row=i // cols + 1, col=i % cols + 1,
            )
    fig.update_xaxes(range=[-0.02, 1.02])
    height = 320 if n == 1 else max(320, rows * subplot_height + 60)
    return _base_layout(fig, title, height)


def before_after_histogram(before: pd.DataFrame, after: pd.DataFrame, *, title: str, threshold: float) -> go.Figure:
    """Two bar series (before in grey, after in colour) over the same bins, threshold marked."""
    fig = go.Figure()
    for counts, name, colour in ((before, "before", BEFORE_COLOUR), (after, "after", AFTER_COLOUR)):
        lo = counts["lo"].to_numpy(dtype=float)
        hi = counts["hi"].to_numpy(dtype=float)
        fig.add_trace(
            go.Bar(x=(lo + hi) / 2, y=counts["count"].to_numpy(), width=(hi - lo) * 0.45,
                   offset=-(hi - lo) * 0.45 if name == "before" else 0.0,
                   name=name, marker_color=colour, hovertemplate=f"{name}: %{{y}} rows<extra></extra>")
        )
    fig.add_vline(x=threshold, line_dash="dash", line_color=THRESHOLD_COLOUR, line_width=1.5,
                  annotation_text=f"solved ≥ {threshold:g}", annotation_position="top left")
    fig.update_xaxes(range=[-0.02, 1.02])
    _base_layout(fig, title, 320)
    fig.update_layout(showlegend=True, legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right",
                                               "yanchor": "bottom"})
    return fig


def step_chart_spec(metrics: tuple[str, ...], height: int = 200, width: int = 250) -> dict:
    """A Vega-Lite spec for :func:`dashboard.filters.step_long` data: one panel per metric, one
    line per run. (Vega-Lite, not plotly, on the Overview: it keeps the first screen light.)"""
    return {
        "height": height,
        "width": width,  # per panel: faceted charts cannot stretch to the container
        "mark": {"type": "line", "point": True, "tooltip": True},
        "encoding": {
            "x": {"field": "step", "type": "quantitative", "title": "step"},
            "y": {"field": "value", "type": "quantitative", "title": None},
            "color": {"field": "run", "type": "nominal", "title": "run"},
            "column": {"field": "metric", "type": "nominal", "title": None, "sort": list(metrics)},
        },
        "resolve": {"scale": {"y": "independent"}},
    }


def delta_bars(per_task: pd.DataFrame, *, key: str = "task_id", limit: int = 30) -> go.Figure:
    """Per-task change of the mean overall (largest changes first)."""
    part = per_task.head(limit)
    deltas = part["mean_delta"].to_numpy(dtype=float)
    colours = np.where(deltas >= 0, "#2b8a3e", "#c92a2a")
    fig = go.Figure(
        go.Bar(
            x=deltas, y=plotly_texts(part[key]), orientation="h", marker_color=colours,
            customdata=np.column_stack([part["mean_before"], part["mean_after"], part["rows"]]),
            hovertemplate="%{y}<br>Δ %{x:+.4f}<br>before %{customdata[0]:.4f} → after %{customdata[1]:.4f}"
            "<br>%{customdata[2]} rows<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    _base_layout(fig, "Change of mean overall per task", max(240, 24 * len(part) + 80))
    return fig


def reason_bars(counts: pd.DataFrame) -> go.Figure:
    """Format failures by reason (count, and how many still got a positive task reward)."""
    fig = go.Figure()
    reasons = plotly_texts(counts["reason"])
    fig.add_trace(go.Bar(x=reasons, y=counts["rows"], name="format failures", marker_color="#868e96"))
    fig.add_trace(go.Bar(x=reasons, y=counts["reward_positive"], name="… with reward &gt; 0",
                         marker_color="#e8590c"))
    _base_layout(fig, "Format failures by reason", 300)
    fig.update_layout(barmode="overlay", showlegend=True, legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"})
    return fig
