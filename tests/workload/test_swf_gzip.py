"""A .swf.gz whose decompressed content is not SWF text (compressed twice, an archive, binary
data) is refused in one line naming the file and what was found (it was read as text and refused
at line 1 for a missing field)."""

from __future__ import annotations

import bz2
import gzip

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.swf import read_swf

LINE = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"


def _write(tmp_path, content: bytes, name: str = "trace.swf.gz"):
    path = tmp_path / name
    path.write_bytes(gzip.compress(content))
    return path


def test_a_trace_compressed_twice(tmp_path):
    path = _write(tmp_path, gzip.compress(LINE.encode()))
    with pytest.raises(WorkloadError) as info:
        read_swf(path)
    assert str(info.value) == (
        f"{path}: gzip data inside gzip data (the trace was compressed twice); gunzip it once, "
        "or give the trace compressed once")


@pytest.mark.parametrize("content, found", [
    (bz2.compress(LINE.encode()), "bzip2 data"),
    (b"PK\x03\x04" + bytes(200), "a zip archive"),
    (b"\x7fELF" + bytes(range(256)) * 4, "binary data (NUL bytes)"),
], ids=["bzip2", "zip", "binary"])
def test_binary_content_names_what_was_found(tmp_path, content, found):
    path = _write(tmp_path, content)
    with pytest.raises(WorkloadError) as info:
        read_swf(path)
    assert str(info.value) == (f"{path}: decompressed, it holds {found}, not SWF text; give the "
                               "trace itself (.swf or .swf.gz)")


def test_text_in_utf16_still_reads(tmp_path):
    # NUL bytes of UTF-16 text (with its byte order mark) are text, not binary
    path = _write(tmp_path, ("\ufeff" + LINE).encode("utf-16-le"))
    assert len(read_swf(path)) == 1
