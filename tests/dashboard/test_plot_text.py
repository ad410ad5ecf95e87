"""Labels from data render literally in every plotly figure the app builds (no markup, no templates)."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard import compare, figures, filters, groups, overlay
from dashboard.plot_text import plotly_text, plotly_texts
from scoring import explain_trace_response
from scoring.verifier import RESOLVER_IDS

LINK = '<a href="http://example.invalid">x</a>'
#: A label that would be a link, bold text, a template placeholder and an entity if read as anything but text.
HOSTILE = f"{LINK} <b>bold</b> %{{x}} &amp; 50%"
ESCAPED = plotly_text(HOSTILE)
#: The markup our own templates and labels use (never from data).
OWN_MARKUP = re.compile(r"<br>|<extra></extra>")


# --------------------------------------------------------------------------- the escape


def test_hostile_label_is_escaped_to_entities():
    assert ESCAPED == ("&lt;a href=\"http://example.invalid\"&gt;x&lt;/a&gt; &lt;b&gt;bold&lt;/b&gt; "
                       "&#37;{x} &amp;amp; 50&#37;")
    assert html.unescape(ESCAPED) == HOSTILE  # what plotly draws: the original text, literally


@given(st.text())
def test_escaped_text_has_no_markup_or_placeholder_and_decodes_to_the_original(text):
    escaped = plotly_text(text)
    assert "<" not in escaped and ">" not in escaped and "%" not in escaped
    assert re.sub(r"&(amp|lt|gt|#37);", "", escaped).count("&") == 0  # every & starts one of our entities
    assert html.unescape(escaped) == text


@given(st.lists(st.one_of(st.text(), st.integers(), st.none()), max_size=20))
def test_vectorised_escape_matches_the_scalar_one(values):
    assert plotly_texts(pd.Series(values, dtype=object)) == [plotly_text(v) for v in values]
    assert plotly_texts(values) == [plotly_text(v) for v in values]


# --------------------------------------------------------------------------- every figure


def _strings(node, path=()):
    """(path, string) of every string in a figure's JSON, except customdata (checked on its own)
    and layout images (data URIs)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in ("customdata", "source"):
                yield from _strings(value, (*path, key))
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield from _strings(value, (*path, i))
    elif isinstance(node, np.ndarray):
        yield from _strings(node.tolist(), path)
    elif isinstance(node, str):
        yield path, node


def assert_renders_literally(fig, label: str = HOSTILE) -> None:
    """No string plotly draws holds markup, a placeholder or an entity from data, and the label is there."""
    spec = (fig if isinstance(fig, go.Figure) else go.Figure(fig)).to_plotly_json()
    strings = list(_strings(spec))
    for path, text in strings:
        bare = OWN_MARKUP.sub("", text)
        assert "<" not in bare, (path, text)
        assert "%{x}" not in text, (path, text)
        assert "&amp; 5" not in text.replace("&amp;amp; 5", ""), (path, text)
    assert any(plotly_text(label) in text for _, text in strings), "the hostile label is not shown at all"
    for trace in spec["data"]:  # customdata columns a template shows are escaped too
        template = trace.get("hovertemplate") or ""
        shown = {int(i) for i in re.findall(r"%\{customdata\[(\d+)\]", template)}
        for row in np.asarray(trace.get("customdata", []), dtype=object).tolist():
            for i in shown:
                assert "<" not in str(row[i]), (template, row[i])


def _counts(facets):
    rng = np.random.default_rng(0)
    keys = np.array([facets[i % len(facets)] for i in range(60)], dtype=object)
    return filters.binned(pd.Series(rng.random(60)), keys, bins=5)


def test_histogram_facets_title_and_hover():
    assert_renders_literally(figures.histogram(_counts([HOSTILE, "plain"]), title=f"overall by {HOSTILE}",
                                               threshold=0.5))
    one = figures.histogram(_counts([HOSTILE]), title=HOSTILE)
    assert_renders_literally(one)


def test_histogram_selection_still_gets_the_raw_facet():
    fig = figures.histogram(_counts([HOSTILE, "plain"]), title="t")
    facet = [t for t in fig.data if t.name == ESCAPED][0]
    assert filters.selection_from_event([{"customdata": list(facet.customdata[0])}]) == [(HOSTILE, 0)]


def test_before_after_histogram_title():
    c = _counts(["a"])
    assert_renders_literally(figures.before_after_histogram(c, c, title=HOSTILE, threshold=0.9))


def test_delta_bars_task_names():
    per_task = pd.DataFrame({"task_id": [HOSTILE, "b"], "mean_delta": [0.2, -0.1], "mean_before": [0.5, 0.5],
                             "mean_after": [0.7, 0.4], "rows": [3, 4]})
    assert_renders_literally(figures.delta_bars(per_task))


def test_reason_bars_reasons():
    reasons = pd.DataFrame({"reason": [HOSTILE, "ok"], "rows": [5, 1], "reward_positive": [2, 0]})
    assert_renders_literally(figures.reason_bars(reasons))


def test_compare_delta_figure_slices_and_title():
    view = pd.DataFrame({"slice": [HOSTILE, "b"], "delta": [0.1, -0.2], "ci_low": [0.0, -0.3], "ci_high": [0.2, -0.1],
                         "mean_a": [0.4, 0.6], "mean_b": [0.5, 0.4], "units": [3, 4]})
    assert_renders_literally(compare.delta_figure(view, title=f"Δ overall per {HOSTILE}"))


def test_groups_figures_run_names_and_titles():
    per_step = pd.DataFrame({"run": [HOSTILE, HOSTILE], "step": [1.0, 2.0], "zero_signal_share": [0.1, 0.2],
                             "uniform_solved_share": [0.3, 0.4]})
    assert_renders_literally(groups.steps_figure(per_step))
    shares = pd.DataFrame({"solved_threshold": [0.5, 0.9], "zero_signal_share": [0.1, 0.2],
                           "uniform_solved_share": [0.3, 0.4]})
    assert_renders_literally(groups.sweep_figure(shares, x="solved_threshold", title=HOSTILE, current=0.9))


def test_overlay_figure_role_keys():
    key = "<b>k</b> %{x} &amp; 5%"  # short enough to be shown whole (longer keys are cut)
    evaluation = explain_trace_response(
        response=json.dumps({"answer": 1, "annotation": {key: [10, 10, 50, 50], "hat": [100, 10, 140, 40]}}),
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "bbox_map", "value": {key: [12, 12, 52, 52], "dog": [100, 80, 160, 140]}},
        reward_contract={"answer": {"id": "answer_exact_match_v0"}, "annotation": {"id": RESOLVER_IDS["bbox_map"]}},
        image_size=[200, 150],
    )
    model = overlay.build_overlay(evaluation)
    assert_renders_literally(overlay.plotly_figure(model), key)


def test_step_chart_is_vega_lite_text_with_the_default_tooltip():
    """Vega-Lite draws labels as text (never HTML); its default tooltip escapes values."""
    spec = figures.step_chart_spec(("mean overall",))
    assert spec["mark"]["tooltip"] is True  # the built-in tooltip of the fields, no custom HTML
    assert "usermeta" not in spec and "config" not in spec


@pytest.mark.parametrize("value", [HOSTILE, 12.5, None, "<br>"])
def test_plotly_text_accepts_any_value(value):
    assert html.unescape(plotly_text(value)) == str(value)
