"""Distributions: histograms of every reward component, faceted; select bars to list their rows."""

import streamlit as st

from dashboard import figures, filters, links, numbers, url_state
from dashboard.state import bootstrap, options_note, row_table

LINK_PAGE = "distributions"
BINS = (5, 50, 20)  # lowest, highest, default
WIDGETS = {"component": "dist_component", "facet": "dist_facet", "bins": "dist_bins"}

ctx = bootstrap("Distributions")
table = ctx.table
scores = ctx.scores()
threshold = ctx.options["solved_threshold"]
fields = links.distributions_fields(filters.COMPONENTS, list(filters.FACETS), BINS)

incoming = url_state.incoming(LINK_PAGE)
notes = []
if incoming is not None:  # a link: its component, facet and bins
    values, notes = links.decode(incoming, fields)
    values["bins"] = values["bins"] - (values["bins"] - BINS[0]) % 5  # the slider's steps of 5
    for name, key in WIDGETS.items():
        st.session_state[key] = values[name]
for field in fields:
    st.session_state.setdefault(WIDGETS[field.key], field.default)

head, link_slot = st.columns([3, 1], vertical_alignment="bottom")
head.title("Distributions")
options_note(ctx)
url_state.show_notes(notes)

left, mid, right = st.columns([4, 2, 2])
component = left.segmented_control("Component", filters.COMPONENTS, key="dist_component", required=True)
facet_label = mid.selectbox("Facet by", list(filters.FACETS), key="dist_facet")
bins = right.slider("Bins", BINS[0], BINS[1], step=5, key="dist_bins")
component = component or "overall"
facet = filters.FACETS[facet_label]
params = links.encode({"component": component, "facet": facet_label, "bins": bins}, fields)
url_state.publish(LINK_PAGE, params)
url_state.link_box(params, where=link_slot)

values = filters.component_values(table, scores, component)
keys = filters.facet_keys(table, facet)
counts = filters.binned(values, keys, bins=bins)
applicable = int(values.notna().sum())
st.caption(
    f"{applicable:,} of {numbers.plural(len(table), 'row')} have a value for {component} · dashed line: "
    f"solved_threshold {threshold:g} · drag a box or click bars to list their rows"
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
    st.subheader(f"{numbers.plural(len(ids), 'selected row')}")
    rows = filters.row_list(table, scores, ids)
    row_table(rows, f"dist_rows_{component}_{facet_label}_{bins}",
              caption="Select a row to open it in the inspector." + (" Showing the first 1,000." if len(ids) > 1000 else ""))
else:
    st.caption("No bars selected.")
