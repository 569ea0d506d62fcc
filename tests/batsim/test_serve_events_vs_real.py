"""``hdrm serve --events`` against Batsim 4.2.1 itself: the same decision process on both, the
same messages (byte for byte, both ways), out_jobs.csv, out_machine_states.csv and the
out_schedule.csv columns that do not measure wall time.

Sessions: seeded workloads (delay jobs submitted at even seconds, some killed at their walltime)
on 6 hosts; seeded event files where each machine goes down and up again at integer times (often
with submissions and job ends), with generic events when forwarded, one or two files, ``-E`` or
not; a raw FCFS that keeps unavailable machines out of its allocations (and kills the jobs on a
machine that goes down), and the pybatsim scheduler ``availSched.py`` through a relay that
records its replies. Then edge cases, the order of 17 simultaneous events (libstdc++'s
``std::sort``), and the bad lines on which both stop.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
import zmq
from batsim_helpers import PybatsimProcess, RawScheduler, fcfs, read_csv
from real_batsim import real_batsim
from test_external_events import BAD_LINES, A, U, fcfs_avail, write_events
from test_serve_energy_order import write_platform, write_workload
from test_serve_workloads import seeded_workload

from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.errors import HdrmError

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)]
NB_HOSTS = 6
SCHEDULER = Path(__file__).resolve().parent / "availSched.py"
WALL_COLUMNS = ("batsim_version", "scheduling_time", "simulation_time")


def seeded_events(folder: Path, seed: int, nb_files: int, generic: bool, ties: bool = False):
    """Event files: the machines but one split among the files, each going down and up at
    integer times 0..48; same-time events of a file sometimes merged into one; generic events
    (and 20 simultaneous ``tick`` events if ``ties``) when ``generic``; lines shuffled."""
    rng = random.Random(seed * 7919 + nb_files)
    files: list[list[dict]] = [[] for _ in range(nb_files)]
    machines = list(range(NB_HOSTS))
    rng.shuffle(machines)
    for k, h in enumerate(machines[:-1]):
        t, down = rng.choice([0, 1, 2, 3, 4]), False
        while t < 48:
            files[k % nb_files].append(
                {"type": "machine_available" if down else "machine_unavailable", "ids": [h],
                 "timestamp": t if rng.random() < 0.5 else float(t)})
            down = not down
            t += rng.choice([1, 2, 3, 4, 6, 8, 10])
    paths = []
    for f, items in enumerate(files):
        lines: list[dict] = []
        for item in items:
            same = [x for x in lines if (x["timestamp"], x["type"]) == (item["timestamp"],
                                                                        item["type"])]
            if same and rng.random() < 0.5:
                same[0]["ids"] += item["ids"]
            else:
                lines.append(item)
        out = [{"type": x["type"], "timestamp": x["timestamp"], "resources": " ".join(
            map(str, sorted(x["ids"], reverse=rng.random() < 0.3)))} for x in lines]
        if generic:
            out += [{"type": rng.choice(["alarm", "price"]), "id": f"{f}-{g}",
                     "timestamp": rng.choice(range(0, 52, 2)) + rng.choice([0, 0, 0.5]),
                     "value": rng.choice([1, 2.5, "x", [1, {"a": None}], True])}
                    for g in range(rng.choice([2, 3, 5]))]
        if ties:
            out += [{"type": "tick", "timestamp": 10, "n": n} for n in range(20)]
        rng.shuffle(out)
        paths.append(write_events(folder / f"events{f}.txt", out))
    return paths


def relay(scheduler: Path, log: Path):
    """A reply function that forwards each message to a pybatsim process and keeps its replies."""
    process = PybatsimProcess(str(scheduler), log)
    context = zmq.Context()
    sock = context.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 20000)
    sock.connect(f"tcp://127.0.0.1:{process.port}")

    def reply(doc: dict) -> str:
        sock.send_string(json.dumps(doc))
        text = sock.recv_string()
        reply.replies.append(text)
        if any(e["type"] == "SIMULATION_ENDS" for e in doc["events"]):
            process.finish()
            sock.close(0)
            context.term()
        return text
    reply.replies = []
    return reply


def run_both(tmp_path: Path, make_reply, workloads: list[Path], events: list[Path],
             forward: bool = False, energy: bool = False, cfg: str = "", nb_hosts: int = NB_HOSTS):
    """The binary, then hdrm serve, each with a fresh decision process; returns for each
    (exit status or error, messages received, replies sent, output prefix)."""
    platform = write_platform(tmp_path / "p.xml", nb_hosts)
    runs = []
    for real in (True, False):
        reply = make_reply()
        scheduler = RawScheduler(reply)
        scheduler.start()
        prefix = tmp_path / ("real" if real else "ours")
        try:
            if real:
                args = [BATSIM, "-p", str(platform), "-e", str(prefix), "-q",
                        "-s", scheduler.endpoint.replace("localhost", "127.0.0.1")]
                args += [a for w in workloads for a in ("-w", str(w))]
                args += [a for e in events for a in ("--events", str(e))]
                args += ["--forward-unknown-events"] if forward else []
                args += ["-E"] if energy else []
                args += ["--sched-cfg", cfg] if cfg else []
                outcome = subprocess.run(args, capture_output=True, text=True, timeout=60)
                status = outcome.returncode and f"exit {outcome.returncode}: {outcome.stderr}"
            else:
                config = ServerConfig(energy=energy, sched_config=cfg,
                                      events=tuple(map(str, events)),
                                      forward_unknown_events=forward)
                try:
                    serve(platform, workloads, ServeOptions(scheduler.endpoint, str(prefix), 30.0,
                                                            config=config))
                    status = 0
                except HdrmError as exc:
                    status = exc
        finally:
            scheduler.stop()
        assert scheduler.error is None, scheduler.error
        runs.append((status, scheduler.received, getattr(reply, "replies", None), prefix))
    return runs


def assert_same_outputs(real: Path, ours: Path) -> None:
    for name in ("jobs", "machine_states"):  # (no state row for an availability change)
        assert Path(f"{ours}_{name}.csv").read_text() == Path(f"{real}_{name}.csv").read_text()
    theirs, mine = (read_csv(Path(f"{prefix}_schedule.csv"))[0] for prefix in (real, ours))
    assert {k: mine[k] for k in theirs if k not in WALL_COLUMNS} == \
        {k: v for k, v in theirs.items() if k not in WALL_COLUMNS}  # time_unavailable ...


#: (seed, -E, forward, files, kill, ties): workloads of seed 3 and 6 come in pairs (w0, w1)
RAW_CASES = [(1, False, False, 1, False, False), (2, True, False, 2, False, False),
             (3, False, True, 2, True, False), (5, True, True, 1, False, True),
             (6, False, True, 1, True, False), (4, True, False, 1, True, False),
             (7, False, False, 2, True, False), (8, True, True, 2, False, False)]


def _workloads(tmp_path: Path, seed: int) -> list[Path]:
    paths = [seeded_workload(tmp_path / "w0.json", seed)]
    if seed % 3 == 0:
        paths.append(seeded_workload(tmp_path / "w1.json", seed + 100))
    return paths


@pytest.mark.parametrize("case", RAW_CASES,
                         ids=lambda c: "s{}_E{:d}_f{:d}_n{}_k{:d}_t{:d}".format(*c))
def test_raw_fcfs_sessions_are_the_binarys(tmp_path, case):
    seed, energy, forward, nb_files, kill, ties = case
    events = seeded_events(tmp_path, seed, nb_files, forward, ties)
    workloads = _workloads(tmp_path, seed)

    def make():
        return fcfs_killing(NB_HOSTS) if kill else fcfs_avail(NB_HOSTS)
    (status_r, real, _, pr), (status_o, ours, _, po) = run_both(
        tmp_path, make, workloads, events, forward, energy)
    assert status_r == 0 and status_o == 0
    assert ours == real
    assert_same_outputs(pr, po)


def fcfs_killing(nb_hosts: int):
    """fcfs_avail that also kills, once a message is read, the jobs on machines now down."""
    base, down, running = fcfs_avail(nb_hosts), set(), {}

    def reply(doc: dict) -> str:
        for e in doc["events"]:
            d = e["data"]
            if e["type"] == "NOTIFY" and d["type"] in ("event_machine_unavailable",
                                                       "event_machine_available"):
                ids = {int(x) for part in d["resources"].split() for x in _span(part)}
                (down.update if d["type"].endswith("unavailable") else down.difference_update)(ids)
            elif e["type"] == "JOB_COMPLETED":
                running.pop(d["job_id"], None)
        doomed = [j for j, hosts in running.items() if hosts & down]
        for j in doomed:
            del running[j]
        out = json.loads(base(doc))
        for e in out["events"]:
            running[e["data"]["job_id"]] = set(map(int, e["data"]["alloc"].split()))
        if doomed:
            out["events"].insert(0, {"timestamp": doc["now"], "type": "KILL_JOB",
                                     "data": {"job_ids": doomed}})
        return json.dumps(out)
    return reply


def _span(part: str) -> range:
    lo, _, hi = part.partition("-")
    return range(int(lo), int(hi or lo) + 1)


@pytest.mark.parametrize("case", [c for c in RAW_CASES if c[0] % 3],
                         ids=lambda c: "s{}_E{:d}_f{:d}_n{}_k{:d}_t{:d}".format(*c))
def test_the_instant_model_sends_the_binarys_messages(tmp_path, case, monkeypatch):
    """The instant model (hdrm serve's path off the actor model: forced here) on the sessions
    with one workload: the same messages and out_jobs.csv (it writes no machine-state file).
    Under -E the first submission after time 0 comes after the events of its instant, as
    Batsim reads every host's energy before sending it (8/8 on these; 41/64 -> 60/64 on the
    grid of runs/s28/E/exp4.py; the rest have two workloads)."""
    import hdrm.batsim.server as server_module
    seed, energy, forward, nb_files, kill, ties = case
    events = seeded_events(tmp_path, seed, nb_files, forward, ties)
    monkeypatch.setattr(server_module, "message_bandwidths", lambda *args, **kwargs: None)

    def make():
        return fcfs_killing(NB_HOSTS) if kill else fcfs_avail(NB_HOSTS)
    (status_r, real, _, pr), (status_o, ours, _, po) = run_both(
        tmp_path, make, _workloads(tmp_path, seed), events, forward, energy)
    assert status_r == 0 and status_o == 0
    assert ours == real
    assert Path(f"{po}_jobs.csv").read_text() == Path(f"{pr}_jobs.csv").read_text()


PYBATSIM_CASES = [(1, False, True, 1, True), (4, True, False, 2, False), (5, True, True, 1, True)]


@pytest.mark.parametrize("case", PYBATSIM_CASES,
                         ids=lambda c: "s{}_E{:d}_f{:d}_n{}_k{:d}".format(*c))
def test_pybatsim_sessions_are_the_binarys(tmp_path, case):
    """availSched (onNotifyEventMachineUnavailable/Available, onNotifyGenericEvent, kills with
    --sched-cfg kill): the messages both ways and the outputs."""
    seed, energy, forward, nb_files, kill = case
    events = seeded_events(tmp_path, seed, nb_files, forward)
    count = iter(range(2))
    (status_r, real, real_replies, pr), (status_o, ours, our_replies, po) = run_both(
        tmp_path, lambda: relay(SCHEDULER, tmp_path / f"sched{next(count)}.log"),
        _workloads(tmp_path, seed), events, forward, energy, "kill" if kill else "")
    assert status_r == 0 and status_o == 0
    assert ours == real and our_replies == real_replies
    assert_same_outputs(pr, po)


EDGE_CASES = {
    "empty_file": [[]],
    "an_empty_file_and_another": [[], [U("1", 0), A("1", 8)]],
    "last_event_with_the_last_submission": [[U("1", 0), A("1", 8)]],
    "last_event_with_the_last_job_end": [[U("1", 0), A("1", 9)]],
    "events_after_the_last_job": [[U("1", 0), A("1", 30), {"type": "g", "timestamp": 31}]],
    "fractional_times": [[U("1", 0.5), A("1", 2.25), U("2", 1e-7), A("2", 7.123456789)]],
    "generic_payloads": [[{"type": "g", "timestamp": 4, "a": 0.1, "b": 1e20, "c": -0.0,
                           "d": 123456789012, "e": "\u00e9\u2603\u0001", "f": {"x": [1.25, False,
                                                                                    None]},
                           "h": 10 ** 20, "i": -(2 ** 63), "j": 2 ** 64 - 1}]],
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_cases_are_the_binarys(tmp_path, name):
    events = [write_events(tmp_path / f"e{i}.txt", lines)
              for i, lines in enumerate(EDGE_CASES[name])]
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5), (2, 2, 6), (5, 1, 3), (8, 4, 1)])
    (status_r, real, _, pr), (status_o, ours, _, po) = run_both(
        tmp_path, lambda: fcfs_avail(4), [workload], events, True, nb_hosts=4)
    assert status_r == 0 and status_o == 0
    assert ours == real
    assert_same_outputs(pr, po)


def test_seventeen_simultaneous_events_come_in_std_sort_order(tmp_path):
    events = [write_events(tmp_path / "e.txt", [{"type": "t", "timestamp": 3, "n": n}
                                                 for n in range(17)])]
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5)])
    (_, real, _, _), (_, ours, _, _) = run_both(tmp_path, lambda: fcfs_avail(4), [workload],
                                                events, True, nb_hosts=4)
    order = [e["data"]["n"] for text in real for e in json.loads(text)["events"]
             if e["data"].get("type") == "t"]
    assert order == [8, 16, 15, 14, 13, 12, 11, 10, 9, 0, 7, 6, 5, 4, 3, 2, 1]
    assert ours == real


@pytest.mark.parametrize("name", list(BAD_LINES))
def test_the_binary_aborts_on_the_lines_hdrm_refuses(tmp_path, name):
    events = [write_events(tmp_path / "e.txt", [BAD_LINES[name][0]])]
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5), (2, 1, 1)])
    (status_r, _, _, _), (status_o, ours, _, _) = run_both(
        tmp_path, lambda: fcfs_avail(4), [workload], events, nb_hosts=4)
    assert status_r != 0
    assert "--events" in str(status_o) and ours == []  # refused before any message


@pytest.mark.parametrize("lines, reply, words", [
    ([U("0", 0)], lambda: fcfs(4), "cannot compute jobs now (the machine is not computing "
     "nor idle, its state is 'unavailable')"),
    ([U("1", 1), U("1", 2)], lambda: fcfs_avail(4), "the making of machine 1 ('h01') "
     "unavailable was requested but this machine was already in UNAVAILABLE state"),
    ([A("0", 3)], lambda: fcfs_avail(4), "the making of machine 0 ('h00') available was "
     "requested but this machine was not in UNAVAILABLE state (current state: computing"),
], ids=["execute_on_unavailable", "unavailable_twice", "available_while_available"])
def test_both_stop_where_the_binary_aborts(tmp_path, lines, reply, words):
    events = [write_events(tmp_path / "e.txt", lines)]
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5), (2, 1, 1)])
    (status_r, real, _, _), (status_o, ours, _, _) = run_both(
        tmp_path, reply, [workload], events, nb_hosts=4)
    assert status_r != 0 and words.lower() in str(status_r).lower()
    assert isinstance(status_o, HdrmError) and words.lower() in str(status_o).lower()
    assert ours == real  # the same messages up to the stop
