"""The text of a JSON document read a block at a time: what :class:`scoring.rollouts.Source`
streams a JSON array's items from.

:class:`TextWindow` decodes the document's UTF-8 a block at a time into a window that keeps only
what is not parsed yet: an array's items are decoded one at a time (:meth:`TextWindow.decode_item`),
so memory follows the largest item, not the file; an item over ``line_bytes`` is stepped over
without being held (:meth:`TextWindow.skip_item`), so the items after it are still read.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
from typing import Any

RAW_DECODE = json.JSONDecoder().raw_decode
NOT_BLANK = re.compile(r"[^ \t\r\n]")


def skip_blank(text: str, position: int) -> int:
    found = NOT_BLANK.search(text, position)
    return found.start() if found else len(text)


class ReadFailed(Exception):
    """The file cannot be read past this point (a corrupt gzip stream, a limit, bad UTF-8)."""


class ItemTooLong(Exception):
    """The JSON item being read is over ``line_bytes``."""


class TextWindow:
    """The text of a JSON document, decoded a block at a time into a window that keeps only
    what is not parsed yet (:meth:`decode_item` moves it along)."""

    block_bytes = 1 << 20

    def __init__(self, handle, raw_handle, limits):
        self.handle = handle
        self.raw_handle = raw_handle
        self.compressed = handle is not raw_handle
        self.limits = limits
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text = ""
        self.expanded = 0
        self.at_end = False
        self.item_start = 0

    @classmethod
    def over(cls, text: str) -> TextWindow:
        """A window holding a whole text already read (nothing more to read)."""
        window = cls(None, None, None)
        window.text, window.at_end = text, True
        return window

    def close(self) -> None:
        for handle in (self.handle, self.raw_handle):
            if handle is not None:
                handle.close()

    def _next_text(self) -> str | None:
        """The next block's text ('' for a block that ends inside a character), None at the end."""
        if self.at_end:
            return None
        try:
            block = self.handle.read1(self.block_bytes)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise ReadFailed(f"file is truncated or corrupt after this point ({short_text(exc)})") from None
        self.expanded += len(block)
        if self.compressed and self.expanded > self.limits.decompressed_bytes:
            raise ReadFailed(
                self.limits.over("decompressed_bytes", "the file's decompressed size") + "; reading stopped here"
            )
        try:
            text = self.decoder.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            raise ReadFailed(f"file is not valid UTF-8 from here on ({exc.reason})") from None
        self.at_end = not block
        return text

    def _extend(self, length: int, cap: int | None = None) -> bool:
        """Read on until the window holds ``length`` characters (joined once); False when the
        file ended first, or when the window passed ``cap``."""
        pieces = [self.text]
        total = len(self.text)
        while total < length and (cap is None or total <= cap):
            text = self._next_text()
            if text is None:
                break
            pieces.append(text)
            total += len(text)
        self.text = "".join(pieces)
        return total >= length

    def skip_blank(self, position: int) -> int:
        """The position of the next non-blank character (reading on as needed)."""
        while True:
            found = NOT_BLANK.search(self.text, position)
            if found is not None:
                return found.start()
            position = len(self.text)
            if not self._extend(position + 1):
                return len(self.text)

    def read_all(self) -> str | None:
        """The rest of the document as one text, or None past ``json_bytes``."""
        cap = self.limits.json_bytes
        self._extend(1 << 62, cap)
        return None if len(self.text) > cap else self.text

    def decode_item(self, position: int) -> tuple[Any, int]:
        """The JSON value at ``position`` and the position after it. The window is first cut to
        start at ``position`` (where it then starts: :attr:`item_start`); it grows (doubling)
        until the value is complete, or raises :class:`ItemTooLong` past ``line_bytes``."""
        if position > self.block_bytes and position > len(self.text) // 2:  # amortised: each byte moves once
            self.text = self.text[position:]
            position = 0
        self.item_start = position
        while True:
            try:
                value, end = RAW_DECODE(self.text, position)
            except ValueError as exc:
                cut = getattr(exc, "pos", len(self.text)) >= len(self.text) - 16 or "Unterminated" in str(exc)
                if self.at_end or not cut:
                    raise
            else:
                if end < len(self.text) or self.at_end:  # a number at the window's edge may go on
                    return value, end
            pending = len(self.text) - position
            if pending > self.limits.line_bytes:
                raise ItemTooLong
            self._extend(len(self.text) + max(pending, self.block_bytes))


    def skip_item(self, position: int) -> int:
        """Step over the JSON object, array or string at ``position`` without holding it: its
        strings are stepped over and its brackets counted, the text dropped as it is passed (a
        string longer than the window too). The position after it; ValueError when the document
        ends inside it."""
        depth = 0
        in_string = False
        text, at = self.text, position
        while True:
            if in_string:
                at = _STRING_REST.match(text, at).end()
                if at < len(text) and text[at] == '"':
                    at += 1
                    in_string = False
                    if depth == 0:
                        return at
                    continue
            else:
                found = _STRUCTURE.search(text, at)
                if found is not None:
                    at = found.end()
                    mark = found.group()
                    if mark == '"':
                        in_string = True
                    else:
                        depth += 1 if mark in "{[" else -1
                        if depth == 0:
                            return at
                    continue
                at = len(text)
            # the window is spent: keep what is not scanned yet (an escape cut in two), read on
            self.text = text[at:]
            at = 0
            if not self._extend(len(self.text) + 1):
                raise ValueError("the document ends inside this item")
            text = self.text


_STRUCTURE = re.compile(r'["{}\[\]]')
#: A string's characters up to its closing quote, or to the end of the window (an escape whose
#: character is not read yet stops before its backslash).
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)


def short_text(exc: BaseException, limit: int = 160) -> str:
    """An exception's message in at most ``limit`` characters (its type when it has none)."""
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["RAW_DECODE", "ItemTooLong", "ReadFailed", "TextWindow", "short_text", "skip_blank"]
