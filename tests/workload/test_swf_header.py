"""SWF header directives as the archive writes them: left- or right-aligned, values such as N/A."""

from __future__ import annotations

import logging

import pytest

from hdrm.workload.swf import read_swf
from hdrm.workload.swf_header import STANDARD_KEYWORDS, parse_header

#: A right-aligned header, shaped like the newer archive logs (colons in one column).
RIGHT_ALIGNED = """\
;          Version: 2.2
;         Computer: Test cluster
;     Installation: Somewhere
;      Acknowledge: Someone
;      Information: http://a.example/
;                   http://b.example/
;       Conversion: Someone else, 2014
;          MaxJobs: 3
;       MaxRecords: 3
;       Preemption: No
;    UnixStartTime: 1230764400
;         TimeZone: 3600
;   TimeZoneString: Europe/Somewhere
;        StartTime: Thu Jan 01 00:00:00 CET 2009
;          EndTime: Fri Jan 02 00:00:00 CET 2009
;         MaxNodes: 35
;         MaxProcs: 140
;       MaxRuntime: N/A
;        MaxMemory: unknown
;        Copyright: free for research
;             Note: the filters used:
;                   user=7 removed: 12 jobs
;                   Status: cleaned
;""".splitlines()


def test_right_aligned_directives_are_read():
    header = parse_header(RIGHT_ALIGNED, "r.swf")
    assert header.version == "2.2" and header.computer == "Test cluster"
    assert header.information == "http://a.example/\nhttp://b.example/"
    assert header.max_jobs == 3 and header.unix_start_time_s == 1230764400
    assert header.time_zone_s == 3600 and header.end_time == "Fri Jan 02 00:00:00 CET 2009"
    assert header.max_nodes == 35 and header.max_procs == 140 and header.nb_res == 140
    # a site's own keyword, its colon in the column of the standard ones
    assert header.raw["Copyright"] == ["free for research"]


def test_free_text_with_a_colon_is_not_a_directive():
    header = parse_header(RIGHT_ALIGNED, "r.swf")
    # "user=7 removed: 12 jobs" and "Status: cleaned" continue the note: "Status" is no SWF
    # keyword and its colon is not in the directives' column
    assert header.notes == ("the filters used:\nuser=7 removed: 12 jobs\nStatus: cleaned",)
    assert "Status" not in header.raw and "user=7 removed" not in header.raw


def test_left_aligned_unknown_keyword_and_indented_continuation():
    lines = ["; Copyright: some text", ";   Permission: to use, with a second line",
             ";   MaxProcs: 64"]
    header = parse_header(lines)
    assert header.raw["Copyright"] == ["some text\nPermission: to use, with a second line"]
    assert header.max_procs == 64  # a standard keyword, whatever its indentation


def test_unknown_values_are_ignored_with_one_warning_per_line(caplog):
    with caplog.at_level(logging.WARNING):
        header = parse_header(RIGHT_ALIGNED, "r.swf")
    assert header.max_runtime_s is None and header.max_memory_kb is None
    assert header.raw["MaxRuntime"] == ["N/A"]
    assert header.ignored == ((18, "MaxRuntime", "N/A"), (19, "MaxMemory", "unknown"))
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "r.swf:18: header directive MaxRuntime: 'N/A' is not an integer; ignored (header "
        "values are informational)",
        "r.swf:19: header directive MaxMemory: 'unknown' is not an integer; ignored (header "
        "values are informational)",
    ]


@pytest.mark.parametrize("strict", [True, False])
def test_a_right_aligned_trace_with_na_values_reads_by_default(write_swf_text, swf_line, strict):
    path = write_swf_text(RIGHT_ALIGNED + [swf_line(), swf_line(f1=2, f2=20)])
    workload = read_swf(path, strict=strict)
    assert len(workload) == 2 and workload.nb_res == 140 and workload.skipped == {}


def test_standard_keywords():
    assert {"MaxProcs", "MaxNodes", "MaxRuntime", "Note", "Queue", "Partition"} <= STANDARD_KEYWORDS
    assert "Copyright" not in STANDARD_KEYWORDS


@pytest.mark.parametrize("spelling", ["maxprocs", "MAXPROCS", "maxProcs"])
def test_a_standard_keyword_in_another_case_is_that_keyword(write_swf_text, swf_line, spelling):
    # KTH-SP2's header with its keywords lower-cased: the machine size was lost ("cores
    # unknown", and hdrm replay --homogeneous-procs 0 stopped asking for it)
    path = write_swf_text(["; Version: 2.2", f"; {spelling}: 100", "; maxnodes: 50",
                           swf_line()])
    workload = read_swf(path)
    assert workload.nb_res == 100 and workload.header.max_nodes == 50
    assert workload.header.raw["MaxProcs"] == ["100"]


def test_another_case_follows_the_rule_of_a_sites_keyword():
    # lower-cased keywords in an indented note are its text, as a site's own keyword would be
    header = parse_header(["; MaxProcs: 8", "; Note: filters:", ";       queue: 3 removed",
                           ";   maxrecords: 5", ";         MaxJobs: 7"])
    assert header.queues == {} and header.max_records is None and header.max_jobs == 7
    assert header.notes == ("filters:\nqueue: 3 removed\nmaxrecords: 5",)
