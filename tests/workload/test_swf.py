"""SWF reader: header directives, job fields, malformed lines, files."""

from __future__ import annotations

import gzip
import math

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.swf import (
    FIELD_NAMES,
    SkippableLineError,
    SwfHeader,
    parse_count,
    parse_header,
    read_swf,
)

HEADER = """\
; Version: 2.2
; Computer: Test Machine
; Installation: Somewhere
; Information: http://a.example/
;              http://b.example/
; MaxJobs: 3
; MaxRecords: 4
; Preemption: No
; UnixStartTime: 1000000
; TimeZone: -28800
; TimeZoneString: US/Pacific
; StartTime: Fri Apr 24 18:11:04 PDT 1998
; EndTime:   Sat Apr 29 21:08:32 PDT 2000
; MaxNodes: 400 (48 interactive, 352 batch)
; MaxProcs: 1664 (72, 1368, 224)
; MaxRuntime: 64800
; Queues: queue 0 is interactive
; MaxQueues: 2
; Queue:  0  interactive
; Queue:  1  batch
; MaxPartitions: 1
; Partitions: one partition
; Partition: 1 main
;
; Note: first note
;       continued here
; Note: second
; Copyright: some text
;   with a second line""".splitlines()


def test_header_typed_directives():
    header = parse_header(HEADER)
    assert header.version == "2.2"
    assert header.computer == "Test Machine"
    assert header.installation == "Somewhere"
    assert header.max_jobs == 3 and header.max_records == 4
    assert header.preemption == "No"
    assert header.unix_start_time_s == 1_000_000
    assert header.time_zone_s == -28800
    assert header.time_zone_string == "US/Pacific"
    assert header.start_time == "Fri Apr 24 18:11:04 PDT 1998"
    assert header.end_time == "Sat Apr 29 21:08:32 PDT 2000"
    assert header.max_runtime_s == 64800
    assert header.max_queues == 2 and header.max_partitions == 1
    assert header.queues_description == "queue 0 is interactive"
    assert header.partitions_description == "one partition"
    assert header.lines == tuple(HEADER)


def test_header_parenthetical_counts():
    header = parse_header(HEADER)
    assert header.max_procs == 1664
    assert header.max_procs_parts == (72, 1368, 224)
    assert header.max_nodes == 400
    assert header.max_nodes_parts == (48, 352)
    assert header.nb_res == 1664


def test_header_continuations_notes_queues_and_raw():
    header = parse_header(HEADER)
    assert header.information == "http://a.example/\nhttp://b.example/"
    assert header.notes == ("first note\ncontinued here", "second")
    assert header.queues == {0: "interactive", 1: "batch"}
    assert header.partitions == {1: "main"}
    assert header.raw["Note"] == ["first note\ncontinued here", "second"]
    assert header.raw["Copyright"] == ["some text\nwith a second line"]
    assert header.raw["MaxProcs"] == ["1664 (72, 1368, 224)"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1664 (72, 1368, 224)", (1664, (72, 1368, 224))),
        ("400 (48 interactive, 352 batch, 6 service, 10 I/O)", (400, (48, 352, 6, 10))),
        ("338 (batch partition; 512 total)", (338, ())),
        ("128", (128, ())),
        (" 9216 ", (9216, ())),
    ],
)
def test_parse_count(value, expected):
    assert parse_count(value) == expected


def test_parse_count_rejects_a_non_number():
    with pytest.raises(ValueError):
        parse_count("many (1, 2)")


def test_header_bad_integer_is_ignored_with_a_warning_naming_file_line_and_value(caplog):
    lines = ["; Version: 2", "; MaxProcs: many"]
    header = parse_header(lines, "t.swf")
    assert header.max_procs is None and header.raw["MaxProcs"] == ["many"]
    assert header.ignored == ((2, "MaxProcs", "many"),)
    assert [r.getMessage() for r in caplog.records] == [
        "t.swf:2: header directive MaxProcs: 'many' is not an integer; ignored (header values "
        "are informational)"]


def test_header_nb_res_falls_back_to_max_nodes():
    assert parse_header(["; MaxNodes: 256"]).nb_res == 256
    assert parse_header(["; MaxProcs: -1", "; MaxNodes: 64"]).nb_res == 64
    assert parse_header(["; Version: 2"]).nb_res is None


def test_read_job_fields(write_swf_text, swf_line):
    path = write_swf_text(["; MaxProcs: 16", swf_line(), swf_line(f1=2, f2=30, f4=50, f12=9)])
    workload = read_swf(path)
    assert len(workload) == 2
    first, second = workload.jobs
    assert (first.idx, first.id, first.submit_s, first.trace_submit_s) == (0, 1, 10.0, 10.0)
    assert (first.res, first.walltime_s, first.run_time_s, first.user_id) == (4, 200.0, 100.0, 7)
    assert (first.profile, first.profile_type) == ("p1", "delay")
    assert (first.ops_gflop, first.mem_mb, first.mem_bw_gbps) == (0.0, 0.0, 0.0)
    assert first.extra == {}
    assert (second.idx, second.id, second.submit_s, second.run_time_s) == (1, 2, 30.0, 50.0)
    assert second.user_id == 9
    assert workload.nb_res == 16
    assert workload.name == "trace" and workload.source == str(path)
    assert isinstance(workload.header, SwfHeader) and workload.skipped == {}


def test_keep_fields_keeps_the_18_raw_fields(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f6=12.5, f4=-1), swf_line(f1=2)])
    workload = read_swf(path, "rlscheduler", keep_fields=True)
    raw = workload.jobs[0].extra["swf"]
    assert raw == (1, 10, 5, -1, 4, 12.5, -1, 4, 200, -1, 1, 7, 3, -1, 1, -1, -1, -1)
    assert isinstance(raw[0], int) and isinstance(raw[5], float)
    assert workload.jobs[0].run_time_s == 10.0  # the convention changed the job, not the record


def test_gzip_reads_like_plain(tmp_path, write_swf_text, swf_line, values):
    plain = write_swf_text(["; MaxProcs: 8", swf_line(), swf_line(f1=2, f2=11)])
    packed = tmp_path / "trace.swf.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = read_swf(plain), read_swf(packed)
    assert values(a.jobs) == values(b.jobs) and a.nb_res == b.nb_res == 8
    assert b.name == "trace"


def test_blank_lines_crlf_and_tabs(write_swf_text, swf_line):
    line = swf_line().replace(" ", "\t")
    path = write_swf_text(["; MaxProcs: 8\r", "", line + "\r", "   ", swf_line(f1=2) + "\r"])
    workload = read_swf(path)
    assert [job.id for job in workload.jobs] == [1, 2]


def test_jobs_sorted_by_submit_time_stably(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=1, f2=50), swf_line(f1=2, f2=20), swf_line(f1=3, f2=20)])
    workload = read_swf(path)
    assert [job.id for job in workload.jobs] == [2, 3, 1]
    assert [job.idx for job in workload.jobs] == [0, 1, 2]


def test_too_few_fields_names_file_line_and_missing_field(write_swf_text, swf_line):
    short = " ".join(swf_line().split()[:17])
    path = write_swf_text(["; Version: 2", swf_line(), short])
    with pytest.raises(WorkloadError, match=r"trace\.swf:3: found 17 fields, SWF needs 18: "
                                            r"field 18 \(think time\) is missing; .*strict=False"):
        read_swf(path)


def test_too_many_fields(write_swf_text, swf_line):
    path = write_swf_text([swf_line() + " 42"])
    with pytest.raises(WorkloadError, match=r"trace\.swf:1: found 19 fields, SWF needs 18: "
                                            r"unexpected field 19 '42'"):
        read_swf(path)


def test_non_number_names_field_number_and_name(write_swf_text, swf_line):
    path = write_swf_text([swf_line(), swf_line(f1=2), swf_line(f1=3, f4="abc")])
    with pytest.raises(WorkloadError, match=r"trace\.swf:3: field 4 \(run time\) is not a "
                                            r"number: 'abc'"):
        read_swf(path)


def test_non_finite_number_is_malformed(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f9="inf")])
    with pytest.raises(WorkloadError, match=r"trace\.swf:1: field 9 \(requested time\) is not "
                                            r"a finite number: 'inf'"):
        read_swf(path)


def test_non_strict_skips_and_counts_malformed_lines(write_swf_text, swf_line):
    lines = [swf_line(), swf_line(f1=2, f5="x"), "1 2 3", swf_line(f1=4), swf_line(f1=5, f4=0)]
    workload = read_swf(write_swf_text(lines), strict=False)
    assert [job.id for job in workload.jobs] == [1, 4]
    assert workload.skipped == {"run time 0": 1, "malformed line": 2}


def test_field_names_cover_the_18_fields():
    assert len(FIELD_NAMES) == 18
    assert FIELD_NAMES[3] == "run time" and FIELD_NAMES[17] == "think time"


def test_missing_file(tmp_path):
    with pytest.raises(WorkloadError, match=r"nope\.swf: no such file; give the path of an SWF"):
        read_swf(tmp_path / "nope.swf")


def test_a_folder_is_not_a_trace(tmp_path):
    with pytest.raises(WorkloadError, match=r"cannot be read"):
        read_swf(tmp_path)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "bad.swf.gz"
    packed = gzip.compress(bytes(range(256)) * 40)
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(WorkloadError, match=r"bad\.swf\.gz: corrupt gzip data"):
        read_swf(path)


def test_header_only_file(write_swf_text):
    path = write_swf_text(["; Version: 2", "; MaxProcs: 4"])
    with pytest.raises(WorkloadError, match=r"trace\.swf: no job lines found \(2 header lines\)"):
        read_swf(path)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_an_empty_file_says_so(tmp_path, content):
    # it said "no job lines found (0 header lines)"
    path = tmp_path / "empty.swf"
    path.write_text(content)
    with pytest.raises(WorkloadError, match=r"empty\.swf: the file is empty \(a download or copy "
                       r"cut short\?\); an SWF job line has 18 numbers$"):
        read_swf(path)


def test_every_job_skipped_lists_the_reasons(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f4=0), swf_line(f1=2, f4=-1)])
    with pytest.raises(WorkloadError, match=r"all 2 jobs were skipped \(run time unknown \(< 0\): "
                                            r"1, run time 0: 1\) under the 'default'"):
        read_swf(path)


def test_walltime_and_memory_units(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f9=-1, f10=2048)])
    job = read_swf(path).jobs[0]
    assert job.walltime_s == math.inf and not job.has_walltime  # field 9 unknown: no walltime
    assert math.isclose(job.mem_mb, 2.0)


@pytest.mark.parametrize(("field", "name"), [(5, "allocated processors"),
                                             (8, "requested processors"), (1, "job number"),
                                             (12, "user id"), (13, "group id")])
def test_fractional_count_is_refused_by_a_strict_read(write_swf_text, swf_line, field, name):
    path = write_swf_text(["; MaxProcs: 16", swf_line(), swf_line(**{"f1": 2, f"f{field}": 1.5})])
    with pytest.raises(SkippableLineError) as info:
        read_swf(path)
    assert str(info.value) == (
        f"{path}:3: field {field} ({name}) is 1.5, not a whole number; write a whole number "
        "(hdrm never rounds it), or read with strict=False to skip such lines (counted)")


def test_fractional_processors_are_skipped_and_counted_not_rounded(write_swf_text, swf_line):
    path = write_swf_text([swf_line(), swf_line(f1=2, f5=1.5, f8=-1), swf_line(f1=3, f8=2.5),
                           swf_line(f1=4, f5=2, f8=2)])
    workload = read_swf(path, strict=False)
    assert [job.id for job in workload.jobs] == [1, 4]
    assert [job.res for job in workload.jobs] == [4, 2]
    assert workload.skipped == {"fractional processors": 2}


def test_duplicate_job_number_is_refused_by_a_strict_read(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=7), swf_line(f1=8), swf_line(f1=7, f2=20)])
    with pytest.raises(SkippableLineError, match=(
            r"trace\.swf:3: field 1 \(job number\) is 7, already the number of line 1; give "
            r"each job its own number, or read with strict=False to skip lines that repeat a "
            r"number \(counted\)$")):
        read_swf(path)


def test_duplicate_job_numbers_keep_the_first_line(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=7, f4=70), swf_line(f1=8), swf_line(f1=7, f2=20, f4=99),
                           swf_line(f1=7, f2=30), swf_line(f1=9, f5=0.5)])
    workload = read_swf(path, strict=False)
    assert [(job.id, job.run_time_s) for job in workload.jobs] == [(7, 70.0), (8, 100.0)]
    assert workload.skipped == {"fractional processors": 1, "duplicate job number": 2}
    assert len({job.id for job in workload.jobs}) == len(workload)


def test_error_names_the_way_out_in_the_callers_terms(write_swf_text, swf_line):
    path = write_swf_text([swf_line(), swf_line(f1=2, f5="x")])
    with pytest.raises(SkippableLineError) as info:
        read_swf(path)
    relaxed = info.value.relaxed_by("rerun with --no-strict")
    assert isinstance(relaxed, WorkloadError)
    assert str(relaxed) == (f"{path}:2: field 5 (allocated processors) is not a number: 'x'; fix "
                            "the line, or rerun with --no-strict to skip malformed lines (counted)")
    assert "strict=False" not in str(relaxed)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"])
def test_byte_order_marks_are_read_like_plain_utf8(write_swf_text, swf_line, values, encoding):
    # a Windows editor saves UTF-8 with a mark; Windows PowerShell's '>' writes UTF-16 with one
    plain = write_swf_text(["; MaxProcs: 8", swf_line(), swf_line(f1=2, f2=11)])
    text = plain.read_text()
    marked = plain.with_name("marked.swf")
    mark = "\ufeff" if encoding.startswith("utf-16-") else ""
    marked.write_bytes((mark + text.replace("\n", "\r\n")).encode(encoding))
    assert marked.read_bytes()[:2] in (b"\xef\xbb", b"\xff\xfe", b"\xfe\xff")
    a, b = read_swf(plain), read_swf(marked)
    assert values(a.jobs) == values(b.jobs) and len(b.jobs) == 2
    assert b.nb_res == 8 and b.header.max_procs == 8


@pytest.mark.parametrize(("field", "name", "value"), [
    (1, "job number", "1e20"), (1, "job number", "9007199254740993"),
    (8, "requested processors", "1e20"), (5, "allocated processors", "-1e19"),
    (12, "user id", "1e30"), (17, "preceding job number", "1e16")])
def test_whole_numbers_too_large_to_read_exactly_are_refused(write_swf_text, swf_line, field,
                                                             name, value):
    # as floats they were cast to -2**63 (job 1e20 became job -9223372036854775808, requesting
    # -9223372036854775808 processors in out_jobs.csv) or merged with a neighbour (2**53 + 1)
    path = write_swf_text([swf_line(), swf_line(**{"f1": 2, f"f{field}": value})])
    with pytest.raises(SkippableLineError) as info:
        read_swf(path)
    assert str(info.value) == (
        f"{path}:2: field {field} ({name}) is '{value}', too large: whole numbers are read "
        "exactly only below 2^53 = 9007199254740992; fix the line, or read with strict=False to "
        "skip malformed lines (counted)")


def test_whole_numbers_too_large_are_skipped_and_counted(write_swf_text, swf_line):
    path = write_swf_text([swf_line(), swf_line(f1=2, f8="1e20"), swf_line(f1="1e20"),
                           swf_line(f1=2**53 - 1, f8=2)])
    workload = read_swf(path, strict=False)
    assert [(job.id, job.res) for job in workload.jobs] == [(1, 4), (2**53 - 1, 2)]
    assert workload.skipped == {"malformed line": 2}


def test_a_long_value_is_cut_in_the_message(write_swf_text, swf_line):
    path = write_swf_text([swf_line(), swf_line(f1=2) + " " + "7" * 100_000])
    with pytest.raises(SkippableLineError) as info:
        read_swf(path)
    assert str(info.value).startswith(
        f"{path}:2: found 19 fields, SWF needs 18: unexpected field 19 '{'7' * 40}'... "
        "(100000 characters) after field 18 (think time); fix the line")
    assert len(str(info.value)) < 300


def test_fractional_user_and_group_ids_are_skipped_and_counted_not_truncated(write_swf_text,
                                                                             swf_line):
    # user 1.5 was read as user 1 (tenants by user, out_jobs.csv's "user=1")
    path = write_swf_text([swf_line(), swf_line(f1=2, f12=1.5), swf_line(f1=3, f13=2.5),
                           swf_line(f1=4, f12=8)])
    workload = read_swf(path, strict=False)
    assert [(job.id, job.user_id) for job in workload.jobs] == [(1, 7), (4, 8)]
    assert workload.skipped == {"fractional user/group": 2}
