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

import contextlib
import gc
import os
import sys
from collections.abc import Sequence

from ..runs import arrow_buffers_reused
from .arguments import (
    DATASET,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    OUTPUT_FORMATS,
    CliError,
    build_parser,
    expand_inputs,
)
from .commands import cmd_app, cmd_inspect, cmd_reweight, cmd_summary, cmd_suspects
from .score import ProgressBar, cmd_score
from .tables import read_table, summarize, write_table

COMMANDS = {
    "score": cmd_score,
    "summary": cmd_summary,
    "reweight": cmd_reweight,
    "inspect": cmd_inspect,
    "suspects": cmd_suspects,
    "app": cmd_app,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``rolloutscope`` and ``python -m scoring``; returns the exit code."""
    parser = build_parser()
    own_process = argv is None  # this process's own command line: it ends with the command
    if own_process:
        # what is alive now (the modules) lives as long as the process: never walked again by
        # the collector's full collections, which a long scoring triggers thousands of times
        gc.freeze()
    argv = list(sys.argv[1:] if argv is None else argv)
    if own_process and argv[:1] != ["app"]:  # the app is a long-lived server: it keeps the defaults
        arrow_buffers_reused()
    streamlit_options: list[str] = []
    if argv[:1] == ["app"]:  # Streamlit's own options (--server.x VALUE) pass through untouched
        from ..launch import LaunchError, split_streamlit_options

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


__all__ = [
    "COMMANDS",
    "DATASET",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "OUTPUT_FORMATS",
    "CliError",
    "ProgressBar",
    "build_parser",
    "expand_inputs",
    "main",
    "read_table",
    "summarize",
    "write_table",
]
