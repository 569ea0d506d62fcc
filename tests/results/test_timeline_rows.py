"""TimelineRows: rows added as tuples and moved into typed columns by blocks read back exactly."""

from __future__ import annotations

import pytest

from hdrm.results import timeline
from hdrm.results.timeline import TimelineRow, TimelineRows


def test_rows_across_blocks_read_back_exactly():
    n = 2 * timeline.BLOCK_ROWS + 5
    rows = TimelineRows()
    expected = []
    for i in range(n):
        values = (i * 0.5, i % 7, i % 3, 2 * i, 0, 100.0 + i / 3, i * 1e9 + 0.1)
        rows.add(*values)
        expected.append(TimelineRow(*values))
        assert len(rows) == i + 1
    assert rows == expected and list(rows) == expected
    assert rows[n - 1] == expected[-1] and rows[-3:] == expected[-3:]
    first = next(rows.column_tuples())
    assert first == (0.0, 0, 0, 0, 0, 100.0, 0.1) and type(first[1]) is int
    copy = TimelineRows(expected)
    assert copy == rows and len(copy) == n
    copy.add(*first)
    assert copy != rows


def test_a_bad_row_leaves_the_columns_as_they_were():
    rows = TimelineRows()
    rows.add(1.0, 2, 3, 4, 0, 5.0, 6.0)
    rows.add(2.0, 2.5, 3, 4, 0, 5.0, 6.0)  # a count that is not an integer
    with pytest.raises(TypeError):
        len(list(rows))
    assert [len(c) for c in rows._columns] == [0] * 7
    for bad in [(1.0, 2, 3)], [(1.0, 2, 3, 4, 0, 5.0, 6.0), (1.0, 2, 3, 4, 0, 5.0, 6.0, 7.0)]:
        rows = TimelineRows()
        for row in bad:
            rows.add(*row)
        with pytest.raises(TypeError, match="a timeline row has 7 values"):
            rows.column_tuples()
        assert [len(c) for c in rows._columns] == [0] * 7


def test_rows_added_by_the_adder_then_settled():
    rows, by_add = TimelineRows(), TimelineRows()
    add = rows.adder()
    for i in range(5):
        add((float(i), i, 1, 2, 0, 10.0, 5.0 * i))
        by_add.add(float(i), i, 1, 2, 0, 10.0, 5.0 * i)
    assert len(rows) == 5 and rows == by_add  # read before settling: settled when read
    add((9.0, 1, 1, 1, 0, 1.0, 1.0))
    rows.settle()
    assert [len(c) for c in rows._columns] == [6] * 7 and not rows._added
