"""What a decompressed trace holds, when it is not text: refused in one line naming what.

A ``.swf.gz`` compressed twice, or one holding an archive or binary data, decompresses to bytes
that the SWF reader would read as text and refuse at line 1 for a missing field; this names the
file and what was found instead.

A trace that is not gzip data to begin with (:func:`unpack_other`): bzip2 and xz data are
decompressed (Python reads both), then checked as above; an archive, zstd data or binary data is
refused in one line naming what it holds.
"""

from __future__ import annotations

import codecs
import importlib
from pathlib import Path

from hdrm.errors import WorkloadError

#: Leading bytes of formats a trace is mistaken for -> their name in the message.
MAGIC = {
    b"BZh": "bzip2 data",
    b"PK\x03\x04": "a zip archive",
    b"\xfd7zXZ\x00": "xz data",
    b"\x28\xb5\x2f\xfd": "zstd data",
    b"7z\xbc\xaf\x27\x1c": "a 7-zip archive",
}
#: Bytes looked at for NUL bytes (text has none, but for UTF-16 with its byte order mark).
SNIFF_BYTES = 4096


#: Formats :func:`unpack_other` decompresses: magic bytes -> (name, module, tool to undo it).
DECOMPRESSED = {b"BZh": ("bzip2", "bz2", "bunzip2"), b"\xfd7zXZ\x00": ("xz", "lzma", "unxz")}


def unpack_other(path: str | Path, content: bytes) -> bytes:
    """The text bytes of a trace file that is not gzip data: bzip2 and xz decompressed.

    Raises:
        WorkloadError: corrupt bzip2/xz data; after decompressing, what :func:`check_text`
            refuses; without, a known archive or compressed format or binary data.
    """
    for magic, (name, module, tool) in DECOMPRESSED.items():
        if content.startswith(magic):
            codec = importlib.import_module(module)  # loaded for such files only
            errors = (OSError, EOFError, ValueError, getattr(codec, "LZMAError", OSError))
            try:
                content = codec.decompress(content)
            except errors as exc:
                raise WorkloadError(f"{path}: corrupt {name} data ({exc}); re-download the "
                                    f"trace or {tool} it") from None
            check_text(path, content)
            return content
    found = not_text(content)
    if found is not None:
        raise WorkloadError(f"{path}: {found}, not SWF text; give the trace as text (.swf) or "
                            "gzip, bzip2 or xz data")
    return content


def check_text(path: str | Path, content: bytes) -> None:
    """Refuse the decompressed ``content`` of ``path`` when it is not text.

    Raises:
        WorkloadError: gzip data again (compressed twice), a known archive or compressed format
            (:data:`MAGIC`), or NUL bytes in its first :data:`SNIFF_BYTES` bytes (binary data).
    """
    if content[:2] == b"\x1f\x8b":
        raise WorkloadError(f"{path}: gzip data inside gzip data (the trace was compressed "
                            "twice); gunzip it once, or give the trace compressed once")
    found = not_text(content)
    if found is not None:
        raise WorkloadError(f"{path}: decompressed, it holds {found}, not SWF text; give the "
                            "trace itself (.swf or .swf.gz)")


def not_text(content: bytes) -> str | None:
    """What ``content`` holds when it is not text: a known archive or compressed format
    (:data:`MAGIC`), or NUL bytes in its first :data:`SNIFF_BYTES` bytes (binary data; UTF-16
    text with its byte order mark has them too and is text); None for text."""
    found = next((name for magic, name in MAGIC.items() if content.startswith(magic)), None)
    if found is None and b"\x00" in content[:SNIFF_BYTES] \
            and not content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        found = "binary data (NUL bytes)"
    return found
