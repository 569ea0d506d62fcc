"""Schedule metrics recomputed from out_jobs.csv equal Batsim's own out_schedule.csv; objective
helpers checked by hand."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import ConfigError
from hdrm.results.csvio import (
    BATSIM_SCHEDULE_COLUMNS,
    SCHEDULE_COLUMNS,
    read_jobs_csv,
    read_schedule_csv,
)
from hdrm.results.example import ENERGY_J, NB_CORES, example_jobs
from hdrm.results import machine_times as times_module
from hdrm.results.metrics import (
    avg_bounded_slowdown,
    avg_job_completion,
    avg_job_slowdown,
    avg_utilization,
    avg_waiting_time,
    edp,
    energy_consumption,
    machine_times,
    machine_times_of,
    makespan,
    max_bounded_slowdown,
    summarize,
)
from hdrm.results.records import JobResult, sorted_runs

from .golden import GOLDEN, GOLDEN_RUNS, needs_golden, run_id

#: Wall-clock columns Batsim measures; summarize takes them as arguments.
PASSED_THROUGH = ("scheduling_time", "simulation_time")


@needs_golden
@pytest.mark.parametrize("run_dir", GOLDEN_RUNS, ids=run_id)
def test_summary_equals_batsim_schedule(run_dir: Path):
    batsim = read_schedule_csv(run_dir / "out_schedule.csv")
    ours = summarize(
        read_jobs_csv(run_dir / "out_jobs.csv"),
        batsim["nb_computing_machines"],
        batsim["consumed_joules"],
        nb_machine_switches=batsim["nb_machine_switches"],
        nb_grouped_switches=batsim["nb_grouped_switches"],
        batsim_version=batsim["batsim_version"],
    )
    for column in BATSIM_SCHEDULE_COLUMNS:
        if column in PASSED_THROUGH:
            continue
        if isinstance(batsim[column], str):
            assert ours[column] == batsim[column]
        else:
            # Batsim rounds to 6 decimals and adds long doubles: 1e-6 relative (or 1e-6 absolute).
            assert ours[column] == pytest.approx(batsim[column], rel=1e-6, abs=1e-6), column
    assert list(ours) == list(SCHEDULE_COLUMNS)


@needs_golden
def test_pstate_demo_by_hand():
    jobs = read_jobs_csv(GOLDEN / "pstate_slowdown/pstateDemo/out_jobs.csv")
    # waits 0, 0, 8, 17; runs 11, 10, 10, 5 (walltime reached); finishes 10, 11, 21, 26
    assert avg_waiting_time(jobs) == 6.25
    assert makespan(jobs) == 26.0
    assert avg_job_slowdown(jobs) == pytest.approx((1 + 1 + 1.8 + 4.4) / 4)
    assert avg_job_completion(jobs) == pytest.approx((10 + 11 + 18 + 22) / 4)
    # bounded: max(1, 11/11), max(1, 10/10), 18/10, 22/max(5, 10)
    assert avg_bounded_slowdown(jobs) == pytest.approx((1 + 1 + 1.8 + 2.2) / 4)
    assert max_bounded_slowdown(jobs) == pytest.approx(2.2)
    assert avg_bounded_slowdown(jobs, threshold_s=1.0) == pytest.approx((1 + 1 + 1.8 + 4.4) / 4)
    assert avg_utilization(jobs, 4) == pytest.approx((2 * 10 + 2 * 11 + 4 * 10 + 5) / (4 * 26))
    assert energy_consumption(jobs) == 2000 + 2200 + 4000 + 500
    assert energy_consumption(jobs, energy_j=10400.0) == 10400.0
    assert edp(jobs, 10400.0) == 10400.0 * 26


@needs_golden
def test_machine_times_of_small_delays():
    # 10 one-core jobs of 10 s; idle time counts each core's gaps up to its last job only
    computing, idle = machine_times(read_jobs_csv(GOLDEN / "small_delays/fillerSched/out_jobs.csv"))
    assert computing == pytest.approx(100.0)
    assert idle == pytest.approx(30.02018, abs=1e-9)


def test_rejected_jobs_count_in_the_means_as_batsim_does():
    jobs = example_jobs()  # waits 0, 0, 5, 16 and one rejected job
    assert avg_waiting_time(jobs) == pytest.approx(21 / 5)
    assert avg_job_completion(jobs) == pytest.approx((10 + 20 + 15 + 21) / 5)
    assert avg_bounded_slowdown(jobs) == pytest.approx((1 + 1 + 1.5 + 2.1) / 5)
    summary = summarize(jobs, NB_CORES, ENERGY_J)
    assert summary["nb_jobs"] == 5 and summary["nb_jobs_finished"] == 4
    assert summary["nb_jobs_rejected"] == 1
    assert (summary["nb_jobs_success"], summary["nb_jobs_killed"]) == (3, 1)
    assert summary["success_rate"] == pytest.approx(0.6)
    assert summary["makespan"] == 27.0
    assert summary["utilization"] == pytest.approx(100 / (4 * 27))
    assert summary["mean_power_w"] == pytest.approx(10240 / 27)
    assert summary["time_computing"] == 100.0
    assert summary["time_idle"] == pytest.approx(8.0)  # cores 0-3 idle from 20 s to 22 s
    assert summary["batsim_version"] == "hdrm-0.1.0"


def test_energy_is_unknown_without_job_energy():
    jobs = [JobResult("1", starting_time=0.0, execution_time=1.0, consumed_energy=-1.0)]
    assert math.isnan(energy_consumption(jobs))
    assert math.isnan(edp(jobs))
    assert summarize(jobs, 1)["consumed_joules"] == 0.0  # as Batsim writes without energy


def test_no_jobs_gives_zeros():
    summary = summarize([], 8)
    assert summary["makespan"] == 0.0 and summary["mean_waiting_time"] == 0.0
    assert summary["success_rate"] == 0.0 and summary["utilization"] == 0.0
    assert summary["max_bounded_slowdown"] == 0.0 and summary["mean_power_w"] == 0.0
    assert machine_times([]) == (0.0, 0.0)


def test_machine_state_times_override():
    summary = summarize(example_jobs(), NB_CORES, machine_state_times_s={"time_sleeping": 3.5})
    assert summary["time_sleeping"] == 3.5 and summary["time_computing"] == 100.0
    with pytest.raises(ConfigError, match=r"unknown column 'time_sleep'; did you mean "
                                          r"'time_sleeping'"):
        summarize(example_jobs(), NB_CORES, machine_state_times_s={"time_sleep": 1.0})


def test_machine_times_of_wide_jobs_by_hand():
    # cores 0-3 run 10 s (ends 10) then 2-5 run 5 s (ends 20); 6 unused
    # computing 4 x 10 + 4 x 5 = 60; idle per core: 0, 0 (end 10, busy 10), 2 and 3: 20 - 15,
    # 4 and 5: 20 - 5, so 0 + 0 + 5 + 5 + 15 + 15 = 40
    jobs = [
        JobResult("1", starting_time=0.0, execution_time=10.0, allocated_resources="0-3"),
        JobResult("2", starting_time=15.0, execution_time=5.0, allocated_resources="2-5"),
    ]
    assert machine_times(jobs) == (60.0, 40.0)


def test_machine_times_cost_follows_ranges_not_cores(monkeypatch):
    """A job on a million cores is two numbers per range, not a million core ids."""
    def no_expansion(self):
        raise AssertionError("machine_times expanded an interval set core by core")

    monkeypatch.setattr(JobResult, "core_ids", no_expansion)
    jobs = [JobResult(str(i), starting_time=10.0 * i, execution_time=10.0,
                      allocated_resources="0-999999") for i in range(3)]
    computing, idle = machine_times(jobs)
    assert computing == 3 * 10.0 * 1_000_000
    assert idle == 0.0  # back to back from 0: no gap on any core


def _by_core(spans: list) -> tuple[float, float]:
    """Batsim's machine times core by core: each core's busy time added in job order, its last
    end the largest, idle the numpy sum of the differences (the definition, bit for bit)."""
    size = max((hi for _, _, runs in spans for _, hi in runs), default=0)
    busy, last_end = [0.0] * size, [0.0] * size
    computing = []
    for run_s, end_s, runs in spans:
        for lo, hi in runs:
            computing.append(run_s * (hi - lo))
            for core in range(lo, hi):
                busy[core] += run_s
                last_end[core] = max(last_end[core], end_s)
    if not computing:
        return 0.0, 0.0
    return math.fsum(computing), float(np.sum(np.array(last_end) - np.array(busy)))


_times = st.floats(0.0, 1e6, allow_nan=False) | st.sampled_from([0.0, 0.1, 1e-7, 3.3, 1e9 / 7])
_span = st.tuples(_times, _times, st.lists(st.integers(0, 90), min_size=1, max_size=40))


@settings(deadline=None)  # timing varies on a shared machine
@given(st.lists(_span, max_size=30), st.sampled_from([1, 3, 8192]), st.booleans(),
       st.sampled_from([4, 1 << 15]))
def test_machine_times_of_equals_the_core_by_core_definition(raw, at_once, segments, most):
    # any runs, on segments (switching to per-core arrays past `most` segments) or on per-core
    # arrays (short runs item by item, long ones by numpy slices; last ends taken a few runs at
    # a time or all at once): the same two floats as core by core
    spans = [(run_s, end_s, sorted_runs(cores)) for run_s, end_s, cores in raw]
    with mock.patch.object(times_module, "RUNS_AT_ONCE", at_once), \
            mock.patch.object(times_module, "SEGMENTS_MAX", most):
        assert machine_times_of(spans, segments) == _by_core(spans)


@settings(deadline=None)
@given(st.lists(st.floats(-1e12, 1e12) | st.sampled_from([0.0, -0.0, 1e-300, 3.3]),
                max_size=700))
def test_pairwise_sum_is_numpy_s_sum_bit_for_bit(values):
    assert times_module.pairwise_sum(values).hex() == float(np.sum(np.array(values))).hex()


def test_nan_ends_spread_and_a_short_replay_needs_no_numpy():
    # segments (numpy not loaded: a fresh interpreter) and per-core arrays (numpy loaded here)
    spans = [(1.0, 5.0, [(0, 40)]), (2.0, float("nan"), [(10, 20)]), (1.0, 9.0, [(30, 50)]),
             (1.0, 3.0, [(15, 25)])]
    code = ("import sys; from hdrm.results.machine_times import machine_times_of; "
            f"nan = float('nan'); print(machine_times_of({spans!r}), 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["(90.0,", "nan)", "False"]
    assert math.isnan(machine_times_of(spans)[1])  # numpy's path (np.maximum spreads nan)


@pytest.mark.parametrize("segments", [True, False])
def test_a_later_end_covering_a_nan_end_keeps_it(segments):
    """A job whose end is above every other last end of its cores still leaves the nan a job
    before it wrote there (max keeps a nan already there): on segments, where such a job
    overwrites the last ends at once, as core by core."""
    nan = float("nan")
    spans = [(1.0, nan, [(10, 20)]), (1.0, 9.0, [(0, 40)]), (2.0, 12.0, [(5, 30)])]
    assert math.isnan(machine_times_of(spans, segments)[1])  # (as np.maximum spreads it)
    finite = [(1.0, 4.0, [(10, 20)]), (1.0, 9.0, [(0, 40)]), (2.0, 12.0, [(5, 30)])]
    # computing 1 x 10 + 1 x 40 + 2 x 25; idle: last ends 12 on 25 cores and 9 on 15, busy
    # 4 on 10 cores, 3 on 15, 1 on 15
    assert machine_times_of(finite, segments) == _by_core(finite) == (
        100.0, 25 * 12.0 + 15 * 9.0 - (10 * 4.0 + 15 * 3.0 + 15 * 1.0))


def test_summary_columns_equal_the_single_metrics():
    # summarize makes its job columns in one pass: the same values as each metric alone
    jobs = example_jobs() + [
        JobResult("k", starting_time=3.0, execution_time=0.0, final_state="COMPLETED_KILLED",
                  success=0, allocated_resources="1"),
        JobResult("r", final_state="REJECTED", success=0, consumed_energy=None),
    ]
    summary = summarize(jobs, NB_CORES, ENERGY_J, bsld_threshold_s=30.0)
    assert summary["makespan"] == makespan(jobs)
    assert summary["mean_waiting_time"] == avg_waiting_time(jobs)
    assert summary["mean_turnaround_time"] == avg_job_completion(jobs)
    assert summary["mean_slowdown"] == avg_job_slowdown(jobs) == math.inf  # the 0 s job
    assert summary["mean_bounded_slowdown"] == avg_bounded_slowdown(jobs, 30.0)
    assert summary["max_bounded_slowdown"] == max_bounded_slowdown(jobs, 30.0)
    assert summary["utilization"] == avg_utilization(jobs, NB_CORES)
    ran = [job for job in jobs if job.final_state != "REJECTED"]
    assert (summary["nb_jobs"], summary["nb_jobs_finished"], summary["nb_jobs_killed"]) == (
        len(jobs), len(ran), sum(job.killed for job in ran))
    assert summary["nb_jobs_rejected"] == len(jobs) - len(ran) >= 1
    assert (summary["time_computing"], summary["time_idle"]) == machine_times(jobs)
