"""``hdrm serve`` with several workloads on a platform whose links have latencies.

Each workload has its own submitter on the master host (w0, w1, ... started in ``-w`` order), and
all of them post their messages to Batsim's server, which takes one at a time, each transfer
lasting the route's latency (:mod:`hdrm.batsim.delayed`):

* every submitter greets the server first (in ``-w`` order), then sleeps until its first job;
* a submitter wakes for its next job, gathers every job due by its clock (so a job due within
  the latencies that delayed its wake-up joins the batch), and sends the batch;
* at one instant the message whose sender began to wait first is taken first;
* NOTIFY ``no_more_static_job_to_submit`` comes when the last submitter's goodbye arrives.

The hand-checked session below was also checked with the Batsim 4.2.1 binary (the ``slow`` tests
at the end run it on seeded pairs of workloads and several latencies).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import PybatsimProcess, RawScheduler, fcfs, raw_session
from real_batsim import real_batsim
from test_latency import _latency_platform
from test_serve_workloads import (
    NB_HOSTS,
    assert_same_messages,
    fcfs_with_calls,
    seeded_workload,
    summary,
    write_json,
)

from hdrm.batsim import protocol as p
from hdrm.batsim.delayed import DelayedSimulation
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_tables
from hdrm.batsim.latency import route_latencies
from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.cli.main import main
from hdrm.results.csvio import read_jobs_csv

D = {"d1": {"type": "delay", "delay": 1}, "d2": {"type": "delay", "delay": 2},
     "d5": {"type": "delay", "delay": 5}}
#: a3 is due 0.5 ms after a2: the submitter wakes for a2 3 ms late and sends both in one batch
WORKLOAD_A = {"nb_res": NB_HOSTS, "profiles": D, "jobs": [
    {"id": "a1", "subtime": 0, "res": 1, "walltime": -1, "profile": "d5"},
    {"id": "a2", "subtime": 3, "res": 1, "walltime": -1, "profile": "d1"},
    {"id": "a3", "subtime": 3.0005, "res": 1, "walltime": -1, "profile": "d1"}]}
WORKLOAD_B = {"nb_res": NB_HOSTS, "profiles": D, "jobs": [
    {"id": "b1", "subtime": 0, "res": 1, "walltime": -1, "profile": "d5"},
    {"id": "b2", "subtime": 3, "res": 1, "walltime": -1, "profile": "d2"}]}
#: B with a last job long after A's last
WORKLOAD_B_LATE = {**WORKLOAD_B, "jobs": [*WORKLOAD_B["jobs"], {
    "id": "b3", "subtime": 9, "res": 1, "walltime": -1, "profile": "d1"}]}

#: -w A -w B, 1 ms on the master host's loopback, 0.1 ms from each host, FCFS (worked out by hand
#: below, and what the Batsim 4.2.1 binary sends):
#: 0: A and B greet (arrive 1 and 2 ms) and post their first batches at once; SCHED_READY 3 ms;
#:    A's batch arrives 4 ms (A sleeps 3 - 0.001 s: wakes 3.003), B's 5 ms (wakes 3.003 too).
#: 0.005: a1 starts when its EXECUTE_JOB arrives (6 ms), b1 at 7 ms; SCHED_READY 8 ms.
#: 3.003: A began to sleep first: its batch (a2 and a3, due by 3.003) arrives 3.004, B's 3.005,
#:    then A's goodbye (posted 3.004) 3.006 and B's 3.007, which is NOTIFY's time.
#: 3.007: a2, a3, b2 start at 3.008, 3.009, 3.010 (SCHED_READY 3.011); a2 and a3 end 1 s later,
#:    their messages 0.1 ms after that; a1 ends 5.006, b1 5.007 and b2 5.010.
EXPECTED_A_B = [
    (0.005, [("JOB_SUBMITTED", "w0!a1", 0.004), ("JOB_SUBMITTED", "w1!b1", 0.005)]),
    (3.007, [("JOB_SUBMITTED", "w0!a2", 3.004), ("JOB_SUBMITTED", "w0!a3", 3.004),
             ("JOB_SUBMITTED", "w1!b2", 3.005), ("NOTIFY", "no_more_static_job_to_submit", 3.007)]),
    (4.0081, [("JOB_COMPLETED", "w0!a2", 4.0081)]),
    (4.0092, [("JOB_COMPLETED", "w0!a3", 4.0092)]),
    (5.0061, [("JOB_COMPLETED", "w0!a1", 5.0061)]),
    (5.0072, [("JOB_COMPLETED", "w1!b1", 5.0072)]),
    (5.0101, [("JOB_COMPLETED", "w1!b2", 5.0101)]),
    (5.0111, [("SIMULATION_ENDS", "", 5.0111)]),
]
#: (job, start, finish) in out_jobs.csv's order
EXPECTED_ROWS = [("a2", 3.008, 4.008), ("a3", 3.009, 4.009), ("a1", 0.006, 5.006),
                 ("b1", 0.007, 5.007), ("b2", 3.010, 5.010)]


def timed(messages: list[dict]) -> list[tuple[float, list[tuple[str, str, float]]]]:
    """Each message after SIMULATION_BEGINS: its now and (type, job id or notify type, time)."""
    return [(round(m["now"], 7), [(t, i, round(e["timestamp"], 7)) for (t, i), e
                                  in zip(summary([{}, m])[0][1], m["events"])])
            for m in messages[1:]]


def _platform(path: Path, master: str | None, host: str, energy: bool = False) -> Path:
    """test_latency's platform; with ``energy``, every host draws 100 W idle, 200 W computing."""
    platform = _latency_platform(path, master, host)
    if energy:
        platform.write_text(platform.read_text().replace(
            'speed="1Gf"/>', 'speed="1Gf"><prop id="wattage_per_state" value="100:200"/></host>'))
    return platform


def _simulation(tmp_path: Path, master: str, host: str, docs: list[dict],
                energy: bool = False) -> DelayedSimulation:
    platform = _platform(tmp_path / "platform.xml", master, host, energy)
    paths = [write_json(tmp_path / f"{i}.json", doc) for i, doc in enumerate(docs)]
    hosts = load_hosts(platform)
    return DelayedSimulation(hosts, read_job_tables(paths), ServerConfig(energy=energy),
                             route_latencies(platform, hosts))


def _run(sim: DelayedSimulation) -> list[dict]:
    """The messages a raw FCFS decision process receives, without sockets."""
    reply, sent = fcfs(NB_HOSTS), []
    message = sim.begin()
    while message is not None:
        text = p.encode_message(message)
        sent.append(json.loads(text))
        sim.react(p.decode_message(reply(json.loads(text)), "scheduler"))
        message = sim.next_message()
    return sent


def test_two_workloads_with_latencies_by_hand(tmp_path):
    sim = _simulation(tmp_path, "1ms", "100us", [WORKLOAD_A, WORKLOAD_B])
    assert timed(_run(sim)) == EXPECTED_A_B
    rows = [(r.job_id, round(r.starting_time, 7), round(r.finish_time, 7)) for r in sim.results()]
    assert rows == EXPECTED_ROWS
    assert [r.workload_name for r in sim.results()] == ["w0", "w0", "w0", "w1", "w1"]


def test_a_job_due_before_the_submitter_wakes_joins_its_batch(tmp_path):
    """One workload: a2 at 3 s and a3 at 3.0005 s go in one batch when the submitter wakes 2 ms
    late for a2 (its send of a1 took 2 ms), and in two when it wakes first for a3 (no latency
    on the master host)."""
    late = timed(_run(_simulation(tmp_path, "1ms", "100us", [WORKLOAD_A])))
    assert late[1][1][:2] == [("JOB_SUBMITTED", "w0!a2", 3.003), ("JOB_SUBMITTED", "w0!a3", 3.003)]
    on_time = timed(_run(_simulation(tmp_path, "0us", "100us", [WORKLOAD_A])))
    assert [m[1] for m in on_time[1:3]] == [[("JOB_SUBMITTED", "w0!a2", 3.0)],
                                            [("JOB_SUBMITTED", "w0!a3", 3.0005)]]


def test_notify_waits_for_the_last_goodbye(tmp_path):
    """B's last batch is due at 9 s, long after A's: NOTIFY comes with B's goodbye only."""
    sent = timed(_run(_simulation(tmp_path, "1ms", "100us", [WORKLOAD_A, WORKLOAD_B_LATE])))
    assert [m for m in sent if 9 < m[0] < 9.01] == [
        # B wakes at 9.002 (its send of b2 took 2 ms), b3 arrives 1 ms later and goes out at
        # once; its goodbye arrives at 9.004, and waits for b3's reply (EXECUTE_JOB at 9.005,
        # SCHED_READY 9.006)
        (9.003, [("JOB_SUBMITTED", "w1!b3", 9.003)]),
        (9.006, [("NOTIFY", "no_more_static_job_to_submit", 9.004)])]


#: a1 starts when its EXECUTE_JOB arrives, 2.00006 s, and ends 8.00006 s: as a2's batch arrives
#: (the submitter woke 30 us late, its batch took 30 us)
WORKLOAD_TIE = {"nb_res": NB_HOSTS, "profiles": D, "jobs": [
    {"id": "a1", "subtime": 2, "res": 1, "walltime": -1, "profile": "d6"},
    {"id": "a2", "subtime": 8, "res": 1, "walltime": -1, "profile": "d1"}]}
D["d6"] = {"type": "delay", "delay": 6}


@pytest.mark.parametrize("energy", [False, True])
def test_an_end_posted_as_a_batch_arrives_shares_its_message(tmp_path, energy):
    """30 us on the master host, 100 us from the hosts: a1's end is posted at 8.00006 s, when
    a2's batch arrives, so the server takes it before it sends (the binary's messages, with and
    without -E; under -E the end ranks late only among the sleeps of its instant, and the
    server looks at its mailbox after the end was posted)."""
    sent = timed(_run(_simulation(tmp_path, "30us", "100us", [WORKLOAD_TIE], energy)))
    # (the submitter's goodbye, posted at 8.00006 too, is taken next: NOTIFY joins them)
    assert sent[1] == (8.00019, [("JOB_SUBMITTED", "w0!a2", 8.00006),
                                 ("JOB_COMPLETED", "w0!a1", 8.00016),
                                 ("NOTIFY", "no_more_static_job_to_submit", 8.00019)])


def test_serve_accepts_several_workloads_with_latencies(tmp_path, capsys):
    """Refused before this rule was modelled; now a session, from the command line too."""
    platform = _latency_platform(tmp_path / "platform.xml", "1ms", "100us")
    a, b = write_json(tmp_path / "a.json", WORKLOAD_A), write_json(tmp_path / "b.json", WORKLOAD_B)
    scheduler = RawScheduler(fcfs(NB_HOSTS))
    scheduler.start()
    try:
        options = ServeOptions(scheduler.endpoint, str(tmp_path / "o"), 30.0)
        result = serve(platform, [a, b], options)
    finally:
        scheduler.stop()
    assert scheduler.error is None
    messages = [json.loads(t) for t in scheduler.received]
    assert timed(messages) == EXPECTED_A_B
    # as Batsim, SIMULATION_BEGINS lists the profiles jobs use (A has no d2 job, B no d1 job)
    assert messages[0]["events"][0]["data"]["profiles"] == {
        "w0": {"d1": D["d1"], "d5": D["d5"]}, "w1": {"d2": D["d2"], "d5": D["d5"]}}
    assert len(result.results) == 5
    scheduler = RawScheduler(fcfs(NB_HOSTS))
    scheduler.start()
    try:
        code = main(["serve", "-p", str(platform), "-w", str(a), "-w", str(b),
                     "-s", scheduler.endpoint, "-e", str(tmp_path / "cli")])
    finally:
        scheduler.stop()
    assert code == 0, capsys.readouterr().err
    assert len((tmp_path / "cli_jobs.csv").read_text().splitlines()) == 6


# ---------------------------------------------------------------- against the real binary
BATSIM, WHY_NOT = real_batsim()


def _session(platform: Path, workloads: list[Path], prefix: Path, real: bool,
             calls: bool = True, energy: bool = False) -> list[dict]:
    """What a raw FCFS decision process (asking for calls, unless ``calls`` is False) received
    from the binary (``real``) or from hdrm serve, with energy accounting (``-E``) if
    ``energy``."""
    base = fcfs(NB_HOSTS)
    reply = (lambda doc: fcfs_with_calls(doc, base)) if calls else base
    scheduler = raw_session(reply, platform, workloads, prefix, energy, BATSIM if real else None)
    return [json.loads(text) for text in scheduler.received]


def _assert_same(tmp_path: Path, ours: list[dict], theirs: list[dict]) -> None:
    """Same messages (events, order, split, data, times to 1 us), same out_jobs.csv rows (times
    to 1 us; Batsim's stretch differs in its 6th decimal)."""
    assert_same_messages(ours, theirs)
    mine, ref = (read_jobs_csv(tmp_path / f"{n}_jobs.csv") for n in ("ours", "real"))
    assert [(r.job_id, r.workload_name) for r in mine] == [(r.job_id, r.workload_name) for r in ref]
    for a, b in zip(mine, ref):
        assert (a.allocated_resources, a.final_state) == (b.allocated_resources, b.final_state)
        assert (a.starting_time, a.finish_time) == pytest.approx((b.starting_time, b.finish_time),
                                                                 abs=1e-6)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize(("master", "docs", "energy"), [
    ("1ms", [WORKLOAD_A, WORKLOAD_B], False), ("1ms", [WORKLOAD_A], False),
    ("0us", [WORKLOAD_A], False), ("1ms", [WORKLOAD_A, WORKLOAD_B_LATE], False),
    ("30us", [WORKLOAD_TIE], False), ("30us", [WORKLOAD_TIE], True),
    ("1ms", [WORKLOAD_A, WORKLOAD_B], True)],
    ids=["A-B", "A", "A-no-master-latency", "A-Blate", "tie", "tie-E", "A-B-E"])
def test_hand_checked_sessions_as_the_real_batsim(master, docs, energy, tmp_path):
    """The fast tests' sessions, with the binary: the same messages and rows."""
    platform = _platform(tmp_path / "platform.xml", master, "100us", energy)
    workloads = [write_json(tmp_path / f"{i}.json", doc) for i, doc in enumerate(docs)]
    theirs = _session(platform, workloads, tmp_path / "real", True, False, energy)
    if len(docs) == 2 and docs[1] is WORKLOAD_B:
        assert timed(theirs) == EXPECTED_A_B
    if docs == [WORKLOAD_TIE]:
        assert timed(theirs)[1][1][:2] == [("JOB_SUBMITTED", "w0!a2", 8.00006),
                                           ("JOB_COMPLETED", "w0!a1", 8.00016)]
    ours = _session(platform, workloads, tmp_path / "ours", False, False, energy)
    _assert_same(tmp_path, ours, theirs)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize(("seeds", "master", "host"), [
    ((1, 2), "30us", "100us"), ((3, 4), None, "10us"), ((5, 6), "600us", "1.6ms"),
    ((12, 13), "1ms", "50us"), ((7, 8), "20us", "2ms"), ((1, 2, 3), "30us", "100us"),
    ((4, 4), "1ms", "50us")])
@pytest.mark.parametrize("energy", [False, True], ids=["", "E"])
def test_several_workloads_with_latencies_as_the_real_batsim(seeds, master, host, energy,
                                                             tmp_path):
    """Seeded workloads submitting at many of the same instants (calls, walltime kills), on
    platforms with latencies on the master host's loopback and the host links, with and without
    energy accounting (-E: job ends rank after the submissions and calls of their instant)."""
    platform = _platform(tmp_path / "platform.xml", master, host, energy)
    workloads = [seeded_workload(tmp_path / f"w{i}.json", seed) for i, seed in enumerate(seeds)]
    theirs = _session(platform, workloads, tmp_path / "real", True, energy=energy)
    ours = _session(platform, workloads, tmp_path / "ours", False, energy=energy)
    _assert_same(tmp_path, ours, theirs)
    crossed = sum(len({e["data"]["job_id"].split("!")[0] for e in m["events"]
                       if e["type"] == "JOB_SUBMITTED"}) > 1 for m in theirs)
    assert crossed >= 3  # several workloads submit in one message at many instants


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize(("seeds", "master", "host", "energy"), [
    ((1, 2), "30us", "100us", False), ((3, 4), "1ms", "50us", True)])
def test_easy_backfill_on_several_workloads_with_latencies(seeds, master, host, energy, tmp_path):
    """pybatsim's easyBackfill, whose choices depend on the order and times of the events, under
    the binary and hdrm serve: the same rows (ids, workloads, states, allocations; times within
    1 us)."""
    platform = _platform(tmp_path / "platform.xml", master, host, energy)
    workloads = [seeded_workload(tmp_path / f"w{i}.json", seed) for i, seed in enumerate(seeds)]
    for name in ("real", "ours"):
        sched = PybatsimProcess("easyBackfill", tmp_path / f"{name}.log")
        try:
            if name == "real":
                args = [BATSIM, "-p", str(platform), "-e", str(tmp_path / name), "-q",
                        "-s", f"tcp://127.0.0.1:{sched.port}"] + (["-E"] if energy else [])
                for path in workloads:
                    args += ["-w", str(path)]
                done = subprocess.run(args, capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr[-3000:]
            else:
                serve(platform, workloads, ServeOptions(sched.endpoint, str(tmp_path / name), 30.0,
                                                        config=ServerConfig(energy=energy)))
            assert sched.finish() == 0, (tmp_path / f"{name}.log").read_text()[-2000:]
        finally:
            sched.close()
    mine, ref = (read_jobs_csv(tmp_path / f"{n}_jobs.csv") for n in ("ours", "real"))
    assert len(ref) == 40
    assert [(r.job_id, r.workload_name, r.final_state, r.allocated_resources) for r in mine] == \
        [(r.job_id, r.workload_name, r.final_state, r.allocated_resources) for r in ref]
    for a, b in zip(mine, ref):
        assert (a.starting_time, a.finish_time) == pytest.approx((b.starting_time, b.finish_time),
                                                                 abs=1e-6)
