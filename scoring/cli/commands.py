"""The commands besides ``score``: summary, reweight, inspect, suspects and app."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .arguments import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, column_mapping, expand_inputs, say
from .tables import output_format, read_table, render_summary, summarize, write_table


def cmd_summary(args) -> int:
    import pandas as pd

    tables = [read_table(path) for path in args.inputs]
    table = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    by = [c.strip() for c in args.by.split(",") if c.strip()] if args.by else None
    if args.solved_threshold is not None and not 0.0 <= args.solved_threshold <= 1.0:
        raise CliError("--solved-threshold must be in [0, 1]", EXIT_USAGE)
    summary = summarize(table, by, args.solved_threshold)
    text = render_summary(summary, args.fmt)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def cmd_reweight(args) -> int:
    from ..runs import reweight

    table = read_table(args.input)
    source = Path(args.input)
    if args.output:
        output = Path(args.output)
        fmt = output_format(output, args.to)
    else:
        fmt = args.to or output_format(source, None)
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
    say(args, f"re-weighted {len(result):,} rows in {elapsed * 1000:.0f} ms -> {output}")
    say(
        args, f"mean score {before:.4f} -> {after:.4f}; solve rate {solved_before:.4f} -> {solved_after:.4f}"
    )
    return EXIT_OK


def cmd_inspect(args) -> int:
    import tempfile

    from ..rollouts import LayoutError, Source, SourceError, default_access, detect_layout, unpack_inputs

    mapping = column_mapping(args)
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
    from ..review import KINDS, ConsensusSettings, suspects

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
    say(args, f"{len(found):,} suspect(s) among {instances:,} instances ({len(table):,} rows) in "
               f"{elapsed:.1f} s{where}")
    return EXIT_OK


def cmd_app(args) -> int:
    from .. import launch

    try:
        plan = launch.plan_app(args.paths, host=args.host, port=args.port, data_roots=args.data_roots,
                               streamlit_options=args.streamlit_options)
    except launch.LaunchError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    return launch.run_app(plan)
