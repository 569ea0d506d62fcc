"""Sessions with dynamic jobs (REGISTER_PROFILE, REGISTER_JOB, NOTIFY registration_finished),
run against ``hdrm serve`` or the Batsim binary with the same raw decision process.

* :func:`scripted`: a decision process that sends, in its reply to message ``i``, the events
  ``plan[i]`` (stamped with the message's time) after starting each static job on its own host;
* :class:`Registrar`: a seeded FCFS decision process that registers profiles and jobs in static
  and new workloads, kills running jobs and registers each killed job again under a new id
  (``w0!3#1``, as pybatsim's ``resubmit_job``, with metadata), and ends registration once
  every job is done;
* :func:`session`: one session, on the binary or on hdrm serve; returns the messages the
  decision process received, the error (the binary's CRITICAL line, hdrm's exception) and the
  out_jobs.csv text.
"""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from batsim_helpers import RawScheduler, ids_of

DYN = ("--enable-dynamic-jobs",)
ACK = ("--enable-dynamic-jobs", "--acknowledge-dynamic-jobs")
NB_HOSTS = 4


def platform(path: Path) -> Path:
    """master_host and h0..h3 (1 Gflop/s, 100 W idle, 200 W busy), linked with no latency."""
    watts = '<prop id="wattage_per_state" value="100:200"/><prop id="wattage_off" value="10"/>'
    names = ["master_host"] + [f"h{i}" for i in range(NB_HOSTS)]
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="AS0" routing="Full">']
    lines += [f'  <host id="{n}" speed="1Gf">{watts}</host>' for n in names]
    lines += [f'  <link id="l{i}" bandwidth="10GBps" latency="0us"/>' for i in range(NB_HOSTS)]
    lines += [f'  <route src="master_host" dst="h{i}"><link_ctn id="l{i}"/></route>'
              for i in range(NB_HOSTS)]
    path.write_text("\n".join([*lines, "</zone>", "</platform>", ""]))
    return path


def seeded_workload(path: Path, rng: random.Random, nb_jobs: int = 8) -> Path:
    """``delay`` (3, 5, 7 s) and ``parallel_homogeneous`` (4 Gflop) jobs at random times in
    [0, 20] s on 1 or 2 hosts, 30 % with a 6.5 s walltime; an unused profile."""
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        if rng.random() < 2 / 3:
            name = f"d{rng.choice([3, 5, 7])}"
            profiles[name] = {"type": "delay", "delay": int(name[1:])}
        else:
            name = "ph"
            profiles[name] = {"type": "parallel_homogeneous", "cpu": 4e9, "com": 0}
        jobs.append({"id": i, "subtime": round(rng.uniform(0, 20), 3), "res": rng.choice([1, 2]),
                     "walltime": -1 if rng.random() < 0.7 else 6.5, "profile": name})
    profiles["unused"] = {"type": "delay", "delay": 1}
    path.write_text(json.dumps({"nb_res": NB_HOSTS, "jobs": jobs, "profiles": profiles}))
    return path


def event(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """An event of a reply (its timestamp is set when sent)."""
    return {"timestamp": 0.0, "type": kind, "data": data}


def profile_event(workload: str, name: str, profile: dict[str, Any]) -> dict[str, Any]:
    return event("REGISTER_PROFILE", {"workload_name": workload, "profile_name": name,
                                      "profile": profile})


def job_event(job_id: str, profile: str, **fields: Any) -> dict[str, Any]:
    job = {"id": job_id, "subtime": 0, "res": 1, "walltime": -1, "profile": profile, **fields}
    return event("REGISTER_JOB", {"job_id": job_id, "job": job})


def execute(job_id: str, alloc: str) -> dict[str, Any]:
    return event("EXECUTE_JOB", {"job_id": job_id, "alloc": alloc})


FINISHED = event("NOTIFY", {"type": "registration_finished"})


def scripted(plan: dict[int, list[dict]], hosts: dict[str, str]) -> Callable[[dict], str]:
    """Reply to message ``i`` with EXECUTE_JOB of each submitted job named in ``hosts`` (on its
    host), then ``plan[i]``; every event stamped with the message's time."""
    count = [0]

    def reply(doc: dict) -> str:
        i, now = count[0], doc["now"]
        count[0] += 1
        subs = [e["data"]["job_id"] for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
        out = [execute(j, hosts[j]) for j in subs if j in hosts] + plan.get(i, [])
        return json.dumps({"now": now, "events": [dict(e, timestamp=now) for e in out]})
    return reply


class Registrar:
    """A seeded FCFS decision process with dynamic jobs (see the module's docstring).

    Args:
        seed: its random choices.
        ack: registered jobs come back as JOB_SUBMITTED (queued then), else queued at once.
        reuse: profiles may be named again (static ones too), else each job gets a new one.
        nb_registrations: jobs it registers before it says ``registration_finished``.
        nb_hosts: the platform's compute hosts.
        com: the ``com`` of a third of its profiles (0: none, and 60 % are ``delay``).
    """

    def __init__(self, seed: int, ack: bool, reuse: bool, nb_registrations: int = 6,
                 nb_hosts: int = NB_HOSTS, com: float = 0.0) -> None:
        self.rng = random.Random(seed)
        self.ack, self.reuse, self.left, self.com = ack, reuse, nb_registrations, com
        self.free = set(range(nb_hosts))
        self.queue: list[tuple[str, int]] = []
        self.running: dict[str, str] = {}  # job -> profile
        self.profile_of: dict[str, str] = {}
        self.profiles: set[tuple[str, str]] = set()
        self.static_done = self.finished = False
        self.count = 0

    def _new_profile(self, out: list[dict], workload: str) -> str:
        self.count += 1
        name = f"p{self.count}"
        draw = self.rng.random()
        if draw < (0.34 if self.com else 0.6):
            profile = {"type": "delay", "delay": self.rng.choice([1.5, 2, 4])}
        else:
            com = self.com if draw < 0.67 else 0
            profile = {"type": "parallel_homogeneous", "cpu": 3e9, "com": com}
        out.append(profile_event(workload, name, profile))
        self.profiles.add((workload, name))
        return name

    def _register(self, out: list[dict], now: float, name: str | None = None,
                  workload: str | None = None, profile: str | None = None) -> str:
        self.left -= 1
        workload = workload or self.rng.choice(["dyn", "w0", "dyn2"])
        if profile is None or not self.reuse:
            mine = sorted(n for w, n in self.profiles if w == workload)
            if self.reuse and mine and self.rng.random() < 0.5:
                profile = self.rng.choice(mine)
            else:
                profile = self._new_profile(out, workload)
        self.count += 1
        job_id = f"{workload}!{name or f'j{self.count}'}"
        res = self.rng.choice([1, 2])
        job = {"profile": profile, "id": job_id if self.rng.random() < 0.5 else job_id[len(
            workload) + 1:], "res": res, "walltime": -1 if self.rng.random() < 0.8 else 3.0,
            "subtime": now}
        out.append(event("REGISTER_JOB", {"job_id": job_id, "job": job}))
        self.profile_of[job_id] = profile
        if not self.ack:
            self.queue.append((job_id, res))
        return job_id

    def __call__(self, doc: dict) -> str:
        now, out = doc["now"], []
        begins = doc["events"][0]["type"] == "SIMULATION_BEGINS"
        for e in doc["events"]:
            self._take(e, now, out)
        if self.left > 0 and not begins and self.rng.random() < 0.25:
            self._register(out, now)
        if self.running and self.rng.random() < 0.15:
            victim = self.rng.choice(sorted(self.running))
            out.append(event("KILL_JOB", {"job_ids": [victim]}))
            del self.running[victim]
        while self.queue and self.queue[0][1] <= len(self.free):
            job_id, res = self.queue.pop(0)
            alloc = sorted(self.free)[:res]
            self.free.difference_update(alloc)
            self.running[job_id] = self.profile_of.get(job_id, "")
            out.append(execute(job_id, " ".join(map(str, alloc))))
        self._maybe_end(doc, out, now)
        return json.dumps({"now": now, "events": [dict(e, timestamp=now) for e in out]})

    def _take(self, e: dict, now: float, out: list[dict]) -> None:
        kind, data = e["type"], e["data"]
        if kind == "SIMULATION_BEGINS":
            out.append(event("CALL_ME_LATER", {"timestamp": 9.5}))
        elif kind == "JOB_SUBMITTED":
            self.queue.append((data["job_id"], data["job"]["res"]))
            self.profile_of.setdefault(data["job_id"], data["job"]["profile"])
            if data["job_id"].startswith("w0!"):
                self.profiles.add(("w0", data["job"]["profile"]))
        elif kind == "JOB_COMPLETED":
            self.free.update(ids_of(data["alloc"]))
            self.running.pop(data["job_id"], None)
            if data["job_state"] == "COMPLETED_KILLED" and self.left > 0:
                workload, name = data["job_id"].split("!")
                new = self._register(out, now, name + "#1", workload,
                                     self.profile_of.get(data["job_id"]))
                out.append(event("SET_JOB_METADATA",
                                 {"job_id": new, "metadata": f"parent {data['job_id']}"}))
        elif kind == "NOTIFY" and data["type"] == "no_more_static_job_to_submit":
            self.static_done = True
        elif kind == "REQUESTED_CALL" and self.left > 0:
            self._register(out, now)
            out.append(event("CALL_ME_LATER",
                             {"timestamp": now + self.rng.choice([2.5, 4.0])}))

    def _maybe_end(self, doc: dict, out: list[dict], now: float) -> None:
        idle = self.static_done and not self.queue and not self.running
        kinds = {e["type"] for e in out}
        if idle and self.left <= 0 and not self.finished and "REGISTER_JOB" not in kinds:
            self.finished = True
            out.append(FINISHED)
        elif idle and self.left > 0 and not kinds & {"REGISTER_JOB", "CALL_ME_LATER"} \
                and not any(e["type"] == "REQUESTED_CALL" for e in doc["events"]):
            self._register(out, now)


@dataclass
class Session:
    """What one session gave: the messages received, the error ("" if none), out_jobs.csv."""

    messages: list[str]
    error: str
    jobs_csv: str


def session(reply: Callable[[dict], str], plat: Path, workloads: list[Path], prefix: Path,
            flags: tuple[str, ...] = DYN, binary: str | None = None) -> Session:
    """Run ``reply`` against the binary at ``binary`` (its CRITICAL line as the error) or, when
    None, against hdrm serve with the same options (its exception as the error)."""
    from hdrm.batsim.server import ServeOptions, serve
    from hdrm.batsim.simulator import ServerConfig

    prefix.parent.mkdir(parents=True, exist_ok=True)
    scheduler = RawScheduler(reply)
    scheduler.start()
    error = ""
    try:
        if binary:
            args = [binary, "-p", str(plat), "-e", str(prefix), "-q", *flags,
                    "-s", scheduler.endpoint.replace("localhost", "127.0.0.1")]
            for path in workloads:
                args += ["-w", str(path)]
            done = subprocess.run(args, capture_output=True, text=True, timeout=60)
            lines = [x for x in done.stderr.splitlines() if "CRITICAL" in x]
            error = lines[0] if lines else ("" if done.returncode == 0 else done.stderr[-500:])
        else:
            config = ServerConfig(
                dynamic_jobs="--enable-dynamic-jobs" in flags,
                ack_dynamic_jobs="--acknowledge-dynamic-jobs" in flags,
                profile_reuse="--enable-profile-reuse" in flags, energy="-E" in flags,
                forward_profiles="--forward-profiles-on-submission" in flags)
            try:
                serve(plat, workloads if len(workloads) > 1 else workloads[0],
                      ServeOptions(scheduler.endpoint, str(prefix), 10.0, config=config))
            except Exception as exc:  # the refusal under test
                error = f"{type(exc).__name__}: {exc}"
    finally:
        scheduler.stop()
    assert scheduler.error is None, scheduler.error
    csv = Path(f"{prefix}_jobs.csv")
    return Session(scheduler.received, error, csv.read_text() if csv.exists() else "")
