"""The protocol module against real Batsim 4.2.1 / pybatsim 3.2.1 messages: format, schemas, errors."""

from __future__ import annotations

import json

import pytest
from batsim_helpers import GOLDEN, SESSIONS, read_session
from procset import ProcSet

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.errors import ProtocolError

SAMPLE = SESSIONS / "protocol_sample.txt"
PSTATE_SESSION = GOLDEN / "pstate_slowdown" / "session.txt"


def all_recorded():
    return read_session(SAMPLE) + read_session(PSTATE_SESSION)


def test_sessions_are_parsed_completely():
    assert [len(read_session(SAMPLE, c)) for c in "ABC"] == [32, 46, 10]
    assert len(read_session(PSTATE_SESSION)) == 28


def test_every_recorded_message_validates_both_ways():
    messages = all_recorded()
    for m in messages:
        decoded = p.decode_message(m.text, m.sender)
        assert decoded.types == [e["type"] for e in m.doc["events"]]
    types = {e.type for m in messages for e in p.decode_message(m.text, m.sender).events}
    assert {"SIMULATION_BEGINS", "JOB_SUBMITTED", "JOB_COMPLETED", "JOB_KILLED", "REQUESTED_CALL",
            "RESOURCE_STATE_CHANGED", "NOTIFY", "ANSWER", "SIMULATION_ENDS", "EXECUTE_JOB",
            "REJECT_JOB", "CALL_ME_LATER", "KILL_JOB", "SET_RESOURCE_STATE", "SET_JOB_METADATA",
            "QUERY"} <= types


def test_batsim_messages_reencode_byte_for_byte():
    """Batsim's number format: ints stay ints, other numbers get 6 decimals, no spaces."""
    for m in all_recorded():
        if m.sender == "batsim":
            assert p.encode_message(p.decode_message(m.text, "batsim")) == m.text


def test_number_format_examples():
    assert p.batsim_dumps({"now": 4.5e-05, "n": 3, "cpu": 1e11, "ok": True, "x": None, "s": "a\"b"}) == (
        '{"now":0.000045,"n":3,"cpu":100000000000.000000,"ok":true,"x":null,"s":"a\\"b"}')
    assert p.batsim_dumps([0.1, [2, 2.5]]) == "[0.100000,[2,2.500000]]"
    with pytest.raises(ProtocolError, match="no NaN or infinity"):
        p.batsim_dumps(float("inf"))
    with pytest.raises(ProtocolError, match="type set"):
        p.batsim_dumps({1, 2})


def test_builders_match_recorded_events():
    """Our events have the keys (in order), the types and the interval sets of Batsim's."""
    a = [m.doc for m in read_session(SAMPLE, "A")]
    killed = ev.job_killed(6.0, {"w0!kill_me": ("delay100", 0.05)})
    pairs = [
        (ev.job_completed(6.0, "w0!kill_me", "COMPLETED_KILLED", p.format_resources([2])), a[14]["events"][0]),
        (killed, a[14]["events"][1]),
        (ev.answer_energy(6.0, 1520.993443), a[16]["events"][0]),
        (ev.requested_call(6.0), a[12]["events"][0]),
        (ev.notify(3.0), a[10]["events"][0]),
        (ev.resource_state_changed(50.0, "6", "0"), a[28]["events"][0]),
        (ev.simulation_ends(50.0), a[30]["events"][0]),
        (ev.execute_job(0.0, "w0!normal", p.format_resources([0, 1])), a[3]["events"][0]),
        (ev.set_job_metadata(0.0, "w0!normal", "demo-meta"), a[3]["events"][1]),
        (ev.reject_job(2.0, "w0!reject_me"), a[7]["events"][0]),
        (ev.kill_job(6.0, ["w0!kill_me"]), a[13]["events"][0]),
        (ev.query_energy(6.0), a[15]["events"][0]),
        (ev.set_resource_state(30.0, "6", 0), a[27]["events"][0]),
    ]
    for ours, recorded in pairs:
        text = p.batsim_dumps(ours.to_json())
        assert json.loads(text) == recorded
        assert list(ours.data) == list(recorded["data"])
    assert p.batsim_dumps(killed.to_json()) == (
        '{"timestamp":6.000000,"type":"JOB_KILLED","data":{"job_ids":["w0!kill_me"],'
        '"job_progress":{"w0!kill_me":{"profile_name":"delay100","progress":0.050000}}}}')


def test_interval_sets_are_procset_strings():
    assert p.format_resources([7, 0, 1, 2, 3, 9, 10]) == "0-3 7 9-10" == str(ProcSet((0, 3), 7, (9, 10)))
    assert p.format_resources([]) == ""
    for ids in ([5], [3, 1, 2], list(range(0, 300, 2)), [9, 8, 7, 100, 101, 50]):
        assert p.format_resources(ids) == str(ProcSet(*ids))
    assert list(p.parse_resources("0-2 5", "here")) == [0, 1, 2, 5]
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB: alloc: bad interval set '3-1'"):
        p.parse_resources("3-1", "EXECUTE_JOB: alloc")
    with pytest.raises(ProtocolError, match="expected an interval set string"):
        p.parse_resources(3, "x")


def _msg(*events, now=1.0):
    return json.dumps({"now": now, "events": list(events)})


def _event(kind, data, ts=1.0):
    return {"timestamp": ts, "type": kind, "data": data}


@pytest.mark.parametrize("text, sender, error", [
    ("not json", "scheduler", "not JSON"),
    ('{"events": []}', "scheduler", "without 'now' and 'events'"),
    ('{"now": "x", "events": []}', "batsim", "'now' = 'x'"),
    (_msg(_event("EXECUTE_JOB", {"job_id": "w0!1"})), "scheduler",
     r"event 0 \(EXECUTE_JOB\): missing field 'alloc'"),
    (_msg(_event("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0-x"})), "scheduler",
     r"event 0 \(EXECUTE_JOB\): field 'alloc' must be an interval set string"),
    (_msg(_event("SET_RESOURCE_STATE", {"resources": "0", "state": 1})), "scheduler",
     "field 'state' must be a power-state id as a string"),
    (_msg(_event("KILL_JOB", {"job_ids": []})), "scheduler", "non-empty list of job id strings"),
    (_msg(_event("EXECUTE_JOBS", {})), "scheduler",
     "unknown type 'EXECUTE_JOBS'; did you mean 'EXECUTE_JOB'"),
    (_msg(_event("JOB_FINISHED", {})), "batsim", "Batsim sent event 0 of unknown type 'JOB_FINISHED'"),
    (_msg(_event("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "DONE", "return_code": 0,
                                   "alloc": "0"})), "batsim", "must be one of COMPLETED_SUCCESSFULLY"),
    (_msg(_event("REJECT_JOB", {"job_id": "a"}, ts=2.0)), "scheduler", "is after the message's now"),
    (_msg(_event("REJECT_JOB", {"job_id": "a"}, ts=0.9), _event("REJECT_JOB", {"job_id": "b"}, ts=0.5)),
     "scheduler", r"event 1 \(REJECT_JOB\): timestamp 0.5 is before the previous"),
    (_msg({"type": "REJECT_JOB", "data": {}}), "scheduler", "'timestamp' must be a finite number"),
])
def test_malformed_messages_are_named(text, sender, error):
    with pytest.raises(ProtocolError, match=error):
        p.decode_message(text, sender)


def test_data_defaults_to_empty_and_events_keep_order():
    message = p.decode_message('{"now": 2, "events": [{"timestamp": 1, "type": "REQUESTED_CALL"}]}', "batsim")
    assert message.now == 2.0 and message.events[0].data == {} and message.types == ["REQUESTED_CALL"]
