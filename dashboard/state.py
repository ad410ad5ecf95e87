"""The one Streamlit-aware module: ``bootstrap()`` every page calls first, and session state.

::

    from dashboard.state import bootstrap
    ctx = bootstrap("Inspector")

``bootstrap`` sets the page config, draws the sidebar data-source chooser,
loads and scores the chosen files (once per file content, with a progress bar)
and returns an :class:`AppContext`. Problems are shown as friendly messages and
stop the page; tracebacks only go to the server log.

Widget values do not survive a page switch in Streamlit, so every sidebar
choice is mirrored into a plain session-state key (``rs_*``) that does.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import auth, filters, loading, navigation, numbers, sources, tuning, uploads
from dashboard.loading import LoadedRun
from dashboard.sources import DataSource, FilePlan, LoadError
from scoring.rollouts import ROLES, ColumnMapping
from scoring.verifier import TraceEvaluation

log = logging.getLogger("rolloutscope.dashboard")

APP_TITLE = "Rolloutscope"
INSPECTOR_PAGE = "pages/1_Inspector.py"

KIND_SAMPLE, KIND_UPLOAD, KIND_PATH = "Sample data", "Upload files", "Local folder or glob"
KINDS = (KIND_SAMPLE, KIND_UPLOAD, KIND_PATH)

# session-state keys (plain keys survive page switches; widget keys end in _w)
K_KIND = "rs_kind"
K_UPLOAD_SOURCE = "rs_upload_source"
K_PATH_SOURCE = "rs_path_source"
K_PATH_TEXT = "rs_path_text"
K_IMAGE_ROOT = "rs_image_root"
K_MAPPINGS = "rs_mappings"
K_SCORER = "rs_simple_scorer"
K_RUNS = "rs_runs"
K_OPTIONS = "rs_options"
K_OPTIONS_FOR = "rs_options_for"
K_KEYS = "rs_content_keys"
K_SELECTED = "rs_selected_row"
K_PROMPTED = "rs_mapping_prompted"
K_UPLOAD_ERROR = "rs_upload_error"
K_UPLOAD_FOLDER = "rs_upload_folder"
K_DIALOG = "rs_dialog_shape"

K_FOLLOW = "rs_follow"
K_FOLLOW_SECONDS = "rs_follow_seconds"
K_FOLLOW_CHECKED = "rs_follow_checked"
K_FOLLOW_NOTE = "rs_follow_note"

DATA_ENV = "ROLLOUTSCOPE_DATA"
#: The follow switch's default interval, seconds ($ROLLOUTSCOPE_FOLLOW_SECONDS).
FOLLOW_ENV = "ROLLOUTSCOPE_FOLLOW_SECONDS"
FOLLOW_DEFAULT_SECONDS = 30
FOLLOW_MIN_SECONDS = 1


# --------------------------------------------------------------------------- the context


@dataclass
class AppContext:
    """What a page gets from :func:`bootstrap`."""

    run: LoadedRun
    options: dict[str, Any]

    @property
    def table(self) -> pd.DataFrame:
        """Scored rows, index ``row_id`` (``<file>:<line>``, stable for the same files)."""
        return self.run.table

    @property
    def errors(self) -> pd.DataFrame:
        """Unreadable rows and files: file, line, field, reason, severity, unit."""
        return self.run.errors

    @property
    def source_label(self) -> str:
        return self.run.label

    @property
    def scored_options(self) -> dict[str, Any]:
        """The options the table was scored with."""
        return tuning.scored_options(self.run.table)

    def scores(self, options: dict[str, Any] | None = None) -> pd.DataFrame:
        """score / task_reward / format / solved per row under ``options`` (default: current)."""
        return tuning.scores(self.run.table, self.options if options is None else options)

    def explain(self, row_id: Any, **overrides: Any) -> TraceEvaluation:
        """Re-run the verifier for one row (cached); ValueError for simple-scorer rows."""
        return self.run.explain(row_id, **overrides)

    def load_image(self, row_id: Any):
        """``(PIL.Image or None, warning)``; warning is '' when fine."""
        return self.run.load_image(row_id)

    def row(self, row_id: Any) -> pd.Series:
        return self.run.row(row_id)


# --------------------------------------------------------------------------- plain helpers


def select_row(row_id: Any) -> None:
    """Remember the row to open; ``st.switch_page(INSPECTOR_PAGE)`` then opens it."""
    st.session_state[K_SELECTED] = row_id


def selected_row() -> Any | None:
    return st.session_state.get(K_SELECTED)


def open_in_inspector(row_id: Any) -> None:
    """Select a row and switch to the inspector page (if it exists)."""
    select_row(row_id)
    if os.path.exists(os.path.join(sources.APP_ROOT, INSPECTOR_PAGE)):
        st.switch_page(INSPECTOR_PAGE)
    else:
        st.info(plain(f"Row {row_id} selected; the inspector page is not available in this build."))


def current_options() -> dict[str, Any]:
    """The tuning options in session state (``bootstrap`` starts them from how the table was scored)."""
    options = st.session_state.get(K_OPTIONS)
    return dict(options) if options is not None else dict(tuning.DEFAULT_OPTIONS)


def set_options(options: dict[str, Any]) -> None:
    """Replace the current options (the Tuning page calls this); invalid ones raise ValueError."""
    problem = tuning.validate(options)
    if problem:
        raise ValueError(problem)
    st.session_state[K_OPTIONS] = tuning.normalised(options)


_MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~$:")


def plain(text: Any) -> str:
    """Escape Markdown so data (file names, messages quoting rows) shows as typed in st.error/info."""
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIALS else ch for ch in str(text))


def sync_widget(widget_key: str, value: Any) -> None:
    """Hand a widget its remembered value (call right before creating it).

    Widget state does not survive a page switch, so the remembered value lives
    in a plain session-state key and is given back to the widget on every run.
    """
    st.session_state[widget_key] = value


def _remember(store_key: str, widget_key: str) -> Callable[[], None]:
    def callback() -> None:
        st.session_state[store_key] = st.session_state.get(widget_key)

    return callback


def default_path() -> str:
    """The files, folders or globs given on the command line (``streamlit run app.py -- PATH...``, one
    per line), else $ROLLOUTSCOPE_DATA."""
    args: list[str] = []
    if sys.argv and os.path.realpath(sys.argv[0]) == os.path.realpath(sources.APP_ROOT / "app.py"):
        args = [a for a in sys.argv[1:] if not a.startswith("-")]
    return "\n".join(args) if args else os.environ.get(DATA_ENV, "")


# --------------------------------------------------------------------------- sidebar


def _upload_folder() -> uploads.UploadFolder:
    """This session's private staging folder (removed when the session's state is dropped)."""
    folder = st.session_state.get(K_UPLOAD_FOLDER)
    if folder is None or folder.removed:
        folder = uploads.UploadFolder()
        st.session_state[K_UPLOAD_FOLDER] = folder
    folder.touch()
    return folder


def _on_upload() -> None:
    files = st.session_state.get("rs_upload_w") or []
    st.session_state[K_UPLOAD_ERROR] = ""
    if not files:
        st.session_state[K_UPLOAD_SOURCE] = None
        folder = st.session_state.pop(K_UPLOAD_FOLDER, None)
        if folder is not None:
            folder.remove()
        return
    try:
        root = _upload_folder().path
        st.session_state[K_UPLOAD_SOURCE] = sources.stage_uploads(((f.name, f.getvalue()) for f in files), root)
    except LoadError as exc:
        st.session_state[K_UPLOAD_SOURCE] = None
        st.session_state[K_UPLOAD_ERROR] = str(exc)


def _on_path() -> None:
    """Load: resolve the folder/glob again and re-read the files (new steps, grown files)."""
    st.session_state[K_PATH_TEXT] = st.session_state.get("rs_path_w", "")
    st.session_state[K_IMAGE_ROOT] = st.session_state.get("rs_image_root_w", "")
    st.session_state[K_PATH_SOURCE] = None
    st.session_state[K_KEYS] = {}


def _choose_source() -> DataSource | None:
    """Sidebar: which data. Returns the source, or None with a message shown."""
    sidebar = st.sidebar
    path_box, path_note = sources.path_box_policy(st.get_option("server.address"))
    path_default = default_path() if path_box else ""
    if K_KIND not in st.session_state:
        st.session_state[K_KIND] = KIND_PATH if path_default else KIND_SAMPLE
        st.session_state[K_PATH_TEXT] = path_default
    sync_widget("rs_kind_w", st.session_state[K_KIND])
    kind = sidebar.radio("Data", KINDS, key="rs_kind_w", on_change=_remember(K_KIND, "rs_kind_w"))
    st.session_state[K_KIND] = kind
    source: DataSource | None = None
    if kind == KIND_SAMPLE:
        try:
            source = sources.sample_source()
        except LoadError as exc:
            sidebar.error(plain(exc))
            return None
    elif kind == KIND_UPLOAD:
        sidebar.file_uploader(
            "Rollout files (.jsonl .json .parquet .csv, gzipped too) and their images, or a .zip of either",
            accept_multiple_files=True,
            key="rs_upload_w",
            on_change=_on_upload,
        )
        problem = st.session_state.get(K_UPLOAD_ERROR)
        source = st.session_state.get(K_UPLOAD_SOURCE)
        folder = st.session_state.get(K_UPLOAD_FOLDER)
        if folder is not None:
            folder.touch()  # in use: the time-to-live counts from the last use
        if problem:
            sidebar.error(plain(problem))
        if source is None:
            if not problem:
                sidebar.info("Drop rollout files here (and their images, or a .zip of them).")
            return None
        sidebar.text(f"Using: {source.label}")
    elif not path_box:
        sidebar.info(path_note)
        return None
    else:
        if path_note:
            sidebar.caption(plain(path_note))
        sync_widget("rs_path_w", st.session_state.get(K_PATH_TEXT, ""))
        sync_widget("rs_image_root_w", st.session_state.get(K_IMAGE_ROOT, ""))
        with sidebar.form("rs_path_form", border=False):
            st.text_area("Files, folders or globs, one per line (e.g. /runs/exp1/**/*.jsonl)", key="rs_path_w",
                         height=68)
            st.text_input("Image folder or .zip (optional)", key="rs_image_root_w")
            st.form_submit_button("Load", on_click=_on_path)
        text = st.session_state.get(K_PATH_TEXT, "")
        if not text:
            sidebar.info("Enter a file, a folder or a glob pattern, then Load. No upload size limit applies.")
            return None
        source = st.session_state.get(K_PATH_SOURCE)
        if source is None:
            try:
                source = sources.source_from_path(text, image_root=st.session_state.get(K_IMAGE_ROOT) or None)
            except LoadError as exc:
                sidebar.error(plain(exc))
                return None
            st.session_state[K_PATH_SOURCE] = source
        sidebar.caption("The files are read once; press Load again to pick up new or grown files.")
    return _with_reading_options(source)


def _with_reading_options(source: DataSource) -> DataSource:
    if source.kind == "dataset":  # scored already: its options are in its manifest
        st.sidebar.caption("A scored dataset: opened as it was scored, nothing rescored.")
        return source
    sidebar = st.sidebar
    with sidebar.expander("Reading options"):
        sync_widget("rs_scorer_w", st.session_state.get(K_SCORER, sources.DEFAULT_SIMPLE_SCORER))
        scorer = st.selectbox(
            "Simple scorer (files with a plain gold answer)",
            sources.SIMPLE_SCORERS,
            key="rs_scorer_w",
            on_change=_remember(K_SCORER, "rs_scorer_w"),
        )
        sync_widget("rs_runs_w", st.session_state.get(K_RUNS, False))
        per_file = st.toggle(
            "One run per file", key="rs_runs_w", on_change=_remember(K_RUNS, "rs_runs_w"),
            help="By default files in one folder form one run, unless the rows carry their own run label.",
        )
    mappings = st.session_state.get(K_MAPPINGS, {})
    source = source.with_options(simple_scorer=scorer, runs="file" if per_file else "folder")
    for shape, text in mappings.items():
        source = source.with_mapping(shape, ColumnMapping.from_json(text))
    return source


def follow_seconds_default() -> int:
    """The follow interval to start from: $ROLLOUTSCOPE_FOLLOW_SECONDS, else 30 s."""
    try:
        return max(FOLLOW_MIN_SECONDS, int(float(os.environ.get(FOLLOW_ENV, FOLLOW_DEFAULT_SECONDS))))
    except ValueError:
        return FOLLOW_DEFAULT_SECONDS


def _follow_check(source: DataSource, run: LoadedRun) -> None:
    """Look at the files again when the interval has passed: score what is new (only that) and,
    when the rows changed, rerun every page on the new run -- the selected row, the filters and
    the tuning options stay as they were."""
    seconds = float(st.session_state.get(K_FOLLOW_SECONDS, follow_seconds_default()))
    last = st.session_state.get(K_FOLLOW_CHECKED, 0.0)
    if time.monotonic() - last < seconds:
        return
    try:
        fresh = sources.followed(source)
        latest, updates = loading.check(fresh)
    except LoadError as exc:
        st.session_state[K_FOLLOW_NOTE] = f"Follow: {exc}"
        return
    except Exception as exc:  # never a traceback in the browser
        log.exception("following %s failed", source.label)
        st.session_state[K_FOLLOW_NOTE] = f"Follow: could not re-check the files ({type(exc).__name__}: {exc})"
        return
    finally:  # the interval counts from the end of a look: a slow look is not followed by another at once
        st.session_state[K_FOLLOW_CHECKED] = time.monotonic()
    scored = sum(u.rows_scored for u in updates)
    st.session_state[K_FOLLOW_NOTE] = (
        f"Checked at {time.strftime('%H:%M:%S')}: "
        + (f"{scored:,} new rows scored." if latest.key != run.key else "nothing new.")
    )
    if latest.key == run.key:
        return
    if source.kind == "path":
        st.session_state[K_PATH_SOURCE] = fresh
    st.session_state.setdefault(K_KEYS, {})[fresh] = latest.key  # fresh keeps the source's reading options
    st.rerun()


def _follow_panel(source: DataSource, run: LoadedRun) -> None:
    """Sidebar: the follow switch (a folder, glob or dataset that a training job is writing to)."""
    if source.kind not in ("path", "dataset"):
        return
    sidebar = st.sidebar
    sync_widget("rs_follow_w", bool(st.session_state.get(K_FOLLOW, False)))
    follow = sidebar.toggle(
        "Follow (re-check for new files)", key="rs_follow_w", on_change=_remember(K_FOLLOW, "rs_follow_w"),
        help="Re-checks the folder every few seconds, scores only new or grown files and updates every page, "
        "keeping the selected row, the filters and the tuning options.",
    )
    if not follow:
        return
    sync_widget("rs_follow_seconds_w", int(st.session_state.get(K_FOLLOW_SECONDS, follow_seconds_default())))
    seconds = sidebar.number_input(
        "Every (seconds)", min_value=FOLLOW_MIN_SECONDS, max_value=3600, step=5, key="rs_follow_seconds_w",
        on_change=_remember(K_FOLLOW_SECONDS, "rs_follow_seconds_w"),
    )
    st.session_state[K_FOLLOW_SECONDS] = int(seconds)

    with sidebar:
        st.fragment(lambda: _follow_fragment(source, run), run_every=float(seconds))()


def _follow_fragment(source: DataSource, run: LoadedRun) -> None:
    _follow_check(source, run)
    note = st.session_state.get(K_FOLLOW_NOTE)
    if note:
        st.caption(plain(note))


def _load(source: DataSource) -> LoadedRun | None:
    """The scored run of ``source``. Its content key is fixed for the session when first loaded
    (a training job may be appending to the files: they are re-read on Load, not on every click)."""
    try:
        keys = st.session_state.setdefault(K_KEYS, {})
        key = keys.get(source)
        run = loading.cached(key) if key else None
        if run is None:
            bar = st.progress(0.0, text=plain(f"Loading {source.label}…"))

            def progress(fraction: float, text: str) -> None:
                bar.progress(min(max(fraction, 0.0), 1.0), text=plain(text))

            run = loading.load_cached(source, progress, key=key)
            bar.empty()
        keys[source] = run.key
        return run
    except LoadError as exc:
        st.error(plain(exc))
    except Exception as exc:  # never a traceback in the browser
        log.exception("loading %s failed", source.label)
        st.error(plain(f"Could not load {source.label}: {type(exc).__name__}: {exc}"))
    return None


# --------------------------------------------------------------------------- column mapping dialog

#: Roles offered in the mapping dialog, most useful first.
MAPPED_ROLES = (
    "response", "answer_gt", "annotation_gt", "reward_contract", "gold", "prompt", "image",
    "trace_output_mode", "id", "task_id", "step", "run", "sample_index",
)
NOT_MAPPED = "(detect)"


def _close_dialog() -> None:
    st.session_state[K_DIALOG] = None


def _open_dialog(shape_key: str) -> None:
    st.session_state[K_DIALOG] = shape_key


def has_plain_gold(plan: FilePlan) -> bool:
    """Whether a file's first rows hold a plain gold answer without trace ground truth: those rows
    are scored by the chosen simple scorer (the trace rows beside them by the verifier)."""
    return plan.kind == sources.SIMPLE or (plan.layout is not None and plan.layout.plain_gold)


def plain_gold_files(run: LoadedRun) -> list[FilePlan]:
    """The files the mapping dialog asks a simple scorer for."""
    return [plan for plan in run.plans if has_plain_gold(plan)]


def _scorer_question(plan: FilePlan) -> str:
    """The simple-scorer question of the mapping dialog (the chosen scorer, or the current one)."""
    current = st.session_state.get(K_SCORER, sources.DEFAULT_SIMPLE_SCORER)
    scorers = sources.SIMPLE_SCORERS
    return st.selectbox(
        "Simple scorer for the rows with a plain gold answer",
        scorers,
        index=scorers.index(current) if current in scorers else 0,
        key=f"rs_map_{plan.shape_key}_scorer",
        help="Rows that hold trace ground truth always go to the trace verifier; a row with a plain "
        "gold answer (e.g. 219) is scored by this scorer. It applies to every file.",
    )


@st.dialog("Map columns to roles", width="large", on_dismiss=_close_dialog)
def mapping_dialog(plan: FilePlan) -> None:
    """Choose which column plays which role for one file shape, and the simple scorer for the rows
    with a plain gold answer (unrecognised files, and files that have such rows)."""
    if plan.kind == sources.UNRECOGNISED:
        st.text(f"{plan.name} was not recognised:\n{plan.message}")
    else:
        st.text(f"{plan.name} has rows with a plain gold answer ({plan.layout.found.get('gold', 'gold')}) "
                "and no trace ground truth: choose the simple scorer for them.")
    st.text("Columns found: " + ", ".join(plan.columns))
    scorer = _scorer_question(plan)
    current = plan.mapping.roles if plan.mapping else {}
    choices = (NOT_MAPPED, *plan.columns)
    chosen: dict[str, str] = {}
    cols = st.columns(2)
    for i, role in enumerate(MAPPED_ROLES):
        default = current.get(role, NOT_MAPPED)
        index = choices.index(default) if default in choices else 0
        value = cols[i % 2].selectbox(role, choices, index=index, help=ROLES.get(role),
                                      key=f"rs_map_{plan.shape_key}_{role}")
        if value != NOT_MAPPED:
            chosen[role] = value
    if st.button("Apply mapping", type="primary"):
        try:
            mapping = ColumnMapping.of(**chosen)
        except ValueError as exc:
            st.error(plain(exc))
            return
        mappings = dict(st.session_state.get(K_MAPPINGS, {}))
        mappings[plan.shape_key] = mapping.to_json()
        st.session_state[K_MAPPINGS] = mappings
        st.session_state[K_SCORER] = scorer
        _close_dialog()
        st.rerun()


def _mapping_prompt(run: LoadedRun) -> None:
    """Warn about unrecognised files and open the mapping dialog once per new file shape (and on
    request); offer the dialog's simple-scorer question for files with plain-gold rows."""
    unrecognised = run.unrecognised
    plain_gold = [p for p in plain_gold_files(run) if p not in unrecognised]
    if not unrecognised and not plain_gold:
        return
    if unrecognised:
        names = ", ".join(p.name for p in unrecognised)
        st.sidebar.warning(plain(f"{numbers.plural(len(unrecognised), 'file')} not recognised: {names}"))
    for plan in unrecognised:
        st.sidebar.button(plain(f"Map columns of {plan.name}"), key=f"rs_map_open_{plan.shape_key}",
                          on_click=_open_dialog, args=(plan.shape_key,))
    shapes = set()
    for plan in plain_gold:
        if plan.shape_key in shapes:
            continue
        shapes.add(plan.shape_key)
        scorer = st.session_state.get(K_SCORER, sources.DEFAULT_SIMPLE_SCORER)
        st.sidebar.caption(plain(f"{plan.name}: rows with a plain gold answer are scored by {scorer}."))
        st.sidebar.button(plain(f"Choose the simple scorer for {plan.name}"), key=f"rs_map_open_{plan.shape_key}",
                          on_click=_open_dialog, args=(plan.shape_key,))
    prompted = st.session_state.setdefault(K_PROMPTED, set())
    if unrecognised and unrecognised[0].shape_key not in prompted:
        prompted.add(unrecognised[0].shape_key)
        _open_dialog(unrecognised[0].shape_key)
    shape = st.session_state.get(K_DIALOG)
    plan = next((p for p in (*unrecognised, *plain_gold) if p.shape_key == shape), None)
    if plan is not None:
        mapping_dialog(plan)


# --------------------------------------------------------------------------- bootstrap


def bootstrap(page: str) -> AppContext:
    """First line of every page: config, sidebar data chooser, load + score (cached), context.

    Stops the page (``st.stop()``) with a friendly message when there is no data.
    """
    st.set_page_config(page_title=f"{page} · {APP_TITLE}", page_icon="🔭", layout="wide")
    auth.require_login(APP_TITLE)  # with [auth] in secrets.toml: nothing but a login button until signed in
    navigation.sidebar()
    try:
        source = _choose_source()
    except Exception as exc:  # a bug in the chooser must not show a traceback
        log.exception("choosing the data source failed")
        st.error(plain(f"Could not read the data choice: {type(exc).__name__}: {exc}"))
        st.stop()
    if source is None:
        st.title(page)
        st.info("Choose the data in the sidebar.")
        st.stop()
    run = _load(source)
    if run is None:
        st.stop()
    # other data, or the same data scored otherwise: the options start as scored; the same source
    # grown by new files (Load again, follow) keeps the user's tuning
    scored_for = json.dumps([run.source.kind, run.source.origin or run.source.label, run.source.upload_root,
                             tuning.scored_options(run.table)], sort_keys=True, default=str)
    if st.session_state.get(K_OPTIONS_FOR) != scored_for or st.session_state.get(K_OPTIONS) is None:
        st.session_state[K_OPTIONS] = tuning.scored_options(run.table)
        st.session_state[K_OPTIONS_FOR] = scored_for
    options = current_options()
    st.sidebar.text(run.label)
    _problems_caption(run)
    if options != tuning.scored_options(run.table):
        st.sidebar.caption("Tuning options differ from the scored ones (see Tuning).")
    _mapping_prompt(run)
    _follow_panel(source, run)
    if not len(run.table):
        st.title(page)
        st.text(f"No rollout could be read from {run.source.label}.")
        if len(run.errors):
            st.dataframe(run.errors, hide_index=True)
        st.stop()
    return AppContext(run=run, options=options)


def _problems_caption(run: LoadedRun) -> None:
    """The sidebar's count of reading problems (said to be deliberate when the sample's lists name them)."""
    if not len(run.errors):
        return
    errors = int((run.errors["severity"] == "error").sum())
    counts = numbers.counted([(errors, "error"), (len(run.errors) - errors, "warning")])
    if run.source.kind == "sample" and filters.deliberate_problems(run.errors, sources.SAMPLE_DIR).all():
        files = ", ".join(sorted(run.errors["file"].astype(str).unique()))
        st.sidebar.caption(plain(f"{counts} reading the files — deliberate: the sample's {files} is broken on "
                                 "purpose to show how problems are reported (see Overview)."))
    else:
        st.sidebar.caption(plain(f"{counts} reading the files — see Overview."))


# --------------------------------------------------------------------------- small shared widgets


def table_config(frame: pd.DataFrame, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """``column_config`` showing every number column of ``frame`` under the app's number policy
    (:mod:`dashboard.numbers`); ``overrides`` (column -> config) win."""
    config: dict[str, Any] = {}
    for name, fmt in numbers.table_formats(frame).items():
        rounded = fmt == numbers.FRACTION_FORMAT
        config[name] = st.column_config.NumberColumn(
            format=fmt, help=f"{numbers.SIGNIFICANT} significant digits; the table's download (CSV) holds exact values"
            if rounded else None
        )
    config.update(overrides or {})
    return config


def metric_row(*metrics: dict[str, Any]) -> None:
    """Metrics side by side, each as wide as its label and value, wrapping onto a new line when the
    page is narrow -- so no label is ever cut off (``st.metric`` keyword arguments per metric)."""
    with st.container(horizontal=True, gap="medium"):
        for metric in metrics:
            st.metric(**metric, width="content", border=True)


def show_table(frame: Any, *, column_config: dict[str, Any] | None = None, **kwargs: Any):
    """``st.dataframe`` under the number policy: no cell shows a float's full expansion."""
    frame = numbers.numeric_columns(frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame))
    return st.dataframe(frame, column_config=table_config(frame, column_config), **kwargs)


def row_table(frame: pd.DataFrame, key: str, *, height: int | str = "auto", caption: str = "") -> None:
    """A table of rows (index ``row_id``); selecting one opens it in the inspector."""
    if caption:
        st.caption(caption)
    event = show_table(frame, key=key, on_select="rerun", selection_mode="single-row", height=height)
    rows = event.selection.rows if event is not None else []
    if rows:
        open_in_inspector(frame.index[rows[0]])


def options_note(ctx: AppContext) -> None:
    """One short line saying which scores the page shows; every option in an expander below it."""
    options = ctx.options
    scored = ctx.scored_options
    same = {k: v for k, v in options.items() if k != "solved_threshold"} == {
        k: v for k, v in scored.items() if k != "solved_threshold"
    }
    what = "as scored" if same else "re-weighted with the Tuning options"
    st.caption(f"Scores {what} · solved means overall ≥ {options['solved_threshold']:g}")
    with st.expander("Scoring options"):
        st.text(
            f"Data: {ctx.source_label}\n"
            f"Output mode: {tuning.MODE_LABELS.get(options['mode'], options['mode'])}\n"
            f"Annotation formula: {options['formula']}\n"
            f"Weights: answer {options['answer_weight']:g}, annotation {options['annotation_weight']:g}, "
            f"format {options['format_weight']:g}\n"
            "Change them on the Tuning page; every page follows."
        )
