"""SWF fields 17-18 (preceding job, think time): reading, missing and cyclic predecessors."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.workload.dependencies import (
    SKIP_CYCLE,
    SKIP_MISSING,
    SKIP_NOT_REPLAYED,
    release_order,
)
from hdrm.workload.select import select
from hdrm.workload.swf import SkippableLineError, read_swf


def swf_line(number: int, submit: float, run: float, procs: int, pred: int = -1,
             think: float = -1) -> str:
    """One SWF job line (fields 17 and 18 as given)."""
    return (f"{number} {submit:g} -1 {run:g} {procs} -1 -1 {procs} {run * 2:g} -1 1 1 1 -1 1 -1 "
            f"{pred} {think:g}")


def write(tmp_path, lines: list[str]) -> str:
    path = tmp_path / "deps.swf"
    path.write_text("; MaxProcs: 4\n" + "\n".join(lines) + "\n")
    return str(path)


CHAIN = [swf_line(1, 0, 100, 2), swf_line(2, 5, 50, 4, 1, 10), swf_line(3, 10, 30, 1, 2, 0),
         swf_line(4, 12, 20, 2, 3, 5)]


def test_chain_read_as_job_indices(tmp_path):
    deps = read_swf(write(tmp_path, CHAIN)).dependencies
    assert deps.job.tolist() == [1, 2, 3]
    assert deps.pred.tolist() == [0, 1, 2]
    assert deps.think_s.tolist() == [10.0, 0.0, 5.0]
    assert deps.skipped == {}
    assert deps.describe() == "3 jobs wait for a preceding job (think time 0-10 s)"


def test_no_fields_no_dependencies_and_switch_off(tmp_path):
    path = write(tmp_path, [swf_line(1, 0, 10, 1), swf_line(2, 1, 10, 1, 0, 3)])
    assert read_swf(path).dependencies is None  # -1 and 0 mean none
    assert read_swf(write(tmp_path, CHAIN), dependencies=False).dependencies is None


def test_unknown_think_time_counts_as_zero(tmp_path):
    path = write(tmp_path, [swf_line(1, 0, 10, 1), swf_line(2, 1, 10, 1, 1, -1)])
    assert read_swf(path).dependencies.think_s.tolist() == [0.0]


def test_missing_predecessor_strict_names_the_line(tmp_path):
    path = write(tmp_path, [swf_line(1, 0, 10, 1), swf_line(2, 1, 10, 1, 7, 0)])
    with pytest.raises(SkippableLineError, match=r"deps\.swf:3: field 17 \(preceding job number\) "
                       r"is 7, which no job line of the file has; set field 17 to -1"):
        read_swf(path)


def test_missing_predecessor_lenient_dropped_and_counted(tmp_path):
    path = write(tmp_path, [swf_line(1, 0, 10, 1), swf_line(2, 1, 10, 1, 7, 0),
                            swf_line(3, 2, 10, 1, 1, 4)])
    deps = read_swf(path, strict=False).dependencies
    assert deps.job.tolist() == [2] and deps.pred.tolist() == [0]
    assert deps.skipped == {SKIP_MISSING: 1}


def test_cycle_strict_names_the_line_and_the_cycle(tmp_path):
    lines = [swf_line(1, 0, 10, 1), swf_line(2, 1, 10, 1, 4, 0), swf_line(3, 2, 10, 1, 2, 0),
             swf_line(4, 3, 10, 1, 3, 0), swf_line(5, 4, 10, 1, 4, 0)]
    with pytest.raises(SkippableLineError, match=r"deps\.swf:3: field 17 \(preceding job number\) "
                       r"makes a cycle: job 2 -> job 3 -> job 4 -> job 2"):
        read_swf(write(tmp_path, lines))


def test_cycle_lenient_drops_the_cycle_keeps_what_follows(tmp_path):
    lines = [swf_line(1, 0, 10, 1), swf_line(2, 1, 10, 1, 4, 0), swf_line(3, 2, 10, 1, 2, 0),
             swf_line(4, 3, 10, 1, 3, 0), swf_line(5, 4, 10, 1, 4, 6), swf_line(6, 5, 10, 1, 6, 0)]
    deps = read_swf(write(tmp_path, lines), strict=False).dependencies
    assert deps.skipped == {SKIP_CYCLE: 4}  # 2->3->4->2 and 6->6
    assert list(zip(deps.job.tolist(), deps.pred.tolist())) == [(4, 3)]  # job 5 after job 4


def test_predecessor_not_replayed_is_dropped_even_when_strict(tmp_path):
    # job 1 has run time -1: the default conventions skip it; job 2 keeps its trace time
    lines = [swf_line(1, 0, -1, 1), swf_line(2, 1, 10, 1, 1, 0), swf_line(3, 2, 10, 1, 2, 0)]
    workload = read_swf(write(tmp_path, lines))
    assert workload.dependencies.skipped == {SKIP_NOT_REPLAYED: 1}
    assert workload.dependencies.job.tolist() == [1] and workload.dependencies.pred.tolist() == [0]


def test_selection_remaps_and_counts_predecessors_left_out(tmp_path):
    workload = read_swf(write(tmp_path, CHAIN))
    deps = select(workload, 1, 3).dependencies
    assert deps.job.tolist() == [1, 2] and deps.pred.tolist() == [0, 1]
    assert deps.think_s.tolist() == [0.0, 5.0]
    assert deps.skipped == {SKIP_NOT_REPLAYED: 1}
    assert select(workload, 0, 2).dependencies.job.tolist() == [1]


def test_release_lower_bound_follows_the_chain(tmp_path):
    workload = read_swf(write(tmp_path, CHAIN))
    earliest = release_order(workload.dependencies, [j.submit_s for j in workload.jobs])
    assert earliest.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert np.all(earliest <= [j.submit_s for j in workload.jobs])


def test_batsim_json_round_trip_lowers_subtime(tmp_path):
    from hdrm.workload.batsim_json import read_batsim_json, write_batsim_json

    workload = read_swf(write(tmp_path, CHAIN))
    write_batsim_json(workload, tmp_path / "w.json")
    back = read_batsim_json(tmp_path / "w.json")
    assert [(j.id, j.submit_s, j.trace_submit_s) for j in back.jobs] == [
        (1, 0.0, 0.0), (2, 0.0, 5.0), (3, 0.0, 10.0), (4, 0.0, 12.0)]
    assert back.dependencies.job.tolist() == [1, 2, 3]
    assert back.dependencies.pred.tolist() == [0, 1, 2]
    assert back.dependencies.think_s.tolist() == [10.0, 0.0, 5.0]
    assert all("dependencies" not in j.extra for j in back.jobs)


def _json(tmp_path, jobs: list[dict]) -> str:
    import json

    for job in jobs:
        job.update(res=1, profile="d")
    doc = {"nb_res": 1, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 1}}}
    path = tmp_path / "deps.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_batsim_json_unknown_dependency_and_cycle_are_errors(tmp_path):
    from hdrm.errors import WorkloadError
    from hdrm.workload.batsim_json import read_batsim_json

    path = _json(tmp_path, [{"id": "a", "subtime": 0}, {"id": "b", "subtime": 0,
                                                        "dependencies": ["z"]}])
    with pytest.raises(WorkloadError, match=r"deps\.json: job 'b' depends on job 'z', which the "
                       r"workload does not have"):
        read_batsim_json(path)
    path = _json(tmp_path, [{"id": "a", "subtime": 0, "dependencies": ["b"]},
                            {"id": "b", "subtime": 0, "dependencies": ["a"], "think_time": 2}])
    with pytest.raises(WorkloadError, match=r"deps\.json: job 'a': its dependencies make a cycle: "
                       r"job a -> job b -> job a; remove one"):
        read_batsim_json(path)


def test_release_lower_bound_is_the_latest_predecessor_bound():
    from hdrm.workload.dependencies import Dependencies

    # jobs 0 (t=0) and 1 (t=30) -> 2 -> 3; job 4 (t=5) alone
    deps = Dependencies(np.array([2, 2, 3]), np.array([0, 1, 2]), np.zeros(3))
    assert release_order(deps, [0, 30, 40, 50, 5]).tolist() == [0, 30, 30, 30, 5]


def test_kahn_order_shared_with_the_dag_model():
    from hdrm.workload.dependencies import kahn_order

    assert kahn_order([0, 1, 1, 2], [[1, 2], [3], [3], []]) == ([0, 1, 2, 3], [0, 0, 0, 0])
    order, left = kahn_order([1, 1, 0], [[1], [0], []])
    assert order == [2] and left == [1, 1, 0]


def test_fractional_predecessor_is_refused_or_dropped_never_truncated(tmp_path):
    # field 17 = 1.5 was read as job 1 (int64 cast)
    lines = [swf_line(1, 0, 10, 1), swf_line(2, 1, 10, 1), swf_line(4, 1, 10, 1, 1.5, 0),
             swf_line(3, 2, 10, 1, 2, 4)]
    path = write(tmp_path, lines)
    with pytest.raises(SkippableLineError, match=r"deps\.swf:4: field 17 \(preceding job number\) "
                       r"is 1\.5, not a whole number; set field 17 to -1"):
        read_swf(path)
    deps = read_swf(path, strict=False).dependencies
    assert deps.job.tolist() == [3] and deps.pred.tolist() == [1]  # job 3 after job 2 only
    assert deps.skipped == {"fractional preceding job": 1}
    alone = write(tmp_path, [swf_line(1, 0, 10, 1), lines[2]])
    assert read_swf(alone, strict=False).dependencies.skipped == {"fractional preceding job": 1}
    assert read_swf(alone, dependencies=False).dependencies is None  # field 17 unused: no check
