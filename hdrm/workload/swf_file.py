"""The text of an SWF trace file, as the SWF reader opens it: plain, gzip, bzip2 or xz.

:func:`read_swf_text` is the reader's first step (:func:`hdrm.workload.swf.read_swf`) and the one
other code uses to look at the same text (the group ids of :mod:`hdrm.workload.tenant_files`):
gzip data is decompressed, bzip2 and xz data too (:mod:`hdrm.workload.unpacked`), and what is not
text after that (compressed twice, an archive, binary data) is refused in one line naming the file.
"""

from __future__ import annotations

import codecs
import gzip
import zlib
from pathlib import Path

from hdrm.errors import WorkloadError
from hdrm.workload.unpacked import check_text, unpack_other


def read_swf_text(path: str | Path) -> str:
    """Return the decoded text of an SWF trace file (plain, gzip, bzip2 or xz).

    Raises:
        WorkloadError: the file is missing or unreadable, its gzip data is corrupt, or it holds no
            text (an archive, binary data); the message names the file and the fix.
    """
    try:
        with open(path, "rb") as handle:
            content = handle.read()
    except FileNotFoundError:
        raise WorkloadError(
            f"{path}: no such file; give the path of an SWF trace (.swf or .swf.gz)"
        ) from None
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot be read ({exc.strerror}); check the path") from None
    if content[:2] == b"\x1f\x8b":
        try:
            content = gzip.decompress(content)
        except (OSError, EOFError, zlib.error) as exc:
            raise WorkloadError(
                f"{path}: corrupt gzip data ({exc}); re-download or decompress the trace"
            ) from None
        check_text(path, content)  # compressed twice, an archive: one line saying so
    else:
        content = unpack_other(path, content)  # bzip2/xz read; an archive, binary: one line
    return decode_text(content)


def decode_text(content: bytes) -> str:
    """UTF-8 text (its byte order mark dropped), or UTF-16 text that starts with its mark."""
    if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) \
            and not content.startswith(codecs.BOM_UTF32_LE):
        return content.decode("utf-16", errors="replace")
    return content.decode("utf-8-sig", errors="replace")
