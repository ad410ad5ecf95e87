"""Ranges of a plain JSONL file's lines, handed to a worker process by where they are.

Scoring a big JSONL file in worker processes used to cost the scoring process a read of every
line into its own ``bytes`` object, a copy of each into the message to a worker, and the
worker a copy out again. A :class:`LineRange` names consecutive whole lines by their byte
offset and first line number instead: the scoring process only finds where the lines end
(:func:`cut_line_ranges`, a ``find`` per line on one read buffer, no object per line), and the
worker reads its range itself (:meth:`LineRange.items`), giving exactly the ``(line,
payload)`` items :meth:`scoring.rollouts.Source.item_batches` would have given for those lines:
blank lines skipped, a byte-order mark dropped from line 1, a line over ``line_bytes`` an
error naming the field it passes the limit in -- read no further than the limit.

Only a plain (not gzipped) JSONL file is cut this way: a compressed stream has no offsets to
hand out. The worker opens the file the scoring process checked against the data roots and
refuses a range of a file that was replaced or shortened meanwhile (an error on the range's
first line); lines appended after the cut are not in any range, as they were not read.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import RowError
from .oversize import field_at_limit

UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class LineRange:
    """Lines ``first_line`` .. ``first_line + lines - 1`` of ``path``: bytes ``offset`` ..
    ``offset + length`` (whole lines; the last may lack its newline at the end of the file).
    ``identity`` is the file's ``(st_dev, st_ino)`` when it was cut; ``line_bytes`` the limit
    on one line and ``too_long`` the reason an over-long line is reported with."""

    path: str
    display: str
    unit: str
    identity: tuple[int, int]
    offset: int
    length: int
    first_line: int
    lines: int
    line_bytes: int
    too_long: str

    def __len__(self) -> int:
        return self.lines

    @property
    def weight(self) -> int:
        """Bytes the range holds once read (what bounds how many are out at once)."""
        return self.length

    def error(self, line: int, field: str | None, reason: str) -> RowError:
        return RowError(self.display, line, field, reason, unit=self.unit)

    def items(self) -> list[tuple[int, bytes | RowError]]:
        """The range's ``(line, raw line)`` items, as the file's own reading gives them."""
        try:
            with open(self.path, "rb") as handle:
                status = os.fstat(handle.fileno())
                if (status.st_dev, status.st_ino) != self.identity:
                    return [(self.first_line, self.error(self.first_line, None, _REPLACED))]
                if self.lines == 1 and self.length > self.line_bytes:  # over the limit: never read it whole
                    head = os.pread(handle.fileno(), self.line_bytes + 1, self.offset)
                    field = field_at_limit(head, self.line_bytes + 1)
                    return [(self.first_line, self.error(self.first_line, field, self.too_long))]
                data = os.pread(handle.fileno(), self.length, self.offset)
        except OSError as exc:
            return [
                (
                    self.first_line,
                    self.error(self.first_line, None, f"cannot read file: {exc.strerror or exc}"),
                )
            ]
        if len(data) < self.length:
            return [(self.first_line, self.error(self.first_line, None, _SHORTENED))]
        lines = io.BytesIO(data).readlines()  # each with its newline, as the file's reading gives
        limit = self.line_bytes
        if self.offset == 0 and lines and lines[0].startswith(UTF8_BOM) and len(lines[0]) <= limit:
            lines[0] = lines[0][len(UTF8_BOM) :]  # (the limit counts it, as the file's reading does)
        items: list[tuple[int, bytes | RowError]] = []
        line = self.first_line - 1
        for raw in lines:
            line += 1
            if len(raw) > limit:
                items.append((line, self.error(line, field_at_limit(raw, limit + 1), self.too_long)))
            elif raw and not raw.isspace():
                items.append((line, raw))
        return items


_REPLACED = "file was replaced while it was being scored; its lines from here on were not read"
_SHORTENED = "file was shortened while it was being scored; its lines from here on were not read"


def cut_line_ranges(
    path: str | os.PathLike,
    *,
    display: str,
    unit: str,
    size: int,
    max_bytes: int,
    line_bytes: int,
    too_long: str,
    read_bytes: int | None = None,
) -> Iterator[LineRange]:
    """The file's lines as consecutive :class:`LineRange` s of at most ``size`` lines and
    ``max_bytes`` bytes (one line longer than that is a range of its own). Reads the file once,
    at most ``read_bytes`` (default ``max_bytes``) at a time, up to its end as found when the last
    read is made: each read asks for what ``size`` lines took last time and a little more
    (:func:`_next_read`), so the bytes past a range's end are seldom read twice. Raises OSError
    if the file cannot be opened."""
    limit = min(max(read_bytes or max_bytes, 1), max_bytes)
    with open(path, "rb") as handle:
        descriptor = handle.fileno()
        status = os.fstat(descriptor)
        identity = (status.st_dev, status.st_ino)

        def cut(offset: int, length: int, first_line: int, lines: int) -> LineRange:
            return LineRange(
                str(path), display, unit, identity, offset, length, first_line, lines, line_bytes, too_long
            )  # fmt: skip

        offset, line, request = 0, 1, limit
        while True:
            window = os.pread(descriptor, request, offset)
            if not window:
                return
            lines, end = _newlines(window, size)
            if lines < size and len(window) == request < limit:  # fewer than guessed: read on to the limit
                window += os.pread(descriptor, limit - request, offset + request)
                request = limit
                lines, end = _newlines(window, size)
            full = len(window) == request
            end += 1
            if lines == 0:
                if not full:  # the file's last line, with no newline after it
                    yield cut(offset, len(window), line, 1)
                    return
                end = _line_end(descriptor, offset + len(window))
                yield cut(offset, end - offset, line, 1)
                offset, line, request = end, line + 1, limit
                continue
            if not full and lines < size and end < len(window):  # and the unended last line
                end, lines = len(window), lines + 1
            yield cut(offset, end, line, lines)
            offset, line, request = offset + end, line + lines, _next_read(end, lines, size, limit)


#: What a read asks for beyond the bytes ``size`` lines took last time (see :func:`_next_read`).
READ_AHEAD_SLACK = 64 << 10


def _next_read(length: int, lines: int, size: int, limit: int) -> int:
    """Bytes to read for the next ``size`` lines: as many as the last range's lines took each,
    an eighth more and :data:`READ_AHEAD_SLACK`, within ``limit``. A window of ``limit`` bytes
    that ``size`` lines fill only half of would read the other half again for the next range."""
    return min(limit, length * size // lines + length * size // (8 * lines) + READ_AHEAD_SLACK)


def _newlines(window: bytes, size: int) -> tuple[int, int]:
    """How many of the first ``size`` newlines ``window`` holds, and where the last of them is
    (-1: none): one memchr each (``bytes.count`` scans byte by byte)."""
    lines, end = 0, -1
    while lines < size:
        found = window.find(b"\n", end + 1)
        if found < 0:
            break
        lines, end = lines + 1, found
    return lines, end


def _line_end(descriptor: int, start: int, step: int = 1 << 20) -> int:
    """The offset just past the newline ending the line that runs on at ``start`` (the
    file's end when none does), read ``step`` bytes at a time and kept no longer."""
    position = start
    while True:
        block = os.pread(descriptor, step, position)
        if not block:
            return position
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)


__all__ = ["UTF8_BOM", "LineRange", "cut_line_ranges"]
