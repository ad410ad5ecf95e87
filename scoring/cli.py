"""``rolloutscope`` / ``python -m scoring``: score, summarise and re-weight rollout files.

    rolloutscope score ROLLOUTS... [-o scored.parquet]   files in, scored table out (+ errors file)
    rolloutscope score ROLLOUTS... -o DIR/               into a scored dataset, rescoring only what changed
    rolloutscope summary SCORED...                       per task / type / step means, format failures, solve rate
    rolloutscope reweight SCORED -o OUT [--formula ...]  new weights on a scored table, no rescoring
    rolloutscope inspect ROLLOUTS...                     what each file was detected as
    rolloutscope suspects SCORED [-o FILE.csv]           suspected ground-truth errors (rollout consensus)
    rolloutscope app [PATH...] [--port P]                the dashboard, on the sample or on PATH (scoring.launch)

Exit codes: 0 done; 1 an input could not be read or gave no usable row (the
rest is still scored and written), nothing to write, or an output could not be
written; 2 bad command line or option; 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .rewards import DEFAULT_READING, READINGS

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

OUTPUT_FORMATS = ("parquet", "csv", "jsonl")
#: ``score --to dataset``: a folder of Parquet parts and a manifest (scoring.datasets).
DATASET = "dataset"


class CliError(Exception):
    """A message for the user and an exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- parser


def _add_scoring_options(parser: argparse.ArgumentParser, *, for_score: bool) -> None:
    group = parser.add_argument_group("scorer options (run-wide; override per-row values)")
    group.add_argument(
        "--mode",
        dest="trace_reward_mode",
        metavar="MODE",
        help="answer | answer_and_annotation (default: each row's trace_output_mode)",
    )
    group.add_argument(
        "--formula",
        dest="trace_annotation_reward_formula",
        metavar="FORMULA",
        default="gated",
        help="gated (default) | additive",
    )
    group.add_argument("--answer-weight", type=float, default=0.5, metavar="W", help="default 0.5")
    group.add_argument("--annotation-weight", type=float, default=0.5, metavar="W", help="default 0.5")
    group.add_argument("--format-weight", type=float, default=0.0, metavar="W", help="in [0, 1]; default 0")
    group.add_argument(
        "--solved-threshold",
        type=float,
        default=0.999,
        metavar="T",
        help="score >= T is solved; default 0.999",
    )
    if for_score:
        group.add_argument(
            "--point-half-life-px",
            type=float,
            default=None,
            metavar="PX",
            help="explicit half-life for points",
        )
        simple = parser.add_argument_group("simple scorers (rows with a plain gold answer)")
        simple.add_argument(
            "--scorer",
            default="trace",
            metavar="NAME",
            help="trace (default) | exact_match | contains | last_number | numeric_close",
        )
        simple.add_argument(
            "--gold-key", default="gold", metavar="KEY", help="key of the gold in meta (default gold)"
        )
        simple.add_argument(
            "--no-normalise", action="store_true", help="exact_match/contains: compare raw text"
        )
        simple.add_argument(
            "--tolerance", type=float, default=0.01, metavar="REL", help="numeric_close tolerance"
        )
        simple.add_argument(
            "--number-reading",
            dest="reading",
            choices=READINGS,
            default=DEFAULT_READING,
            help="last_number/numeric_close: how a number is read; agentdescent (default, "
            "agentdescent.rewards 0.7.0) or signed ('-$18' and the Unicode minus are negative)",
        )


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reading")
    group.add_argument(
        "--layout", metavar="NAME", help="canonical | verl | trl | lm_eval (default: detected)"
    )
    group.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="ROLE=COLUMN",
        help="use COLUMN for ROLE (repeatable); dotted paths reach nested fields, e.g. answer_gt=extra_info.gt",
    )
    group.add_argument(
        "--logged",
        action="append",
        default=[],
        metavar="COLUMN=COMPONENT",
        help="compare a logged reward column with a recomputed component (repeatable)",
    )
    group.add_argument("--mapping", metavar="JSON", help="a column mapping file (ColumnMapping JSON)")
    group.add_argument(
        "--instances",
        action="append",
        default=[],
        metavar="FILE",
        help="trace instance file(s): ground truth, image and size for rows that lack them",
    )
    group.add_argument(
        "--join", default="auto", choices=("auto", "id", "prompt", "order"), help="how to join instances"
    )
    group.add_argument("--images", metavar="DIR_OR_ZIP", help="folder or .zip archive holding the images")
    group.add_argument(
        "--no-image-sizes", action="store_true", help="do not read image headers for missing sizes"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rolloutscope",
        description="Score vision-language RL rollouts against their typed ground truth.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    score = sub.add_parser(
        "score",
        help="score rollout files into a table",
        description="Read rollout files (JSONL, JSONL.gz, JSON array, Parquet, CSV; canonical, verl, TRL, "
        "lm-eval layouts), score every row, write the table and an errors file beside it.",
    )
    score.add_argument("inputs", nargs="+", metavar="ROLLOUTS", help="rollout files")
    score.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output file (.parquet, .csv, .jsonl); "
        "default: <first input>.scored.parquet in the current folder",
    )
    score.add_argument(
        "--to",
        choices=(*OUTPUT_FORMATS, DATASET),
        help="output format when OUT has no known extension; dataset: OUT is a scored-dataset folder "
        "(also when OUT ends with a separator or is a folder)",
    )
    score.add_argument("--errors", metavar="FILE", help="errors file (default: <OUT stem>.errors.csv)")
    runs = score.add_mutually_exclusive_group()
    runs.add_argument(
        "--separate-runs", action="store_true", help="each file is its own run (label: file stem)"
    )
    runs.add_argument("--run", metavar="LABEL", help="label of the run (default: file stem / folder name)")
    _add_input_options(score)
    _add_scoring_options(score, for_score=True)
    perf = score.add_argument_group("output and speed")
    perf.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="processes (default: auto; 1 = none); with --engine ray: CPUs of a Ray started here",
    )  # fmt: skip
    perf.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="ray: score on Ray (RAY_ADDRESS, else a local Ray) into the dataset folder -o DIR/; "
        "inputs may be s3://... URIs (needs the extra rolloutscope[ray]; docs/ray.md)",
    )
    perf.add_argument(
        "--no-table", dest="keep_table", action="store_false",
        help="with -o DIR/: do not keep the opened table in DIR/table/ (the app then decodes the parts on "
        "its first open; keeping it decodes them once here, a peak of about 1 KB of memory per row)",
    )  # fmt: skip
    perf.add_argument("--strict", action="store_true", help="exit 1 when any row had an error")
    perf.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    perf.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show progress"
    )
    perf.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")

    summary = sub.add_parser(
        "summary",
        help="per task / type / step table of a scored file",
        description="Means, format failures and solve rate of scored tables, per task, annotation type and step "
        "(or per the columns given with --by).",
    )
    summary.add_argument("inputs", nargs="+", metavar="SCORED", help="scored tables written by 'score'")
    summary.add_argument("--by", metavar="COLS", help="comma-separated grouping columns (one table)")
    summary.add_argument("--format", dest="fmt", default="text", choices=("text", "csv", "json", "markdown"))
    summary.add_argument("-o", "--output", metavar="OUT", help="write the table here instead of stdout")
    summary.add_argument(
        "--solved-threshold",
        type=float,
        default=None,
        metavar="T",
        help="recount solved rows with this threshold",
    )

    reweight = sub.add_parser(
        "reweight",
        help="apply new options to a scored table without rescoring",
        description="Recompute task reward, overall, zero_reward and solved for new mode / formula / weights / "
        "format weight / solved threshold, from the stored components.",
    )
    reweight.add_argument("input", metavar="SCORED", help="a scored table written by 'score'")
    reweight.add_argument("-o", "--output", metavar="OUT", help="default: <input stem>.reweighted.<ext>")
    reweight.add_argument(
        "--to", choices=OUTPUT_FORMATS, help="output format when OUT has no known extension"
    )
    reweight.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    _add_scoring_options(reweight, for_score=False)

    _add_suspects_parser(sub)

    inspect = sub.add_parser("inspect", help="show what each rollout file was detected as (no scoring)")
    inspect.add_argument("inputs", nargs="+", metavar="ROLLOUTS")
    _add_input_options(inspect)
    inspect.add_argument("--scorer", default="trace", metavar="NAME", help="as for score")

    app = sub.add_parser(
        "app",
        help="open the dashboard on the sample data or on PATH",
        description="Start the dashboard (a Streamlit server) from any folder: on the bundled sample data, or on "
        "the rollout files, folders, quoted globs or scored datasets given. It listens on localhost unless "
        "--host says otherwise; other Streamlit options pass through (--server.maxUploadSize 200, "
        "--server.headless true, ...). Ctrl+C stops it.",
    )
    app.add_argument("paths", nargs="*", metavar="PATH", help="files, folders, globs or a scored dataset")
    app.add_argument("--host", metavar="HOST", help="address to listen on (default: localhost only; before "
                     "opening it to others read docs/serving.md: login, data roots)")
    app.add_argument("--port", type=_port, metavar="PORT", help="port to listen on (default 8501, or the next free one)")
    app.add_argument("--data-root", dest="data_roots", action="append", default=[], metavar="DIR",
                     help="a folder the app may read (repeatable; replaces ROLLOUTSCOPE_DATA_ROOTS)")
    return parser


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 1 and 65535, not {port}")
    return port


def _add_suspects_parser(sub) -> None:
    from .review import ConsensusSettings

    defaults = ConsensusSettings()
    suspects = sub.add_parser(
        "suspects",
        help="suspected ground-truth errors: instances whose rollouts agree with each other, not with it",
        description="One line per suspected ground-truth error (instance_id, kind, support, voters, agreement, "
        "confidence, consensus, ground_truth, ...), most confident first. Rows of one instance (and one ground "
        "truth) form a group; see docs/frames-and-review.md.",
    )
    suspects.add_argument("input", metavar="SCORED", help="a scored table written by 'score'")
    suspects.add_argument("-o", "--output", metavar="FILE.csv", help="write CSV here (default: standard output)")
    suspects.add_argument("--kind", choices=("answer", "annotation"), help="only this kind (default: both)")
    suspects.add_argument("--split-by", metavar="COLS", help="comma-separated columns that split groups, "
                          "e.g. run,step for GRPO groups (default: one group per instance and ground truth)")
    suspects.add_argument("--min-support", type=int, default=defaults.min_support, metavar="N",
                          help=f"rollouts holding the consensus, at least (default {defaults.min_support})")
    suspects.add_argument("--min-agreement", type=float, default=defaults.min_agreement, metavar="F",
                          help=f"share of voting rollouts holding it, at least (default {defaults.min_agreement})")
    suspects.add_argument("--agree-similarity", type=float, default=defaults.agree_similarity, metavar="S",
                          help=f"two predictions agree at this score (default {defaults.agree_similarity})")
    suspects.add_argument("--item-similarity-max", type=float, default=defaults.item_similarity_max, metavar="S",
                          help="an item matched below this contradicts the ground truth "
                          f"(default {defaults.item_similarity_max})")
    suspects.add_argument("--min-confidence", type=float, default=defaults.min_confidence, metavar="C",
                          help=f"report suspects at this confidence or more (default {defaults.min_confidence})")
    suspects.add_argument("--keep-frame-errors", action="store_true",
                          help="also report geometry consensus that is in another coordinate frame")
    suspects.add_argument("-q", "--quiet", action="store_true", help="print only errors")


# --------------------------------------------------------------------------- helpers


def _mapping(args):
    from .rollouts import ColumnMapping

    try:
        mapping = ColumnMapping.load(args.mapping) if args.mapping else ColumnMapping()
        extra = ColumnMapping.from_pairs(args.map, args.logged, layout=args.layout)
    except OSError as exc:
        raise CliError(
            f"cannot read mapping file {args.mapping}: {exc.strerror or exc}", EXIT_USAGE
        ) from None
    except ValueError as exc:
        raise CliError(f"bad column mapping: {exc}", EXIT_USAGE) from None
    return mapping.merged(extra)


def _output_format(path: Path, explicit: str | None) -> str:
    if explicit:
        return explicit
    name = path.name.lower()
    if name.endswith(".parquet") or name.endswith(".pq"):
        return "parquet"
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        return "jsonl"
    raise CliError(
        f"cannot tell the output format of {path} (use .parquet, .csv or .jsonl, or --to)", EXIT_USAGE
    )


def write_table(frame, path: Path, fmt: str) -> None:
    """Write a table as Parquet, CSV or JSONL (CLI output; raises CliError when it cannot)."""
    try:
        if path.parent and not path.parent.exists():
            raise CliError(f"cannot write {path}: folder {path.parent} does not exist")
        if fmt == "parquet":
            frame.to_parquet(path, index=False)
        elif fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_json(path, orient="records", lines=True, force_ascii=False)
    except CliError:
        raise
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise CliError(f"cannot write {path}: {reason}") from None


def read_table(path: str):
    """Read a scored table (Parquet, CSV or JSONL), or raise CliError."""
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: file not found")
    if p.is_dir():
        return _read_dataset(p)
    name = p.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            frame = pd.read_parquet(p)
        elif name.endswith((".csv", ".csv.gz")):
            frame = pd.read_csv(p, low_memory=False)
        elif name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".json")):
            frame = pd.read_json(p, lines=not name.endswith(".json"))
        else:
            raise CliError(f"{path}: unknown table format (expected .parquet, .csv or .jsonl)")
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"{path}: cannot read the table ({exc})") from None
    missing = [c for c in ("scorer", "score", "solved") if c not in frame.columns]
    if missing:
        raise CliError(
            f"{path}: not a scored table (no {', '.join(missing)} column); run 'rolloutscope score' first"
        )
    return frame


class _ProgressBar:
    def __init__(self, stream):
        self.stream = stream
        self.last = 0.0
        self.width = 30
        self.shown = False
        self.longest = 0

    def __call__(self, progress) -> None:
        now = time.monotonic()
        if progress.file and now - self.last < 0.1:  # a report without a file ends a part: always shown
            return
        self.last = now
        filled = int(self.width * progress.fraction)
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"scoring [{bar}] {progress.fraction:4.0%}  {progress.describe()}"
        self.stream.write(f"\r{line:<{self.longest}}")  # padded over a longer line before it
        self.longest = max(self.longest, len(line))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def expand_inputs(inputs: Sequence[str]) -> list[str]:
    """The rollout files named on the command line: a folder stands for the rollout files under
    it and a quoted glob (``'runs/**/*.jsonl'``) for its matches -- walked without following
    symlinked folders, inside ``ROLLOUTSCOPE_DATA_ROOTS`` when set, within the file-count and time
    budget; a file (or a ``.zip`` bundle) stays as given."""
    from .rollouts import AccessDenied, LimitExceeded, default_access, find_files, has_wildcards, rollout_name

    access = default_access()
    files: list[str] = []
    for given in inputs:
        walk = os.path.isdir(given) or (has_wildcards(given) and not os.path.exists(given))
        if not walk:
            files.append(given)
            continue
        try:
            found = find_files(given, access, keep=rollout_name)
        except (AccessDenied, LimitExceeded) as exc:
            raise CliError(str(exc)) from None
        if not found:
            raise CliError(f"no rollout files (.jsonl, .json, .parquet, .csv, gzipped too) match {given}")
        files.extend(str(p) for p in found)
    return files


def _say(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr)


# --------------------------------------------------------------------------- commands


def cmd_score(args) -> int:
    from concurrent.futures.process import BrokenProcessPool

    from .rollouts import file_stem
    from .runs import score_files

    mapping = _mapping(args)
    if args.workers is not None and args.workers < 1:
        raise CliError("--workers must be >= 1", EXIT_USAGE)
    first = Path(args.inputs[0])
    if args.engine == "ray":
        return _score_on_ray(args, mapping)
    args.inputs = expand_inputs(args.inputs)
    output = Path(args.output) if args.output else Path(file_stem(first) + ".scored.parquet")
    to_dataset = _dataset_output(args)
    fmt = DATASET if to_dataset else _output_format(output, args.to)
    errors_path = Path(args.errors) if args.errors else output.with_name(file_stem(output) + ".errors.csv")
    options = _batch_options(args)
    if to_dataset:
        return _score_into_dataset(args, options, mapping)
    show = args.progress if args.progress is not None else (sys.stderr.isatty() and not args.quiet)
    bar = _ProgressBar(sys.stderr) if show else None
    started = time.perf_counter()
    try:
        run = score_files(args.inputs, **_scoring_kwargs(args, options, mapping, bar))
    except ValueError as exc:  # bad image folder, join...
        raise CliError(str(exc), EXIT_USAGE) from None
    except BrokenProcessPool:
        raise CliError("a worker process died (out of memory?); try again with --workers 1") from None
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - started
    table, errors = run.table, run.errors

    file_errors = run.file_errors()
    for _, error in file_errors.iterrows():
        print(f"error: {error['file']}: {error['reason']}", file=sys.stderr)
    notes = errors[errors["line"].isna() & (errors["severity"] != "error")]
    for _, note in notes.iterrows():
        _say(args, f"note: {note['file']}: {note['reason']}")
    row_errors = errors[errors["line"].notna() & (errors["severity"] == "error")]
    if len(row_errors) and not args.quiet:
        for _, error in row_errors.head(5).iterrows():
            where = f"{error['file']}, {error['unit']} {error['line']}"
            if isinstance(error["field"], str) and error["field"]:
                where += f", field '{error['field']}'"
            print(f"error: {where}: {error['reason']}", file=sys.stderr)
        if len(row_errors) > 5:
            print(f"... and {len(row_errors) - 5:,} more row errors", file=sys.stderr)

    if len(table):
        write_table(table, output, fmt)
    write_table(errors, errors_path, "csv")

    processes = f", {run.workers} processes" if run.workers > 1 else ""
    note = f"; {run.error_count:,} errors, {run.warning_count:,} warnings -> {errors_path}"
    if len(table):
        _say(
            args,
            f"scored {len(table):,} rows from {len(args.inputs)} file(s) in {elapsed:.1f} s{processes}"
            f" -> {output}{note}",
        )
        for _, joined in run.join_report().iterrows():
            _say(args, _join_line(joined))
        report = run.logged_report()
        differing = report[report["rows_differ"] > 0] if len(report) else report
        for _, line in differing.iterrows():
            _say(
                args,
                f"logged vs recomputed: {line['component']} differs in {line['rows_differ']:,} of "
                f"{line['rows_logged']:,} rows (max |diff| {line['max_abs_diff']:.4g}; first at "
                f"{line['first_differing_row']})",
            )
    else:
        print(
            f"error: no usable rows in {len(args.inputs)} file(s); nothing written but {errors_path}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if len(file_errors):
        return EXIT_FAILED
    if args.strict and run.error_count:
        return EXIT_FAILED
    return EXIT_OK


def _batch_options(args):
    """The scoring options given on the command line (CliError when one is invalid)."""
    from .runs import BatchOptions

    try:
        return BatchOptions(
            trace_reward_mode=args.trace_reward_mode,
            trace_annotation_reward_formula=args.trace_annotation_reward_formula,
            answer_weight=args.answer_weight,
            annotation_weight=args.annotation_weight,
            format_weight=args.format_weight,
            point_half_life_px=args.point_half_life_px,
            solved_threshold=args.solved_threshold,
            scorer=args.scorer,
            gold_key=args.gold_key,
            normalise=not args.no_normalise,
            tolerance=args.tolerance,
            reading=args.reading,
            read_image_sizes=not args.no_image_sizes,
        ).validated()
    except ValueError as exc:
        raise CliError(f"invalid option: {exc}", EXIT_USAGE) from None


def _join_line(joined) -> str:
    """One file's join, as ``score`` prints it (see ``ScoredRun.join_report``)."""
    parts = [f"{joined[f'by_{rule}']:,} by {rule}" for rule in ("id", "prompt", "order") if joined[f"by_{rule}"]]
    if joined["own_ground_truth"]:
        parts.append(f"{joined['own_ground_truth']:,} with their own ground truth")
    for problem in ("ambiguous", "unmatched"):
        if joined[problem]:
            parts.append(f"{joined[problem]:,} {problem} (see the errors file)")
    return f"joined instances ({joined['rule']}): {joined['file']}: {'; '.join(parts) or 'no rows'}"


def _scoring_kwargs(args, options, mapping, progress) -> dict:
    """The keyword arguments ``score`` passes to the batch engine (in memory or into a dataset)."""
    return {
        "options": options,
        "mapping": mapping or None,
        "runs": "separate" if args.separate_runs else "one",
        "run_label": args.run,
        "instances": args.instances or None,
        "join": args.join,
        "image_root": args.images,
        "workers": args.workers,
        "progress": progress,
    }


def _dataset_output(args) -> bool:
    """``-o`` names a scored-dataset folder: ``--to dataset``, a trailing separator, or a folder."""
    if args.to == DATASET:
        return True
    if not args.output or args.to:
        return False
    return args.output.endswith(("/", os.sep)) or Path(args.output).is_dir()


def _score_on_ray(args, mapping) -> int:
    """``score INPUTS --engine ray -o DIR/``: the dataset, scored on Ray (scoring.engines.ray)."""
    from .engines import expand_uris, is_uri

    if not args.output or not _dataset_output(args):
        raise CliError("--engine ray writes a scored dataset: give its folder as -o DIR/", EXIT_USAGE)
    try:
        args.inputs = [
            name for given in args.inputs
            for name in (expand_uris([given]) if is_uri(given) else expand_inputs([given]))
        ]  # fmt: skip
    except (OSError, ValueError) as exc:  # a URI pyarrow cannot list
        raise CliError(f"cannot list the inputs: {exc}") from None
    if not args.inputs:
        raise CliError("no rollout files under the given URIs")
    return _score_into_dataset(args, _batch_options(args), mapping)


def _score_into_dataset(args, options, mapping) -> int:
    """``score -o DIR/``: write or update the dataset; say what was rescored."""
    from concurrent.futures.process import BrokenProcessPool

    from .datasets import open_errors
    from .engines import score_to_dataset
    from .rollouts import AccessDenied

    show = args.progress if args.progress is not None else (sys.stderr.isatty() and not args.quiet)
    on_ray = args.engine == "ray"
    bar = _ProgressBar(sys.stderr) if show and not on_ray else None
    if on_ray and not show:  # Ray Data draws its own bars
        os.environ["RAY_DATA_DISABLE_PROGRESS_BARS"] = "1"
    kwargs = _scoring_kwargs(args, options, mapping, bar)
    try:
        update = score_to_dataset(args.inputs, args.output, engine=args.engine, keep_table=args.keep_table, **kwargs)
    except ImportError as exc:  # --engine ray without Ray: the message names the extra
        raise CliError(str(exc), EXIT_USAGE) from None
    except ValueError as exc:  # not a dataset folder, bad image folder, join...
        raise CliError(str(exc), EXIT_USAGE) from None
    except AccessDenied as exc:  # an input outside ROLLOUTSCOPE_DATA_ROOTS
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    except BrokenProcessPool:
        raise CliError("a worker process died (out of memory?); try again with --workers 1") from None
    except RuntimeError as exc:  # Ray's workers run other scoring code
        raise CliError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()
    for fate in ("new", "changed", "removed"):
        names = getattr(update, fate)
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            _say(args, f"{fate}: {shown}")
    _say(
        args,
        f"{update.describe()} in {update.seconds:.1f} s; {update.errors:,} errors, {update.warnings:,} warnings",
    )
    errors = open_errors(update.directory)
    file_errors = errors[errors["line"].isna()]
    for _, error in file_errors.iterrows():
        print(f"error: {error['file']}: {error['reason']}", file=sys.stderr)
    if not update.rows:
        print(f"error: no usable rows in {len(args.inputs)} file(s)", file=sys.stderr)
        return EXIT_FAILED
    if len(file_errors) or (args.strict and update.errors):
        return EXIT_FAILED
    return EXIT_OK


def _read_dataset(path: Path):
    """The in-memory columns of a scored dataset folder (no text), or raise CliError."""
    from .datasets import open_dataset

    try:
        return open_dataset(path, compact=False).table
    except FileNotFoundError:
        raise CliError(f"{path}: a folder without a scored dataset (no manifest.json)") from None
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: cannot read the scored dataset ({exc})") from None


def summarize(table, by: Sequence[str] | None = None, solved_threshold: float | None = None):
    """The summary table: one row per group (``grouping`` names the grouping columns).

    Rows of different lm-eval filters are never pooled: when the table holds several, every
    grouping is split by ``filter`` too (unless ``by`` is given)."""
    import numpy as np
    import pandas as pd

    from .runs import SPLIT_COLUMNS

    frame = table
    if solved_threshold is not None:
        frame = frame.assign(solved=frame["score"].to_numpy(dtype=float) >= solved_threshold)
    trace = frame["scorer"].astype(str) == "trace"
    work = pd.DataFrame(
        {
            "score": frame["score"].astype(float),
            "answer_reward": frame["answer_reward"].astype(float) if "answer_reward" in frame else np.nan,
            "annotation_reward": frame["annotation_reward"].astype(float)
            if "annotation_reward" in frame
            else np.nan,
            "format": frame["format"].astype(float) if "format" in frame else np.nan,
            "format_failure": np.where(trace, (frame["format"].astype(float) == 0.0).astype(float), np.nan)
            if "format" in frame
            else np.nan,
            "zero_reward": frame["zero_reward"].astype(float) if "zero_reward" in frame else np.nan,
            "solved": frame["solved"].astype(float),
            "logged_mismatch": frame["logged_mismatch"].notna().astype(float)
            if "logged_mismatch" in frame
            else 0.0,
            "format_reason": frame["format_reason"].astype(object) if "format_reason" in frame else None,
        }
    )
    if by:
        groupings = [list(by)]
    else:
        groupings = []
        if "run" in frame and frame["run"].nunique(dropna=True) > 1:
            groupings.append(["run"])
        for column in ("task_id", "annotation_type", "step"):
            if column in frame and frame[column].notna().any():
                groupings.append([column])
        groupings.append([])
        split = [c for c in SPLIT_COLUMNS if c in frame and frame[c].nunique(dropna=True) > 1]
        groupings = [[*split, *columns] for columns in groupings]
    missing = sorted({c for g in groupings for c in g} - set(frame.columns))
    if missing:
        raise CliError(f"unknown column(s) for --by: {', '.join(missing)}", EXIT_USAGE)
    out = []
    for columns in groupings:
        keys = [frame[c].astype(object).where(frame[c].notna(), "(none)") for c in columns]
        groups = work.groupby(keys, sort=True, dropna=False) if columns else [((), work)]
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            failures = part["format_reason"][(part["format_failure"] == 1.0)]
            top = failures.value_counts().index[0] if len(failures) else None
            out.append(
                {
                    "grouping": ",".join(columns) or "all",
                    "group": ", ".join(str(k) for k in key) if columns else "all",
                    "rows": len(part),
                    "mean_score": part["score"].mean(),
                    "mean_answer_reward": part["answer_reward"].mean(),
                    "mean_annotation_reward": part["annotation_reward"].mean(),
                    "mean_format": part["format"].mean(),
                    "format_failures": int((part["format_failure"] == 1.0).sum()),
                    "format_failure_rate": part["format_failure"].mean(),
                    "top_format_failure": top,
                    "zero_reward_rate": part["zero_reward"].mean(),
                    "solve_rate": part["solved"].mean(),
                    "logged_mismatches": int(part["logged_mismatch"].sum()),
                }
            )
    return pd.DataFrame(out)


def _render_text(summary) -> str:
    lines = []
    for grouping, part in summary.groupby("grouping", sort=False):
        title = "all rows" if grouping == "all" else f"by {grouping}"
        lines.append(title)
        shown = part.drop(columns=["grouping"]).rename(
            columns={"group": grouping if grouping != "all" else ""}
        )
        shown["top_format_failure"] = [v if isinstance(v, str) else "-" for v in shown["top_format_failure"]]
        lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
        lines.append("")
    return "\n".join(lines)


def _render_markdown(summary) -> str:
    columns = list(summary.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in summary.iterrows():
        cells = []
        for column in columns:
            value = row[column]
            if isinstance(value, float):
                cells.append("-" if math.isnan(value) else f"{value:.3f}")
            else:
                cells.append("-" if value is None else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def cmd_summary(args) -> int:
    import pandas as pd

    tables = [read_table(path) for path in args.inputs]
    table = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    by = [c.strip() for c in args.by.split(",") if c.strip()] if args.by else None
    if args.solved_threshold is not None and not 0.0 <= args.solved_threshold <= 1.0:
        raise CliError("--solved-threshold must be in [0, 1]", EXIT_USAGE)
    summary = summarize(table, by, args.solved_threshold)
    if args.fmt == "csv":
        text = summary.to_csv(index=False)
    elif args.fmt == "json":
        text = summary.to_json(orient="records", indent=1)
    elif args.fmt == "markdown":
        text = _render_markdown(summary)
    else:
        text = _render_text(summary)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def cmd_reweight(args) -> int:
    from .runs import reweight

    table = read_table(args.input)
    source = Path(args.input)
    if args.output:
        output = Path(args.output)
        fmt = _output_format(output, args.to)
    else:
        fmt = args.to or _output_format(source, None)
        ext = {"parquet": ".parquet", "csv": ".csv", "jsonl": ".jsonl"}[fmt]
        output = source.with_name(source.name.split(".")[0] + ".reweighted" + ext)
    options = {
        "trace_reward_mode": args.trace_reward_mode,
        "trace_annotation_reward_formula": args.trace_annotation_reward_formula,
        "answer_weight": args.answer_weight,
        "annotation_weight": args.annotation_weight,
        "format_weight": args.format_weight,
        "solved_threshold": args.solved_threshold,
    }
    started = time.perf_counter()
    try:
        result = reweight(table, **options)
    except ValueError as exc:
        raise CliError(f"invalid option: {exc}", EXIT_USAGE) from None
    elapsed = time.perf_counter() - started
    write_table(result, output, fmt)
    before, after = table["score"].astype(float).mean(), result["score"].astype(float).mean()
    solved_before, solved_after = table["solved"].astype(float).mean(), result["solved"].astype(float).mean()
    _say(args, f"re-weighted {len(result):,} rows in {elapsed * 1000:.0f} ms -> {output}")
    _say(
        args, f"mean score {before:.4f} -> {after:.4f}; solve rate {solved_before:.4f} -> {solved_after:.4f}"
    )
    return EXIT_OK


def cmd_inspect(args) -> int:
    import tempfile

    from .rollouts import LayoutError, Source, SourceError, default_access, detect_layout, unpack_inputs

    mapping = _mapping(args)
    status = EXIT_OK
    access = default_access()
    with tempfile.TemporaryDirectory(prefix="rolloutscope-inspect-") as workdir:
        folders = iter(range(1 << 30))
        unpacked = unpack_inputs(expand_inputs(args.inputs), access, lambda: f"{workdir}/{next(folders)}")
        for folder in unpacked.folders:
            access = access.with_root(folder)
        for shown, reason in unpacked.problems:
            print(f"error: {shown}: {reason}", file=sys.stderr)
            status = EXIT_FAILED
        for path, shown in zip(unpacked.files, unpacked.displays, strict=True):
            try:
                source = Source(path, display=shown, access=access)
                sample = source.sample(32)
                layout = detect_layout(
                    sample, path=path, mapping=mapping, simple=args.scorer != "trace", joined=bool(args.instances)
                )
            except SourceError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status = EXIT_FAILED
                continue
            except LayoutError as exc:
                print(f"error: {shown}: {exc}", file=sys.stderr)
                status = EXIT_FAILED
                continue
            print(f"{shown} ({source.container}, {len(sample)} sample rows)")
            for note in source.notes:
                print(f"  note: {note.reason}")
            print(layout.describe())
            print(f"  shape key: {mapping.shape_key(layout.columns)}")
    return status


def cmd_suspects(args) -> int:
    from .review import KINDS, ConsensusSettings, suspects

    table = read_table(args.input)
    if "row_id" in table.columns:
        table = table.set_index("row_id", drop=False)
    split_by = tuple(c.strip() for c in (args.split_by or "").split(",") if c.strip())
    try:
        settings = ConsensusSettings(
            min_support=args.min_support, min_agreement=args.min_agreement, agree_similarity=args.agree_similarity,
            item_similarity_max=args.item_similarity_max, min_confidence=args.min_confidence, split_by=split_by,
            skip_frame_errors=not args.keep_frame_errors,
        )
        started = time.perf_counter()
        found = suspects(table, settings, kinds=(args.kind,) if args.kind else KINDS)
    except ValueError as exc:
        raise CliError(f"invalid option: {exc}", EXIT_USAGE) from None
    elapsed = time.perf_counter() - started
    if args.output:
        write_table(found, Path(args.output), "csv")
        where = f" -> {args.output}"
    else:
        found.to_csv(sys.stdout, index=False)
        where = ""
    instances = table["instance_id"].nunique() if "instance_id" in table.columns else 0
    _say(args, f"{len(found):,} suspect(s) among {instances:,} instances ({len(table):,} rows) in "
               f"{elapsed:.1f} s{where}")
    return EXIT_OK


def cmd_app(args) -> int:
    from . import launch

    try:
        plan = launch.plan_app(args.paths, host=args.host, port=args.port, data_roots=args.data_roots,
                               streamlit_options=args.streamlit_options)
    except launch.LaunchError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    return launch.run_app(plan)


COMMANDS = {
    "score": cmd_score, "summary": cmd_summary, "reweight": cmd_reweight, "inspect": cmd_inspect,
    "suspects": cmd_suspects, "app": cmd_app,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``rolloutscope`` and ``python -m scoring``; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    streamlit_options: list[str] = []
    if argv[:1] == ["app"]:  # Streamlit's own options (--server.x VALUE) pass through untouched
        from .launch import LaunchError, split_streamlit_options

        try:
            own, streamlit_options = split_streamlit_options(argv[1:])
        except LaunchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        argv = ["app", *own]
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 for usage errors, 0 for --help
        return int(exc.code or 0)
    args.streamlit_options = streamlit_options
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `rolloutscope summary x | head`
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
