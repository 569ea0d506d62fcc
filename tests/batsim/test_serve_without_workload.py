"""``hdrm serve`` without ``-w``, as Batsim 4.2.1 runs: only the jobs a decision process registers
(``--enable-dynamic-jobs``), or none at all.

What the binary does (checked, runs/s29/D): SIMULATION_BEGINS lists no workload and no profile;
there is no job submitter, so no NOTIFY ``no_more_static_job_to_submit``; the session ends once
registration is finished (with dynamic jobs), every registered job has ended and nothing else is
due (calls, events); out_schedule.csv writes its means over no job as ``-nan``, and
``consumed_joules`` is the energy at the last job end minus -1 J (its energy at the first static
submission, never read). The fast tests check hdrm serve alone on hand-made sessions; the slow
ones compare it with the binary (messages byte for byte and every output file).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from dynamic_helpers import (ACK, DYN, FINISHED, Registrar, event, execute, job_event, platform,
                             profile_event, scripted)
from real_batsim import real_batsim
from serve_vs_binary import run

from hdrm.cli.main import build_parser

BATSIM, WHY_NOT = real_batsim()
ONE_JOB = {0: [profile_event("dyn", "a", {"type": "delay", "delay": 3}), job_event("dyn!1", "a"),
               execute("dyn!1", "0")], 1: [FINISHED]}
ROW = ('1,dyn,a,0.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,0.000000,3.000000,3.000000,'
       '0.000000,3.000000,1.000000,0,{},""\n')


def quiet(doc: dict) -> str:
    return json.dumps({"now": doc["now"], "events": []})


def kinds(message: str) -> list[str]:
    return [e["type"] for e in json.loads(message)["events"]]


def schedule(outcome) -> dict[str, str]:
    return dict(line.split("=") for line in outcome.files["schedule.csv"].splitlines())


def test_the_command_line_takes_no_workload():
    args = build_parser().parse_args(["serve", "-p", "p.xml", "--enable-dynamic-jobs"])
    assert args.workload == []
    args = build_parser().parse_args(["serve", "-p", "p.xml", "-w", "a.json", "-w", "b.json"])
    assert args.workload == ["a.json", "b.json"]


def test_a_registered_job_runs_without_workload(tmp_path):
    plat = platform(tmp_path / "p.xml")
    out = run(scripted(ONE_JOB, {}), plat, [], tmp_path / "out", DYN)
    assert out.error == ""
    begins = json.loads(out.messages[0])["events"][0]["data"]
    assert begins["workloads"] == {} and begins["profiles"] == {}
    assert begins["config"]["dynamic-jobs-enabled"] is True
    # no static submitter: no NOTIFY no_more_static_job_to_submit
    assert [kinds(m) for m in out.messages] == [
        ["SIMULATION_BEGINS"], ["JOB_COMPLETED"], ["SIMULATION_ENDS"]]
    assert json.loads(out.messages[1])["now"] == 3.0
    assert out.files["jobs.csv"].splitlines()[1] + "\n" == ROW.format("-1.000000")
    figures = schedule(out)
    assert figures["nb_jobs"] == "1" and figures["mean_slowdown"] == "1.000000"
    assert figures["consumed_joules"] == "0.000000"  # (no -E)


def test_energy_counts_from_minus_one_joule(tmp_path):
    """4 hosts at 100 W for 3 s (the delay job's host idles): 1200 J at the job's end, and
    Batsim subtracts its unread energy at the first static submission, -1 J."""
    plat = platform(tmp_path / "p.xml")
    out = run(scripted(ONE_JOB, {}), plat, [], tmp_path / "out", ("-E", *DYN))
    assert out.error == ""
    assert out.files["jobs.csv"].splitlines()[1] + "\n" == ROW.format("300.000000")
    assert schedule(out)["consumed_joules"] == "1201.000000"
    assert out.files["consumed_energy.csv"].splitlines()[-1] == \
        "3.000000,1200.000000,e,400.000000,400.000000"


def test_a_session_without_any_job(tmp_path):
    """No -w and no dynamic jobs: SIMULATION_BEGINS, then SIMULATION_ENDS at once (or at the
    requested call); the means over no job are -nan, as glibc writes 0.0 / 0.0."""
    plat = platform(tmp_path / "p.xml")
    out = run(quiet, plat, [], tmp_path / "out", ("-E",))
    assert [kinds(m) for m in out.messages] == [["SIMULATION_BEGINS"], ["SIMULATION_ENDS"]]
    figures = schedule(out)
    assert [figures[k] for k in ("mean_slowdown", "mean_turnaround_time", "mean_waiting_time",
                                 "success_rate")] == ["-nan"] * 4
    assert figures["nb_jobs"] == "0" and figures["consumed_joules"] == "0.000000"
    assert out.files["jobs.csv"].count("\n") == 1  # the header alone
    call = scripted({0: [event("CALL_ME_LATER", {"timestamp": 5})]}, {})
    out = run(call, plat, [], tmp_path / "call", ())
    assert [kinds(m) for m in out.messages][1:] == [["REQUESTED_CALL"], ["SIMULATION_ENDS"]]
    assert json.loads(out.messages[-1])["now"] == 5.0


def test_registration_never_finished_is_a_deadlock(tmp_path):
    """With dynamic jobs the session waits for registration_finished; nothing can come: hdrm
    serve stops with its deadlock line, and writes the output files as the binary does after
    SimGrid's "Deadlock detected" (it ends the simulation there)."""
    plat = platform(tmp_path / "p.xml")
    out = run(quiet, plat, [], tmp_path / "out", DYN)
    assert out.status == 2 and out.error.startswith("SessionDeadlock: deadlock at t=0.000000")
    assert "registration_finished" in out.error
    assert out.files["jobs.csv"].count("\n") == 1 and schedule(out)["nb_jobs"] == "0"
    assert out.files["machine_states.csv"] == \
        "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n"


def test_a_stopped_session_leaves_its_files_empty(tmp_path):
    """Where the binary aborts (here: a job registered in a workload that does not exist), the
    files it opened at its start are left empty, an earlier run's out_schedule.csv removed."""
    plat = platform(tmp_path / "p.xml")
    for suffix in ("jobs.csv", "schedule.csv"):
        Path(f"{tmp_path}/out_{suffix}").write_text("an earlier run's rows\n")
    out = run(scripted({0: [job_event("nowhere!1", "a")]}, {}), plat, [], tmp_path / "out", DYN)
    assert out.status == 2 and "workload 'nowhere' does not exist" in out.error
    assert out.files == {"jobs.csv": "", "machine_states.csv": ""}
    assert Path(f"{tmp_path}/out_schedule.trace").read_text() == ""


class NoStatic(Registrar):
    """The seeded registrar of dynamic_helpers, in a session without workload file (no static
    job to wait for)."""

    def __init__(self, seed: int, ack: bool, reuse: bool) -> None:
        super().__init__(seed, ack, reuse)
        self.static_done = True


SETTINGS = {"noack": DYN, "ack": ACK, "reuse": (*DYN, "--enable-profile-reuse"),
            "energy": ("-E", *ACK)}
SEEDS = (1, 2, 3)


def _events(path: Path, seed: int) -> Path:
    """Machine 3 down and up again at seeded times (the registrar allocates the lowest free
    machines, so it leaves 3 alone unless four hosts are busy)."""
    rng = random.Random(seed)
    down = rng.choice([1, 2.5, 4])
    path.write_text(
        json.dumps({"timestamp": down, "type": "machine_unavailable", "resources": "3"}) + "\n"
        + json.dumps({"timestamp": down + rng.choice([3, 6]), "type": "machine_available",
                      "resources": "3"}) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT or "")
@pytest.mark.parametrize("setting, instant, with_events", [
    *[(s, False, e) for s in SETTINGS for e in (False, True)], ("noack", True, False)],
    ids=[*[s + e for s in SETTINGS for e in ("", "-events")], "noack-instant"])
def test_registered_sessions_are_the_binarys(tmp_path, setting, instant, with_events,
                                             monkeypatch):
    """Seeded registrars (profiles and jobs in new workloads, kills and resubmissions) without
    -w: the same messages, out_jobs.csv and out_schedule.csv as the binary (on the actor
    model, which runs these sessions, also the machine-state, energy and power-state files).
    Where the registrar starts a job on the machine made unavailable, both stop there. The
    instant model, forced, only without acknowledgement nor events: otherwise two ends at one
    instant come in one message where the binary's sub-nanosecond times split them (its known
    tie approximation)."""
    import hdrm.batsim.server as server_module
    if instant:
        monkeypatch.setattr(server_module, "message_bandwidths", lambda *a, **k: None)
    flags = SETTINGS[setting]
    plat = platform(tmp_path / "p.xml")
    for seed in SEEDS:
        events = [_events(tmp_path / f"e{seed}.txt", seed)] if with_events else []
        ack, reuse = "--acknowledge-dynamic-jobs" in flags, "--enable-profile-reuse" in flags
        outcomes = [run(NoStatic(seed, ack, reuse), plat, [], tmp_path / f"{who}{seed}" / "out",
                        flags, events, binary)
                    for who, binary in (("bin", BATSIM), ("hdrm", None))]
        real, ours = outcomes
        assert bool(ours.error) == bool(real.error), (real.error, ours.error)
        assert real.status in (0, -6)
        assert ours.messages == real.messages
        if not instant:
            assert ours.files == real.files
            continue
        assert ours.files["jobs.csv"] == real.files["jobs.csv"]
        # (that model follows no machine state: no time_* columns)
        assert [x for x in ours.files["schedule.csv"].split("\n") if not x.startswith("time_")] \
            == [x for x in real.files["schedule.csv"].split("\n") if not x.startswith("time_")]


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT or "")
@pytest.mark.parametrize("flags", [(), ("-E",), DYN, ACK, ("-E", *DYN)],
                         ids=["plain", "energy", "dyn", "ack", "energy-dyn"])
@pytest.mark.parametrize("with_events", [False, True], ids=["", "events"])
def test_scripted_sessions_are_the_binarys(tmp_path, flags, with_events):
    """No job, a requested call, one registered job: messages and every file."""
    plat = platform(tmp_path / "p.xml")
    events = [_events(tmp_path / "e.txt", 1)] if with_events else []
    plan = ONE_JOB if "--enable-dynamic-jobs" in flags else {
        0: [event("CALL_ME_LATER", {"timestamp": 5})]}
    real, ours = (run(scripted(plan, {}), plat, [], tmp_path / who / "out", flags, events,
                      binary) for who, binary in (("bin", BATSIM), ("hdrm", None)))
    assert real.error == "" and ours.error == ""
    assert ours.messages == real.messages
    assert ours.files == real.files


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT or "")
@pytest.mark.parametrize("with_events", [False, True], ids=["", "events"])
def test_deadlocks_and_aborts_leave_the_binarys_files(tmp_path, with_events):
    """Registration never finished (SimGrid's deadlock: the binary writes every file, exit
    status 0; hdrm serve too, with its one-line error), and a registration the binary aborts
    on (its files left empty)."""
    plat = platform(tmp_path / "p.xml")
    events = [_events(tmp_path / "e.txt", 2)] if with_events else []
    for name in ("deadlock", "abort"):
        real, ours = (run(quiet if name == "deadlock" else scripted(
            {0: [job_event("nowhere!1", "a")]}, {}), plat, [], tmp_path / name / who / "out",
            DYN, events, binary) for who, binary in (("bin", BATSIM), ("hdrm", None)))
        assert ours.messages == real.messages
        assert ours.files == real.files
        assert real.status == (0 if name == "deadlock" else -6) and ours.status == 2
        assert ("Deadlock detected" if name == "deadlock" else "nowhere") in real.error
