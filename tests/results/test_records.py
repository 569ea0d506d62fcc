"""JobResult's derived columns and bounded slowdown, interval sets (checked against procset),
and users read from metadata."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet

from hdrm.errors import ConfigError
from hdrm.results.records import (
    COMPLETED_KILLED,
    COMPLETED_SUCCESSFULLY,
    REJECTED,
    CoreRuns,
    JobResult,
    format_interval_set,
    interval_ranges,
    metadata_user,
    parse_interval_ranges,
    parse_interval_set,
    sorted_runs,
)

core_sets = st.lists(st.integers(min_value=0, max_value=300), max_size=60)


@pytest.mark.parametrize(
    ("cores", "text"),
    [([8, 0, 1, 2, 3], "0-3 8"), ([], ""), ([5], "5"), ([3, 2], "2-3"), ([1, 1, 4, 6, 5], "1 4-6")],
)
def test_format_interval_set_examples(cores, text):
    assert format_interval_set(cores) == text


@settings(deadline=None)  # timing varies on a shared machine
@given(core_sets)
def test_format_interval_set_matches_procset(cores):
    assert format_interval_set(cores) == str(ProcSet(*cores))


@settings(deadline=None)  # timing varies on a shared machine
@given(st.integers(0, 300), st.integers(1, 80), st.sampled_from([list, tuple]), st.integers(-1, 80))
def test_format_interval_set_of_consecutive_ids_matches_procset(first, n, kind, swap):
    # the ids placements mostly give (one ascending run), and the same ids with two swapped
    ids = list(range(first, first + n))
    if 0 <= swap < n - 1:
        ids[swap], ids[swap + 1] = ids[swap + 1], ids[swap]
    assert format_interval_set(kind(ids)) == str(ProcSet(*ids))
    assert format_interval_set(kind(ids + [first + n - 1])) == str(ProcSet(*ids))  # a repeat


def test_format_interval_set_of_other_number_types():
    assert format_interval_set(tuple(np.arange(3, 7))) == "3-6"
    assert format_interval_set([np.int32(4), np.int32(5)]) == "4-5"
    assert format_interval_set((True, 2)) == "1-2"


@settings(deadline=None)  # timing varies on a shared machine
@given(core_sets)
def test_parse_interval_set_inverts_format_and_agrees_with_procset(cores):
    text = str(ProcSet(*cores))
    assert parse_interval_set(text) == sorted(set(cores))
    assert parse_interval_set(format_interval_set(cores)) == list(ProcSet.from_str(text))


def test_parse_interval_set_merges_overlaps_and_unsorted_parts():
    assert parse_interval_set("8 0-3") == [0, 1, 2, 3, 8]
    assert parse_interval_ranges("4-6 0-4 9") == [(0, 6), (9, 9)]
    assert interval_ranges([0, 1, 2, 3, 8]) == [(0, 3), (8, 8)]


@pytest.mark.parametrize(
    ("text", "message"),
    [("0-", r"part '0-' is not 'N' or 'LO-HI'"), ("3-1", r"range '3-1' ends before it starts"),
     ("a", r"part 'a'"), ("0,1", r"part '0,1'")],
)
def test_parse_interval_set_rejects_bad_text(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_interval_set(text)


def test_derived_columns_follow_batsim():
    job = JobResult("7", submission_time=3.0, starting_time=11.0, execution_time=10.0)
    assert (job.finish_time, job.waiting_time, job.turnaround_time) == (21.0, 8.0, 18.0)
    assert job.stretch == pytest.approx(1.8)
    assert job.finished and not job.rejected and not job.killed


def test_given_derived_columns_are_kept():
    job = JobResult("1", starting_time=0.0, execution_time=12.666667, finish_time=12.666666,
                    stretch=1.0)
    assert job.finish_time == 12.666666
    assert job.stretch == 1.0


def test_rejected_job_has_no_run_columns():
    job = JobResult("9", final_state=REJECTED, success=0, consumed_energy=None)
    assert job.rejected and not job.finished and not job.killed
    assert job.starting_time is None and job.waiting_time is None and job.stretch is None
    assert job.bounded_slowdown() is None


def test_killed_counts_every_unsuccessful_run():
    job = JobResult("3", final_state=COMPLETED_KILLED, success=0, starting_time=1.0,
                    execution_time=2.0)
    assert job.killed


@pytest.mark.parametrize(
    ("wait_s", "run_s", "threshold_s", "expected"),
    [(5.0, 2.0, 10.0, 1.0), (30.0, 5.0, 10.0, 3.5), (30.0, 20.0, 10.0, 2.5), (30.0, 5.0, 1.0, 7.0),
     (0.0, 100.0, 10.0, 1.0)],
)
def test_bounded_slowdown(wait_s, run_s, threshold_s, expected):
    job = JobResult("1", submission_time=0.0, starting_time=wait_s, execution_time=run_s)
    assert job.bounded_slowdown(threshold_s) == pytest.approx(expected)


def test_stretch_of_a_zero_length_job_is_infinite_or_nan():
    instant = JobResult("1", submission_time=0.0, starting_time=2.0, execution_time=0.0)
    assert instant.stretch == math.inf
    assert math.isnan(JobResult("1", starting_time=0.0, execution_time=0.0).stretch)


def test_unknown_final_state_names_the_choices():
    with pytest.raises(ConfigError, match=r"job '1': unknown final_state 'DONE'; choose one of: "
                                          r"COMPLETED_SUCCESSFULLY"):
        JobResult("1", final_state="DONE", starting_time=0.0, execution_time=1.0)


def test_a_job_that_ran_needs_its_start_and_run_time():
    with pytest.raises(ConfigError, match=r"job '2' \(COMPLETED_SUCCESSFULLY\): starting_time and "
                                          r"execution_time are required"):
        JobResult("2", final_state=COMPLETED_SUCCESSFULLY)


def test_core_ids_reads_the_allocation():
    job = JobResult("1", starting_time=0.0, execution_time=1.0, allocated_resources="0-2 7")
    assert job.core_ids() == [0, 1, 2, 7]


@pytest.mark.parametrize(
    ("metadata", "user"),
    [("user=alice", "alice"), ('{"user": "bob"}', "bob"), ('{"user_id": 7}', "7"),
     ("queue=q1;user: carol", "carol"), ("", None), ("gpu job", None), ('{"queue": "q"}', None),
     ("{not json, user=dan}", "dan")],
)
def test_metadata_user(metadata, user):
    assert metadata_user(metadata) == user
    assert JobResult("1", starting_time=0.0, execution_time=1.0, metadata=metadata).user() == user


def test_interval_ranges_of_wide_sets_match_the_definition():
    ids = list(range(0, 100)) + [150] + list(range(200, 300)) + [301, 303, 304]
    expected = [(0, 99), (150, 150), (200, 299), (301, 301), (303, 304)]
    assert interval_ranges(reversed(ids)) == expected
    assert format_interval_set(ids + [5, 6]) == "0-99 150 200-299 301 303-304"


@settings(deadline=None)  # timing varies on a shared machine
@given(st.lists(st.integers(min_value=0, max_value=2000), min_size=65, max_size=400))
def test_wide_interval_sets_are_written_as_procset_writes_them(cores):
    assert format_interval_set(cores) == str(ProcSet(*cores))


def _runs_of(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs ``(first, last + 1)`` from ``(first, length)`` pairs (length >= 1)."""
    return [(first, first + length) for first, length in pairs]


run_pairs = st.lists(st.tuples(st.integers(0, 300), st.integers(1, 40)), max_size=8)


@settings(deadline=None)  # timing varies on a shared machine
@given(run_pairs, st.booleans())
def test_sorted_runs_of_core_runs_are_the_merged_interval_ranges(pairs, ascending):
    # ascending runs with gaps come back as they are; any others (touching, overlapping,
    # unordered) sorted and merged, as the interval set of their ids
    runs = _runs_of(pairs)
    if ascending:
        runs, end = [], 0
        for first, length in pairs:
            runs.append((end + first % 7 + 1, end + first % 7 + 1 + length))
            end = runs[-1][1]
    cores = CoreRuns(runs)
    expected = [(lo, hi + 1) for lo, hi in interval_ranges(list(cores))]
    assert sorted_runs(cores) == expected
    assert format_interval_set(cores) == str(ProcSet(*cores))


@settings(deadline=None)  # timing varies on a shared machine
@given(core_sets, st.sampled_from([list, tuple]), st.booleans())
def test_sorted_runs_of_lists_and_tuples_are_the_merged_interval_ranges(cores, kind, ordered):
    ids = kind(sorted(set(cores)) if ordered else cores)
    assert sorted_runs(ids) == [(lo, hi + 1) for lo, hi in interval_ranges(cores)]


def test_sorted_runs_by_hand():
    assert sorted_runs((4, 5, 6, 9)) == [(4, 7), (9, 10)]
    assert sorted_runs([9, 4, 5, 6, 5]) == [(4, 7), (9, 10)]
    assert sorted_runs(CoreRuns([(4, 7), (0, 2), (9, 10)])) == [(0, 2), (4, 7), (9, 10)]
    assert sorted_runs(CoreRuns([(0, 2), (5, 9)])) == [(0, 2), (5, 9)]
    assert sorted_runs(CoreRuns([(0, 3), (1, 5)])) == [(0, 5)]
    assert sorted_runs(()) == [] and sorted_runs(CoreRuns()) == []
    assert sorted_runs((True, 2)) == [(1, 3)]
