"""Distributions: histograms of every reward component, faceted; select bars to list their rows."""

import streamlit as st

from dashboard import figures, filters
from dashboard.state import bootstrap, options_note, row_table

ctx = bootstrap("Distributions")
table = ctx.table
scores = ctx.scores()
threshold = ctx.options["solved_threshold"]

st.title("Distributions")
options_note(ctx)

left, mid, right = st.columns([4, 2, 2])
component = left.segmented_control("Component", filters.COMPONENTS, default="overall", key="dist_component",
                                   required=True)
facet_label = mid.selectbox("Facet by", list(filters.FACETS), key="dist_facet")
bins = right.slider("Bins", 5, 50, 20, step=5, key="dist_bins")
component = component or "overall"
facet = filters.FACETS[facet_label]

values = filters.component_values(table, scores, component)
keys = filters.facet_keys(table, facet)
counts = filters.binned(values, keys, bins=bins)
applicable = int(values.notna().sum())
st.caption(
    f"{applicable:,} of {len(table):,} rows have a {component} value · dashed line: solved_threshold {threshold:g} · "
    "drag a box or click bars to list their rows"
)
if not len(counts):
    st.info(f"No row has a {component} value.")
    st.stop()

title = f"{component} by {facet_label}" if facet else component
event = st.plotly_chart(
    figures.histogram(counts, title=title, threshold=threshold),
    key=f"dist_chart_{component}_{facet_label}_{bins}",
    on_select="rerun",
    selection_mode=("points", "box"),
)
selected = filters.selection_from_event(event.selection.points if event else [])
if selected:
    ids = filters.rows_in_bins(values, keys, selected, bins=bins)
    st.subheader(f"{len(ids):,} selected row(s)")
    rows = filters.row_list(table, scores, ids)
    row_table(rows, f"dist_rows_{component}_{facet_label}_{bins}",
              caption="Select a row to open it in the inspector." + (" Showing the first 1,000." if len(ids) > 1000 else ""))
else:
    st.caption("No bars selected.")
