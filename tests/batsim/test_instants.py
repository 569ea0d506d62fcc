"""The adapter decides once per instant of the built-in engine, however Batsim splits the events.

The real Batsim may report the events of one instant in several messages (a job end whose actor
wakes a moment later opens a message of its own). These tests play Batsim by hand: a stub of
pybatsim's ``Batsim`` object hands the adapter the events message by message, and the adapter must
start jobs only once every event of the instant has come, at the instant's time, as the built-in
engine does. With the grouping off (the old behaviour) the same messages give two decisions.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from batsim_helpers import PLATFORMS

from hdrm.batsim.adapter import HdrmScheduler
from hdrm.batsim.instants import Diverged, InstantGrouper
from hdrm.platform.loader import load_platform
from hdrm.platform.power import RUNNING
from hdrm.platform.simgrid import core_host_name
from hdrm.workload.batsim_json import read_batsim_json

TINY4 = PLATFORMS / "tiny4.json"


def write_workload(path: Path) -> Path:
    """Jobs 0 and 1 (2 cores each) end together at t=10; job 2 (4 cores) is submitted at t=10 and
    fits only once both ended."""
    jobs = [{"id": 0, "subtime": 0, "res": 2, "walltime": 100, "profile": "d10"},
            {"id": 1, "subtime": 0, "res": 2, "walltime": 100, "profile": "d10"},
            {"id": 2, "subtime": 10, "res": 4, "walltime": 100, "profile": "d5"}]
    profiles = {"d10": {"type": "delay", "delay": 10}, "d5": {"type": "delay", "delay": 5}}
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    return path


class StubBatsim:
    """What the adapter uses of pybatsim's ``Batsim``: the time, the resources, the replies."""

    def __init__(self, workload: Path) -> None:
        self.now = 0.0
        self.running_simulation = True
        self.nb_compute_resources = 4
        self.compute_resources = {i: {"name": core_host_name(i, 4)} for i in range(4)}
        self.workloads = {"w0": str(workload)}
        self.executed: list[tuple[float, str, str]] = []

    def time(self) -> float:
        return self.now

    def execute_jobs(self, jobs) -> None:
        self.executed += [(self.now, job.id, job.allocation) for job in jobs]

    def set_resource_state(self, resources, state) -> None:
        pass

    def reject_jobs(self, jobs) -> None:
        raise AssertionError(f"unexpected rejection of {jobs}")


def message(scheduler: HdrmScheduler, now: float, submitted=(), ended=()) -> None:
    """One Batsim message: its submissions and ends, then the end of the message."""
    scheduler.bs.now = now
    for i in submitted:
        scheduler.onJobSubmission(SimpleNamespace(id=f"w0!{i}"))
    for i in ended:
        scheduler.onJobCompletion(SimpleNamespace(id=f"w0!{i}"))
    scheduler.onNoMoreEvents()


def adapter(tmp_path: Path, grouped: bool) -> HdrmScheduler:
    scheduler = HdrmScheduler(platform=str(TINY4), policy="fcfs", contention="none")
    scheduler.group_instants = grouped
    scheduler.bs = StubBatsim(write_workload(tmp_path / "workload.json"))
    scheduler.onSimulationBegins()
    message(scheduler, 0.0, submitted=(0, 1))
    assert scheduler.bs.executed == [(0.0, "w0!0", "0-1"), (0.0, "w0!1", "2-3")]
    return scheduler


def test_the_events_of_one_instant_split_over_three_messages_give_one_decision(tmp_path):
    scheduler = adapter(tmp_path, grouped=True)
    decisions = scheduler.decisions
    message(scheduler, 10.0, ended=(0,))  # Batsim: the first end alone ...
    message(scheduler, 10.0, submitted=(2,))  # ... the submission ...
    assert scheduler.decisions == decisions and len(scheduler.bs.executed) == 2  # nothing yet
    message(scheduler, 10.0000004, ended=(1,))  # ... the other end, its ptask dated a hair later
    assert scheduler.decisions == decisions + 1
    assert scheduler.bs.executed[2:] == [(10.0000004, "w0!2", "0-3")]
    assert scheduler.starts[-1][0] == 10.0  # decided at the built-in engine's instant
    message(scheduler, 15.0000004, ended=(2,))
    assert scheduler.decisions == decisions + 2


def test_without_grouping_the_same_messages_give_three_decisions(tmp_path):
    """The old behaviour, a decision at every message (what a plain PyBatsim scheduler does)."""
    scheduler = adapter(tmp_path, grouped=False)
    decisions = scheduler.decisions
    message(scheduler, 10.0, ended=(0,))
    message(scheduler, 10.0, submitted=(2,))
    message(scheduler, 10.0000004, ended=(1,))
    assert scheduler.decisions == decisions + 3


def test_an_end_the_model_does_not_expect_falls_back_to_deciding_at_every_message(tmp_path, caplog):
    scheduler = adapter(tmp_path, grouped=True)
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.adapter"):
        message(scheduler, 4.0, ended=(0,))  # the model ends job 0 at 10 s
    assert "Batsim ended jobs at 4.000000 that end at 10.000000 or later" in caplog.text
    assert scheduler._instants is None
    message(scheduler, 10.0, submitted=(2,))
    message(scheduler, 10.0, ended=(1,))
    assert scheduler.bs.executed[2:] == [(10.0, "w0!2", "0-3")]


def test_the_grouper_opens_instants_in_the_built_in_engine_order(tmp_path):
    platform = load_platform(TINY4)
    jobs = read_batsim_json(write_workload(tmp_path / "w.json"), platform.reference_gflops).jobs
    grouper = InstantGrouper(platform, jobs)
    grouper.apply_states({c: (RUNNING, 1.0) for c in range(4)})  # asleep, a delay job takes longer
    grouper.submitted(jobs[1])
    assert list(grouper.complete_instants(0.0)) == []  # job 0 is submitted at 0 too
    grouper.submitted(jobs[0])
    instants = grouper.complete_instants(0.0)
    first = next(instants)  # each instant is decided before the grouper looks further
    assert (first.time_s, [j.id for j in first.arrivals], first.ends) == (0.0, [0, 1], [])
    grouper.start(jobs[0], [0, 1])
    grouper.start(jobs[1], [2, 3])
    assert list(instants) == []
    grouper.ended(jobs[1], 10.0)
    grouper.submitted(jobs[2])
    assert list(grouper.complete_instants(10.0)) == []
    grouper.ended(jobs[0], 10.0)
    (second,) = grouper.complete_instants(10.0)
    assert second.time_s == 10.0 and [e.key for e in second.ends] == [0, 1]  # the machine's order
    assert [j.id for j in second.arrivals] == [2] and grouper.unprocessed == []


@pytest.mark.parametrize("now", [10.02, 12.0])
def test_an_expected_event_that_does_not_come_is_a_divergence(tmp_path, now):
    platform = load_platform(TINY4)
    jobs = read_batsim_json(write_workload(tmp_path / "w.json"), platform.reference_gflops).jobs
    grouper = InstantGrouper(platform, jobs)
    grouper.apply_states({c: (RUNNING, 1.0) for c in range(4)})  # asleep, a delay job takes longer
    for job in jobs[:2]:
        grouper.submitted(job)
    instants = grouper.complete_instants(0.0)
    next(instants)
    grouper.start(jobs[0], [0, 1])
    grouper.start(jobs[1], [2, 3])
    assert list(instants) == []
    grouper.ended(jobs[0], 10.0)
    with pytest.raises(Diverged, match=r"Batsim is at .* events of 10.000000 have not come"):
        list(grouper.complete_instants(now))
