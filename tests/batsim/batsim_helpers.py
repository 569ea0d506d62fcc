"""Shared helpers of the Batsim tests: reference data, recorded sessions, schedulers to talk to.

Reference data (``data/``) is a copy of the real Batsim 4.2.1 / pybatsim 3.2.1 recordings of
``../shared/batsim`` (see ``data/REFERENCE.md``), so the tests run on a clean clone.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import zmq

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "golden"
SESSIONS = DATA / "sessions"
REPO = Path(__file__).resolve().parents[2]
PLATFORMS = REPO / "platforms"

_HEADER = re.compile(r"^#(\d+) (BATSIM -> SCHED|SCHED  -> BATSIM)")


@dataclass
class Recorded:
    """One recorded message: who sent it and its text."""

    sender: str  # "batsim" or "scheduler"
    text: str

    @property
    def doc(self) -> dict:
        return json.loads(self.text)


def read_session(path: Path, capture: str | None = None) -> list[Recorded]:
    """Messages of a recorded session file; ``capture`` ("A", "B", "C") picks one capture."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if capture is not None:
        starts = [i for i, line in enumerate(lines) if line.startswith(f"Capture {capture}:")]
        assert starts, f"no capture {capture} in {path}"
        lines = lines[starts[0]:]
        end = [i for i, line in enumerate(lines[1:], 1) if line.startswith("Capture ")]
        lines = lines[: end[0]] if end else lines
    messages = []
    for i, line in enumerate(lines):
        match = _HEADER.match(line)
        if match:
            sender = "batsim" if match.group(2).startswith("BATSIM") else "scheduler"
            messages.append(Recorded(sender, lines[i + 1].strip()))
    return messages


def recorded_replies(messages: list[Recorded]) -> list[str]:
    """The scheduler's replies of a recorded session, in order."""
    return [m.text for m in messages if m.sender == "scheduler"]


def pybatsim_command(scheduler: str, endpoint: str) -> list[str]:
    """The command line running a pybatsim scheduler (a name in pybatsim or a file path)."""
    exe = shutil.which("pybatsim")
    if exe is None:
        return [sys.executable, "-m", "batsim.cmds.launcher", scheduler, "-s", endpoint]
    return [exe, scheduler, "-s", endpoint]


class PybatsimProcess:
    """A pybatsim scheduler in a subprocess bound to a free port; always cleaned up."""

    def __init__(self, scheduler: str, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self._handle = open(log, "w", encoding="utf-8")
        self.process = subprocess.Popen(
            pybatsim_command(scheduler, f"tcp://127.0.0.1:{self.port}"),
            stdout=self._handle, stderr=subprocess.STDOUT,
        )

    @property
    def endpoint(self) -> str:
        return f"tcp://localhost:{self.port}"

    def finish(self, timeout_s: float = 10.0) -> int:
        try:
            return self.process.wait(timeout_s)
        finally:
            self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self._handle.close()


def free_port() -> int:
    """A TCP port free right now (bound to 0 and released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RawScheduler(threading.Thread):
    """A raw ZeroMQ REP decision process in a thread: ``reply(message_dict) -> reply text``.

    It binds a system-chosen port (``endpoint`` is ready once started) and stops after replying to
    SIMULATION_ENDS, after ``stop()``, or when ``reply`` raises (the error is kept in ``error``).
    """

    def __init__(self, reply: Callable[[dict], str]) -> None:
        super().__init__(daemon=True)
        self.reply = reply
        self.received: list[str] = []
        self.error: BaseException | None = None
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.REP)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                if not self.socket.poll(50):
                    continue
                text = self.socket.recv_string()
                self.received.append(text)
                doc = json.loads(text)
                self.socket.send_string(self.reply(doc))
                if any(e["type"] == "SIMULATION_ENDS" for e in doc["events"]):
                    break
        except BaseException as exc:
            self.error = exc
        finally:
            self.socket.close(0)
            self.context.term()

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


def at_first_submission(decisions: list[dict]) -> Callable[[dict], str]:
    """A decision process that sends ``decisions`` (stamped with the time) in its reply to the
    first message holding a JOB_SUBMITTED, and nothing otherwise."""
    pending = list(decisions)

    def reply(doc: dict) -> str:
        out = []
        if pending and any(e["type"] == "JOB_SUBMITTED" for e in doc["events"]):
            out = [dict(d, timestamp=doc["now"]) for d in pending]
            pending.clear()
        return json.dumps({"now": doc["now"], "events": out})
    return reply


def binary_run(binary: str, reply: Callable[[dict], str], platform: Path, workload: Path,
               prefix: Path) -> subprocess.CompletedProcess:
    """Run the Batsim binary at ``binary`` on ``platform`` and ``workload`` (outputs at
    ``prefix``) against the raw decision process ``reply``; returns the finished process, whatever
    its exit status (for the tests of what the binary refuses)."""
    scheduler = RawScheduler(reply)
    scheduler.start()
    try:
        return subprocess.run([binary, "-p", str(platform), "-w", str(workload), "-e",
                               str(prefix), "-q", "-s",
                               scheduler.endpoint.replace("localhost", "127.0.0.1")],
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()


def raw_session(reply: Callable[[dict], str], platform: Path, workloads: Path | list[Path],
                prefix: Path, energy: bool = False, binary: str | None = None) -> RawScheduler:
    """Run a raw decision process (``reply``) against the Batsim binary at ``binary`` or, when
    it is None, against ``hdrm serve``, on ``platform`` and ``workloads`` (``-E`` if ``energy``);
    returns the finished scheduler (``received``: every message it got). The binary's failure
    or the scheduler's error fails the test with its text."""
    from hdrm.batsim.server import ServeOptions, serve
    from hdrm.batsim.simulator import ServerConfig

    paths = [workloads] if isinstance(workloads, Path) else list(workloads)
    scheduler = RawScheduler(reply)
    scheduler.start()
    try:
        if binary:
            args = [binary, "-p", str(platform), "-e", str(prefix), "-q",
                    "-s", scheduler.endpoint.replace("localhost", "127.0.0.1")]
            args += ["-E"] if energy else []
            for path in paths:
                args += ["-w", str(path)]
            done = subprocess.run(args, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr[-3000:]
        else:
            serve(platform, workloads, ServeOptions(scheduler.endpoint, str(prefix), 30.0,
                                                    config=ServerConfig(energy=energy)))
    finally:
        scheduler.stop()
    assert scheduler.error is None, scheduler.error
    return scheduler


def replay(replies: list[str]) -> Callable[[dict], str]:
    """A reply function answering with recorded replies in order, then empty replies."""
    queue = list(replies)

    def reply(doc: dict) -> str:
        if queue:
            return queue.pop(0)
        return json.dumps({"now": doc["now"], "events": []})

    return reply


def start_in_order(queue: list[tuple[str, int]], free: set[int], now: float) -> list[dict]:
    """EXECUTE_JOB events for the queue's head jobs while they fit, FCFS, on the lowest free
    resource ids (``queue`` and ``free`` are updated)."""
    out = []
    while queue and queue[0][1] <= len(free):
        job_id, res = queue.pop(0)
        alloc = sorted(free)[:res]
        free.difference_update(alloc)
        out.append({"timestamp": now, "type": "EXECUTE_JOB",
                    "data": {"job_id": job_id, "alloc": " ".join(map(str, alloc))}})
    return out


def fcfs(nb_resources: int) -> Callable[[dict], str]:
    """A tiny FCFS scheduler on raw messages (lowest free resource ids first)."""
    free = set(range(nb_resources))
    queue: list[tuple[str, int]] = []

    def reply(doc: dict) -> str:
        now = doc["now"]
        for event in doc["events"]:
            data = event["data"]
            if event["type"] == "JOB_SUBMITTED":
                queue.append((data["job_id"], data["job"]["res"]))
            elif event["type"] == "JOB_COMPLETED":
                free.update(ids_of(data["alloc"]))
        return json.dumps({"now": now, "events": start_in_order(queue, free, now)})

    return reply


def ids_of(text: str) -> list[int]:
    """The resource ids of a Batsim interval set (``"0-2 5"`` -> ``[0, 1, 2, 5]``)."""
    ids = []
    for part in text.split():
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


def ppo_jobpick_options(folder: Path, engine: str, platform: Path, workload: str,
                        **top: object) -> Path:
    """A tiny PPO training (2 episodes, window 8, EASY, hdeeprm contention) from the shipped
    ``examples/ppo_jobpick`` options, on ``platform`` and ``workload`` under ``engine``, written to
    ``folder/options.json``; ``top`` sets or adds top-level keys (``nb_jobs``, ``batsim``)."""
    data = json.loads((REPO / "examples" / "ppo_jobpick" / "options.json").read_text())
    data.update(workload_file_path=workload, platform_file_path=str(platform), engine=engine)
    for key in ("nb_resources", "nb_jobs", "workload"):
        data.pop(key, None)
    data.update(top)
    data["simulation"] = {"contention": "hdeeprm", "backfilling": "easy"}
    data["pybatsim"]["env"]["actions"]["window"] = 8
    data["pybatsim"]["agent"].update(episodes=2)
    data["pybatsim"]["agent"]["params"].update(rollout_steps=8, minibatch=4, epochs=1)
    folder.mkdir()
    path = folder / "options.json"
    path.write_text(json.dumps(data))
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file with a header."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
