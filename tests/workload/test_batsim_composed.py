"""Batsim 4.2.1's ``composed`` and ``parallel_homogeneous_total`` profiles, as read.

The rules are Batsim's (``src/profiles.cpp``, ``src/jobs_execution.cpp``): a sequence runs
``repeat`` times (1 when absent, an integer >= 1), each part after the one before, nested
sequences inside; ``current_task_index`` counts the tasks of the repeated sequence. A
``parallel_homogeneous_total`` job's ``cpu`` is spread over the hosts it is given.
"""

from __future__ import annotations

import json
import math

import pytest

from hdrm.errors import WorkloadError
from hdrm.sim.job_end import machine_parts, start_kwargs
from hdrm.workload.batsim_composed import part_problem, progress_tree
from hdrm.workload.batsim_json import check_supported, read_batsim_json, write_batsim_json
from hdrm.workload.job import JobPart

PROFILES = {
    "d1": {"type": "delay", "delay": 1.125}, "d3": {"type": "delay", "delay": 3.25},
    "c2": {"type": "parallel_homogeneous", "cpu": 2.07e9, "com": 0},
    "t4": {"type": "parallel_homogeneous_total", "cpu": 4.32e9, "com": 0},
    "sd": {"type": "composed", "repeat": 2, "seq": ["d1", "d3"]},
    "nest": {"type": "composed", "repeat": 2, "seq": ["sd", "c2", "d1"]},
    "once": {"type": "composed", "seq": ["c2", "t4"]},
    "net": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 5e5},
    "with_net": {"type": "composed", "seq": ["d1", "net"]},
}


def _read(tmp_path, profile: str, res: int = 2, profiles: dict | None = None, **kwargs):
    doc = {"nb_res": 4, "profiles": profiles or PROFILES,
           "jobs": [{"id": "j", "subtime": 0, "res": res, "walltime": 100, "profile": profile}]}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    return read_batsim_json(path, **kwargs)


def test_a_nested_repeated_sequence_is_flattened_with_batsims_task_indexes(tmp_path):
    job = _read(tmp_path, "nest").jobs[0]
    assert job.profile_type == "composed" and len(job.parts) == 2 * (4 + 2)
    assert [p.profile for p in job.parts[:7]] == ["d1", "d3", "d1", "d3", "c2", "d1", "d1"]
    assert job.parts[3] == JobPart("delay", 3.25, "d3", (("nest", 0), ("sd", 3)))
    assert job.parts[4] == JobPart("parallel_homogeneous", 2.07, "c2", (("nest", 1),))
    assert job.parts[11].trail == (("nest", 5),)  # repeat 1, position 2: 1 x 3 + 2
    # delays only: their sum is the run time; work needs a reference speed
    assert _read(tmp_path, "sd").jobs[0].run_time_s == 8.75
    assert math.isnan(job.run_time_s)
    assert _read(tmp_path, "nest", reference_gflops=1.0).jobs[0].run_time_s == pytest.approx(
        2 * (8.75 + 2.07 + 1.125))
    assert job.extra["profile_deps"] == {k: PROFILES[k] for k in ("sd", "d1", "d3", "c2")}


def test_a_total_amount_is_spread_over_the_hosts_given(tmp_path):
    job = _read(tmp_path, "t4", res=3, reference_gflops=2.0).jobs[0]
    assert job.parts == (JobPart("parallel_homogeneous_total", 4.32, "t4"),)
    assert job.ops_gflop == pytest.approx(1.44) and job.run_time_s == pytest.approx(0.72)
    assert start_kwargs(job) == {"ops_gflop": pytest.approx(1.44), "walltime_s": 100.0}
    assert start_kwargs(job, 4) == {"ops_gflop": pytest.approx(1.08), "walltime_s": 100.0}
    once = _read(tmp_path, "once").jobs[0]
    assert machine_parts(once, 3) == ((None, 2.07), (None, pytest.approx(1.44)))


@pytest.mark.parametrize(("profile", "message"), [
    ({"type": "composed", "repeat": 0, "seq": ["d1"]},
     r"profiles\.bad\.repeat must be an integer >= 1, got 0 \(Batsim 4 refuses it\)"),
    ({"type": "composed", "repeat": 1.5, "seq": ["d1"]},
     r"repeat must be an integer >= 1, got 1\.5"),
    ({"type": "composed", "seq": []}, r"profiles\.bad\.seq must be a non-empty list"),
    ({"type": "composed"}, r"profiles\.bad has no 'seq'"),
    ({"type": "composed", "seq": ["d1", "dd"]},
     r"profiles\.bad\.seq\[1\] 'dd' is not a profile of the workload"),
    ({"type": "composed", "seq": ["d1", "bad"]},
     r"profiles\.bad\.seq\[1\] 'bad' contains profiles\.bad again \(bad -> bad\)"),
], ids=["repeat-0", "repeat-float", "empty", "no-seq", "unknown", "cycle"])
def test_bad_sequences_are_refused_naming_the_field(tmp_path, profile, message):
    with pytest.raises(WorkloadError, match=message):
        _read(tmp_path, "bad", profiles={**PROFILES, "bad": profile})


def test_a_network_part_is_refused_in_one_line_naming_job_profile_and_part(tmp_path):
    workload = _read(tmp_path, "with_net")
    assert part_problem(workload.jobs[0]) == (
        "job 'j': profile 'with_net' has a part 'net' with com > 0 (SimGrid's network model)")
    with pytest.raises(WorkloadError, match=(
            r"w\.json: profile 'with_net' has a part 'net' with com > 0 \(SimGrid's network "
            r"model\) \(1 jobs: 'j'\): hdrm's engines do not model the platform's network.*; "
            r"give these jobs 'delay', .* with com 0")):
        check_supported(workload)
    check_supported(_read(tmp_path, "nest"))  # runnable parts only


def test_written_back_with_the_profiles_a_sequence_names(tmp_path):
    workload = _read(tmp_path, "nest")
    out = tmp_path / "out.json"
    write_batsim_json(workload, out)
    doc = json.loads(out.read_text())
    assert doc["profiles"] == {k: PROFILES[k] for k in ("nest", "sd", "d1", "d3", "c2")}
    again = read_batsim_json(out)
    assert again.jobs[0].parts == workload.jobs[0].parts


def test_the_progress_tree_of_a_killed_sequence_as_batsim_sends_it(tmp_path):
    """Recorded from Batsim 4.2.1: 'nest' on 2 hosts killed at 6 s, in sd's 4th task (d3,
    begun at 5.5 s): {"profile_name": "nest", "current_task_index": 0, "current_task":
    {"profile_name": "sd", "current_task_index": 3, "current_task": {"profile_name": "d3",
    "progress": 0.153846}}} (6 decimals as Batsim prints)."""
    job = _read(tmp_path, "nest").jobs[0]
    assert progress_tree(job, 3, 0.5 / 3.25) == {
        "profile_name": "nest", "current_task_index": 0, "current_task": {
            "profile_name": "sd", "current_task_index": 3, "current_task": {
                "profile_name": "d3", "progress": 0.5 / 3.25}}}
