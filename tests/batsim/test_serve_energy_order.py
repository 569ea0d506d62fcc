"""``hdrm serve -E`` orders simultaneous events as Batsim 4.2.1 does with energy on.

With ``-E`` a job's executor asks SimGrid's energy plugin for its hosts' consumed energy when the
job ends (Batsim's job energy and its energy trace) before it tells the server; each host whose
account is stale costs a simcall, so its JOB_COMPLETED reaches the server after the submissions
and the requested calls of its instant, whenever the job started. Among themselves, job ends keep
the order in which the jobs started. Without ``-E`` a job started before the submitter's (or the
waiter's) sleep began ends ahead of it.

That is the instant model's picture (:mod:`hdrm.batsim.event_order`). The binary's order comes from
sub-nanosecond times (:mod:`hdrm.batsim.actors`): each message between Batsim's actors takes
0.1 ns on these 10 GBps links, a sleep ends at the first SimGrid step less than 1 ns before its
due time, and each simcall (``Mailbox::by_name``, an energy update) costs a scheduling round.
So a job started 0.1 ns later than another ends one step later, after the submitter's goodbye
(seed 13: NOTIFY between two job ends at 36 s), or in a message of its own (40 jobs, seed 3,
without ``-E``). hdrm serve runs Batsim's actors step by step for ``delay`` jobs on such
platforms (:class:`~hdrm.batsim.actors.ActorSimulation`).

The expected messages below are the real binary's, recorded with a raw FCFS decision process on a
4-host platform without latency (``-E`` and without) and on the seeded workloads of
test_serve_workloads (6 hosts, calls at 7, 11, 15, 23 s). The ``slow`` tests replay the cases and
seeded workloads against the binary itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_helpers import fcfs, raw_session
from real_batsim import real_batsim
from test_serve_workloads import CALLS_S, seeded_workload

NB_HOSTS = 4
BATSIM, WHY_NOT = real_batsim()
NOTIFY = ("NOTIFY", "no_more_static_job_to_submit")


def write_platform(path: Path, nb_hosts: int) -> Path:
    """A master host and ``nb_hosts`` 1 GFLOPS hosts with two power states, no link latency."""
    watts = '<prop id="wattage_per_state" value="{}"/>'
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="AS0" routing="Full">',
             f'  <host id="master_host" speed="1Gf">{watts.format("10:10")}</host>']
    lines += [f'  <host id="h{i:02d}" speed="1Gf">{watts.format(f"{95 + i}:{200 + 7 * i}")}</host>'
              for i in range(nb_hosts)]
    lines += [f'  <link id="l{i:02d}" bandwidth="10GBps" latency="0us"/>' for i in range(nb_hosts)]
    lines += [f'  <route src="master_host" dst="h{i:02d}"><link_ctn id="l{i:02d}"/></route>'
              for i in range(nb_hosts)]
    path.write_text("\n".join([*lines, "</zone>", "</platform>", ""]))
    return path


def write_workload(path: Path, jobs: list[tuple[int, int, int]]) -> Path:
    """Delay jobs ``(submission s, hosts, delay s)`` with ids 0, 1, ..."""
    doc = {"nb_res": NB_HOSTS, "profiles": {}, "jobs": []}
    for i, (sub, res, delay) in enumerate(jobs):
        doc["profiles"][f"d{delay}"] = {"type": "delay", "delay": delay}
        doc["jobs"].append({"id": str(i), "subtime": sub, "res": res, "walltime": 100,
                            "profile": f"d{delay}"})
    path.write_text(json.dumps(doc))
    return path


def fcfs_calling(calls: dict[float, float], nb_hosts: int = NB_HOSTS):
    """Raw FCFS that asks, in its reply to the first message at time ``r``, for a call at
    ``calls[r]`` (``r`` = -1: in its reply to SIMULATION_BEGINS)."""
    base, asked = fcfs(nb_hosts), set()

    def reply(doc: dict) -> str:
        out = json.loads(base(doc))
        begins = any(e["type"] == "SIMULATION_BEGINS" for e in doc["events"])
        for r, t in calls.items():
            if (r, t) not in asked and (doc["now"] == r or (r == -1 and begins)):
                asked.add((r, t))
                out["events"].append({"timestamp": doc["now"], "type": "CALL_ME_LATER",
                                      "data": {"timestamp": t}})
        return json.dumps(out)

    return reply


def messages(platform: Path, workloads: list[Path], prefix: Path, energy: bool, reply,
             real: bool = False) -> list[dict]:
    """What a raw decision process received from hdrm serve (or from the binary, ``real``)."""
    scheduler = raw_session(reply, platform, workloads, prefix, energy, BATSIM if real else None)
    return [json.loads(text) for text in scheduler.received]


def summary(received: list[dict]) -> list[tuple[float, list[tuple[str, str]]]]:
    return [(m["now"], [(e["type"], e["data"].get("job_id", e["data"].get("type", "")))
                        for e in m["events"]]) for m in received[1:]]


def sub(*ids: int) -> list[tuple[str, str]]:
    return [("JOB_SUBMITTED", f"w0!{i}") for i in ids]


def end(*ids: int) -> list[tuple[str, str]]:
    return [("JOB_COMPLETED", f"w0!{i}") for i in ids]


CALL = [("REQUESTED_CALL", "")]
ENDS = [("SIMULATION_ENDS", "")]

#: name -> (jobs, calls, Batsim 4.2.1's messages with -E, and without)
CASES = {
    # job 0 started at 2 s, before the submitter's sleep towards 8 s began (at 4 s)
    "end_and_a_later_submission": ([(2, 1, 6), (4, 1, 1), (8, 1, 1)], {}, [
        (2.0, sub(0)), (4.0, sub(1)), (5.0, end(1)), (8.0, sub(2) + end(0) + [NOTIFY]),
        (9.0, end(2)), (9.0, ENDS)], [
        (2.0, sub(0)), (4.0, sub(1)), (5.0, end(1)), (8.0, end(0) + sub(2)), (8.0, [NOTIFY]),
        (9.0, end(2)), (9.0, ENDS)]),
    # job 0 started at 0 s, the call for 8 s asked at 3 s
    "end_and_a_later_call": ([(0, 1, 8), (3, 1, 1)], {3.0: 8.0}, [
        (0.0, sub(0)), (3.0, sub(1)), (3.0, [NOTIFY]), (4.0, end(1)), (8.0, CALL + end(0)),
        (8.0, ENDS)], [
        (0.0, sub(0)), (3.0, sub(1)), (3.0, [NOTIFY]), (4.0, end(1)), (8.0, end(0) + CALL),
        (8.0, ENDS)]),
    # two ends at one instant: start order, whatever their number of hosts (job 1 has 3)
    "two_ends_in_start_order": ([(0, 1, 8), (2, 3, 6), (8, 1, 1)], {}, [
        (0.0, sub(0)), (2.0, sub(1)), (8.0, sub(2) + end(0, 1) + [NOTIFY]), (9.0, end(2)),
        (9.0, ENDS)], [
        (0.0, sub(0)), (2.0, sub(1)), (8.0, end(0) + sub(2) + end(1) + [NOTIFY]), (9.0, end(2)),
        (9.0, ENDS)]),
}


@pytest.mark.parametrize("energy", [True, False], ids=["E", "no_E"])
@pytest.mark.parametrize("name", list(CASES))
def test_simultaneous_events_as_batsim_orders_them(tmp_path, name, energy):
    jobs, calls, with_e, without_e = CASES[name]
    platform = write_platform(tmp_path / "p.xml", NB_HOSTS)
    workload = write_workload(tmp_path / "w.json", jobs)
    got = summary(messages(platform, [workload], tmp_path / "o", energy, fcfs_calling(calls)))
    assert got == (with_e if energy else without_e)


def test_energy_changes_only_the_order_of_what_ends_by_sleeping(tmp_path):
    """Same jobs, same times, same events with and without -E: only their order moves."""
    platform = write_platform(tmp_path / "p.xml", NB_HOSTS)
    jobs, calls = CASES["end_and_a_later_submission"][:2]
    workload = write_workload(tmp_path / "w.json", jobs)
    runs = [summary(messages(platform, [workload], tmp_path / f"o{e}", e, fcfs_calling(calls)))
            for e in (True, False)]
    flat = [sorted((now, kind) for now, events in run for kind in events) for run in runs]
    assert flat[0] == flat[1]
    assert runs[0] != runs[1]



#: job 0 computes 8e9 flops on a 1 GFLOPS host from 0 s, job 1 sleeps from 2 s: both end at 8 s
COMPUTED_AND_DELAY = [(0, 1, 8), (2, 1, 6), (4, 1, 1), (8, 1, 1)]


def write_computed_first(path: Path) -> Path:
    path = write_workload(path, COMPUTED_AND_DELAY)
    doc = json.loads(path.read_text())
    doc["profiles"]["ph8"] = {"type": "parallel_homogeneous", "cpu": 8e9, "com": 0}
    doc["jobs"][0]["profile"] = "ph8"
    path.write_text(json.dumps(doc))
    return path


def test_under_energy_a_computed_end_comes_after_a_delay_end(tmp_path):
    """Batsim 4.2.1 -E sent, at 8 s, the submission of job 3, the end of job 1 (started at 2 s) and
    NOTIFY, then the end of job 0 (started at 0 s) in a message of its own: what ends by computing
    still comes after the delay ends of its instant. hdrm serve keeps that order; it sends the
    computed end in the same message (the approximation of the simulator's docstring)."""
    platform = write_platform(tmp_path / "p.xml", NB_HOSTS)
    workload = write_computed_first(tmp_path / "w.json")
    got = summary(messages(platform, [workload], tmp_path / "o", True, fcfs_calling({})))
    at_8 = [kind for now, events in got if now == 8.0 for kind in events if kind != NOTIFY]
    assert at_8 == sub(3) + end(1, 0)


# ---------------------------------------------------------------- against the real binary
@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("name", list(CASES))
def test_cases_against_the_binary(tmp_path, name):
    jobs, calls = CASES[name][:2]
    platform = write_platform(tmp_path / "p.xml", NB_HOSTS)
    workload = write_workload(tmp_path / "w.json", jobs)
    for energy in (True, False):
        real = messages(platform, [workload], tmp_path / "r", energy, fcfs_calling(calls), True)
        ours = messages(platform, [workload], tmp_path / "o", energy, fcfs_calling(calls))
        assert summary(ours) == summary(real), f"energy={energy}"


def _seeded(tmp_path: Path, seeds: tuple[int, ...], energy: bool) -> tuple[list, list]:
    """Raw FCFS with calls at 7, 11, 15, 23 s on 6 hosts, seeded workloads: (binary, ours)."""
    platform = write_platform(tmp_path / "p.xml", 6)
    paths = [seeded_workload(tmp_path / f"w{i}.json", s) for i, s in enumerate(seeds)]
    both = []
    for real in (True, False):
        reply = fcfs_with_calls_at_begin(6)
        both.append(summary(messages(platform, paths, tmp_path / str(real), energy, reply, real)))
    return both[0], both[1]


def fcfs_with_calls_at_begin(nb_hosts: int):
    base = fcfs(nb_hosts)

    def reply(doc: dict) -> str:
        out = json.loads(base(doc))
        if any(e["type"] == "SIMULATION_BEGINS" for e in doc["events"]):
            out["events"] += [{"timestamp": doc["now"], "type": "CALL_ME_LATER",
                               "data": {"timestamp": t}} for t in CALLS_S]
        return json.dumps(out)

    return reply


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seeds", [(1,), (2,), (5,), (12,), (1, 2), (11, 12)])
def test_seeded_workloads_with_energy_against_the_binary(tmp_path, seeds):
    """Seed 1 is engineer J's finding: at 8 s the submissions before the end of a job started at
    2 s."""
    real, ours = _seeded(tmp_path, seeds, energy=True)
    assert ours == real


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_computed_and_delay_ends_in_the_binarys_order(tmp_path):
    platform = write_platform(tmp_path / "p.xml", NB_HOSTS)
    workload = write_computed_first(tmp_path / "w.json")
    orders = []
    for real in (True, False):
        got = summary(messages(platform, [workload], tmp_path / str(real), True, fcfs_calling({}),
                               real))
        orders.append([kind for now, events in got if now == 8.0 for kind in events
                       if kind != NOTIFY])
    assert orders[0] == orders[1] == sub(3) + end(1, 0)


#: (seeds, jobs per workload, -E) -> Batsim 4.2.1's messages at one time, recorded
SUB_NANOSECOND = {
    # job 19 (started at 33.0000000011 s) ends with the submitter's wake-up at 36.0000000001 s,
    # job 15 (started 0.1 ns later) one step later, after the goodbye (NOTIFY)
    ((13,), 20, True): (36.0, [[("JOB_SUBMITTED", "w0!13"), ("JOB_SUBMITTED", "w0!6"),
                                ("JOB_COMPLETED", "w0!19"), NOTIFY, ("JOB_COMPLETED", "w0!15")]]),
    # the waiter wakes at 23 s exactly, job 4 at 23.0000000001 s: the server has sent the call
    # before job 4's message is posted (two rounds after its wake-up)
    ((3,), 40, False): (23.0, [[("REQUESTED_CALL", "")], [("JOB_COMPLETED", "w0!4")]]),
    ((5,), 40, True): (38.0, [[("JOB_SUBMITTED", "w0!3"), ("JOB_SUBMITTED", "w0!32"),
                               ("JOB_COMPLETED", "w0!22"), NOTIFY, ("JOB_COMPLETED", "w0!5")]]),
    # two workloads (-w A -w B): job w0!17's end opens a message of its own at 30 s
    ((6, 7), 20, True): (30.0, [[("JOB_SUBMITTED", "w0!6"), ("JOB_SUBMITTED", "w1!13")],
                                [("JOB_COMPLETED", "w0!17")]]),
}


def _seeded_run(tmp_path: Path, seeds: tuple[int, ...], nb_jobs: int, energy: bool,
                real: bool) -> list:
    platform = write_platform(tmp_path / "p.xml", 6)
    paths = [seeded_workload(tmp_path / f"w{i}.json", s, nb_jobs) for i, s in enumerate(seeds)]
    reply = fcfs_with_calls_at_begin(6)
    return summary(messages(platform, paths, tmp_path / str(real), energy, reply, real))


@pytest.mark.parametrize("key", list(SUB_NANOSECOND), ids=lambda k: f"{k[0]}-{k[1]}-E{k[2]}")
def test_sub_nanosecond_order_as_recorded(tmp_path, key):
    """Without the binary: hdrm serve's messages at the recorded time are the binary's (the
    instant model sent the second end before NOTIFY, or with the call)."""
    seeds, nb_jobs, energy = key
    at, expected = SUB_NANOSECOND[key]
    got = [events for now, events in _seeded_run(tmp_path, seeds, nb_jobs, energy, False)
           if now == at]
    assert got == expected


#: seeds where the instant model diverged from the binary (40 jobs: 11 of 41, with and without
#: -E; pairs with -E: 4 of 15), and others; every workload starts sending at 2 s, so with -E
#: both submitters ask for the first submission's energy (w0's batch still comes first)
MORE_SEEDS = [((13,), 20, True), ((3,), 40, False), ((5,), 40, True), ((17,), 40, False),
              ((29,), 40, True), ((0,), 40, True), ((4, 5), 20, True), ((6, 7), 20, True),
              ((2, 3), 40, True), ((1, 2, 3), 20, True)]


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("key", MORE_SEEDS, ids=lambda k: f"{k[0]}-{k[1]}-E{k[2]}")
def test_more_seeds_against_the_binary(tmp_path, key):
    seeds, nb_jobs, energy = key
    real = _seeded_run(tmp_path, seeds, nb_jobs, energy, True)
    assert _seeded_run(tmp_path, seeds, nb_jobs, energy, False) == real
