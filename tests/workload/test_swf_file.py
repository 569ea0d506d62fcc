"""The text of an SWF trace file as the reader opens it (hdrm.workload.swf_file), public for the
other readers of the same files (the group ids of tenant_files)."""

from __future__ import annotations

import bz2
import codecs
import gzip

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.swf import read_swf
from hdrm.workload.swf_file import read_swf_text
from hdrm.workload.tenant_files import swf_groups

TEXT = "; MaxProcs: 4\n1 0 -1 10 2 -1 -1 2 20 -1 1 7 3 -1 -1 -1 -1 -1\n"


@pytest.mark.parametrize("name, pack", [
    ("t.swf", lambda b: b),
    ("t.swf.gz", gzip.compress),
    ("t.swf.bz2", bz2.compress),
    ("t.swf", lambda b: codecs.BOM_UTF8 + b),
    ("t.swf", lambda b: codecs.BOM_UTF16_LE + b.decode().encode("utf-16-le")),
])
def test_the_text_is_the_same_however_the_file_is_packed(name, pack, tmp_path):
    path = tmp_path / name
    path.write_bytes(pack(TEXT.encode()))
    assert read_swf_text(path) == TEXT
    assert swf_groups(path) == {1: 3}  # job 1's field 13, read from the same text
    assert [job.id for job in read_swf(str(path)).jobs] == [1]


def test_tenant_groups_refuse_what_the_reader_refuses(tmp_path):
    path = tmp_path / "twice.swf.gz"
    path.write_bytes(gzip.compress(gzip.compress(TEXT.encode())))
    with pytest.raises(WorkloadError) as by_reader:
        read_swf(str(path))
    with pytest.raises(WorkloadError) as by_groups:
        swf_groups(path)
    assert str(by_groups.value) == str(by_reader.value)
    assert str(by_reader.value).startswith(f"{path}: ")
    with pytest.raises(WorkloadError, match=r"nope\.swf: no such file; give the path of an SWF"):
        swf_groups(tmp_path / "nope.swf")
