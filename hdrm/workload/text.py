"""Decoding the text files users bring (CSV lists, traces): UTF-8, with or without the byte order
mark that spreadsheet programs and Windows editors write; anything else is a one-line error naming
the file and the line of the first byte that is not UTF-8."""

from __future__ import annotations

from pathlib import Path

from hdrm.errors import HdrmError, WorkloadError


def decode_utf8(content: bytes, path: str | Path, error: type[HdrmError] = WorkloadError) -> str:
    """The text of ``content`` read from ``path``: UTF-8, a leading byte order mark dropped.

    Raises:
        error: ``"FILE:LINE: not UTF-8 text (byte 0xe9); save the file as UTF-8"``.
    """
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content[:exc.start].count(b"\n") + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte {content[exc.start]:#04x}); save the "
                    "file as UTF-8") from None


def is_number(text: str) -> bool:
    """Whether a CSV cell reads as a number (``float`` accepts it: ``3``, ``-1.5``, ``1e9``,
    ``nan``)."""
    try:
        float(text)
    except ValueError:
        return False
    return True
