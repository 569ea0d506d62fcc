"""``hdrm serve``: Batsim's options, a summary line, Batsim's files, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zmq

from hdrm.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "batsim" / "data"
SMALL = DATA / "golden" / "small_delays"
VARIOUS = DATA / "golden" / "small_various"


class Fcfs(threading.Thread):
    """A raw REP scheduler: FCFS on the lowest free resources; records what it received."""

    def __init__(self, nb: int) -> None:
        super().__init__(daemon=True)
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.REP)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT).replace("127.0.0.1", "localhost")
        self.free, self.queue, self.first = set(range(nb)), [], None

    def run(self) -> None:
        try:
            while self.socket.poll(5000):
                doc = json.loads(self.socket.recv_string())
                self.first = self.first or doc
                self.socket.send_string(json.dumps({"now": doc["now"], "events": self.decide(doc)}))
                if any(e["type"] == "SIMULATION_ENDS" for e in doc["events"]):
                    break
        finally:
            self.socket.close(0)
            self.context.term()

    def decide(self, doc: dict) -> list[dict]:
        for event in doc["events"]:
            data = event["data"]
            if event["type"] == "JOB_SUBMITTED":
                self.queue.append((data["job_id"], data["job"]["res"]))
            elif event["type"] == "JOB_COMPLETED":
                lo, _, hi = data["alloc"].partition("-")
                self.free.update(range(int(lo), int(hi or lo) + 1))
        out = []
        while self.queue and self.queue[0][1] <= len(self.free):
            job_id, res = self.queue.pop(0)
            alloc = sorted(self.free)[:res]
            self.free.difference_update(alloc)
            out.append({"timestamp": doc["now"], "type": "EXECUTE_JOB",
                        "data": {"job_id": job_id, "alloc": f"{alloc[0]}-{alloc[-1]}"}})
        return out


def test_serve_with_batsim_options(tmp_path, capsys):
    scheduler = Fcfs(4)
    scheduler.start()
    prefix = tmp_path / "out" / "out"
    status = main(["serve", "-p", str(SMALL / "platform.xml"), "-w", str(SMALL / "workload.json"),
                   "-s", scheduler.endpoint, "-e", str(prefix), "--sched-cfg", '{"k": 2}',
                   "--forward-profiles-on-submission", "--timeout", "5"])
    scheduler.join(5)
    assert status == 0
    out = capsys.readouterr().out.splitlines()
    # 37 s of work plus Batsim's message latencies on this platform's links (60 us along the
    # chain of decisions), as the real binary times it
    assert out[0] == ("hdrm serve: 10 jobs (10 successful, 0 killed, 0 rejected), makespan 37.000060 s, "
                      "23 messages")
    assert out[1:] == [f"wrote {prefix}{suffix}" for suffix in (
        "_jobs.csv", "_schedule.csv", "_machine_states.csv", "_schedule.trace")]
    config = scheduler.first["events"][0]["data"]["config"]
    assert config["sched-config"] == '{"k": 2}' and config["profiles-forwarded-on-submission"] is True
    lines = Path(f"{prefix}_jobs.csv").read_text().splitlines()
    # no -E: Batsim 4.2.1 aborts with -E on this platform, whose hosts have no
    # wattage_per_state (tests/batsim/test_serve_platform_energy.py), and writes -1 without it
    assert len(lines) == 11 and lines[1].endswith(",0,-1.000000,\"\"")


def test_the_tracing_switches_leave_out_their_files(tmp_path, capsys):
    """Batsim's --disable-machine-state-tracing and --disable-schedule-tracing."""
    for flags, written in [(["--disable-machine-state-tracing"], ["_schedule.trace"]),
                           (["--disable-schedule-tracing"], ["_machine_states.csv"]),
                           (["--disable-schedule-tracing", "--disable-machine-state-tracing"], [])]:
        scheduler = Fcfs(4)
        scheduler.start()
        prefix = tmp_path / "_".join(f[10:15] for f in flags) / "out"
        assert main(["serve", "-p", str(SMALL / "platform.xml"), "-w", str(SMALL / "workload.json"),
                     "-s", scheduler.endpoint, "-e", str(prefix), "--timeout", "5", *flags]) == 0
        scheduler.join(5)
        wrote = capsys.readouterr().out.splitlines()[1:]
        assert wrote == [f"wrote {prefix}{s}" for s in ("_jobs.csv", "_schedule.csv", *written)]
        assert sorted(p.name for p in prefix.parent.iterdir()) == sorted(
            f"out{s}" for s in ("_jobs.csv", "_schedule.csv", *written))


def test_network_profiles_are_refused_in_one_line_off_the_actor_model(capsys):
    """small_various runs on its SimGrid platform (tests/batsim/test_goldens.py); on an hdrm
    JSON platform (no routes) its communicating jobs are refused, named, in one line."""
    tiny = Path(__file__).resolve().parents[2] / "platforms" / "tiny4.json"
    status = main(["serve", "-p", str(tiny), "-w", str(VARIOUS / "workload.json"),
                   "-s", "tcp://localhost:1"])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("hdrm serve: error: ")
    assert "7 jobs ('simple', 'homo', '2_resources', ...) have a 'parallel' profile that " \
        "communicates" in err and "tiny4.json is not a SimGrid XML platform" in err
    assert "run this workload with the real batsim" in err


@pytest.mark.parametrize("args, message", [
    (["-p", "missing.xml", "-w", str(SMALL / "workload.json")], "missing.xml: no such SimGrid platform file"),
    (["-p", str(SMALL / "platform.xml"), "-w", "nope.json"], "nope.json: no such Batsim workload file"),
    (["-p", str(SMALL / "platform.xml"), "-w", str(SMALL / "workload.json"), "--timeout", "0"],
     "--timeout: must be > 0 seconds, got 0"),
    (["-p", str(SMALL / "platform.xml"), "-w", str(SMALL / "workload.json"), "-s", "nonsense"],
     "socket endpoint 'nonsense'"),
    # checked before the session (and its timeout): the prefix's folder would be a file
    (["-p", str(SMALL / "platform.xml"), "-w", str(SMALL / "workload.json"), "-s",
      "tcp://localhost:9", "--timeout", "0.2", "-e", str(SMALL / "workload.json" / "out")],
     f"-e/--export {SMALL / 'workload.json' / 'out'}: cannot create the folder "
     f"{SMALL / 'workload.json'}: File exists; give a folder you can write to"),
])
def test_user_errors(args, message, capsys):
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hdrm serve: error: ") and message in err


def test_no_scheduler_is_a_timeout(tmp_path, capsys):
    never = tmp_path / "never" / "out"
    assert main(["serve", "-p", str(SMALL / "platform.xml"), "-w", str(SMALL / "workload.json"),
                 "-s", "tcp://localhost:9", "--timeout", "0.2", "-e", str(never)]) == 2
    assert not never.parent.exists()
    assert "no reply from the decision process at tcp://localhost:9 within 0.2 s" in capsys.readouterr().err


def test_help_lists_serve_without_importing_zmq(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "--socket-endpoint" in capsys.readouterr().out
    code = "import sys, hdrm.cli.main as m; m.build_parser(); print('zmq' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr[-1000:]
