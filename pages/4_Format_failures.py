"""Format failures: counts by reason, the rows where format failed but the reward did not, and where it broke."""

import streamlit as st

from dashboard import figures, formatting, links, numbers, url_state
from dashboard.filters import take
from dashboard.state import bootstrap, open_in_inspector, options_note, row_table

PAGE_SIZE = 10
LINK_PAGE = "format_failures"
WIDGETS = {"reason": "ff_reason", "task": "ff_task", "run": "ff_run", "page": "ff_page"}

ctx = bootstrap("Format failures")
table = ctx.table
scores = ctx.scores()

head, link_slot = st.columns([3, 1], vertical_alignment="bottom")
head.title("Format failures")
options_note(ctx)

counts = formatting.reason_counts(table, scores)
if not len(counts):
    st.success("Every trace row passed the format check.")
    st.stop()

choices = formatting.filter_choices(table, scores)
all_pages = -(-len(formatting.failure_ids(table, scores)) // PAGE_SIZE)
fields = links.failures_fields(counts["reason"].tolist(), choices["task_id"], choices["run"], all_pages)
incoming = url_state.incoming(LINK_PAGE)
if incoming is not None:  # a link: its filters and page of the list
    values, notes = links.decode(incoming, fields)
    for name, key in WIDGETS.items():
        st.session_state[key] = list(values[name]) if name != "page" else values[name]
    url_state.show_notes(notes)

left, right = st.columns([3, 2])
left.plotly_chart(figures.reason_bars(counts), key="ff_reasons")
with right:
    for reason, rows, positive, meaning in counts.itertuples(index=False):
        st.text(f"{reason} — {numbers.plural(rows, 'row')} ({positive:,} reward-positive)\n{meaning}")

f1, f2, f3 = st.columns(3)
reasons = f1.multiselect("Reason", counts["reason"].tolist(), key="ff_reason")
tasks = f2.multiselect("Task", choices["task_id"], key="ff_task")
runs = f3.multiselect("Run", choices["run"], key="ff_run")
ids, positive = formatting.failure_ids(table, scores, tasks=tasks, reasons=reasons, runs=runs, with_positive=True)
st.caption(f"{numbers.plural(len(ids), 'failing row')}; {positive:,} of them still "
           f"{'has' if positive == 1 else 'have'} a positive task reward and come first.")

d1, d2, _ = st.columns([1, 1, 4])
d1.download_button(
    "Download CSV", lambda: formatting.to_csv_bytes(formatting.export_frame(ctx.run.with_text(ids), scores, ids)),
    file_name="format_failures.csv", mime="text/csv", key="ff_csv", on_click="ignore",
)
d2.download_button(
    "Download JSONL", lambda: formatting.to_jsonl_bytes(formatting.export_frame(ctx.run.with_text(ids), scores, ids)),
    file_name="format_failures.jsonl", mime="application/jsonl", key="ff_jsonl", on_click="ignore",
)

tab_rows, tab_list = st.tabs(["Where the format broke", "All failing rows"])
with tab_list:
    row_table(formatting.failure_table(table, scores, ids[:2000]), "ff_list",
              caption="Select a row to open it in the inspector." + (" Showing the first 2,000." if len(ids) > 2000 else ""))
with tab_rows:
    pages = max(1, -(-len(ids) // PAGE_SIZE))
    if not 1 <= st.session_state.get("ff_page", 1) <= pages:
        st.session_state["ff_page"] = 1  # the filters changed under a remembered page
    st.session_state.setdefault("ff_page", 1)
    page = st.columns([1, 4])[0].number_input(f"Page (of {pages})", 1, pages, key="ff_page") if pages > 1 else 1
    shown = ctx.run.with_text(ids[(page - 1) * PAGE_SIZE : page * PAGE_SIZE])  # their text, read once
    task_rewards = take(scores, shown.index, ["task_reward"])["task_reward"].to_numpy()
    for row_id, task_reward in zip(shown.index, task_rewards, strict=True):
        row = shown.loc[row_id]
        with st.container(border=True):
            head, button = st.columns([5, 1])
            head.text(formatting.format_header(row_id, row, task_reward))
            if button.button("Open in inspector", key=f"ff_open_{row_id}"):
                open_in_inspector(row_id)
            try:
                view = formatting.break_view(ctx.explain(row_id))
            except ValueError:
                view = formatting.row_break_view(row)
            st.text(formatting.describe_break(view))
            st.code(view.tail, language=None, wrap_lines=True)
            if view.recovered_text is not None:
                st.text(f"Recovered anyway ({view.recovered_source}):")
                st.code(view.recovered_text, language=None, wrap_lines=True)
            else:
                st.text("Nothing recovered: the answer was compared with the whole response.")

params = links.encode({"reason": reasons, "task": tasks, "run": runs, "page": page}, fields)
url_state.publish(LINK_PAGE, params)
url_state.link_box(params, where=link_slot)
