"""An SWF trace that is not gzip data: bzip2 and xz are read; an archive, zstd data or binary
data is one line naming what the file holds (it was read as text and refused at line 1)."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.swf import read_swf

TRACE = ("; MaxProcs: 8\n1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
         "2 30 0 50 2 -1 -1 2 60 -1 1 2 1 -1 1 -1 -1 -1\n")


@pytest.mark.parametrize("pack, suffix", [(bz2.compress, ".bz2"), (lzma.compress, ".xz")],
                         ids=["bzip2", "xz"])
def test_bzip2_and_xz_traces_read_like_the_plain_trace(tmp_path, values, pack, suffix):
    plain, packed = tmp_path / "t.swf", tmp_path / f"t.swf{suffix}"
    plain.write_text(TRACE)
    packed.write_bytes(pack(TRACE.encode()))
    a, b = read_swf(plain), read_swf(packed)
    assert values(b.jobs) == values(a.jobs) and b.nb_res == 8 and len(b) == 2
    assert b.name == a.name == "t"  # the workload's name, as for t.swf.gz


@pytest.mark.parametrize("content, message", [
    (b"PK\x03\x04" + bytes(200), "a zip archive, not SWF text; give the trace as text (.swf) or "
                                 "gzip, bzip2 or xz data"),
    (b"\x28\xb5\x2f\xfd" + bytes(64), "zstd data, not SWF text"),
    (b"\x7fELF" + bytes(range(256)) * 4, "binary data (NUL bytes), not SWF text"),
    (bz2.compress(b"PK\x03\x04" + bytes(50)), "decompressed, it holds a zip archive"),
    (lzma.compress(gzip.compress(TRACE.encode())), "gzip data inside gzip data"),
    (bz2.compress(TRACE.encode())[:-10], "corrupt bzip2 data"),
    (lzma.compress(TRACE.encode())[:-10], "corrupt xz data"),
], ids=["zip", "zstd", "binary", "bzip2-zip", "xz-gzip", "cut-bzip2", "cut-xz"])
def test_other_content_is_one_line_naming_it(tmp_path, content, message):
    path = tmp_path / "t.swf"
    path.write_bytes(content)
    with pytest.raises(WorkloadError) as info:
        read_swf(path)
    assert str(info.value).startswith(f"{path}: {message}") and "\n" not in str(info.value)


def test_utf16_text_is_not_binary(tmp_path):
    path = tmp_path / "t.swf"
    path.write_bytes(("\ufeff" + TRACE).encode("utf-16-le"))
    assert len(read_swf(path)) == 2
