"""compare.py --extra-trace with traces as users bring them: no header, a refused line."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import compare_rows
from hdrm.errors import ConfigError, WorkloadError

LINE = "{i} {t} 0 100 1 -1 -1 1 200 -1 1 1 1 1 1 1 -1 -1"


def _trace(path: Path, header: list[str], ids: list[int]) -> Path:
    path.write_text("\n".join(header + [LINE.format(i=i, t=60 * k) for k, i in enumerate(ids)])
                    + "\n")
    return path


def test_a_trace_without_maxprocs_needs_procs(tmp_path):
    path = str(_trace(tmp_path / "bare.swf", [], list(range(1, 21))))
    extra = compare_rows.ExtraTrace("bare", path, 0)
    with pytest.raises(ConfigError, match=(
            rf"^--extra-trace bare: {path} states no MaxProcs \(nor MaxNodes\) in its header; "
            r"give the processors, bare=PATH:PROCS$")):  # was a TypeError traceback
        compare_rows.generalisation_rows(str(tmp_path), [extra], 2, 8)
    rows = compare_rows.generalisation_rows(
        str(tmp_path), [compare_rows.ExtraTrace("bare", path, 16)], 2, 8)
    assert [(r.procs, r.starts) for r in rows] == [(16, (0, 12)), (16, (0, 12))]


def test_a_refused_line_offers_no_skip_the_comparison_lacks(tmp_path):
    path = str(_trace(tmp_path / "dup.swf", ["; MaxProcs: 4"], [1, 2, 2, 3]))
    with pytest.raises(WorkloadError) as err:
        compare_rows.generalisation_rows(str(tmp_path), [compare_rows.ExtraTrace("d", path, 0)],
                                         1, 2)
    assert str(err.value) == (f"{path}:4: field 1 (job number) is 2, already the number of "
                              "line 3; give each job its own number")  # was '... strict=False'
