"""Batsim's side of the protocol without sockets: recorded sessions replayed, invalid decisions refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from batsim_helpers import GOLDEN, SESSIONS, read_session, recorded_replies

from hdrm.batsim import protocol as p
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.simulator import BatsimSimulation, ServerConfig
from hdrm.errors import ProtocolError, WorkloadError

SAMPLE = SESSIONS / "protocol_sample.txt"
DEMO = SESSIONS / "protocol_demo"
SMALL = GOLDEN / "small_delays"


def run_replies(platform: Path, workload: Path, replies: list[str], config: ServerConfig | None = None):
    """Run a session answering with ``replies`` in order (then empty replies); returns sim, texts."""
    sim = BatsimSimulation(load_hosts(platform), read_job_table(workload), config)
    sent, queue = [], list(replies)
    message = sim.begin()
    while message is not None:
        sent.append(p.encode_message(message))
        reply = queue.pop(0) if queue else json.dumps({"now": message.now, "events": []})
        sim.react(p.decode_message(reply, "scheduler"))
        message = sim.next_message()
    return sim, sent


def assert_same_event(ours: dict, theirs: dict, tol: float) -> None:
    assert ours["type"] == theirs["type"]
    assert ours["timestamp"] == pytest.approx(theirs["timestamp"], abs=tol)
    assert list(ours["data"]) == list(theirs["data"])
    for key, value in theirs["data"].items():
        mine = ours["data"][key]
        assert type(mine) is type(value), (ours["type"], key)
        if key != "workloads" and key != "profiles":
            assert mine == value, (ours["type"], key)


def test_capture_a_is_reproduced_byte_for_byte():
    """Every event type of the demo: sleep switches, kill, reject, walltime, metadata, energy."""
    recorded = read_session(SAMPLE, "A")
    sim, sent = run_replies(DEMO / "energy_platform_8.xml", DEMO / "demo_workload.json",
                            recorded_replies(recorded), ServerConfig(energy=True))
    theirs = [m.text for m in recorded if m.sender == "batsim"]
    assert len(sent) == len(theirs) == 16
    assert sent[1:] == theirs[1:]
    ours0, theirs0 = json.loads(sent[0]), json.loads(theirs[0])
    assert_same_event(ours0["events"][0], theirs0["events"][0], 0.0)
    assert ours0["events"][0]["data"]["profiles"] == theirs0["events"][0]["data"]["profiles"]
    assert ours0["events"][0]["data"]["workloads"]["w0"].endswith("demo_workload.json")
    rows = {r.job_id: r for r in sim.results()}
    assert [r.job_id for r in sim.results()] == ["reject_me", "kill_me", "too_long", "normal"]
    assert (rows["kill_me"].final_state, rows["kill_me"].consumed_energy) == ("COMPLETED_KILLED", 150.0)
    assert rows["too_long"].finish_time == 8.0 and rows["too_long"].final_state.endswith("WALLTIME_REACHED")
    assert rows["normal"].metadata == "demo-meta" and rows["normal"].consumed_energy == 600.0
    assert rows["reject_me"].starting_time is None


def test_capture_b_same_messages_up_to_simgrid_latencies():
    recorded = read_session(SAMPLE, "B")
    _, sent = run_replies(SMALL / "platform.xml", SMALL / "workload.json", recorded_replies(recorded))
    theirs = [m.doc for m in recorded if m.sender == "batsim"]
    assert len(sent) == len(theirs) == 23
    for ours, rec in zip(map(json.loads, sent), theirs):
        assert ours["now"] == pytest.approx(rec["now"], abs=0.003)
        assert len(ours["events"]) == len(rec["events"])
        for a, b in zip(ours["events"], rec["events"]):
            assert_same_event(a, b, 0.003)


def test_capture_c_forwards_extra_fields_profiles_and_sched_config(tmp_path):
    workload = tmp_path / "wl.json"
    workload.write_text('{"nb_res":4,"jobs":[{"id":"a","subtime":0,"res":2,"walltime":100,"profile":"d",'
                        '"user":"alice","queue":3}],"profiles":{"d":{"type":"delay","delay":5}}}')
    recorded = read_session(SAMPLE, "C")
    config = ServerConfig(forward_profiles=True, sched_config='{"foo": 1}')
    _, sent = run_replies(SMALL / "platform.xml", workload, recorded_replies(recorded), config)
    theirs = [m.doc for m in recorded if m.sender == "batsim"]
    assert [json.loads(t)["events"][0]["type"] for t in sent] == [e["events"][0]["type"] for e in theirs]
    for ours, rec in zip(map(json.loads, sent), theirs):
        assert_same_event(ours["events"][0], rec["events"][0], 0.003)
    assert '"job":{"id":"w0!a","subtime":0,"res":2,"walltime":100,"profile":"d","user":"alice",' \
           '"queue":3},"profile":{"type":"delay","delay":5}' in sent[1]


def test_pstate_session_is_reproduced_exactly():
    recorded = read_session(GOLDEN / "pstate_slowdown" / "session.txt")
    case = GOLDEN / "pstate_slowdown"
    sim, sent = run_replies(case / "platform.xml", case / "workload.json", recorded_replies(recorded),
                            ServerConfig(energy=True))
    theirs = [m.text for m in recorded if m.sender == "batsim"]
    assert sent[1:] == theirs[1:]
    assert sim.board.energy_j() == pytest.approx(10400.0)


def _sim(platform=SMALL / "platform.xml", workload=SMALL / "workload.json", **config):
    sim = BatsimSimulation(load_hosts(platform), read_job_table(workload), ServerConfig(**config))
    sim.begin()
    sim.react(p.Message(0.0))
    return sim


def _decide(sim, *events, now=None):
    message = sim.next_message()
    now = message.now if now is None else now
    sim.react(p.Message(now, [p.Event(now, kind, data) for kind, data in events]))
    return message


@pytest.mark.parametrize("events, error", [
    ([("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0-1"})],
     r"EXECUTE_JOB \(event 0 of the reply at t=0.000000\), job 'w0!0': alloc '0-1' has 2 resources, "
     "the job requests 1"),
    ([("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "4"})], "job 'w0!0': unknown resource 4"),
    ([("EXECUTE_JOB", {"job_id": "w0!00", "alloc": "0"})], "unknown job 'w0!00'; did you mean 'w0!0'"),
    ([("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"})], "job 'w0!1' has not been submitted yet"),
    ([("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0"}), ("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "1"})],
     r"event 1 .*job 'w0!0': the job was already started at 0 s; a job runs at most once"),
    ([("REJECT_JOB", {"job_id": "w0!0"}), ("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "1"})],
     "job 'w0!0': the job was rejected"),
    ([("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0"}), ("REJECT_JOB", {"job_id": "w0!0"})],
     "job 'w0!0' cannot be rejected: it is running"),
    ([("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0", "storage_mapping": {"pfs": 0}})],
     "'storage_mapping' is not supported by hdrm serve"),
    ([("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0", "mapping": {"0": 1}})],
     "job 'w0!0': mapping puts executor 0 on the alloc's resource #1, but the alloc has 1"),
    ([("KILL_JOB", {"job_ids": ["w0!0"]})], "job 'w0!0' has not started; reject it instead"),
    ([("QUERY", {"requests": {"consumed_energy": {}}})], "consumed_energy needs energy accounting"),
    ([("SET_RESOURCE_STATE", {"resources": "0", "state": "0"})],
     r"SET_RESOURCE_STATE \(event 0 of the reply at t=0.000000\): a power-state change needs "
     r"energy accounting; start hdrm serve with -E/--energy \(as batsim needs -E\)"),
    ([("QUERY", {"requests": {"estimate_waiting_time": {}}})], "unsupported request.*'estimate_waiting_time'"),
    ([("REGISTER_JOB", {"job_id": "w0!x", "job": {}})], "registration needs --enable-dynamic-jobs"),
    ([("TO_JOB_MSG", {"job_id": "w0!1", "msg": "hi"})], "hdrm serve does not support TO_JOB_MSG"),
])
def test_invalid_decisions_name_event_and_job(events, error):
    sim = _sim()
    with pytest.raises(ProtocolError, match=error):
        _decide(sim, *events)


def test_busy_resource_names_the_running_job(tmp_path):
    workload = tmp_path / "two.json"
    workload.write_text('{"nb_res":1,"jobs":[{"id":1,"subtime":0,"res":1,"profile":"d"},'
                        '{"id":2,"subtime":0,"res":1,"profile":"d"}],"profiles":{"d":{"type":"delay","delay":5}}}')
    sim = _sim(workload=workload)
    with pytest.raises(ProtocolError, match=r"job 'w0!2': invalid allocation \('2'\): machine 2 "
                       r"\(hostname='Ginette'\) is currently computing jobs \(these ones: "
                       r"\{w0!1\}\) whereas time-sharing on compute machines is disabled"):
        _decide(sim, ("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "2"}),
                ("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "2"}))


def test_sleeping_resource_cannot_run_a_job():
    sim = _sim(DEMO / "energy_platform_8.xml", DEMO / "demo_workload.json", energy=True)
    with pytest.raises(ProtocolError, match=r"machine 6 \(hostname=.*\) cannot compute jobs now "
                       r"\(the machine is not computing nor idle, its state is 'switching_off'"):
        _decide(sim, ("SET_RESOURCE_STATE", {"resources": "6", "state": "1"}),
                ("EXECUTE_JOB", {"job_id": "w0!normal", "alloc": "5-6"}))


def test_reply_going_back_in_time_is_refused():
    sim = _sim()
    sim.next_message()  # job 0 submitted at t=0 ...
    sim.react(p.Message(0.0))
    message = sim.next_message()  # ... job 1 at t=3
    assert message.now == 3.0
    with pytest.raises(ProtocolError, match="reply's now 2.5 is before the message's now 3.0"):
        sim.react(p.Message(2.5))


def test_decisions_take_effect_at_their_timestamp_and_events_in_between_wait():
    """fillerSched-like delay: a reply at now + 0.005; a submission in between comes next, stamped."""
    sim = _sim()
    _decide(sim, ("EXECUTE_JOB", {"job_id": "w0!0", "alloc": "0"}), now=3.5)
    message = sim.next_message()
    assert message.now == 3.5 and message.events[0].timestamp == 3.0  # job 1, submitted at 3
    assert sim.table.by_id["w0!0"].start_s == 3.5


def test_deadlock_when_jobs_are_never_scheduled():
    sim = _sim()
    for _ in range(11):  # ten submissions and the NOTIFY, never answered with a decision
        sim.react(p.Message(sim.next_message().now))
    with pytest.raises(ProtocolError, match=r"deadlock at t=27.000000: job\(s\) 'w0!0', 'w0!1', 'w0!2', "
                                            r"'w0!3', 'w0!4', \.\.\. were submitted but neither executed"):
        sim.next_message()


def test_network_profiles_are_read_and_other_types_refused_up_front(tmp_path):
    """small_various's network profiles are read (the actor model runs them on a SimGrid
    platform); a type the actor model does not run is refused, in a sequence too."""
    assert len(read_job_table(GOLDEN / "small_various" / "workload.json").jobs) == 9
    workload = tmp_path / "trace.json"
    workload.write_text(json.dumps({"nb_res": 2, "jobs": [
        {"id": 1, "subtime": 0, "res": 2, "profile": "s"}], "profiles": {
        "t": {"type": "usage_trace", "trace": "x.txt"},
        "p": {"type": "parallel", "cpu": [1, 1], "com": [0, 1, 1, 0]},
        "s": {"type": "composed", "seq": ["t", "p"]}}}))
    with pytest.raises(WorkloadError, match=r"job 1: profile 's' has a part 't' of type "
                                            r"'usage_trace'"):
        read_job_table(workload)


def test_parallel_homogeneous_with_communication_is_refused_off_the_actor_model(tmp_path):
    """Read (the actor model runs it on a SimGrid platform), refused where it cannot run."""
    from hdrm.batsim.bandwidth import message_bandwidths

    workload = tmp_path / "com.json"
    workload.write_text('{"nb_res":2,"jobs":[{"id":1,"subtime":0,"res":2,"profile":"h"}],'
                        '"profiles":{"h":{"type":"parallel_homogeneous","cpu":1e9,"com":1e6}}}')
    table = read_job_table(workload)
    with pytest.raises(WorkloadError, match=r"1 job \(1\) has a 'parallel_homogeneous' "
                                            r"profile that communicates .*, which needs SimGrid's network "
                                            r"model; .*/platform.json is not a SimGrid XML"):
        message_bandwidths(tmp_path / "platform.json", [], table)


def test_no_walltime_is_minus_one_and_jobs_run_unbounded(tmp_path):
    workload = tmp_path / "nowall.json"
    workload.write_text('{"nb_res":1,"jobs":[{"id":1,"subtime":0,"res":1,"profile":"d"}],'
                        '"profiles":{"d":{"type":"delay","delay":1e6}}}')
    sim = _sim(workload=workload)
    _decide(sim, ("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"}))
    while sim.next_message().types != ["SIMULATION_ENDS"]:
        sim.react(p.Message(sim.board.now))
    (row,) = sim.results()
    assert row.requested_time == -1.0 and row.finish_time == 1e6 and math.isclose(row.stretch, 1.0)
