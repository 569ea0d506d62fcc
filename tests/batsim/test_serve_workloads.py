"""``hdrm serve`` with several workloads (``-w A -w B``), as Batsim 4.2.1 runs them.

Batsim names the workloads w0, w1, ... in ``-w`` order, prefixes job ids with them (``w1!3``), lists
every workload's file and profiles in SIMULATION_BEGINS, and runs one submitter per workload: at one
instant the submitter that has slept longest sends its batch first (w0 before w1 when both started
sleeping together), and NOTIFY ``no_more_static_job_to_submit`` comes once all have said goodbye.
The expected messages and out_jobs.csv rows below are the real binary's, recorded with the same
raw FCFS decision process (``-p`` a 6-host platform without latency, ``-w A -w B``). The ``slow``
test at the end replays seeded workloads against the binary itself.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import PybatsimProcess, RawScheduler, fcfs
from real_batsim import real_batsim

from hdrm.batsim.jobs import read_job_tables
from hdrm.batsim.server import ServeOptions, serve
from hdrm.cli.main import main
from hdrm.errors import WorkloadError

NB_HOSTS = 6
WORKLOAD_A = {"nb_res": 6, "jobs": [
    {"id": "1", "subtime": 0, "res": 1, "walltime": 100, "profile": "d2"},
    {"id": 2, "subtime": 0, "res": 2, "walltime": 100, "profile": "d3"},
    {"id": "10", "subtime": 5, "res": 1, "walltime": 100, "profile": "d2"},
    {"id": "9", "subtime": 5, "res": 1, "walltime": 100, "profile": "d3"}],
    "profiles": {"d2": {"type": "delay", "delay": 2}, "d3": {"type": "delay", "delay": 3}}}
#: the same profile names as A, other delays: each workload keeps its own profiles
WORKLOAD_B = {"nb_res": 6, "jobs": [
    {"id": "1", "subtime": 0, "res": 1, "walltime": 100, "profile": "d2", "extra": "x"},
    {"id": "3", "subtime": 5, "res": 1, "walltime": 100, "profile": "d2"},
    {"id": "4", "subtime": 7, "res": 1, "walltime": 100, "profile": "d3"}],
    "profiles": {"d2": {"type": "delay", "delay": 4}, "d3": {"type": "delay", "delay": 3}}}

#: What Batsim 4.2.1 sent for -w A -w B: (now, [(event type, job id or notify type)]) per message.
EXPECTED_A_B = [
    (0.0, [("JOB_SUBMITTED", "w0!1"), ("JOB_SUBMITTED", "w0!2"), ("JOB_SUBMITTED", "w1!1")]),
    (2.0, [("JOB_COMPLETED", "w0!1")]),
    (3.0, [("JOB_COMPLETED", "w0!2")]),
    (4.0, [("JOB_COMPLETED", "w1!1")]),
    (5.0, [("JOB_SUBMITTED", "w0!10"), ("JOB_SUBMITTED", "w0!9"), ("JOB_SUBMITTED", "w1!3")]),
    (7.0, [("JOB_SUBMITTED", "w1!4"), ("JOB_COMPLETED", "w0!10"),
           ("NOTIFY", "no_more_static_job_to_submit")]),
    (8.0, [("JOB_COMPLETED", "w0!9")]),
    (9.0, [("JOB_COMPLETED", "w1!3")]),
    (10.0, [("JOB_COMPLETED", "w1!4")]),
    (10.0, [("SIMULATION_ENDS", "")]),
]
#: ... and its out_jobs.csv rows (job_id, workload_name, profile, ...), in its order
EXPECTED_ROWS_A_B = [
    '1,w0,d2,0.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,0.000000,2.000000,2.000000,0.000000,'
    '2.000000,1.000000,0,-1.000000,""',
    '2,w0,d3,0.000000,2,100.000000,1,COMPLETED_SUCCESSFULLY,0.000000,3.000000,3.000000,0.000000,'
    '3.000000,1.000000,1-2,-1.000000,""',
    '1,w1,d2,0.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,0.000000,4.000000,4.000000,0.000000,'
    '4.000000,1.000000,3,-1.000000,""',
    '10,w0,d2,5.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,5.000000,2.000000,7.000000,0.000000,'
    '2.000000,1.000000,0,-1.000000,""',
    '9,w0,d3,5.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,5.000000,3.000000,8.000000,0.000000,'
    '3.000000,1.000000,1,-1.000000,""',
    '3,w1,d2,5.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,5.000000,4.000000,9.000000,0.000000,'
    '4.000000,1.000000,2,-1.000000,""',
    '4,w1,d3,7.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,7.000000,3.000000,10.000000,0.000000,'
    '3.000000,1.000000,0,-1.000000,""',
]
#: What Batsim 4.2.1 sent for -w A -w A: two workloads; both submitters end at 5 s, so the server
#: takes both batches and both goodbyes before it sends, and NOTIFY shares the batches' message.
EXPECTED_A_A = [
    (0.0, [("JOB_SUBMITTED", "w0!1"), ("JOB_SUBMITTED", "w0!2"), ("JOB_SUBMITTED", "w1!1"),
           ("JOB_SUBMITTED", "w1!2")]),
    (2.0, [("JOB_COMPLETED", "w0!1"), ("JOB_COMPLETED", "w1!1")]),
    (3.0, [("JOB_COMPLETED", "w0!2"), ("JOB_COMPLETED", "w1!2")]),
    (5.0, [("JOB_SUBMITTED", "w0!10"), ("JOB_SUBMITTED", "w0!9"), ("JOB_SUBMITTED", "w1!10"),
           ("JOB_SUBMITTED", "w1!9"), ("NOTIFY", "no_more_static_job_to_submit")]),
    (7.0, [("JOB_COMPLETED", "w0!10"), ("JOB_COMPLETED", "w1!10")]),
    (8.0, [("JOB_COMPLETED", "w0!9"), ("JOB_COMPLETED", "w1!9")]),
    (8.0, [("SIMULATION_ENDS", "")]),
]


def write_platform(path: Path, nb_hosts: int, latency: str = "0us") -> Path:
    """A master host and ``nb_hosts`` 1 GFLOPS hosts, each linked to the master."""
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="AS0" routing="Full">',
             '  <host id="master_host" speed="1Gf"/>']
    lines += [f'  <host id="h{i:02d}" speed="1Gf"/>' for i in range(nb_hosts)]
    lines += [f'  <link id="l{i:02d}" bandwidth="10GBps" latency="{latency}"/>'
              for i in range(nb_hosts)]
    lines += [f'  <route src="master_host" dst="h{i:02d}"><link_ctn id="l{i:02d}"/></route>'
              for i in range(nb_hosts)]
    path.write_text("\n".join([*lines, "</zone>", "</platform>", ""]))
    return path


def write_json(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def session(platform: Path, workloads: list[Path], prefix: Path, reply=None) -> list[dict]:
    """The messages a raw decision process (FCFS by default) received from hdrm serve."""
    scheduler = RawScheduler(reply or fcfs(NB_HOSTS))
    scheduler.start()
    try:
        serve(platform, workloads, ServeOptions(scheduler.endpoint, str(prefix), 30.0))
    finally:
        scheduler.stop()
    assert scheduler.error is None
    return [json.loads(text) for text in scheduler.received]


def assert_same_messages(ours: list[dict], theirs: list[dict]) -> None:
    """The same messages: SIMULATION_BEGINS, count, events, order, split and data, times to 1 us."""
    assert ours[0] == theirs[0]
    assert len(ours) == len(theirs)
    for i, (mine, ref) in enumerate(zip(ours, theirs)):
        assert summary([{}, mine]) == summary([{}, ref]), f"message {i} at t={ref['now']}"
        assert mine["now"] == pytest.approx(ref["now"], abs=1e-6), f"message {i}"
        for a, b in zip(mine["events"], ref["events"]):
            assert a["data"] == b["data"], f"message {i}"
            assert a["timestamp"] == pytest.approx(b["timestamp"], abs=1e-6), f"message {i}"


def summary(messages: list[dict]) -> list[tuple[float, list[tuple[str, str]]]]:
    return [(m["now"], [(e["type"], e["data"].get("job_id", e["data"].get("type", "")))
                        for e in m["events"] if e["type"] != "SIMULATION_BEGINS"])
            for m in messages[1:]]


def test_two_workloads_as_batsim_sends_and_writes_them(tmp_path):
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS)
    a, b = write_json(tmp_path / "a.json", WORKLOAD_A), write_json(tmp_path / "b.json", WORKLOAD_B)
    messages = session(platform, [a, b], tmp_path / "out")
    begins = messages[0]["events"][0]["data"]
    assert begins["workloads"] == {"w0": str(a.resolve()), "w1": str(b.resolve())}
    assert begins["profiles"] == {"w0": WORKLOAD_A["profiles"], "w1": WORKLOAD_B["profiles"]}
    assert summary(messages) == EXPECTED_A_B
    submitted = [e["data"] for m in messages for e in m["events"] if e["type"] == "JOB_SUBMITTED"]
    assert submitted[2] == {"job_id": "w1!1", "job": {**WORKLOAD_B["jobs"][0], "id": "w1!1"}}
    assert submitted[1]["job"]["id"] == "w0!2"  # an integer id in the file, text once prefixed
    lines = (tmp_path / "out_jobs.csv").read_text().splitlines()
    assert lines[1:] == EXPECTED_ROWS_A_B  # w1!1 ran 4 s: its d2 is B's, not A's 2 s


def test_the_same_file_twice_is_two_workloads(tmp_path):
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS)
    a = write_json(tmp_path / "a.json", WORKLOAD_A)
    messages = session(platform, [a, a], tmp_path / "out")
    assert messages[0]["events"][0]["data"]["workloads"] == {"w0": str(a.resolve()),
                                                             "w1": str(a.resolve())}
    assert summary(messages) == EXPECTED_A_A
    rows = [line.split(",")[:2] for line in (tmp_path / "out_jobs.csv").read_text().splitlines()]
    assert rows[1:] == [["1", "w0"], ["1", "w1"], ["2", "w0"], ["2", "w1"], ["10", "w0"],
                        ["10", "w1"], ["9", "w0"], ["9", "w1"]]


def test_one_workload_ending_alone_sends_notify_in_the_next_message(tmp_path):
    """The rule kept from one workload: the last batch goes out at once, NOTIFY after it."""
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS)
    a = write_json(tmp_path / "a.json", WORKLOAD_A)
    events = summary(session(platform, [a], tmp_path / "out"))
    assert events[3] == (5.0, [("JOB_SUBMITTED", "w0!10"), ("JOB_SUBMITTED", "w0!9")])
    assert events[4] == (5.0, [("NOTIFY", "no_more_static_job_to_submit")])


def test_jobs_are_numbered_across_workloads(tmp_path):
    a, b = write_json(tmp_path / "a.json", WORKLOAD_A), write_json(tmp_path / "b.json", WORKLOAD_B)
    table = read_job_tables([a, b])
    assert [j.batsim_id for j in table.jobs] == ["w0!1", "w0!2", "w0!10", "w0!9", "w1!1", "w1!3",
                                                 "w1!4"]
    assert [j.job.idx for j in table.jobs] == list(range(7))
    assert [j.job.run_time_s for j in table.jobs] == [2, 3, 2, 3, 4, 4, 3]
    assert table.profile_of(table.by_id["w1!1"]) == {"type": "delay", "delay": 4}


def test_a_bad_second_workload_is_named(tmp_path, capsys):
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS)
    a = write_json(tmp_path / "a.json", WORKLOAD_A)
    bad = dict(WORKLOAD_B, jobs=[dict(WORKLOAD_B["jobs"][0], id="x!1")])
    b = write_json(tmp_path / "b.json", bad)
    with pytest.raises(WorkloadError, match=r"b\.json: job id 'x!1' contains '!'"):
        read_job_tables([a, b])
    assert main(["serve", "-p", str(platform), "-w", str(a), "-w", str(b),
                 "-s", "tcp://localhost:9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "b.json: job id 'x!1' contains '!'" in err


# ---------------------------------------------------------------- against the real binary
BATSIM, WHY_NOT = real_batsim()
CALLS_S = (7.0, 11.0, 15.0, 23.0)


def seeded_workload(path: Path, seed: int, nb_jobs: int = 20) -> Path:
    """Delay jobs submitted at even seconds 2..38 (ties within and across workloads), 15 % killed
    at a walltime equal to their delay."""
    rng = random.Random(seed)
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        delay = rng.choice([2, 3, 4, 6, 8])
        walltime = delay if rng.random() < 0.15 else 100
        jobs.append({"id": str(i), "subtime": rng.choice(range(2, 40, 2)),
                     "res": rng.choice([1, 1, 2, 3]), "walltime": walltime, "profile": f"d{delay}"})
        profiles[f"d{delay}"] = {"type": "delay", "delay": delay}
    return write_json(path, {"nb_res": NB_HOSTS, "jobs": jobs, "profiles": profiles})


def fcfs_with_calls(doc: dict, base) -> str:
    out = json.loads(base(doc))
    if any(e["type"] == "SIMULATION_BEGINS" for e in doc["events"]):
        out["events"] += [{"timestamp": doc["now"], "type": "CALL_ME_LATER",
                           "data": {"timestamp": t}} for t in CALLS_S]
    return json.dumps(out)


def real_session(platform: Path, workloads: list[Path], prefix: Path) -> list[dict]:
    base = fcfs(NB_HOSTS)
    scheduler = RawScheduler(lambda doc: fcfs_with_calls(doc, base))
    scheduler.start()
    try:
        args = [BATSIM, "-p", str(platform), "-e", str(prefix), "-q",
                "-s", scheduler.endpoint.replace("localhost", "127.0.0.1")]
        for path in workloads:
            args += ["-w", str(path)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        scheduler.stop()
    assert scheduler.error is None
    return [json.loads(text) for text in scheduler.received]


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seeds", [(1, 2), (5, 6), (12, 13)])
def test_two_workloads_as_the_real_batsim(seeds, tmp_path):
    """Same messages (events, order, split, data, times to 1 us), same out_jobs.csv text."""
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS)
    workloads = [seeded_workload(tmp_path / f"w{seed}.json", seed) for seed in seeds]
    theirs = real_session(platform, workloads, tmp_path / "real")
    base = fcfs(NB_HOSTS)
    ours = session(platform, workloads, tmp_path / "ours", lambda doc: fcfs_with_calls(doc, base))
    assert_same_messages(ours, theirs)
    crossed = sum(len({e["data"]["job_id"].split("!")[0] for e in m["events"]
                       if e["type"] == "JOB_SUBMITTED"}) > 1 for m in theirs)
    assert crossed >= 5  # both workloads submit at many of the same instants
    assert (tmp_path / "ours_jobs.csv").read_text() == (tmp_path / "real_jobs.csv").read_text()


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seeds", [(1, 2), (3, 4)])
def test_easy_backfill_on_two_workloads_as_on_the_real_batsim(seeds, tmp_path):
    """pybatsim's easyBackfill, whose choices depend on the order of submissions: the same
    out_jobs.csv text under the binary and under hdrm serve."""
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS)
    workloads = [seeded_workload(tmp_path / f"w{seed}.json", seed) for seed in seeds]
    for name in ("real", "ours"):
        sched = PybatsimProcess("easyBackfill", tmp_path / f"{name}.log")
        try:
            if name == "real":
                args = [BATSIM, "-p", str(platform), "-e", str(tmp_path / name), "-q",
                        "-s", f"tcp://127.0.0.1:{sched.port}"]
                for path in workloads:
                    args += ["-w", str(path)]
                done = subprocess.run(args, capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr[-3000:]
            else:
                serve(platform, workloads, ServeOptions(sched.endpoint, str(tmp_path / name), 30.0))
            assert sched.finish() == 0, (tmp_path / f"{name}.log").read_text()[-2000:]
        finally:
            sched.close()
    ours, real = ((tmp_path / f"{n}_jobs.csv").read_text() for n in ("ours", "real"))
    assert ours == real
    assert {line.split(",")[1] for line in real.splitlines()[1:]} == {"w0", "w1"}
