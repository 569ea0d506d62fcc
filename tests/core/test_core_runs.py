"""CoreRuns: a job's cores kept as runs of consecutive ids, standing in for the tuple of its ids
(job records of wide jobs cost their runs, not their cores)."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet

from hdrm.core.runs import CoreRuns, core_runs
from hdrm.results.records import format_interval_set, interval_ranges

id_lists = st.lists(st.integers(min_value=0, max_value=400), max_size=600)


def test_runs_keep_the_given_order_by_hand():
    cores = CoreRuns.of([4, 5, 6, 0, 1, 9])
    assert cores.runs == [(4, 7), (0, 2), (9, 10)]
    assert tuple(cores) == (4, 5, 6, 0, 1, 9) and len(cores) == 6
    assert cores == (4, 5, 6, 0, 1, 9) and cores == [4, 5, 6, 0, 1, 9]
    assert (4, 5, 6, 0, 1, 9) == cores  # the tuple's side defers to CoreRuns
    assert cores != (0, 1, 4, 5, 6, 9) and cores != (4, 5, 6, 0, 1)
    assert (cores[0], cores[3], cores[5], cores[-1], cores[-6]) == (4, 0, 9, 9, 4)
    assert cores[1:4] == (5, 6, 0)
    assert 9 in cores and 0 in cores and 3 not in cores and 10 not in cores
    assert hash(cores) == hash((4, 5, 6, 0, 1, 9))
    with pytest.raises(IndexError):
        cores[6]


def test_adjacent_runs_merge_and_empty_runs_drop():
    assert CoreRuns([(0, 2), (2, 5), (7, 7), (9, 8), (5, 6)]).runs == [(0, 6)]
    assert CoreRuns([(0, 2), (2, 5)]) == CoreRuns([(0, 5)])
    assert CoreRuns() == () and len(CoreRuns()) == 0 and not CoreRuns()


def test_a_wide_run_costs_two_ints():
    wide = CoreRuns.of(list(range(10_000, 110_000)))
    assert wide.runs == [(10_000, 110_000)] and len(wide) == 100_000
    assert wide == tuple(range(10_000, 110_000))
    size = sys.getsizeof(wide) + sys.getsizeof(wide._bounds)
    assert size < 200  # the tuple of ids: 800,056 bytes of references alone


def test_runs_read_again_are_a_new_list_of_the_same_runs():
    cores = CoreRuns([(5, 9), (0, 2), (12, 20)])
    first = cores.runs
    first.append((30, 31))  # the caller's list: the runs kept are not changed
    first[0] = (0, 1)
    assert cores.runs == [(5, 9), (0, 2), (12, 20)] and cores.runs is not cores.runs
    assert CoreRuns([(3, 7)]).runs == [(3, 7)]
    copied = pickle.loads(pickle.dumps(cores))  # pickled after a read
    assert copied.runs == [(5, 9), (0, 2), (12, 20)] and copied == cores
    old = object.__new__(CoreRuns)  # pickled before the kept pairs existed: no such slot set
    old._bounds, old._len = (5, 9, 0, 2), 6
    assert old.runs == [(5, 9), (0, 2)] and old.runs == [(5, 9), (0, 2)]


@settings(deadline=None)  # timing varies on a shared machine
@given(id_lists)
def test_same_ids_in_the_same_order_as_given(ids):
    cores = CoreRuns.of(ids)
    assert list(cores) == ids and len(cores) == len(ids) and cores == tuple(ids)
    assert CoreRuns.of(cores) is cores
    assert [cores[i] for i in range(len(ids))] == ids
    assert core_runs(ids) == [(lo, hi) for lo, hi in core_runs(list(cores))]
    assert pickle.loads(pickle.dumps(cores)) == cores


@settings(deadline=None)  # timing varies on a shared machine
@given(id_lists)
def test_interval_sets_of_runs_are_those_of_the_ids(ids):
    cores = CoreRuns.of(ids)
    assert interval_ranges(cores) == interval_ranges(ids)
    assert format_interval_set(cores) == format_interval_set(ids) == str(ProcSet(*ids))


@settings(deadline=None)  # timing varies on a shared machine
@given(id_lists)
def test_numpy_reads_the_ids_in_order(ids):
    cores = CoreRuns.of(ids)
    assert np.asarray(cores).tolist() == ids
    marks = np.zeros(401)
    marks[cores,] = 1.0  # how the observations mark a job's cores
    assert np.flatnonzero(marks).tolist() == sorted(set(ids))
