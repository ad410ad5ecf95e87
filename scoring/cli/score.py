"""``rolloutscope score``: rollout files scored into a table or a dataset folder, with a progress bar."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from .arguments import DATASET, EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, column_mapping, expand_inputs, say
from .tables import output_format, write_table


class ProgressBar:
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


def cmd_score(args) -> int:
    from concurrent.futures.process import BrokenProcessPool

    from ..rollouts import file_stem
    from ..runs import score_files

    mapping = column_mapping(args)
    if args.workers is not None and args.workers < 1:
        raise CliError("--workers must be >= 1", EXIT_USAGE)
    first = Path(args.inputs[0])
    if args.engine == "ray":
        return _score_on_ray(args, mapping)
    args.inputs = expand_inputs(args.inputs)
    output = Path(args.output) if args.output else Path(file_stem(first) + ".scored.parquet")
    to_dataset = _dataset_output(args)
    fmt = DATASET if to_dataset else output_format(output, args.to)
    errors_path = Path(args.errors) if args.errors else output.with_name(file_stem(output) + ".errors.csv")
    options = _batch_options(args)
    if to_dataset:
        return _score_into_dataset(args, options, mapping)
    show = args.progress if args.progress is not None else (sys.stderr.isatty() and not args.quiet)
    bar = ProgressBar(sys.stderr) if show else None
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
        say(args, f"note: {note['file']}: {note['reason']}")
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
        say(
            args,
            f"scored {len(table):,} rows from {len(args.inputs)} file(s) in {elapsed:.1f} s{processes}"
            f" -> {output}{note}",
        )
        for _, joined in run.join_report().iterrows():
            say(args, _join_line(joined))
        report = run.logged_report()
        differing = report[report["rows_differ"] > 0] if len(report) else report
        for _, line in differing.iterrows():
            say(
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
    from ..runs import BatchOptions

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
    from ..engines import expand_uris, is_uri

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

    from ..datasets import open_errors
    from ..engines import score_to_dataset
    from ..rollouts import AccessDenied

    show = args.progress if args.progress is not None else (sys.stderr.isatty() and not args.quiet)
    on_ray = args.engine == "ray"
    bar = ProgressBar(sys.stderr) if show and not on_ray else None
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
            say(args, f"{fate}: {shown}")
    say(
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
