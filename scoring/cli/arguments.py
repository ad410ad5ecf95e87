"""The command line's arguments: exit codes, the parser, and what several commands read from them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..rewards import DEFAULT_READING, READINGS

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
    from ..review import ConsensusSettings

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


def column_mapping(args):
    from ..rollouts import ColumnMapping

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


def expand_inputs(inputs: Sequence[str]) -> list[str]:
    """The rollout files named on the command line: a folder stands for the rollout files under
    it and a quoted glob (``'runs/**/*.jsonl'``) for its matches -- walked without following
    symlinked folders, inside ``ROLLOUTSCOPE_DATA_ROOTS`` when set, within the file-count and time
    budget; a file (or a ``.zip`` bundle) stays as given."""
    from ..rollouts import (
        AccessDenied,
        LimitExceeded,
        default_access,
        find_files,
        has_wildcards,
        rollout_name,
    )

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


def say(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr)
