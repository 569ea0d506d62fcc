"""hdrm serve's dynamic jobs against the real Batsim 4.2.1: the same decision process gets the
same messages and the same out_jobs.csv from both, and hdrm serve refuses, in one line, what
the binary aborts on.

Seeded sessions (:class:`dynamic_helpers.Registrar`): jobs registered in the static workload
``w0`` and in new workloads, with and without acknowledgement, with profile reuse (static and
registered profiles named again) or garbage collection (a new profile per job), killed jobs
registered again under a new id with metadata, two static workloads, ``-E``, forwarded
profiles. Platform: hosts linked without latency, so hdrm serve runs Batsim's actors
(:mod:`hdrm.batsim.actors`). Scripted sessions check the garbage collection of profiles
(the reply's first event still finds the profile of a job whose end the message carried; a
later event or reply does not), the end of the simulation (``registration_finished``,
``continue_registration``) and the refusals, on that platform and on a workload with a
sequence, which runs on the instant model (:class:`hdrm.batsim.simulator.BatsimSimulation`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from batsim_helpers import PybatsimProcess
from dynamic_helpers import (ACK, DYN, FINISHED, Registrar, event, execute, job_event,
                             platform, profile_event, scripted, seeded_workload, session)
from real_batsim import real_batsim
from test_serve_network_energy import cluster

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

REUSE = ("--enable-profile-reuse",)
SETTINGS = {  # name: (Batsim options, number of static workloads)
    "ack+reuse": (ACK + REUSE, 1),
    "no-ack+reuse": (DYN + REUSE, 1),
    "ack+gc": (ACK, 1),
    "two-workloads": (ACK + REUSE, 2),
    "energy": (("-E",) + ACK + REUSE, 1),
    "forwarded": (("--forward-profiles-on-submission",) + ACK, 2),
}


def both(tmp_path: Path, make_reply, workloads: list[Path], flags: tuple[str, ...]):
    plat = platform(tmp_path / "platform.xml")
    real = session(make_reply(), plat, workloads, tmp_path / "real" / "out", flags, BATSIM)
    ours = session(make_reply(), plat, workloads, tmp_path / "ours" / "out", flags)
    return real, ours


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("seed", [1, 2])
def test_seeded_sessions_are_identical(tmp_path: Path, seed: int, setting: str) -> None:
    flags, nb_workloads = SETTINGS[setting]
    rng = random.Random(seed)
    workloads = [seeded_workload(tmp_path / f"w{i}.json", rng) for i in range(nb_workloads)]
    ack, reuse = "--acknowledge-dynamic-jobs" in flags, "--enable-profile-reuse" in flags
    real, ours = both(tmp_path, lambda: Registrar(seed, ack, reuse), workloads, flags)
    assert real.error == "" and ours.error == ""
    registered = sum(m.count('"JOB_SUBMITTED"') for m in real.messages)
    assert real.messages == ours.messages
    assert real.jobs_csv == ours.jobs_csv
    assert real.jobs_csv.count("\n") > 8 * nb_workloads + 1  # dynamic rows written too
    assert (registered > 8 * nb_workloads) == ack


@pytest.mark.parametrize("setting", ["ack+reuse", "ack+gc", "energy"])
def test_sessions_whose_jobs_communicate_are_identical(tmp_path: Path, setting: str) -> None:
    """Static and registered jobs with com > 0 on a cluster (SimGrid's network model)."""
    flags = SETTINGS[setting][0]
    rng = random.Random(3)
    jobs = [{"id": i, "subtime": round(rng.uniform(0, 20), 3), "res": rng.choice([1, 2]),
             "walltime": -1, "profile": rng.choice(["d3", "pc", "p0"])} for i in range(8)]
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 6, "jobs": jobs, "profiles": {
        "d3": {"type": "delay", "delay": 3},
        "pc": {"type": "parallel_homogeneous", "cpu": 4e9, "com": 1e8},
        "p0": {"type": "parallel_homogeneous", "cpu": 4e9, "com": 0}}}))
    plat = cluster(tmp_path / "p.xml")
    ack, reuse = "--acknowledge-dynamic-jobs" in flags, "--enable-profile-reuse" in flags

    def make():
        return Registrar(3, ack, reuse, nb_hosts=6, com=2e8)
    real = session(make(), plat, [workload], tmp_path / "real" / "out", flags, BATSIM)
    ours = session(make(), plat, [workload], tmp_path / "ours" / "out", flags)
    assert real.error == "" and ours.error == ""
    assert real.messages == ours.messages
    assert real.jobs_csv == ours.jobs_csv


def static_workload(path: Path, sequence: bool) -> Path:
    """w0!1 (profile d, 2 s) at 1 s; w0!2 at 2 s: a sequence of e (3 s) twice (instant model)
    or e itself (actor model); e is used by no job when it is a sequence's part."""
    profiles = {"d": {"type": "delay", "delay": 2}, "e": {"type": "delay", "delay": 3}}
    second = "e"
    if sequence:
        profiles["seq"] = {"type": "composed", "seq": ["e", "e"]}
        second = "seq"
    path.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": 1, "subtime": 1, "res": 1, "walltime": -1, "profile": "d"},
        {"id": 2, "subtime": 2, "res": 1, "walltime": -1, "profile": second}],
        "profiles": profiles}))
    return path


HOSTS = {"w0!1": "0", "w0!2": "1"}
PROFILE_P = profile_event("dyn", "p", {"type": "delay", "delay": 1})
CALL_4 = event("CALL_ME_LATER", {"timestamp": 4})
# messages: 0 SIMULATION_BEGINS, 1 w0!1 submitted (1 s), 2 w0!2 (2 s), 3 NOTIFY (2 s),
# 4 w0!1 completed (3 s)
SCRIPTS = {
    "collected-for-the-second-event": (DYN, {4: [profile_event("dyn", "p", {
        "type": "delay", "delay": 1}), job_event("w0!9", "d"), execute("w0!9", "3"), FINISHED]}),
    "found-by-the-first-event": (DYN, {4: [job_event("w0!9", "d"), execute("w0!9", "3"),
                                           FINISHED]}),
    "collected-for-a-later-reply": (DYN, {4: [CALL_4], 5: [job_event("w0!9", "d"),
                                                           execute("w0!9", "3"), FINISHED]}),
    "reused": (DYN + REUSE, {4: [CALL_4], 5: [job_event("w0!9", "d"), execute("w0!9", "3"),
                                              FINISHED]}),
    "acknowledged-in-a-new-workload": (ACK, {0: [profile_event("dyn", "p", {
        "type": "delay", "delay": 1.5}), job_event("dyn!a", "p", subtime=0.5, extra=[1, 2.5]),
        execute("dyn!a", "3")], 2: [FINISHED]}),
    "sequence-parts-collected": (DYN, {5: [event("CALL_ME_LATER", {"timestamp": 9})], 6: [
        job_event("w0!9", "e"), execute("w0!9", "3"), FINISHED]}),
    "never-finished": (DYN, {}),
    "finished-then-continued": (DYN, {0: [FINISHED], 2: [event("NOTIFY", {
        "type": "continue_registration"})], 3: [profile_event("dyn", "p", {
            "type": "delay", "delay": 1}), job_event("dyn!1", "p"), execute("dyn!1", "3"),
            FINISHED]}),
    "registration-just-after-finished": (DYN, {0: [FINISHED, PROFILE_P]}),
    "registration-after-finished": (DYN, {0: [FINISHED, PROFILE_P, profile_event(
        "dyn", "q", {"type": "delay", "delay": 1})]}),
    "registration-just-after-continued": (DYN, {0: [FINISHED], 1: [event("NOTIFY", {
        "type": "continue_registration"}), PROFILE_P, FINISHED]}),
    "without-the-option": ((), {0: [profile_event("dyn", "p", {"type": "delay", "delay": 1})]}),
    "job-in-an-unknown-workload": (DYN, {0: [job_event("zz!1", "d")]}),
    "unknown-profile": (DYN, {0: [job_event("w0!9", "nope")]}),
    "profile-twice": (DYN, {0: [profile_event("w0", "d", {"type": "delay", "delay": 1})]}),
    "job-id-taken": (DYN, {0: [job_event("w0!1", "d")]}),
    "unknown-notify": (DYN, {0: [event("NOTIFY", {"type": "whatever"})]}),
}
#: what the binary says (its CRITICAL line) and what hdrm serve's error must say
REFUSED = {
    "collected-for-the-second-event": ("no longer accessible", "was garbage collected"),
    "collected-for-a-later-reply": ("no longer accessible", "was garbage collected"),
    "sequence-parts-collected": ("no longer accessible", "profile 'e' was garbage collected"),
    "never-finished": ("Deadlock detected", "NOTIFY 'registration_finished'"),
    "registration-after-finished": ("a registration_finished message have already been",
                                    "after NOTIFY 'registration_finished'"),
    "registration-just-after-continued": ("a registration_finished message have already been",
                                          "after NOTIFY 'registration_finished'"),
    "without-the-option": ("the option seems disabled", "needs --enable-dynamic-jobs"),
    "job-in-an-unknown-workload": ("Workload 'zz' should exist", "workload 'zz' does not exist"),
    "unknown-profile": ("the profile nope for job w0!9 does not exist",
                        "the profile 'nope' does not exist in workload 'w0'"),
    "profile-twice": ("profile 'd' already existed in workload 'w0'",
                      "profile 'd' already exists"),
    "job-id-taken": ("Cannot register new job 'w0!1', it already exists",
                     "job 'w0!1' already exists"),
    "unknown-notify": ("Unknown NOTIFY type received ('whatever')",
                       "unknown NOTIFY type 'whatever'"),
}


@pytest.mark.parametrize("sequence", [False, True], ids=["actors", "instant-model"])
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_scripted_sessions(tmp_path: Path, name: str, sequence: bool) -> None:
    flags, plan = SCRIPTS[name]
    workload = static_workload(tmp_path / "w.json", sequence)
    real, ours = both(tmp_path, lambda: scripted(plan, HOSTS), [workload], flags)
    assert real.messages == ours.messages
    if name in REFUSED:
        said, says = REFUSED[name]
        assert said in real.error
        assert says in ours.error and "\n" not in ours.error
    else:
        assert real.error == "" and ours.error == ""
        assert real.jobs_csv == ours.jobs_csv
        assert '"SIMULATION_ENDS"' in ours.messages[-1]


@pytest.mark.parametrize("flags", [ACK + REUSE, DYN + REUSE], ids=["ack", "no-ack"])
def test_pybatsim_dynamic_job_api(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """dynsched.py (register_job, resubmit_job ...): the same out_jobs.csv."""
    import subprocess

    from hdrm.batsim.server import ServeOptions, serve
    from hdrm.batsim.simulator import ServerConfig

    plat = platform(tmp_path / "p.xml")
    rng = random.Random(1)
    jobs = [{"id": i, "subtime": round(rng.uniform(0, 6), 2), "res": rng.choice([1, 2]),
             "walltime": -1, "profile": rng.choice(["d", "p"])} for i in range(6)]
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {
        "d": {"type": "delay", "delay": 2},
        "p": {"type": "parallel_homogeneous", "cpu": 3e9, "com": 0}}}))
    sched = str(Path(__file__).resolve().parent / "dynsched.py")
    proc = PybatsimProcess(sched, tmp_path / "real.log")
    try:
        done = subprocess.run([BATSIM, "-p", str(plat), "-w", str(workload), "-q", "-e",
                               str(tmp_path / "real"), *flags, "-s",
                               f"tcp://127.0.0.1:{proc.port}"], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        assert proc.finish(20) == 0
    finally:
        proc.close()
    proc = PybatsimProcess(sched, tmp_path / "ours.log")
    try:
        serve(plat, workload, ServeOptions(proc.endpoint, str(tmp_path / "ours"), 20.0,
                                           config=ServerConfig(dynamic_jobs=True,
                                                               ack_dynamic_jobs=ACK == flags[:2],
                                                               profile_reuse=True)))
        assert proc.finish(20) == 0
    finally:
        proc.close()
    real = (tmp_path / "real_jobs.csv").read_text()
    assert real == (tmp_path / "ours_jobs.csv").read_text()
    assert real.count("\n") == 12 and "#1,w0," in real  # 6 static, 4 registered, 1 again
