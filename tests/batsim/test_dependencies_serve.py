"""Job dependencies under ``hdrm serve`` with hdrm's PyBatsim adapter: a Batsim JSON workload with
``"dependencies"`` and ``"think_time"`` is scheduled as the built-in engine schedules it."""

from __future__ import annotations

import json
from pathlib import Path

from batsim_helpers import PLATFORMS
from test_adapter import run_adapter

from hdrm.batsim.adapter import HdrmScheduler
from hdrm.platform.loader import load_platform
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.batsim_json import read_batsim_json

TINY4 = PLATFORMS / "tiny4.json"


def write(path: Path, late: bool = False) -> Path:
    """Six jobs on tiny4: c after a (think 7), d after a and b (think 2), f after c (think 0)
    and e independent; dependent jobs submitted at 0 (or ``late``: f at 500, after its release)."""
    jobs = [{"id": "a", "subtime": 0, "res": 2, "profile": "p40"},
            {"id": "b", "subtime": 3, "res": 3, "profile": "p20"},
            {"id": "c", "subtime": 0, "res": 4, "profile": "p20", "dependencies": ["a"],
             "think_time": 7},
            {"id": "d", "subtime": 0, "res": 1, "profile": "p40", "dependencies": ["a", "b"],
             "think_time": 2},
            {"id": "e", "subtime": 12, "res": 2, "profile": "p20"},
            {"id": "f", "subtime": 500 if late else 0, "res": 1, "profile": "p20",
             "dependencies": ["c"]}]
    profiles = {f"p{n}": {"type": "parallel_homogeneous", "cpu": n * 1e9 * 10, "com": 0}
                for n in (20, 40)}
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    return path


def served(workload: Path, grouped: bool = True) -> dict[str, tuple[float, float]]:
    scheduler = HdrmScheduler(platform=str(TINY4), policy="first-high_gflops", contention="none")
    scheduler.group_instants = grouped
    server = run_adapter(scheduler, TINY4, workload)
    return {r.job_id: (r.starting_time, r.finish_time) for r in server.result.results}


def test_serve_holds_dependent_jobs_as_the_builtin_engine(tmp_path):
    workload = write(tmp_path / "deps.json")
    sim = Simulation(load_platform(TINY4), read_batsim_json(workload),
                     SimulationConfig(contention="none"))
    outcomes = sim.run("first-high_gflops").outcomes
    builtin = {str(o.job.id): (o.start_s, o.finish_s) for o in outcomes}
    assert served(workload) == builtin
    ends = {j: f for j, (_, f) in builtin.items()}
    assert builtin["c"][0] >= ends["a"] + 7
    assert builtin["d"][0] >= max(ends["a"], ends["b"]) + 2
    assert builtin["f"][0] >= ends["c"]


def test_serve_queues_a_job_released_before_batsim_submits_it_at_its_submission(tmp_path):
    schedule = served(write(tmp_path / "late.json", late=True))
    assert schedule["f"][0] == 500.0


def test_deciding_at_every_message_still_holds_dependent_jobs(tmp_path):
    schedule = served(write(tmp_path / "deps.json"), grouped=False)
    ends = {j: f for j, (_, f) in schedule.items()}
    assert schedule["c"][0] >= ends["a"] + 7
    assert schedule["d"][0] >= max(ends["a"], ends["b"]) + 2
    assert schedule["f"][0] >= ends["c"] and len(schedule) == 6
