"""Tenants and SLAs (hdrm.workload.tenants, tenant_files): sources, mapping files, deadlines by
hand, one-line errors naming file, line or key and value, and the memory they add per job."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import math
import tracemalloc

import numpy as np
import pytest

from hdrm.errors import ConfigError, HdrmError
from hdrm.workload.job import Job, Workload
from hdrm.workload.tenant_files import load_tenant_spec, tenants_for
from hdrm.workload.tenants import Sla, TenantSpec, build_tenants, parse_sla


def _jobs():
    # idx, id, submit (shifted), res, walltime, run time; trace clock = submit + 1000
    rows = [(0, 11, 0.0, 1, 100.0, 50.0, 3), (1, 12, 10.0, 2, 100.0, 20.0, 5),
            (2, 13, 20.0, 1, 100.0, 40.0, 3)]
    return [Job(i, jid, s, r, w, run, trace_submit_s=s + 1000.0, user_id=u)
            for i, jid, s, r, w, run, u in rows]


def test_tenants_by_user_with_relative_deadlines_by_hand():
    table = build_tenants(_jobs(), TenantSpec("user", default_sla=Sla("relative", 3.0)))
    assert [t.name for t in table.tenants] == ["user 3", "user 5"]
    assert table.tenant_of.tolist() == [0, 1, 0]
    assert table.deadline_s.tolist() == [150.0, 70.0, 140.0]  # submit + 3 x run time
    assert table.tenant_of.dtype == np.int32 and table.nbytes_per_job() == 12


def test_latency_and_none_slas():
    table = build_tenants(_jobs(), TenantSpec("job", default_sla=parse_sla("latency:60")))
    assert table.deadline_s.tolist() == [60.0, 70.0, 80.0]
    assert len(table) == 3 and table.tenants[2].name == "job 13"
    table = build_tenants(_jobs(), TenantSpec("user", default_sla=parse_sla("none")))
    assert np.isinf(table.deadline_s).all()


def test_mapping_csv_with_absolute_deadlines_in_the_trace_clock(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text("job_id,tenant,deadline_s\n11,astro,1090\n13,bio,\n")
    spec = load_tenant_spec(str(path), parse_sla("latency:500"))
    table = build_tenants(_jobs(), spec)
    assert [table.tenant(j).name for j in _jobs()] == ["astro", "user 5", "bio"]
    # job 11: absolute 1090 in the trace clock = 90 in the shifted clock; others: latency 500
    assert table.deadline_s.tolist() == [90.0, 510.0, 520.0]


def test_tenants_json_with_classes_shares_and_ranks(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({
        "by": "user", "map": {"user:3": "astro"}, "sla": "relative:2",
        "classes": {"gold": "latency:30", "bronze": "relative:10"},
        "tenants": {"astro": {"share": 2, "class": "bronze"}, "user 5": {"class": "gold"}}}))
    table = build_tenants(_jobs(), load_tenant_spec(str(path)))
    assert [(t.name, t.share, t.sla_class, t.rank) for t in table.tenants] == [
        ("astro", 2.0, "bronze", 1), ("user 5", 1.0, "gold", 0)]
    assert table.deadline_s.tolist() == [500.0, 40.0, 420.0]
    assert table.shares.tolist() == [2.0, 1.0] and table.ranks.tolist() == [1, 0]


def test_tenants_by_group_read_swf_field_13(tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 4\n"
                   "11 0 0 50 1 -1 -1 1 100 -1 1 3 7 -1 -1 -1 -1 -1\n"
                   "12 10 0 20 2 -1 -1 2 100 -1 1 5 8 -1 -1 -1 -1 -1\n"
                   "13 20 0 40 1 -1 -1 1 100 -1 1 3 8 -1 -1 -1 -1 -1\n")
    workload = Workload(_jobs(), source=str(swf))
    table = tenants_for(workload, "group", "relative:1")
    assert [table.tenant(j).name for j in workload.jobs] == ["group 7", "group 8", "group 8"]


@pytest.mark.parametrize("text,rows,message", [
    ("map.csv", "user;tenant\n3;a\n", r"map.csv, line 1: header 'user;tenant'; expected 'KEY,tenant'"),
    ("map.csv", "user,tenant\n3,a\n3,b\n", r"map.csv, line 3: user '3' is mapped again \(to 'b', "
                                           r"earlier to 'a'\)"),
    ("map.csv", "job_id,tenant,deadline_s\n1,a,soon\n",
     r"map.csv, line 2, deadline_s: expected a number of seconds, got 'soon'"),
    ("map.csv", "user,tenant,deadline_s\n", r"line 1: a deadline_s column needs job_id keys"),
    ("t.json", '{"tenant": {}}', r"t.json: unknown key 'tenant'; choose among by, map, sla"),
    ("t.json", '{"tenants": {"a": {"share": 0}}}',
     r"t.json, key 'tenants.a.share': expected a positive number, got 0"),
    ("t.json", '{"tenants": {"a": {"class": "gold"}}}',
     r"t.json, key 'tenants.a.class': unknown class 'gold'"),
    ("t.json", '{"sla": "soon:3"}', r"t.json, key 'sla': unknown SLA kind 'soon'"),
    ("t.json", '{"by": "team"}', r"t.json, key 'by': unknown value 'team'"),
])
def test_bad_files_are_one_line_errors(tmp_path, text, rows, message):
    path = tmp_path / text
    path.write_text(rows)
    with pytest.raises(ConfigError, match=message) as info:
        load_tenant_spec(str(path))
    assert "\n" not in str(info.value)


def test_bad_sources_and_slas():
    with pytest.raises(ConfigError, match=r"--tenants: 'team' is neither a tenant source"):
        load_tenant_spec("team")
    with pytest.raises(ConfigError, match=r"--tenants: no such file 'x.csv'"):
        load_tenant_spec("x.csv")
    with pytest.raises(ConfigError, match=r"--sla \(relative\): expected a positive number, got '-2'"):
        parse_sla("relative:-2")
    with pytest.raises(ConfigError, match=r"job 11 has no deadline_s in the mapping"):
        build_tenants(_jobs(), TenantSpec("user", default_sla=Sla("absolute")))


def test_the_table_adds_about_12_bytes_a_job():
    n = 20000
    jobs = [Job(i, i, float(i), 1, 100.0, 10.0, user_id=i % 50) for i in range(n)]
    spec = TenantSpec("user")
    build_tenants(jobs[:10], spec)  # warm up imports and caches
    tracemalloc.start()
    table = build_tenants(jobs, spec)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(table) == 50 and not math.isinf(table.deadline_s[0])
    assert current / n < 16, current / n  # 12 bytes of arrays + 50 tenants


def test_tenants_by_group_pass_over_lines_the_reader_skipped(tmp_path):
    # --no-strict skipped the 'inf' line; reading the groups once raised OverflowError
    swf = tmp_path / "t.swf"
    swf.write_bytes(("\ufeff; MaxProcs: 4\n"
                     "11 0 0 50 1 -1 -1 1 100 -1 1 3 7 -1 -1 -1 -1 -1\n"
                     "12 10 0 20 2 -1 -1 2 100 -1 1 5 8 -1 -1 -1 -1 -1\n"
                     "13 20 0 40 1 -1 -1 1 100 -1 1 3 8 -1 -1 -1 -1 -1\n"
                     "14 20 0 40 1 -1 -1 1 100 -1 1 3 inf -1 -1 -1 -1 -1\n").encode("utf-8"))
    workload = Workload(_jobs(), source=str(swf))
    table = tenants_for(workload, "group", "relative:1")
    assert [table.tenant(j).name for j in workload.jobs] == ["group 7", "group 8", "group 8"]


def test_mapping_files_with_a_byte_order_mark_and_their_errors(tmp_path):
    # the mark hid the header ("header '\ufeffuser,tenant'; expected 'KEY,tenant'"), a latin-1
    # file and a tenants JSON naming a missing CSV were tracebacks
    (tmp_path / "map.csv").write_bytes(b"\xef\xbb\xbfuser,tenant\r\n3,astro\r\n")
    spec = tmp_path / "t.json"
    spec.write_bytes(b'\xef\xbb\xbf{"by": "user", "map": "map.csv"}')
    for source in (tmp_path / "map.csv", spec):
        table = tenants_for(Workload(_jobs()), str(source), "relative:1")
        assert [table.tenant(j).name for j in _jobs()] == ["astro", "user 5", "astro"]
    (tmp_path / "map.csv").write_bytes("user,tenant\n3,caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"map\.csv:2: not UTF-8 text \(byte 0xe9\); save the "
                                          r"file as UTF-8$"):
        load_tenant_spec(str(tmp_path / "map.csv"), Sla("relative", 1.0))
    spec.write_text('{"map": "gone.csv"}')
    with pytest.raises(ConfigError, match=r"t\.json, key 'map': no such mapping CSV .*gone\.csv' "
                                          r"\(the path is relative to the tenants file\)$"):
        load_tenant_spec(str(spec), Sla("relative", 1.0))


_GROUPS_SWF = ("; MaxProcs: 4\n"
               "11 0 0 50 1 -1 -1 1 100 -1 1 3 7 -1 -1 -1 -1 -1\n"
               "12 10 0 20 2 -1 -1 2 100 -1 1 5 8 -1 -1 -1 -1 -1\n"
               "13 20 0 40 1 -1 -1 1 100 -1 1 3 8 -1 -1 -1 -1 -1\n").encode("ascii")


@pytest.mark.parametrize("suffix, pack", [
    (".swf.gz", gzip.compress),
    (".swf.bz2", bz2.compress),
    (".swf.xz", lzma.compress),
])
def test_tenants_by_group_read_compressed_traces_as_the_swf_reader(tmp_path, suffix, pack):
    """A bzip2 or xz trace, which the SWF reader reads, has its groups read too (it was refused
    as 'not an SWF trace')."""
    swf = tmp_path / f"t{suffix}"
    swf.write_bytes(pack(_GROUPS_SWF))
    workload = Workload(_jobs(), source=str(swf))
    table = tenants_for(workload, "group", "relative:1")
    assert [table.tenant(j).name for j in workload.jobs] == ["group 7", "group 8", "group 8"]


@pytest.mark.parametrize("inner, holds", [
    (gzip.compress, "gzip data inside gzip data (the trace was compressed twice); gunzip it "
                    "once"),
    (lambda b: b"PK\x03\x04" + b, "decompressed, it holds a zip archive, not SWF text"),
    (lambda b: b"\x00\x01" + b, "decompressed, it holds binary data (NUL bytes), not SWF text"),
])
def test_tenants_by_group_refuse_what_the_swf_reader_refuses(tmp_path, inner, holds):
    """The groups are read through the SWF reader's opening helper (hdrm.workload.unpacked):
    a .swf.gz that holds no text is one line naming the file and what it holds (its bytes were
    read as text: no group found, every job in 'group -1')."""
    swf = tmp_path / "t.swf.gz"
    swf.write_bytes(gzip.compress(inner(_GROUPS_SWF)))
    workload = Workload(_jobs(), source=str(swf))
    with pytest.raises(HdrmError) as caught:
        tenants_for(workload, "group", "relative:1")
    assert str(caught.value).startswith(f"{swf}: {holds}")
