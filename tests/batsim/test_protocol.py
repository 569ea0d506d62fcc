"""The protocol module against real Batsim 4.2.1 / pybatsim 3.2.1 messages: format, schemas, errors."""

from __future__ import annotations

import json
import re

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


INTERVAL = 'an interval set string like "0-3 7": ids as N or LO-HI parts, LO <= HI, one space apart'
SCHEDULER_TYPES = ("EXECUTE_JOB, REJECT_JOB, CALL_ME_LATER, KILL_JOB, SET_RESOURCE_STATE, SET_JOB_METADATA, "
                   "CHANGE_JOB_STATE, REGISTER_JOB, REGISTER_PROFILE, QUERY, NOTIFY, TO_JOB_MSG")


@pytest.mark.parametrize("text, sender, error", [
    ("not json", "scheduler", "not JSON"),
    ('{"events": []}', "scheduler", "without 'now' and 'events'"),
    ('{"now": "x", "events": []}', "batsim", "'now' = 'x'"),
    (_msg(_event("REJECT_JOB", {"job_id": "a"}, ts=2.0)), "scheduler", "is after the message's now"),
    (_msg(_event("REJECT_JOB", {"job_id": "a"}, ts=0.9), _event("REJECT_JOB", {"job_id": "b"}, ts=0.5)),
     "scheduler", r"event 1 \(REJECT_JOB\): timestamp 0.5 is before the previous"),
    (_msg({"type": "REJECT_JOB", "data": {}}), "scheduler", "'timestamp' must be a finite number"),
])
def test_malformed_messages_are_named(text, sender, error):
    with pytest.raises(ProtocolError, match=error):
        p.decode_message(text, sender)


@pytest.mark.parametrize("event, sender, error", [
    (_event("EXECUTE_JOB", {"job_id": "w0!1"}), "scheduler",
     f"the scheduler's event 0 (EXECUTE_JOB) at t=1.0, job 'w0!1': data.alloc: missing required key "
     f"({INTERVAL}); add it"),
    (_event("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0-x"}, ts=0.5), "scheduler",
     f"the scheduler's event 0 (EXECUTE_JOB) at t=0.5, job 'w0!1': data.alloc: expected {INTERVAL}, "
     'got "0-x"'),
    (_event("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "3-1"}), "scheduler",
     f"the scheduler's event 0 (EXECUTE_JOB) at t=1.0, job 'w0!1': data.alloc: expected {INTERVAL}, "
     'got "3-1"'),
    (_event("SET_RESOURCE_STATE", {"resources": "0", "state": 1}), "scheduler",
     "the scheduler's event 0 (SET_RESOURCE_STATE) at t=1.0: data.state: expected a power-state id "
     'as a string of digits, like "1", got 1'),
    (_event("SET_RESOURCE_STATE", {"resources": "0", "state": "on"}), "scheduler",
     "the scheduler's event 0 (SET_RESOURCE_STATE) at t=1.0: data.state: expected a power-state id "
     'as a string of digits, like "1", got "on"'),
    (_event("KILL_JOB", {"job_ids": []}), "scheduler",
     "the scheduler's event 0 (KILL_JOB) at t=1.0: data.job_ids: expected a non-empty list, got []"),
    (_event("KILL_JOB", {"job_ids": ["w0!1", 2]}), "scheduler",
     "the scheduler's event 0 (KILL_JOB) at t=1.0: data.job_ids[1]: expected a string, got 2"),
    (_event("CALL_ME_LATER", {"timestamp": "5"}), "scheduler",
     'the scheduler\'s event 0 (CALL_ME_LATER) at t=1.0: data.timestamp: expected a number, got "5"'),
    (_event("EXECUTE_JOBS", {}), "scheduler",
     'the scheduler\'s event 0 (EXECUTE_JOBS) at t=1.0: type: unknown value "EXECUTE_JOBS"; did you '
     f"mean 'EXECUTE_JOB' or 'REJECT_JOB' or 'REGISTER_JOB'? valid values: {SCHEDULER_TYPES}"),
    (_event("JOB_FINISHED", {}), "batsim",
     'Batsim\'s event 0 (JOB_FINISHED) at t=1.0: type: unknown value "JOB_FINISHED"; did you mean '
     "'JOB_KILLED' or 'JOB_SUBMITTED'? valid values: SIMULATION_BEGINS, JOB_SUBMITTED, JOB_COMPLETED, "
     "JOB_KILLED, REQUESTED_CALL, RESOURCE_STATE_CHANGED, NOTIFY, ANSWER, QUERY, SIMULATION_ENDS"),
    (_event("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "DONE", "return_code": 0, "alloc": "0"}),
     "batsim", 'Batsim\'s event 0 (JOB_COMPLETED) at t=1.0, job \'w0!1\': data.job_state: unknown '
     'value "DONE"; valid choices: COMPLETED_SUCCESSFULLY, COMPLETED_FAILED, '
     "COMPLETED_WALLTIME_REACHED, COMPLETED_KILLED"),
    (_event("ANSWER", {"consumed_energy": True}), "batsim",
     "Batsim's event 0 (ANSWER) at t=1.0: data.consumed_energy: expected a number, got true"),
])
def test_bad_event_data_is_named_with_event_time_job_key_and_value(event, sender, error):
    """Each message names the sender, the event's index, type and time, the job, the key and the
    bad value, and says what is expected."""
    with pytest.raises(ProtocolError, match="^" + re.escape(error) + "$"):
        p.decode_message(_msg(event), sender)


def test_unknown_data_keys_are_tolerated_and_data_is_kept_as_sent():
    """Newer Batsims and schedulers add fields: they pass, and the data stays the sent dict (ints
    stay ints), so the message re-encodes byte for byte."""
    text = ('{"now":2.000000,"events":[{"timestamp":2.000000,"type":"CALL_ME_LATER","data":'
            '{"timestamp":5,"new_field":[1,2.500000]}}]}')
    message = p.decode_message(text, "scheduler")
    assert message.events[0].data == {"timestamp": 5, "new_field": [1, 2.5]}
    assert type(message.events[0].data["timestamp"]) is int
    assert p.encode_message(message) == text


def test_data_defaults_to_empty_and_events_keep_order():
    message = p.decode_message('{"now": 2, "events": [{"timestamp": 1, "type": "REQUESTED_CALL"}]}', "batsim")
    assert message.now == 2.0 and message.events[0].data == {} and message.types == ["REQUESTED_CALL"]
