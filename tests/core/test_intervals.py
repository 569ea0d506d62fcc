"""IntervalSet: free cores as sorted disjoint runs, checked against a plain set of ids."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.intervals import IntervalSet

SIZE = 60

operations = st.lists(
    st.tuples(st.sampled_from(["remove", "add", "lowest", "covers"]),
              st.integers(-2, SIZE + 2), st.integers(0, 12)),
    max_size=80)


def check_invariants(s: IntervalSet, model: set[int]) -> None:
    """Runs sorted, disjoint, non-empty and maximal (never touching); the count and the ids
    are the model's."""
    runs = s.runs
    assert all(lo < hi for lo, hi in runs)
    assert all(a[1] < b[0] for a, b in zip(runs, runs[1:]))  # '<': touching runs are merged
    assert list(s) == sorted(model) and len(s) == len(model) == s.count
    assert all((i in s) == (i in model) for i in range(-3, SIZE + 3))


@settings(max_examples=300, deadline=None)
@given(operations)
def test_random_sequences_behave_as_a_set_of_ids(ops):
    """Random removals, additions, lowest-n and cover queries, valid or not: a refused change
    changes nothing; an accepted one does what the set of ids does."""
    s, model = IntervalSet(0, SIZE), set(range(SIZE))
    for op, first, width in ops:
        ids = set(range(first, first + width))
        if op == "remove":
            ok = width > 0 and ids <= model
            assert s.remove(first, first + width) == ok
            if ok:
                model -= ids
        elif op == "add":
            ok = width > 0 and not ids & model
            assert s.add(first, first + width) == ok
            if ok:
                model |= ids
        elif op == "lowest":
            got = s.lowest(width)
            if not 1 <= width <= len(model):
                assert got is None
            else:
                assert [i for lo, hi in got for i in range(lo, hi)] == sorted(model)[:width]
                assert all(a[1] < b[0] for a, b in zip(got, got[1:]))  # maximal runs
        else:
            assert s.covers(first, first + width) == (width > 0 and ids <= model)
        check_invariants(s, model)


def test_hand_checked_runs():
    s = IntervalSet(0, 10)
    assert s.remove(3, 5) and s.runs == [(0, 3), (5, 10)] and s.count == 8
    assert not s.remove(2, 4)  # 3 is not free
    assert s.remove(0, 3) and s.runs == [(5, 10)]
    assert s.lowest(3) == [(5, 8)] and s.lowest(6) is None
    assert s.add(3, 5) and s.runs == [(3, 10)]  # merged with the run on its right
    assert not s.add(9, 11)  # 9 is already in
    assert s.add(10, 12) and s.runs == [(3, 12)]
    assert s.add(0, 2) and s.lowest(4) == [(0, 2), (3, 5)]
    assert 2 not in s and 11 in s and 12 not in s and repr(s) == "IntervalSet([(0, 2), (3, 12)])"
    assert IntervalSet().runs == [] and IntervalSet(5, 5).count == 0
