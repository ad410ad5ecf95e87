"""Peak memory of hostile inputs, with the reading limits and without them.

Run from the project root: python bench/bench_limits.py [--repeats 3] [--gib 1]

Each case runs in a fresh process and reports that process's peak RSS (``VmHWM``) as a median
over ``--repeats``; "bounded" reads with the default limits (``scoring.rollouts.access.Limits``),
"unbounded" reads the same file with every limit raised out of the way -- the baseline, measured
in the same run. For ``json-gz`` the baseline is the whole-document read (decompress, then parse
everything at once), which a streamed array no longer does whatever the limits. The files are written streaming, so they stay small on disk:

- ``gzip-line``: a ``.jsonl.gz`` of about 1 MB holding one ``--gib`` GiB line between two good rows;
- ``json-gz``: a ``.json.gz`` array expanding to ``--gib`` GiB;
- ``zip-member``: an image zip whose member expands to ``--gib`` GiB, opened as a row's image;
- ``png-89mp``: an 89-megapixel PNG (just under Pillow's own limit), opened for display;
- ``png-36mp-display``: a 36-megapixel JPEG opened for display (downscaled to the display size
  while decoding vs. decoded whole).

``idle`` is the peak of a process that only imports the readers (the floor of every figure).
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MIB = 1 << 20
UNBOUNDED = dict(
    decompressed_bytes=1 << 40, line_bytes=1 << 40, json_bytes=1 << 40, image_bytes=1 << 40, image_pixels=1 << 40
)


# --------------------------------------------------------------------------- inputs (written streaming)


def gzip_line(folder: Path, gib: float) -> Path:
    path = folder / "bomb.jsonl.gz"
    block = b"x" * MIB
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b'{"a": 1}\n{"response": "')
        for _ in range(int(gib * 1024)):
            out.write(block)
        out.write(b'"}\n{"b": 2}\n')
    return path


def json_gz(folder: Path, gib: float) -> Path:
    path = folder / "bomb.json.gz"
    item = b'{"response": "' + b"y" * 1000 + b'"},'
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b"[")
        for _ in range(int(gib * (1 << 30) / len(item))):
            out.write(item)
        out.write(b"{}]")
    return path


def zip_member(folder: Path, gib: float) -> Path:
    path = folder / "images.zip"
    block = b"\0" * MIB
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, archive.open(
        "huge.png", "w", force_zip64=True
    ) as member:
        member.write(b"\x89PNG\r\n\x1a\n")
        for _ in range(int(gib * 1024)):
            member.write(block)
    return path


def png(folder: Path, size: tuple[int, int], name: str, fmt: str = "PNG") -> Path:
    from PIL import Image

    path = folder / name
    Image.new("RGB", size, (90, 120, 150)).save(path, format=fmt)
    return path


# --------------------------------------------------------------------------- one measurement (child process)


def run_case(case: str, mode: str, path: str) -> None:
    from scoring.rollouts.access import DataAccess, Limits
    from scoring.rollouts.images import ImageProblem, ImageResolver, open_image
    from scoring.rollouts.sources import Source, SourceError

    limits = Limits.from_env() if mode == "bounded" else Limits(**UNBOUNDED)
    access = DataAccess(limits=limits)
    outcome = ""
    try:
        if case == "json-gz" and mode == "unbounded":
            from scoring.rollouts.sources import loads

            with gzip.open(path, "rb") as handle:
                outcome = f"{len(loads(handle.read()))} rows (parsed whole)"
        elif case in ("gzip-line", "json-gz"):
            rows = errors = 0
            for _, record in Source(path, access=access).records():
                rows += isinstance(record, dict)
                errors += not isinstance(record, dict)
            outcome = f"{rows} rows, {errors} errors"
        elif case == "zip-member":
            resolver = ImageResolver(image_root=path, access=access)
            open_image(f"zip:{Path(path).resolve()}!huge.png", resolver=resolver)
            outcome = "opened"
        elif case == "png-89mp":
            open_image(path, resolver=ImageResolver(access=access))
            outcome = "opened"
        elif case == "png-36mp-display":
            image = open_image(path, resolver=ImageResolver(access=access),
                               max_side=limits.display_side if mode == "bounded" else None)
            outcome = f"opened at {image.size[0]}x{image.size[1]}"
    except (SourceError, ImageProblem) as exc:
        outcome = "refused: " + str(exc)[:90]
    if case == "idle":
        outcome = "imports only"
    print(f"{peak_rss_mib():.1f}\t{outcome}")


def peak_rss_mib() -> float:
    """This process's peak resident memory. VmHWM starts afresh at exec; ``ru_maxrss`` would carry
    the parent's peak over to the child (the parent holds the big test images while writing them)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(case: str, mode: str, path: str) -> tuple[float, str]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", case, mode, path], capture_output=True, text=True, check=True, cwd=ROOT
    )
    peak, outcome = result.stdout.strip().split("\t", 1)
    return float(peak), outcome


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gib", type=float, default=1.0, help="size the bombs expand to (default 1 GiB)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_case(*args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-limits-") as tmp:
        folder = Path(tmp)
        cases = {
            "idle": "",
            "gzip-line": str(gzip_line(folder, args.gib)),
            "json-gz": str(json_gz(folder, args.gib)),
            "zip-member": str(zip_member(folder, args.gib)),
            "png-89mp": str(png(folder, (10_000, 8_900), "89mp.png")),
            "png-36mp-display": str(png(folder, (7_200, 5_000), "36mp.jpg", "JPEG")),
        }
        print(f"python bench/bench_limits.py --repeats {args.repeats} --gib {args.gib:g}")
        for case, path in cases.items():
            if path:
                print(f"{case}: input {os.path.getsize(path) / MIB:.1f} MiB on disk")
        print(f"\n{'case':18} {'bounded MiB':>12} {'unbounded MiB':>14} {'ratio':>7}  outcome (bounded | unbounded)")
        for case, path in cases.items():
            row = {}
            for mode in ("bounded", "unbounded"):
                runs = [measure(case, mode, path) for _ in range(args.repeats)]
                row[mode] = (statistics.median(p for p, _ in runs), runs[0][1])
            bounded, unbounded = row["bounded"][0], row["unbounded"][0]
            print(f"{case:18} {bounded:12.1f} {unbounded:14.1f} {unbounded / bounded:6.1f}x  "
                  f"{row['bounded'][1]} | {row['unbounded'][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
