"""hdrm serve's dynamic jobs (:mod:`hdrm.batsim.dynamic_jobs`) and the options that go with
them, without the binary: hand-checked sessions and one-line refusals, on Batsim's actors
(hosts without latency) and on the instant model (a workload with a sequence). The same
sessions run against the binary in ``test_real_batsim_dynamic_jobs.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from dynamic_helpers import (ACK, DYN, FINISHED, event, execute, job_event, platform,
                             profile_event, scripted, session)

from hdrm.batsim.server import BatsimServer, ServeOptions
from hdrm.batsim.simulator import ServerConfig
from hdrm.cli.main import main
from hdrm.errors import ConfigError

HOSTS = {"w0!1": "0", "w0!2": "1"}
PROFILE_P = profile_event("dyn", "p", {"type": "delay", "delay": 1.5})
REUSE = ("--enable-profile-reuse",)


def workload(path: Path, sequence: bool = False) -> Path:
    """w0!1 (profile d: 2 s) at 1 s, w0!2 at 2 s (e: 3 s, or a sequence of e twice)."""
    profiles = {"d": {"type": "delay", "delay": 2}, "e": {"type": "delay", "delay": 3}}
    if sequence:
        profiles["seq"] = {"type": "composed", "seq": ["e", "e"]}
    path.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": 1, "subtime": 1, "res": 1, "walltime": -1, "profile": "d"},
        {"id": 2, "subtime": 2, "res": 1, "walltime": -1, "profile": "seq" if sequence else "e"}],
        "profiles": profiles}))
    return path


def run(tmp_path: Path, plan: dict, flags: tuple[str, ...] = DYN, sequence: bool = False):
    return session(scripted(plan, HOSTS), platform(tmp_path / "p.xml"),
                   [workload(tmp_path / "w.json", sequence)], tmp_path / "o" / "out", flags)


def events(messages: list[str]) -> list[tuple[float, str, str]]:
    """(time, type, job id or NOTIFY type) of every event after SIMULATION_BEGINS."""
    out = []
    for text in messages[1:]:
        for e in json.loads(text)["events"]:
            data = e["data"]
            out.append((e["timestamp"], e["type"], data.get("job_id", data.get("type", ""))))
    return out


@pytest.mark.parametrize("flags, expected", [
    ((), (False, False, False)),
    (DYN, (True, False, False)),
    (ACK + REUSE, (True, True, True)),
    (("--acknowledge-dynamic-jobs",), (False, True, False)),  # as Batsim: said, unused
])
def test_simulation_begins_reports_the_options(tmp_path: Path, flags, expected) -> None:
    done = run(tmp_path, {0: [FINISHED]} if "--enable-dynamic-jobs" in flags else {}, flags)
    config = json.loads(done.messages[0])["events"][0]["data"]["config"]
    assert (config["dynamic-jobs-enabled"], config["dynamic-jobs-acknowledged"],
            config["profile-reuse-enabled"]) == expected


@pytest.mark.parametrize("sequence", [False, True], ids=["actors", "instant-model"])
def test_a_job_registered_in_a_new_workload_is_acknowledged_runs_and_is_written(
        tmp_path: Path, sequence: bool) -> None:
    plan = {0: [PROFILE_P, job_event("dyn!a", "p", subtime=0.5, extra=[1, 2.5]),
                execute("dyn!a", "3")], 2: [FINISHED]}
    done = run(tmp_path, plan, ACK, sequence)
    assert done.error == ""
    assert done.messages[1] == (  # at the registration's time, the job as sent (id in full)
        '{"now":0.000000,"events":[{"timestamp":0.000000,"type":"JOB_SUBMITTED","data":{'
        '"job_id":"dyn!a","job":{"id":"dyn!a","subtime":0.500000,"res":1,"walltime":-1,'
        '"profile":"p","extra":[1,2.500000]}}}]}')
    assert (1.5, "JOB_COMPLETED", "dyn!a") in events(done.messages)
    assert events(done.messages)[-1] == (5.0 if not sequence else 8.0, "SIMULATION_ENDS", "")
    # its subtime is its submission time: waiting -0.5 s, turnaround 1 s, stretch 1 / 1.5
    assert done.jobs_csv.splitlines()[1] == (
        'a,dyn,p,0.500000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,0.000000,1.500000,1.500000,'
        '-0.500000,1.000000,0.666667,3,-1.000000,""')


def test_without_acknowledgement_a_job_runs_in_the_reply_that_registers_it(
        tmp_path: Path) -> None:
    plan = {0: [PROFILE_P, job_event("dyn!a", "p"), execute("dyn!a", "3"), FINISHED]}
    done = run(tmp_path, plan)
    assert [e for e in events(done.messages) if e[2] == "dyn!a"] == [
        (1.5, "JOB_COMPLETED", "dyn!a")]
    assert done.jobs_csv.count("\n") == 4


def test_an_integer_id_names_the_job_in_the_workload_of_job_id(tmp_path: Path) -> None:
    register = event("REGISTER_JOB", {"job_id": "dyn!7", "job": {
        "id": 7, "subtime": 0, "res": 1, "profile": "p"}})
    done = run(tmp_path, {0: [PROFILE_P, register, execute("dyn!7", "3"), FINISHED]}, ACK)
    assert '"job":{"id":"dyn!7","subtime":0,"res":1,"profile":"p"}' in done.messages[1]
    assert "\n7,dyn,p,0.000000,1,-1.000000,1," in done.jobs_csv


def test_forwarded_profiles_come_with_the_acknowledgement(tmp_path: Path) -> None:
    plan = {0: [PROFILE_P, job_event("dyn!a", "p"), FINISHED]}
    done = run(tmp_path, plan, ("--forward-profiles-on-submission",) + ACK)
    submitted = json.loads(done.messages[1])["events"][0]["data"]
    assert submitted["profile"] == {"type": "delay", "delay": 1.5}
    assert "deadlock" in done.error and "'dyn!a'" in done.error  # (never executed)


@pytest.mark.parametrize("sequence", [False, True], ids=["actors", "instant-model"])
def test_the_simulation_ends_only_once_registration_is_finished(tmp_path: Path,
                                                                sequence: bool) -> None:
    done = run(tmp_path, {}, DYN, sequence)
    assert done.error.startswith("SessionDeadlock: deadlock at t=")
    assert "NOTIFY 'registration_finished'" in done.error
    assert '"SIMULATION_ENDS"' not in "".join(done.messages)
    assert run(tmp_path, {}, (), sequence).error == ""  # static jobs only: it ends


def test_continue_registration_takes_registration_finished_back(tmp_path: Path) -> None:
    cont = event("NOTIFY", {"type": "continue_registration"})
    plan = {0: [FINISHED], 2: [cont], 3: [PROFILE_P, job_event("dyn!a", "p"),
                                          execute("dyn!a", "3"), FINISHED]}
    done = run(tmp_path, plan)
    assert done.error == ""
    assert (2.0 + 1.5, "JOB_COMPLETED", "dyn!a") in events(done.messages)  # NOTIFY at 2 s


# messages: 0 SIMULATION_BEGINS, 1 w0!1 (1 s), 2 w0!2 (2 s), 3 NOTIFY, 4 w0!1 completed (3 s)
AGAIN_D = [job_event("w0!9", "d"), execute("w0!9", "3"), FINISHED]
CALL_4 = event("CALL_ME_LATER", {"timestamp": 4})


@pytest.mark.parametrize("sequence", [False, True], ids=["actors", "instant-model"])
@pytest.mark.parametrize("plan, flags, collected", [
    ({4: AGAIN_D}, DYN, False),  # the reply's first event: not collected yet
    ({4: [PROFILE_P] + AGAIN_D}, DYN, True),
    ({4: [CALL_4], 5: AGAIN_D}, DYN, True),
    ({4: [CALL_4], 5: AGAIN_D}, DYN + REUSE, False),
], ids=["first-event", "second-event", "later-reply", "reused"])
def test_the_profile_of_an_ended_job_is_collected_unless_reused(
        tmp_path: Path, plan, flags, collected: bool, sequence: bool) -> None:
    done = run(tmp_path, plan, flags, sequence)
    if collected:
        assert "profile 'd' was garbage collected when a job using it ended" in done.error
        assert "--enable-profile-reuse" in done.error
    else:
        assert done.error == ""
        assert "\n9,w0,d," in done.jobs_csv


@pytest.mark.parametrize("sequence", [False, True], ids=["actors", "instant-model"])
def test_the_parts_of_an_ended_sequence_are_collected(tmp_path: Path, sequence: bool) -> None:
    # w0!2 (e, or a sequence of e twice) ends (message 5); e, by itself or as a part, goes
    plan = {5: [event("CALL_ME_LATER", {"timestamp": 9})],
            6: [job_event("w0!9", "e"), execute("w0!9", "3"), FINISHED]}
    done = run(tmp_path, plan, DYN, sequence)
    assert "profile 'e' was garbage collected" in done.error


@pytest.mark.parametrize("plan, flags, says", [
    ({0: [PROFILE_P]}, (), "REGISTER_PROFILE (event 0 of the reply at t=0.000000): dynamic "
     "profile registration needs --enable-dynamic-jobs"),
    ({0: [FINISHED, PROFILE_P, profile_event("dyn", "q", {"type": "delay", "delay": 1})]}, DYN,
     "REGISTER_PROFILE (event 2 of the reply at t=0.000000): dynamic profile registration "
     "after NOTIFY 'registration_finished'"),
    ({0: [job_event("zz!1", "d")]}, DYN, "workload 'zz' does not exist"),
    ({0: [job_event("w0!9", "nope")]}, DYN, "the profile 'nope' does not exist in workload 'w0'"),
    ({0: [profile_event("w0", "d", {"type": "delay", "delay": 1})]}, DYN,
     "profile 'd' already exists (or existed) in workload 'w0'"),
    ({0: [job_event("w0!1", "d")]}, DYN, "job 'w0!1' already exists"),
    ({0: [PROFILE_P, job_event("dyn!a", "p"), job_event("dyn!a", "p")]}, DYN,
     "job 'dyn!a' already exists"),
    ({0: [event("NOTIFY", {"type": "whatever"})]}, DYN, "unknown NOTIFY type 'whatever'"),
    ({0: [PROFILE_P, event("REGISTER_JOB", {"job_id": "dyn!7", "job": {
        "id": "8", "subtime": 0, "res": 1, "profile": "p"}})]}, DYN,
     "job.id '8' names job 'dyn!8', not 'dyn!7'"),
    ({0: [job_event("w0!a!b", "d")]}, DYN, "job id 'w0!a!b' is not 'workload!name'"),
    ({0: [profile_event("dyn", "p", {"type": "delay", "delay": 0})]}, DYN,
     "profiles.p.delay is 0, which Batsim 4 refuses"),
    ({0: [PROFILE_P, profile_event("dyn", "s", {"type": "composed", "seq": ["p", "p"]}),
          job_event("dyn!a", "s")]}, DYN, "is a sequence registered during the session"),
    ({0: [profile_event("dyn", "t", {"type": "parallel_homogeneous_total", "cpu": 1e9,
                                     "com": 0}), job_event("dyn!a", "t")]}, DYN,
     "is not one the actor model runs where no job communicates"),
    ({0: [profile_event("dyn", "c", {"type": "parallel_homogeneous", "cpu": 1e9, "com": 1e6}),
          job_event("dyn!a", "c")]}, DYN, "is not one the actor model runs where no job"),
], ids=["no-option", "after-finished", "unknown-workload", "unknown-profile", "profile-twice",
        "static-id", "job-twice", "notify-type", "id-mismatch", "two-bangs", "bad-profile",
        "registered-sequence", "total-on-actors", "communicating-on-actors"])
def test_refusals_name_the_event_and_the_rule(tmp_path: Path, plan, flags, says: str) -> None:
    done = run(tmp_path, plan, flags)
    assert done.error.startswith("ProtocolError: ")
    assert says in done.error and "\n" not in done.error


def test_the_instant_model_runs_what_the_actors_do_not(tmp_path: Path) -> None:
    total = profile_event("dyn", "t", {"type": "parallel_homogeneous_total", "cpu": 2e9,
                                       "com": 0})
    plan = {0: [total, job_event("dyn!a", "t", res=2), execute("dyn!a", "2-3"), FINISHED]}
    done = run(tmp_path, plan, DYN, sequence=True)
    assert done.error == ""
    assert (1.0, "JOB_COMPLETED", "dyn!a") in events(done.messages)  # 2 Gflop on 2 hosts
    com = profile_event("dyn", "c", {"type": "parallel_homogeneous", "cpu": 1e9, "com": 1e6})
    done = run(tmp_path, {0: [com, job_event("dyn!a", "c")]}, DYN, sequence=True)
    assert "needs SimGrid's network model" in done.error


def test_the_delayed_model_refuses_dynamic_jobs(tmp_path: Path) -> None:
    # a sequence (not run by the actors) on links with latency: the delayed model
    plat = platform(tmp_path / "p.xml")
    plat.write_text(plat.read_text().replace('latency="0us"', 'latency="1ms"'))
    wl = workload(tmp_path / "w.json", sequence=True)
    with pytest.raises(ConfigError, match="--enable-dynamic-jobs needs a platform whose routes"):
        BatsimServer(plat, wl, ServeOptions(export_prefix=None,
                                            config=ServerConfig(dynamic_jobs=True)))
    server = BatsimServer(plat, wl, ServeOptions(export_prefix=None))
    assert type(server.simulation).__name__ == "DelayedSimulation"


def test_the_cli_options(tmp_path: Path, capsys) -> None:
    base = ["serve", "-p", str(platform(tmp_path / "p.xml")), "-w",
            str(workload(tmp_path / "w.json")), "--timeout", "1"]
    assert main(base + ["--enable-profile-reuse"]) == 2
    assert "hdrm serve: error: --enable-profile-reuse needs --enable-dynamic-jobs" in (
        capsys.readouterr().err)
    assert main(base + ["--sched-cfg-file", str(tmp_path / "nope.txt")]) == 2
    assert re.search(r"--sched-cfg-file \S*nope.txt: cannot read it", capsys.readouterr().err)
    with pytest.raises(SystemExit) as exc:  # Batsim: one or the other
        main(base + ["--sched-cfg", "x", "--sched-cfg-file", str(tmp_path / "w.json")])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_sched_cfg_file_is_sent_as_it_is(tmp_path: Path) -> None:
    from hdrm.cli.serve_cmd import _read_cfg

    (tmp_path / "cfg.txt").write_bytes(b'{"a": 1}\r\nline2\n')
    assert _read_cfg(str(tmp_path / "cfg.txt")) == '{"a": 1}\r\nline2\n'


def test_the_cli_passes_the_options_on(tmp_path: Path) -> None:
    from batsim_helpers import RawScheduler

    (tmp_path / "cfg.txt").write_text('{"a": 1}\n')
    plan = {0: [PROFILE_P, job_event("dyn!a", "p"), execute("dyn!a", "3"), FINISHED]}
    scheduler = RawScheduler(scripted(plan, HOSTS))
    scheduler.start()
    try:
        status = main(["serve", "-p", str(platform(tmp_path / "p.xml")), "-w",
                       str(workload(tmp_path / "w.json")), "-e", str(tmp_path / "o" / "out"),
                       "-s", scheduler.endpoint, "--sched-cfg-file", str(tmp_path / "cfg.txt"),
                       "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs",
                       "--enable-profile-reuse", "--timeout", "10"])
    finally:
        scheduler.stop()
    assert status == 0
    config = json.loads(scheduler.received[0])["events"][0]["data"]["config"]
    assert config["sched-config"] == '{"a": 1}\n'
    assert config["dynamic-jobs-acknowledged"] and config["profile-reuse-enabled"]
    assert (0.0, "JOB_SUBMITTED", "dyn!a") in events(scheduler.received)
