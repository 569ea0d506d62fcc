"""The built-in engine on a SimGrid XML platform charges the file's watts as SimGrid's energy plugin
(:mod:`hdrm.sim.simgrid_machine`): idle watts for a host with no job or a delay job, ``epsilon +
load * (full - epsilon)`` for a computing one; hdrm's JSON platforms keep hdrm's power table.

Every figure below is computed by hand from the file's watts (the real Batsim 4.2.1 with -E gives
the same: tests/batsim/test_real_batsim_simgrid_energy.py).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from builders import simgrid_zone as zone, wattage as watts

from hdrm.batsim.partial_load import PartialLoad
from hdrm.errors import SimulationError
from hdrm.platform.loader import load_platform
from hdrm.platform.model import Platform
from hdrm.platform.simgrid import platform_from_simgrid, read_simgrid_hosts
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.inputs import read_workload_any
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED, Machine
from hdrm.sim.simgrid_machine import SimgridMachine, simgrid_machine_for

REPO = Path(__file__).resolve().parents[2]


#: a: 20 GFLOP/s, idle 95 W, epsilon 110 W, full 200 W; b: 5 GFLOP/s, idle 30 W, full 50 W
TWO = zone(f'<host id="a" speed="20Gf">{watts("95:110:200")}</host>'
           f'<host id="b" speed="5Gf">{watts("30:50")}</host>')
PROFILES = {"d10": {"type": "delay", "delay": 10},
            "p5": {"type": "parallel_homogeneous", "cpu": 5e9, "com": 0},
            "p10": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0}}


def run(tmp_path, platform_text: str, jobs: list[dict]):
    (tmp_path / "p.xml").write_text(platform_text)
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 2, "jobs": jobs,
                                                 "profiles": PROFILES}))
    platform, _ = platform_from_simgrid(tmp_path / "p.xml")
    workload = read_workload_any(tmp_path / "w.json", reference_gflops=platform.reference_gflops)
    sim = Simulation(platform, workload, SimulationConfig())
    return sim, sim.run("fcfs")


def job(i: int, sub: float, res: int, profile: str, walltime: float = -1) -> dict:
    return {"id": str(i), "subtime": sub, "res": res, "walltime": walltime, "profile": profile}


def test_idle_delay_partial_load_and_kill_as_the_energy_plugin(tmp_path):
    sim, result = run(tmp_path, TWO, [
        job(0, 0, 1, "d10"),  # on a, sleeps 10 s: a draws idle 95 W
        job(1, 20, 2, "p5"),  # 5 GFLOP per host: 1 s at b's pace; a loaded 5/20 = 0.25
        job(2, 30, 1, "p10", 0.25),  # on a, killed at 0.25 s at full 200 W
    ])
    assert isinstance(sim.machine, SimgridMachine)
    out = {o.job.idx: o for o in result.outcomes}
    assert [out[i].state for i in range(3)] == [COMPLETED_SUCCESSFULLY] * 2 + [
        COMPLETED_WALLTIME_REACHED]
    assert out[0].energy_j == 95 * 10
    assert out[1].energy_j == (110 + 0.25 * 90) + 50  # 132.5 W on a, 50 W on b, 1 s
    assert out[2].energy_j == 200 * 0.25
    # both hosts idle (125 W) from 0 to the last end (30.25 s), plus what jobs draw above idle
    assert result.energy_j == 125 * 30.25 + (132.5 - 95 + 50 - 30) * 1 + (200 - 95) * 0.25
    assert sim.machine.power_w == 125  # idle again


def test_hosts_of_four_cores_and_pstate_watts(tmp_path):
    """A one-core job on a host of core="4" loads it 1/4; a host starts in its pstate's watts."""
    text = zone(f'<host id="a" speed="10Gf" core="4">{watts("100:120:200")}</host>'
                f'<host id="b" speed="10Gf, 5Gf" pstate="1">{watts("90:200, 40:60")}</host>')
    sim, result = run(tmp_path, text, [job(0, 0, 1, "p10"), job(1, 0, 1, "p5")])
    out = {o.job.idx: o for o in result.outcomes}
    assert out[0].energy_j == (120 + 80 / 4) * 1  # 10 GFLOP at 10 GFLOP/s
    assert out[1].energy_j == 60 * 1  # 5 GFLOP at 5 GFLOP/s in power state 1
    assert result.energy_j == 140 + 60  # both end at 1 s; nothing idles before


def test_delay_jobs_on_two_hosts_draw_idle_watts(tmp_path):
    sim, result = run(tmp_path, TWO, [job(0, 0, 2, "d10")])
    assert result.outcomes[0].energy_j == (95 + 30) * 10 == result.energy_j


def test_partial_load_of_a_delay_job_is_full_minus_idle(tmp_path):
    (tmp_path / "p.xml").write_text(TWO)
    load = PartialLoad(read_simgrid_hosts(tmp_path / "p.xml"), [0, 0])
    load.start(7, (0, 1), computing=False)
    assert load.power_w == (200 - 95) + (50 - 30)
    load.advance(2.0)
    assert load.end(7) == 125 * 2.0
    assert load.power_w == 0


@pytest.mark.parametrize("name", ["homogeneous", "json"])
def test_other_platforms_keep_hdrm_power_table(tmp_path, name):
    platform = (Platform.homogeneous(2) if name == "homogeneous"
                else load_platform(REPO / "platforms" / "tiny_hetero.json"))
    assert simgrid_machine_for(platform) is None
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 2, "jobs": [job(0, 0, 1, "d10")],
                                                 "profiles": PROFILES}))
    workload = read_workload_any(tmp_path / "w.json",
                                 reference_gflops=platform.reference_gflops)
    sim = Simulation(platform, workload, SimulationConfig())
    result = sim.run("fcfs")
    assert type(sim.machine) is Machine
    full_w = platform.core_power_w[result.outcomes[0].cores[0]]
    assert result.outcomes[0].energy_j == pytest.approx(full_w * 10)  # full power, delay or not


def test_a_file_changed_since_read_is_refused(tmp_path):
    (tmp_path / "p.xml").write_text(TWO)
    platform, _ = platform_from_simgrid(tmp_path / "p.xml")
    (tmp_path / "p.xml").write_text(TWO.replace('"a"', '"c"') + "\n")
    with pytest.raises(SimulationError, match=r"p\.xml: the SimGrid file no longer describes"):
        simgrid_machine_for(platform)


def test_unused_sleep_states_are_said_in_one_warning(tmp_path, caplog):
    text = zone(f'<host id="a" speed="20Gf, 1f, 1f">{watts("95:200, 5:5, 90:90")}'
                '<prop id="sleep_pstates" value="1:2:2"/><prop id="wattage_off" value="5"/>'
                '</host>')
    with caplog.at_level(logging.WARNING, "hdrm.sim.simgrid_machine"):
        sim, result = run(tmp_path, text, [job(0, 0, 1, "d10")])
    lines = [r.getMessage() for r in caplog.records if r.name == "hdrm.sim.simgrid_machine"]
    assert len(lines) == 2 and "wattage_off" in lines[0] and "sleep_pstates" in lines[1]
    assert result.energy_j == 95 * 10


def test_composed_job_mixing_sleep_and_work_is_refused_in_one_line(tmp_path):
    PROFILES["mixed"] = {"type": "composed", "repeat": 1, "seq": ["d10", "p5"]}
    try:
        with pytest.raises(SimulationError, match=r"^job 0: a composed job mixing delay and "
                           r"computing parts on a SimGrid XML platform.*hdrm serve -E"):
            run(tmp_path, TWO, [job(0, 0, 1, "mixed")])
    finally:
        del PROFILES["mixed"]


def test_composed_job_of_computations_is_charged_as_one(tmp_path):
    PROFILES["twice"] = {"type": "composed", "repeat": 2, "seq": ["p5"]}
    try:
        _, result = run(tmp_path, TWO, [job(0, 0, 2, "twice")])
    finally:
        del PROFILES["twice"]
    # two parts of 1 s each at b's pace: a at 132.5 W, b at 50 W
    assert result.outcomes[0].energy_j == 2 * (132.5 + 50) == result.energy_j


def test_energy_is_counted_from_the_first_submission_as_batsim(tmp_path):
    sim, result = run(tmp_path, TWO, [job(0, 5, 1, "d10")])
    assert result.outcomes[0].start_s == 5
    assert result.energy_j == (95 + 30) * 10  # 5 s to 15 s; not the idle 0-5 s


def test_energy_ends_at_the_last_job_end_as_batsim(tmp_path):
    """A job rejected after the last end (3 hosts asked of 2) adds no idle time (binary: same)."""
    sim, result = run(tmp_path, TWO, [job(0, 0, 1, "d10"), job(1, 50, 3, "d10")])
    assert sim.now == 50 and result.outcomes[1].state == "REJECTED"
    assert result.energy_j == (95 + 30) * 10
    assert sim.machine.energy_j() == (95 + 30) * 50  # the machine's own clock goes on


def test_hdrm_exported_platform_runs_without_a_warning(tmp_path, caplog):
    # hdrm writes wattage_off="0" on every host: a host that is never off draws nothing more
    from hdrm.platform.simgrid_export import write_simgrid_xml

    path = write_simgrid_xml(Platform.homogeneous(4), tmp_path / "h.xml")
    platform, _ = platform_from_simgrid(path)
    with caplog.at_level(logging.WARNING, "hdrm.sim.simgrid_machine"):
        machine = simgrid_machine_for(platform)
    assert machine is not None
    assert not [r for r in caplog.records if r.name == "hdrm.sim.simgrid_machine"]
