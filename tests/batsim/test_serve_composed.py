"""``hdrm serve`` on ``composed`` and ``parallel_homogeneous_total`` jobs, as Batsim 4.2.1 runs
them.

A sequence's parts run one after another on all the job's hosts, the walltime left passed on;
a ``parallel_homogeneous_total`` job spreads its ``cpu`` over the hosts it is given, which may be
more or fewer than it asks for (so may a sequence of only such parts). A KILL_JOB reports the
tree of the running part; a killed computation's ``return_code`` is -2 (Batsim cancels it), a
killed sleep's -1. With ``-E``, hosts draw idle power during a sleep part and, as SimGrid's lazy
energy accounts charge it, a computation after a sleep charges the sleep at its own power on all
the job's hosts but the first (:mod:`hdrm.batsim.lazy_energy`). The expected values of the fast
tests were recorded from the binary; the ``slow`` tests run it on seeded workloads.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
from real_batsim import real_batsim
from test_serve_energy_order import messages
from test_serve_energy_order import write_platform as energy_platform
from test_serve_workloads import write_platform

from hdrm.batsim.jobs import read_job_table
from hdrm.errors import WorkloadError

NB = 6
PROFILES = {
    "d1": {"type": "delay", "delay": 1.125}, "d3": {"type": "delay", "delay": 3.25},
    "c2": {"type": "parallel_homogeneous", "cpu": 2.07e9, "com": 0},
    "t4": {"type": "parallel_homogeneous_total", "cpu": 4.32e9, "com": 0},
    "t6": {"type": "parallel_homogeneous_total", "cpu": 6.48e9, "com": 0},
    "sd": {"type": "composed", "repeat": 2, "seq": ["d1", "d3"]},
    "sc": {"type": "composed", "seq": ["c2", "t4"]},
    "mix": {"type": "composed", "repeat": 2, "seq": ["d1", "c2"]},
    "nest": {"type": "composed", "repeat": 2, "seq": ["sd", "c2", "d1"]},
    "st": {"type": "composed", "repeat": 3, "seq": ["t4", "t6"]},
    "dc": {"type": "composed", "seq": ["d1", "c2"]},
}
#: profiles whose jobs the scheduler gives one resource more than they ask for, when free
SPREAD = {"t4", "t6", "st"}
CALLS_S = (5.5, 13.75, 21.25, 27.5)


def scheduler(kills: bool = False, calls: tuple[float, ...] = CALLS_S):
    """FCFS on the lowest free resources; ``SPREAD`` jobs on one more than asked when free;
    with ``kills``, calls at ``calls`` and at each call a KILL_JOB of the last job started."""
    free, queue, running = set(range(NB)), [], []

    def reply(doc: dict) -> str:
        now, out = doc["now"], []
        for e in doc["events"]:
            d = e["data"]
            if e["type"] == "SIMULATION_BEGINS" and kills:
                out += [{"timestamp": now, "type": "CALL_ME_LATER", "data": {"timestamp": t}}
                        for t in calls]
            elif e["type"] == "REQUESTED_CALL" and running and kills:
                out.append({"timestamp": now, "type": "KILL_JOB",
                            "data": {"job_ids": [running[-1]]}})
            elif e["type"] == "JOB_SUBMITTED":
                queue.append((d["job_id"], d["job"]["res"], d["job"]["profile"]))
            elif e["type"] == "JOB_COMPLETED":
                running.remove(d["job_id"])
                for part in d["alloc"].split():
                    lo, _, hi = part.partition("-")
                    free.update(range(int(lo), int(hi or lo) + 1))
        while queue and queue[0][1] <= len(free):
            job_id, res, profile = queue.pop(0)
            size = res + 1 if profile in SPREAD and len(free) > res else res
            alloc = sorted(free)[:size]
            free.difference_update(alloc)
            running.append(job_id)
            out.append({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": job_id, "alloc": " ".join(map(str, alloc))}})
        return json.dumps({"now": now, "events": out})

    return reply


def write_workload(path: Path, jobs: list[dict]) -> Path:
    path.write_text(json.dumps({"nb_res": NB, "jobs": jobs, "profiles": PROFILES}))
    return path


def seeded_workload(path: Path, seed: int, nb_jobs: int = 16) -> Path:
    """Jobs of every profile above at times of 3 decimals (every time stays exact in Batsim's
    6 decimals), 1-3 resources, a quarter with a walltime of 1-12 s (kills in sequences)."""
    rng = random.Random(seed)
    jobs = []
    for i in range(nb_jobs):
        wall = rng.choice([100, 100, 100, round(rng.uniform(1, 12), 3)])
        jobs.append({"id": str(i), "subtime": round(rng.uniform(0, 30), 3),
                     "res": rng.choice([1, 2, 3]), "walltime": wall,
                     "profile": rng.choice(list(PROFILES))})
    return write_workload(path, jobs)


def _run(tmp_path: Path, jobs: list[dict], energy: bool, reply) -> tuple[list[dict], list[str]]:
    platform = (energy_platform if energy else write_platform)(tmp_path / "p.xml", NB)
    workload = write_workload(tmp_path / "w.json", jobs)
    received = messages(platform, [workload], tmp_path / "ours", energy, reply)
    return received, (tmp_path / "ours_jobs.csv").read_text().splitlines()[1:]


def _row(*cells: object) -> str:
    return ",".join(map(str, cells))


#: the binary's messages after SIMULATION_BEGINS for KILLED_CASE (no -E)
KILLED_MESSAGES = [
    (3.0, [("JOB_COMPLETED", {"job_id": "w0!s", "job_state": "COMPLETED_WALLTIME_REACHED",
                              "return_code": -1, "alloc": "3-5"})]),
    (4.375, [("JOB_COMPLETED", {"job_id": "w0!d", "job_state": "COMPLETED_WALLTIME_REACHED",
                                "return_code": -1, "alloc": "0"})]),
    (6.0, [("REQUESTED_CALL", {})]),
    (6.0, [("JOB_COMPLETED", {"job_id": "w0!n", "job_state": "COMPLETED_KILLED",
                              "return_code": -1, "alloc": "1-2"}),
           ("JOB_KILLED", {"job_ids": ["w0!n"], "job_progress": {"w0!n": {
               "profile_name": "nest", "current_task_index": 0, "current_task": {
                   "profile_name": "sd", "current_task_index": 3, "current_task": {
                       "profile_name": "d3", "progress": 0.153846}}}}})]),
    (6.0, [("SIMULATION_ENDS", {})]),
]


def test_walltimes_in_a_sequence_and_a_kill_as_the_binary_sends_them(tmp_path):
    """'sc' (work of 2.07 s, then 4.32e9 flop over 3 hosts) killed at its 3 s walltime in its
    second part; 'sd' (1.125 + 3.25 + ...) at 4.375 s, when its second delay equals the time
    left; 'nest' killed by KILL_JOB at 6 s (asked twice in one reply: Batsim kills it once),
    in the 4th task of its first 'sd'."""
    jobs = [{"id": "n", "subtime": 0, "res": 2, "profile": "nest"},
            {"id": "s", "subtime": 0, "res": 3, "profile": "sc", "walltime": 3},
            {"id": "d", "subtime": 0, "res": 1, "profile": "sd", "walltime": 4.375}]
    base = scheduler()

    def reply(doc: dict) -> str:
        out = json.loads(base(doc))
        if any(e["type"] == "SIMULATION_BEGINS" for e in doc["events"]):
            out["events"].append({"timestamp": 0, "type": "CALL_ME_LATER",
                                  "data": {"timestamp": 6.0}})
        if any(e["type"] == "REQUESTED_CALL" for e in doc["events"]):
            out["events"] += [{"timestamp": 6.0, "type": "KILL_JOB",
                               "data": {"job_ids": ["w0!n"]}}] * 2
        return json.dumps(out)

    received, rows = _run(tmp_path, jobs, False, reply)
    got = [(m["now"], [(e["type"], e["data"]) for e in m["events"]]) for m in received[2:]]
    assert got == KILLED_MESSAGES
    assert rows[0].startswith(_row("s", "w0", "sc", "0.000000", 3, "3.000000", 0,
                                   "COMPLETED_WALLTIME_REACHED", "0.000000", "3.000000"))
    assert rows[2].startswith(_row("n", "w0", "nest", "0.000000", 2, "-1.000000", 0,
                                   "COMPLETED_KILLED", "0.000000", "6.000000"))


@pytest.mark.parametrize(("res", "profile", "energy_j"), [
    (2, "dc", "1182.240000"),  # 1057.365 J at idle power during the sleep
    (3, "dc", "1865.970000"),
    (2, "mix", "2364.480000"),
    (2, "nest", "7524.605000"),
    (1, "dc", "520.875000"),  # one host: the sleep at idle power (95 W), 2.07 s at 200 W
    (2, "sc", "1721.610000"),  # computations only: no sleep to charge
])
def test_energy_of_sleep_and_work_parts_as_the_binary_counts_it(tmp_path, res, profile,
                                                                  energy_j):
    """-E, hosts of 95+i : 200+7i W; one job alone; its consumed_energy as the binary wrote it."""
    jobs = [{"id": "0", "subtime": 0, "res": res, "profile": profile}]
    _, rows = _run(tmp_path, jobs, True, scheduler())
    assert rows[0].split(",")[15] == energy_j


def test_a_total_amount_on_more_hosts_than_asked(tmp_path):
    """4.32e9 flop asked on 2 hosts, given 3 of 1 GFLOP/s: 1.44 s (the binary's row)."""
    _, rows = _run(tmp_path, [{"id": "0", "subtime": 0, "res": 2, "profile": "t4"}], False,
                   scheduler())
    assert rows == [_row(0, "w0", "t4", "0.000000", 2, "-1.000000", 1, "COMPLETED_SUCCESSFULLY",
                         "0.000000", "1.440000", "1.440000", "0.000000", "1.440000", "1.000000",
                         "0-2", "-1.000000", '""')]


def test_other_sizes_and_a_mapping_as_the_binary_runs_them(tmp_path):
    """'t4' asked on 2, given 3 with a mapping of 3 executors (Batsim skips the size checks for
    such jobs); 'st' (t4, t6 three times) asked on 2, given 1; 't6' asked on 4, given 2, killed
    at its 1.5 s walltime: the binary's rows."""
    jobs = [{"id": "a", "subtime": 0, "res": 2, "profile": "t4"},
            {"id": "b", "subtime": 0, "res": 2, "profile": "st"},
            {"id": "c", "subtime": 0, "res": 4, "profile": "t6", "walltime": 1.5}]
    decisions = [("w0!a", "0-2", {"0": "0", "1": "1", "2": "2"}), ("w0!b", "3", None),
                 ("w0!c", "4-5", None)]

    def reply(doc: dict) -> str:
        out = []
        if any(e["type"] == "JOB_SUBMITTED" for e in doc["events"]):
            for job_id, alloc, mapping in decisions:
                data = {"job_id": job_id, "alloc": alloc}
                if mapping:
                    data["mapping"] = mapping
                out.append({"timestamp": doc["now"], "type": "EXECUTE_JOB", "data": data})
        return json.dumps({"now": doc["now"], "events": out})

    _, rows = _run(tmp_path, jobs, False, reply)
    tail = ("-1.000000", '""')
    assert rows == [
        _row("a", "w0", "t4", "0.000000", 2, "-1.000000", 1, "COMPLETED_SUCCESSFULLY", "0.000000",
             "1.440000", "1.440000", "0.000000", "1.440000", "1.000000", "0-2", *tail),
        _row("c", "w0", "t6", "0.000000", 4, "1.500000", 0, "COMPLETED_WALLTIME_REACHED",
             "0.000000", "1.500000", "1.500000", "0.000000", "1.500000", "1.000000", "4-5",
             *tail),
        _row("b", "w0", "st", "0.000000", 2, "-1.000000", 1, "COMPLETED_SUCCESSFULLY", "0.000000",
             "32.400000", "32.400000", "0.000000", "32.400000", "1.000000", "3", *tail)]


ZERO_PART = {"d2": {"type": "delay", "delay": 2}, "d0": {"type": "delay", "delay": 0},
             "seq": {"type": "composed", "seq": ["d2", "d0"]}}


def _zero_part_workload(path: Path) -> Path:
    jobs = [{"id": "0", "subtime": 0, "res": 2, "walltime": -1, "profile": "seq"}]
    path.write_text(json.dumps({"nb_res": NB, "jobs": jobs, "profiles": ZERO_PART}))
    return path


def test_a_part_of_no_time_is_refused_as_batsim_refuses_it(tmp_path):
    with pytest.raises(WorkloadError, match=r"w\.json: profiles\.d0\.delay is 0, which Batsim 4 "
                                            r"refuses \(a delay must be > 0\); give it a "
                                            r"positive delay"):
        read_job_table(_zero_part_workload(tmp_path / "w.json"))


# ---------------------------------------------------------------- against the real binary
BATSIM, WHY_NOT = real_batsim()


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("energy", [False, True], ids=["plain", "E"])
@pytest.mark.parametrize(("seed", "kills"), [(1, False), (2, False), (5, True), (7, True)])
def test_seeded_workloads_as_the_real_batsim(tmp_path, seed, kills, energy):
    """Same messages (events, order, split, data, times to 1 us) and out_jobs.csv text."""
    platform = (energy_platform if energy else write_platform)(tmp_path / "p.xml", NB)
    workload = seeded_workload(tmp_path / "w.json", seed)
    theirs = messages(platform, [workload], tmp_path / "real", energy, scheduler(kills), real=True)
    ours = messages(platform, [workload], tmp_path / "ours", energy, scheduler(kills))
    assert len(ours) == len(theirs)
    assert ours[0]["events"][0]["data"]["profiles"] == theirs[0]["events"][0]["data"]["profiles"]
    for i, (mine, ref) in enumerate(zip(ours[1:], theirs[1:]), 1):
        assert mine["now"] == pytest.approx(ref["now"], abs=1e-6), f"message {i}"
        assert [(e["type"], e["data"]) for e in mine["events"]] == [
            (e["type"], e["data"]) for e in ref["events"]], f"message {i}"
    text = (tmp_path / "real_jobs.csv").read_text()
    assert (tmp_path / "ours_jobs.csv").read_text() == text
    assert sum(f",{name}," in text for name in ("sd", "sc", "mix", "nest", "st", "dc")) >= 3


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_with_link_latencies_as_the_real_batsim(tmp_path, seed):
    """100 us host links (hdrm serve's delayed message timing): a part's end posts nothing,
    so the server takes the next message due, not a later submission (it did, before)."""
    platform = write_platform(tmp_path / "p.xml", NB, latency="100us")
    workload = seeded_workload(tmp_path / "w.json", seed)
    theirs = messages(platform, [workload], tmp_path / "real", False, scheduler(True), real=True)
    ours = messages(platform, [workload], tmp_path / "ours", False, scheduler(True))
    assert [(m["now"], m["events"]) for m in ours[1:]] == [
        (pytest.approx(m["now"], abs=1e-6), m["events"]) for m in theirs[1:]]
    assert (tmp_path / "ours_jobs.csv").read_text() == (tmp_path / "real_jobs.csv").read_text()


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_the_binary_aborts_on_a_part_of_no_time(tmp_path):
    platform = write_platform(tmp_path / "p.xml", NB)
    done = subprocess.run([BATSIM, "-p", str(platform), "-w",
                           str(_zero_part_workload(tmp_path / "w.json")), "-q", "-e",
                           str(tmp_path / "real"), "-s", "tcp://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "non-strictly-positive 'delay'" in done.stderr
