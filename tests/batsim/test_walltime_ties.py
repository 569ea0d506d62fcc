"""A parallel job whose work ends exactly at its walltime, as Batsim 4.2.1 decides it (sessions 24
and 29).

Batsim waits for a ``parallel_homogeneous`` job with its walltime as the timeout: a SimGrid sleep
that ends at the first step leaving it less than 1e-9 s to go, while the work ends only below
1e-14 of it. Each forwarded decision is a one-byte message (1e-10 s on the master host's
loopback), so the k-th job of a decision starts k x 1e-10 s after it (its rank k); submissions
and requested calls aim at the exact instant; every step at which a job ends is followed by the
decision process's answer, a step one rank later. A tie is therefore killed
(COMPLETED_WALLTIME_REACHED) when a step falls less than 10 ranks before its end: the end of a job
started a few ranks before it (or the answer to that end, or a run of such ends), a submission or
call due then; otherwise it succeeds. ``hdrm.sim.tie_steps`` has the built-in engine's rule; the
real binary's outcomes below were recorded with a FCFS scheduler on 16 hosts of 10 GFLOP/s
(``test_real_batsim_scenarios`` replays them against the binary).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, fcfs

from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.inputs import InputSpec, load_inputs
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY as OK
from hdrm.sim.machine import COMPLETED_WALLTIME_REACHED as WALL
from hdrm.sim.machine import Machine
from hdrm.policies.pairs import resolve_policy


def machine() -> Machine:
    return Machine([(10.0, 5.0)] * 4, [(100.0, 50.0)] * 4, 0)


def states(m: Machine, until: float) -> dict[int, tuple[str, float]]:
    return {e.key: (e.state, e.finish_s) for e in m.advance(until)}


class TestMachine:
    def test_a_tie_alone_succeeds(self):
        m = machine()
        m.start(1, [0, 1], ops_gflop=10.0, walltime_s=1.0)
        assert states(m, 5.0) == {1: (OK, 1.0)}

    def test_the_second_of_two_ties_started_together_is_killed(self):
        m = machine()
        m.advance(1752.829)  # the case of test_real_batsim_scenarios: a 1-host, then a 4-host job
        m.start(103, [0], ops_gflop=10.0, walltime_s=1.0)
        m.start(25, [1, 2, 3], ops_gflop=10.0, walltime_s=1.0)
        ends = m.advance(1800.0)
        assert [(e.key, e.state) for e in ends] == [(103, OK), (25, WALL)]
        assert ends[1].finish_s == 1753.829
        assert ends[1].progress == pytest.approx(1.0)

    def test_an_earlier_started_job_ending_then_kills_the_tie(self):
        m = machine()
        m.start(1, [0], delay_s=1.5, walltime_s=100.0)  # any profile
        m.advance(0.5)
        m.start(2, [1], ops_gflop=10.0, walltime_s=1.0)
        assert states(m, 5.0) == {1: (OK, 1.5), 2: (WALL, 1.5)}

    def test_a_later_started_job_ending_then_does_not(self):
        m = machine()
        m.start(1, [0], ops_gflop=10.0, walltime_s=1.0)
        m.start(2, [1], delay_s=1.0, walltime_s=100.0)
        m.start(3, [2], ops_gflop=5.0, walltime_s=2.0)  # work done at 0.5 s: no tie
        assert states(m, 5.0) == {1: (OK, 1.0), 2: (OK, 1.0), 3: (OK, 0.5)}

    def test_an_event_noted_at_the_instant_kills_the_tie(self):
        m = machine()
        m.start(1, [0], ops_gflop=10.0, walltime_s=1.0)
        m.note_event(1.0)
        assert states(m, 5.0) == {1: (WALL, 1.0)}

    @pytest.mark.parametrize("noted", [0.5, 1.0 - 2e-9, 1.0 + 1e-6])
    def test_an_event_at_another_time_does_not(self, noted):
        m = machine()
        m.start(1, [0], ops_gflop=10.0, walltime_s=1.0)
        m.note_event(noted)
        assert states(m, 5.0) == {1: (OK, 1.0)}

    def test_within_simgrid_timing_precision_of_the_walltime(self):
        # work done 0.5 ns before the walltime: the timer is due at that step (< 1e-9 to go)
        m = machine()
        m.start(1, [0], delay_s=1.0, walltime_s=100.0)
        m.start(2, [1], ops_gflop=10.0, walltime_s=1.0 + 5e-10)
        m.start(3, [2], ops_gflop=10.0, walltime_s=1.0 + 2e-9)  # 2 ns to go: not due
        assert states(m, 5.0) == {1: (OK, 1.0), 2: (WALL, 1.0), 3: (OK, 1.0)}

    def test_a_job_killed_at_its_walltime_first_also_kills_the_tie(self):
        m = machine()
        m.start(1, [0], ops_gflop=20.0, walltime_s=1.0)  # 2 s of work: killed at 1 s
        m.start(2, [1], ops_gflop=10.0, walltime_s=1.0)
        assert states(m, 5.0) == {1: (WALL, 1.0), 2: (WALL, 1.0)}

    @staticmethod
    def ranked(tie_rank: int, first: str = "delay") -> Machine:
        """A ``first`` job (a 1 s delay, or a 9 s one), busy jobs, and a tie of 1 s at
        ``tie_rank`` among the starts of one instant."""
        m = Machine([(10.0,)] * tie_rank, [(100.0,)] * tie_rank, 0)
        m.start(1, [0], delay_s=1.0 if first == "delay" else 9.0, walltime_s=100.0)
        for rank in range(2, tie_rank):
            m.start(rank, [rank - 1], delay_s=9.0, walltime_s=100.0)
        m.start(tie_rank, [tie_rank - 1], ops_gflop=10.0, walltime_s=1.0)
        return m

    @pytest.mark.parametrize("rank, state", [(11, WALL), (12, OK), (13, OK)])
    def test_only_steps_less_than_ten_ranks_before_kill(self, rank, state):
        # steps at ranks 1 (the delay job's end) and 2 (the answer to it): 9, 10, 11 ranks
        # (0.9, 1.0, 1.1 ns) before the tie at 11, 12, 13
        assert states(self.ranked(rank), 1.5)[rank] == (state, 1.0)

    @pytest.mark.parametrize("rank, state", [(11, WALL), (12, OK)])
    def test_a_noted_event_steps_at_ranks_zero_to_two(self, rank, state):
        m = self.ranked(rank, first="busy")
        m.note_event(1.0)
        assert states(m, 1.5) == {rank: (state, 1.0)}

    def test_a_run_of_delay_jobs_carries_the_steps(self):
        # delay jobs at ranks 1-12: the step at rank 1 ends 1-10 early, the answers at 2 and 3
        # end 11 and 12, the answer at 4 reaches rank 13: the tie there is killed, at 14 not
        # (a step at rank 12, the last delay job's own, would have reached 21)
        for tie_rank, state in ((13, WALL), (14, OK)):
            m = Machine([(10.0,)] * tie_rank, [(100.0,)] * tie_rank, 0)
            for rank in range(1, tie_rank):
                m.start(rank, [rank - 1], delay_s=1.0 if rank <= 12 else 9.0,
                        walltime_s=100.0)
            m.start(tie_rank, [tie_rank - 1], ops_gflop=10.0, walltime_s=1.0)
            assert states(m, 1.5)[tie_rank] == (state, 1.0)

    def test_a_later_decision_ranks_first(self):
        m = machine()
        m.start(1, [0], delay_s=9.0, walltime_s=100.0)
        m.start(2, [1], delay_s=1.0, walltime_s=100.0)  # rank 2 of the instant 0
        m.advance(0.5)
        m.start(3, [2], ops_gflop=5.0, walltime_s=0.5)  # rank 1 of the instant 0.5
        assert states(m, 1.5) == {3: (OK, 1.0), 2: (OK, 1.0)}

    def test_delay_jobs_keep_batsim_comparison(self):
        # a delay job has no timer when delay < walltime: nothing kills it
        m = machine()
        m.start(1, [0], delay_s=1.0, walltime_s=100.0)
        m.start(2, [1], delay_s=1.0 - 1e-10, walltime_s=1.0)
        assert states(m, 5.0) == {2: (OK, 1.0 - 1e-10), 1: (OK, 1.0)}


PROFILES = {"t1": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0},
            "t2": {"type": "parallel_homogeneous", "cpu": 2e10, "com": 0},
            "h": {"type": "parallel_homogeneous", "cpu": 5e9, "com": 0},
            "d1": {"type": "delay", "delay": 1}, "d05": {"type": "delay", "delay": 0.5},
            "d9": {"type": "delay", "delay": 9}}


def job(i: int, sub: float, res: int, wall: float, profile: str) -> dict:
    return {"id": i, "subtime": sub, "res": res, "walltime": wall, "profile": profile}


def busy_jobs(first_id: int, last_id: int, first: str = "d1") -> list[dict]:
    """Jobs ``first_id`` to ``last_id`` submitted at 0: the first of profile ``first`` (``d1``:
    it ends at 1 s, with the ties), the others 9 s delays (busy at 1 s)."""
    return [job(i, 0, 1, 100, first if i == first_id else "d9")
            for i in range(first_id, last_id + 1)]


def all_ok(first_id: int, last_id: int) -> dict[int, str]:
    return {i: OK for i in range(first_id, last_id + 1)}


#: name -> (jobs, requested call time or None, {job id: final state} of the real Batsim 4.2.1)
CASES = {
    "alone": ([job(1, 0, 1, 1, "t1")], None, {1: OK}),
    "three_together": ([job(1, 0, 1, 1, "t1"), job(2, 0, 2, 1, "t1"), job(3, 0, 3, 1, "t1")],
                       None, {1: OK, 2: WALL, 3: WALL}),
    "wide_first": ([job(1, 0, 4, 1, "t1"), job(2, 0, 1, 1, "t1")], None, {1: OK, 2: WALL}),
    "two_decisions": ([job(1, 0, 1, 1, "t1"), job(2, 0.5, 1, 0.5, "h")], None,
                      {1: OK, 2: WALL}),
    "delay_first": ([job(1, 0, 1, 100, "d1"), job(2, 0, 1, 1, "t1")], None, {1: OK, 2: WALL}),
    "delay_second": ([job(1, 0, 1, 1, "t1"), job(2, 0, 1, 100, "d1")], None, {1: OK, 2: OK}),
    "tie_then_longer_walltime": ([job(1, 0, 1, 1, "t1"), job(2, 0, 1, 2, "t1")], None,
                                 {1: OK, 2: OK}),
    "longer_walltime_then_tie": ([job(1, 0, 1, 2, "t1"), job(2, 0, 1, 1, "t1")], None,
                                 {1: OK, 2: WALL}),
    "submission_at_the_walltime": ([job(1, 0, 1, 1, "t1"), job(2, 1, 1, 100, "d1")], None,
                                   {1: WALL, 2: OK}),
    "submission_after_a_batch": ([job(i, 0, 1, 100, "d05") for i in range(10, 15)]
                                 + [job(1, 0.5, 1, 2, "t2"), job(3, 2.5, 1, 100, "d1")], None,
                                 {10: OK, 11: OK, 12: OK, 13: OK, 14: OK, 1: WALL, 3: OK}),
    "submission_a_batch_later": ([job(1, 0, 1, 2, "t2"), job(2, 1, 1, 100, "d1"),
                                  job(3, 2, 1, 100, "d1")], None, {1: WALL, 2: OK, 3: OK}),
    "started_late": ([job(0, 0, 16, 100, "d9"), job(1, 3, 1, 1, "t1"), job(2, 3, 4, 1, "t1")],
                     None, {0: OK, 1: OK, 2: WALL}),
    "call_at_the_walltime": ([job(1, 0, 1, 1, "t1")], 1.0, {1: WALL}),
    # one decision (ids of two digits: Batsim submits the jobs of an instant in the order of
    # their ids as strings): a step less than 10 ranks (1 ns) before the tie kills it; the
    # delay job's end (rank 1) and the answer to it (rank 2) reach the 11th job, not the 13th
    "eleventh_after_a_delay": (busy_jobs(10, 19) + [job(20, 0, 1, 1, "t1")], None,
                               {**all_ok(10, 19), 20: WALL}),
    "thirteenth_after_a_delay": (busy_jobs(10, 21) + [job(22, 0, 1, 1, "t1")], None,
                                 {**all_ok(10, 21), 22: OK}),
    # a run of delay jobs carries the steps on: each step ends the next one early, and the
    # answer to it is a step one rank later; 13 delay jobs reach rank 14, 15 reach rank 16
    "run_of_13_delays": ([job(i, 0, 1, 100, "d1") for i in range(10, 23)]
                         + [job(23, 0, 1, 100, "d9"), job(24, 0, 1, 100, "d9"),
                            job(25, 0, 1, 1, "t1")], None, {**all_ok(10, 24), 25: OK}),
    "run_of_15_delays": ([job(i, 0, 1, 100, "d1") for i in range(10, 25)]
                         + [job(25, 0, 1, 1, "t1")], None, {**all_ok(10, 24), 25: WALL}),
    # ranks, not start times, order the ends of an instant: the tie started at 0.5 s first in
    # its decision ends before the delay job started 12th at 0 s (the former rule killed it)
    "later_decision_ranks_first": (busy_jobs(10, 20, first="d9")
                                   + [job(21, 0, 1, 100, "d1"), job(22, 0.5, 1, 0.5, "h")],
                                   None, {**all_ok(10, 21), 22: OK}),
    # a submission at the walltime: steps at ranks 0 to 2 (more for the last submission of
    # the workload, below) reach the 11th job, not the 16th
    "submission_eleventh": (busy_jobs(10, 19, first="d9") + [job(20, 0, 1, 1, "t1"),
                                                             job(30, 1, 1, 100, "d1")], None,
                            {**all_ok(10, 19), 20: WALL, 30: OK}),
    "submission_sixteenth": (busy_jobs(10, 24, first="d9") + [job(25, 0, 1, 1, "t1"),
                                                              job(30, 1, 1, 100, "d1")], None,
                             {**all_ok(10, 24), 25: OK, 30: OK}),
}


def platform_xml(nb_hosts: int = 16, watts: str = "100:200") -> str:
    """16 hosts of 10 GFLOP/s (and ``watts`` idle:full) and a master host, no routes: Batsim's
    messages between the master host's actors take SimGrid's loopback (1 byte: 1e-10 s)."""
    hosts = "".join(f'<host id="h{i:02d}" speed="10Gf"><prop id="wattage_per_state" '
                    f'value="{watts}"/></host>' for i in range(nb_hosts))
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1"><zone id="z" routing="Full">'
            f'<host id="master_host" speed="1Gf"/>{hosts}</zone></platform>')


def scheduler(call_s: float | None) -> RawScheduler:
    """FCFS on 16 hosts; with ``call_s``, a CALL_ME_LATER then after the first submission's
    EXECUTE_JOB."""
    inner, asked = fcfs(16), [call_s is None]

    def reply(doc: dict) -> str:
        out = json.loads(inner(doc))
        if not asked[0] and any(e["type"] == "JOB_SUBMITTED" for e in doc["events"]):
            asked[0] = True
            out["events"].append({"timestamp": doc["now"], "type": "CALL_ME_LATER",
                                  "data": {"timestamp": call_s}})
        return json.dumps(out)
    return RawScheduler(reply)


def write_case(tmp_path: Path, name: str) -> tuple[Path, Path]:
    (tmp_path / "p.xml").write_text(platform_xml())
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 16, "profiles": PROFILES,
                                                 "jobs": CASES[name][0]}))
    return tmp_path / "p.xml", tmp_path / "w.json"


def final_states(received: list[str]) -> dict[int, str]:
    out = {}
    for text in received:
        for event in json.loads(text)["events"]:
            if event["type"] == "JOB_COMPLETED":
                out[int(event["data"]["job_id"].split("!")[1])] = event["data"]["job_state"]
    return out


def serve_messages(tmp_path: Path, name: str, energy: bool = False) -> list[str]:
    """The messages ``hdrm serve`` sends for case ``name`` to a FCFS scheduler."""
    platform, workload = write_case(tmp_path, name)
    sched = scheduler(CASES[name][1])
    sched.start()
    try:
        serve(platform, workload, ServeOptions(sched.endpoint, str(tmp_path / "serve"), 30.0,
                                               ServerConfig(energy=energy)))
    finally:
        sched.stop()
    assert sched.error is None
    return sched.received


def serve_states(tmp_path: Path, name: str) -> dict[int, str]:
    return final_states(serve_messages(tmp_path, name))


def summary(received: list[str]) -> list[str]:
    """The messages after SIMULATION_BEGINS, one text each: ``TYPE:job`` per event, the job
    state's initial (S, W) after a job end."""
    out = []
    for text in received[1:]:
        events = json.loads(text)["events"]
        out.append(" ".join(
            e["type"] + (":" + e["data"]["job_id"].split("!")[1] if "job_id" in e["data"] else "")
            + (e["data"]["job_state"][10] if "job_state" in e["data"] else "") for e in events))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_serve_decides_ties_as_the_real_batsim(name, tmp_path):
    assert serve_states(tmp_path, name) == CASES[name][2]


def builtin_states(tmp_path: Path, name: str) -> dict[int, str]:
    """The final states of the built-in engine's FCFS run of case ``name``."""
    platform, workload = write_case(tmp_path, name)
    plat, wl = load_inputs(InputSpec(workload_path=str(workload), platform_path=str(platform)))
    result = Simulation(plat, wl, SimulationConfig(contention="none", backfilling="none",
                                                   seed=0)).run(resolve_policy("fcfs"))
    return {int(o.job.id): o.state for o in result.outcomes}


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][1] is None))
def test_builtin_engine_decides_ties_as_the_real_batsim(name, tmp_path):
    """Every case without a requested call (the built-in engine has none): Batsim's states."""
    assert builtin_states(tmp_path, name) == CASES[name][2]


def test_builtin_engine_kills_the_second_tie_of_a_decision(tmp_path):
    """The built-in engine's FCFS run of ``three_together``: the same states as Batsim."""
    platform, workload = write_case(tmp_path, "three_together")
    plat, wl = load_inputs(InputSpec(workload_path=str(workload), platform_path=str(platform)))
    result = Simulation(plat, wl, SimulationConfig(contention="none", backfilling="none",
                                                   seed=0)).run(resolve_policy("fcfs"))
    got = {int(o.job.id): (o.state, o.finish_s) for o in result.outcomes}
    assert got == {1: (OK, 1.0), 2: (WALL, 1.0), 3: (WALL, 1.0)}


def test_builtin_engine_submission_at_the_walltime(tmp_path):
    platform, workload = write_case(tmp_path, "submission_at_the_walltime")
    plat, wl = load_inputs(InputSpec(workload_path=str(workload), platform_path=str(platform)))
    result = Simulation(plat, wl, SimulationConfig(contention="none", backfilling="none",
                                                   seed=0)).run(resolve_policy("fcfs"))
    assert {int(o.job.id): o.state for o in result.outcomes} == {1: WALL, 2: OK}


#: The messages of the binary (``summary``) where a tie is killed, without and with -E: a tie
#: killed at the step of a submission or call ranks with the sleeps of its instant by its start
#: (before a submission whose submitter slept again after the job started, behind every
#: submission and call with -E); killed at the step of an earlier tie's end, right behind it.
ORDERS = {
    ("submission_after_a_batch", False): [
        "JOB_SUBMITTED:10 JOB_SUBMITTED:11 JOB_SUBMITTED:12 JOB_SUBMITTED:13 JOB_SUBMITTED:14",
        "JOB_SUBMITTED:1 JOB_COMPLETED:10S JOB_COMPLETED:11S JOB_COMPLETED:12S "
        "JOB_COMPLETED:13S JOB_COMPLETED:14S",
        "JOB_SUBMITTED:3 JOB_COMPLETED:1W NOTIFY", "JOB_COMPLETED:3S", "SIMULATION_ENDS"],
    ("call_at_the_walltime", False): [
        "JOB_SUBMITTED:1", "NOTIFY", "JOB_COMPLETED:1W REQUESTED_CALL", "SIMULATION_ENDS"],
    ("call_at_the_walltime", True): [
        "JOB_SUBMITTED:1", "NOTIFY", "REQUESTED_CALL JOB_COMPLETED:1W", "SIMULATION_ENDS"],
    ("submission_a_batch_later", False): [
        "JOB_SUBMITTED:1", "JOB_SUBMITTED:2",
        "JOB_COMPLETED:1W JOB_SUBMITTED:3 JOB_COMPLETED:2S NOTIFY", "JOB_COMPLETED:3S",
        "SIMULATION_ENDS"],
    ("submission_a_batch_later", True): [
        "JOB_SUBMITTED:1", "JOB_SUBMITTED:2",
        "JOB_SUBMITTED:3 JOB_COMPLETED:1W JOB_COMPLETED:2S NOTIFY", "JOB_COMPLETED:3S",
        "SIMULATION_ENDS"],
    ("three_together", True): [
        "JOB_SUBMITTED:1 JOB_SUBMITTED:2 JOB_SUBMITTED:3", "NOTIFY",
        "JOB_COMPLETED:1S JOB_COMPLETED:2W JOB_COMPLETED:3W", "SIMULATION_ENDS"],
    ("started_late", False): [
        "JOB_SUBMITTED:0", "JOB_SUBMITTED:1 JOB_SUBMITTED:2", "NOTIFY", "JOB_COMPLETED:0S",
        "JOB_COMPLETED:1S JOB_COMPLETED:2W", "SIMULATION_ENDS"],
}


@pytest.mark.parametrize("name, energy", sorted(ORDERS))
def test_serve_sends_the_ends_of_ties_in_the_binary_order(name, energy, tmp_path):
    assert summary(serve_messages(tmp_path, name, energy)) == ORDERS[name, energy]

