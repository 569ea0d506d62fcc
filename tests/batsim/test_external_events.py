"""``hdrm serve --events`` / ``--forward-unknown-events`` (Batsim 4.2.1's external events), no
binary needed: reading and sorting event files, the refusals of bad lines, and sessions stepped
without sockets whose messages were checked against the binary (test_serve_events_vs_real.py
replays them against it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_helpers import ids_of
from test_serve_energy_order import write_platform, write_workload

from hdrm.batsim import protocol as p
from hdrm.batsim.external_events import (Availability, ExternalEvent, batsim_sort,
                                         parse_machines, read_event_file, read_event_files)
from hdrm.batsim.server import BatsimServer, ServeOptions
from hdrm.batsim.simulator import BatsimSimulation, ServerConfig
from hdrm.errors import ConfigError, ProtocolError, SimulationError


def write_events(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                            for line in lines))
    return path


def U(resources: str, t: float) -> dict:
    return {"type": "machine_unavailable", "resources": resources, "timestamp": t}


def A(resources: str, t: float) -> dict:
    return {"type": "machine_available", "resources": resources, "timestamp": t}


# ---------------------------------------------------------------------------------- files
def test_events_are_sorted_by_time_then_available_unavailable_generic(tmp_path):
    path = write_events(tmp_path / "e.txt", [
        {"type": "g", "timestamp": 5}, U("1", 5), A("0", 5), U("0", 2), A("1", 7.5)])
    events = read_event_files([path], True, 4)[0]
    assert [(e.timestamp_s, e.type) for e in events] == [
        (2.0, "machine_unavailable"), (5.0, "machine_available"),
        (5.0, "machine_unavailable"), (5.0, "g"), (7.5, "machine_available")]
    assert [e.where for e in events][:2] == [f"--events {path}:4", f"--events {path}:3"]


def test_ties_keep_file_order_up_to_16_events():
    items = list(range(16))
    assert batsim_sort(items, lambda a, b: False) == items


def test_ties_of_17_events_take_libstdcxx_introsort_order():
    """Hand-run GCC's std::sort on 17 equal elements: the median of (1, 8, 16) is 8, swapped to
    the front; the partition swaps (1,16) (2,15) ... (8,9) and cuts at 9; the insertion sorts
    move nothing. The binary sends 17 simultaneous generic events in this order (slow test)."""
    assert batsim_sort(list(range(17)), lambda a, b: False) == [
        8, 16, 15, 14, 13, 12, 11, 10, 9, 0, 7, 6, 5, 4, 3, 2, 1]


@pytest.mark.parametrize("seed", range(6))
def test_introsort_sorts(seed):
    import random
    rng = random.Random(seed)
    items = [rng.randrange(5) for _ in range(rng.choice([40, 300, 2000]))]
    assert batsim_sort(items, lambda a, b: a < b) == sorted(items)


def test_heapsort_fallback_sorts():
    """Depth 0 from the start: the heap sort of std::partial_sort does the work."""
    from hdrm.batsim.external_events import _final_insertion_sort, _introsort
    items = [7, 3, 9, 1, 8, 2, 6, 4, 5, 0, 12, 11, 10, 19, 15, 14, 13, 18, 17, 16]
    _introsort(items, 0, len(items), 0, lambda a, b: a < b)
    assert items == list(range(20))  # (the heap sort sorted it whole)
    _final_insertion_sort(items, 0, len(items), lambda a, b: a < b)
    assert items == list(range(20))


@pytest.mark.parametrize("text, ids", [
    ("0", [0]), ("2 0", [0, 2]), ("0-2 1", [0, 1, 2]), ("0  1", [0, 1]), ("3-3 5", [3, 5])])
def test_resources_read_as_batsim_reads_them(text, ids):
    assert parse_machines(text, "x") == ids


@pytest.mark.parametrize("text, match", [
    ("", "names no machine"), ("3-1", "goes down; write it 1-3"), ("0,1", "bad part '0,1'"),
    ("0-", "bad part '0-'"), ("+1", "bad part"), ("1-2-3", "bad part")])
def test_bad_resources_are_refused(text, match):
    with pytest.raises(ConfigError, match=match):
        parse_machines(text, "x")


#: a bad line -> what the one-line error says (the binary aborts on each: slow test)
BAD_LINES = {
    "no_type": ('{"timestamp": 1, "resources": "0"}', r":1: 'type' must be a string, got "
                r"nothing \(the key is missing\)"),
    "type_int": ('{"type": 3, "timestamp": 1}', r":1: 'type' must be a string, got 3"),
    "no_ts": ('{"type": "machine_unavailable", "resources": "0"}',
              r":1: 'timestamp' must be a number of seconds, got nothing"),
    "ts_string": ('{"type": "machine_unavailable", "resources": "0", "timestamp": "1"}',
                  r"'timestamp' must be a number of seconds, got '1'"),
    "ts_bool": ('{"type": "machine_unavailable", "resources": "0", "timestamp": true}',
                r"'timestamp' must be a number of seconds, got True"),
    "negative_ts": ('{"type": "machine_unavailable", "resources": "0", "timestamp": -1}',
                    r"'timestamp' must be >= 0, got -1"),
    "no_res": ('{"type": "machine_unavailable", "timestamp": 1}',
               r"'resources' must be an interval set string .*got nothing"),
    "res_int": ('{"type": "machine_available", "timestamp": 1, "resources": 0}',
                r"'resources' must be an interval set string .*got 0"),
    "empty_res": ('{"type": "machine_unavailable", "timestamp": 1, "resources": ""}',
                  r"'resources': '' names no machine"),
    "reversed": ('{"type": "machine_unavailable", "timestamp": 1, "resources": "3-1"}',
                 r"'resources': range '3-1' goes down"),
    "out_of_range": ('{"type": "machine_unavailable", "timestamp": 1, "resources": "7"}',
                     r"'resources' '7' names machine 7, past the last one \(3\)"),
    "not_json": ('{"type": "machine_unavailable", ', r":1: not a JSON object"),
    "array": ("[1, 2]", r":1: an event is a JSON object, got '\[1, 2\]'"),
    "blanks": ("   ", r":1: not a JSON object"),
    "nan": ('{"type": "machine_unavailable", "resources": "0", "timestamp": NaN}',
            r":1: NaN is not JSON"),
    "two_objects": ('{"type": "g", "timestamp": 1} {"type": "g", "timestamp": 2}',
                    r":1: not a JSON object \(Extra data"),
    "unknown_type": ('{"type": "reboot", "timestamp": 1}',
                     r"unknown event type 'reboot'; .*--forward-unknown-events"),
}


@pytest.mark.parametrize("name", list(BAD_LINES))
def test_bad_lines_are_refused_in_one_line_naming_file_line_key_value(tmp_path, name):
    line, match = BAD_LINES[name]
    path = write_events(tmp_path / "e.txt", [line])
    with pytest.raises(ConfigError, match=match) as info:
        read_event_files([path], False, 4)
    assert str(info.value).startswith(f"--events {path}:1: ")
    assert "\n" not in str(info.value)


def test_a_key_given_twice_is_refused(tmp_path):
    path = write_events(tmp_path / "e.txt", ['{"type": "g", "timestamp": 1, "timestamp": 2}'])
    with pytest.raises(ConfigError, match=r":1: key 'timestamp' is given twice"):
        read_event_files([path], True, 4)


def test_empty_lines_are_skipped_and_line_numbers_kept(tmp_path):
    path = write_events(tmp_path / "e.txt", [U("0", 1), "", A("0", 3) | {"x": 1}, "", "oops"])
    with pytest.raises(ConfigError, match=r":5: not a JSON object"):
        read_event_file(path, False, 4)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"--events .*nope.txt: cannot read it"):
        read_event_files([tmp_path / "nope.txt"], False, 4)


def test_notify_payloads():
    machine = ExternalEvent(3.0, "machine_unavailable", (0, 1, 2, 5))
    assert p.encode_message(p.Message(3.0, [machine.notify(3.0)])) == (
        '{"now":3.000000,"events":[{"timestamp":3.000000,"type":"NOTIFY","data":'
        '{"type":"event_machine_unavailable","resources":"0-2 5"}}]}')
    generic = ExternalEvent(4.0, "g", data={"type": "g", "timestamp": 4, "x": 1.5, "é": "ü"})
    assert p.encode_message(p.Message(4.0, [generic.notify(4.0)])) == (
        '{"now":4.000000,"events":[{"timestamp":4.000000,"type":"NOTIFY","data":'
        '{"type":"g","timestamp":4,"x":1.500000,"é":"ü"}}]}')


def test_integers_past_64_bits_are_forwarded_as_doubles(tmp_path):
    """rapidjson keeps int64 and uint64 integers and reads larger ones as doubles."""
    path = write_events(tmp_path / "e.txt", ['{"type": "g", "timestamp": 1, "a": '
                                             '100000000000000000000, "b": 18446744073709551615, '
                                             '"c": -9223372036854775809}'])
    event = read_event_files([path], True, 4)[0][0]
    assert p.batsim_dumps(event.data) == ('{"type":"g","timestamp":1,"a":100000000000000000000'
                                          '.000000,"b":18446744073709551615,'
                                          '"c":-9223372036854775808.000000}')


def test_strings_are_written_as_rapidjson_writes_them():
    """UTF-8 as it is, control characters in upper-case hex (the binary's bytes)."""
    assert p.batsim_dumps("a\u0001b\u001fc\td\"\\/\u00e9\U0001F600") == \
        '"a\\u0001b\\u001Fc\\td\\"\\\\/\u00e9\U0001F600"'
    assert p.batsim_dumps("x\\u001f") == '"x\\\\u001f"'


# ---------------------------------------------------------------------------------- availability
def test_availability_changes_and_refusals():
    avail = Availability(["h0", "h1", "h2"])
    avail.apply(ExternalEvent(1.0, "machine_unavailable", (0, 2), where="f:1"), 1.0,
                lambda h: "idle")
    assert avail.down == {0, 2}
    with pytest.raises(ProtocolError, match=r"machine 2 \(hostname='h2'\) cannot compute jobs "
                       r"now .*its state is 'unavailable'"):
        avail.check("1-2", [1, 2], "EXECUTE_JOB", 1.5)
    avail.check("1", [1], "EXECUTE_JOB", 1.5)
    with pytest.raises(SimulationError, match=r"f:2: at t=2.000000 the making of machine 0 "
                       r"\('h0'\) unavailable was requested but this machine was already"):
        avail.apply(ExternalEvent(2.0, "machine_unavailable", (0,), where="f:2"), 2.0,
                    lambda h: "idle")
    with pytest.raises(SimulationError, match=r"machine 1 \('h1'\) available was requested but "
                       r"this machine was not in UNAVAILABLE state \(current state: computing"):
        avail.apply(ExternalEvent(3.0, "machine_available", (1,), where="f:3"), 3.0,
                    lambda h: "computing")


def test_a_switch_to_or_from_sleep_overwrites_the_unavailable_state():
    """Batsim keeps one state per machine: a switch begun after a machine went down, or ending
    after it, leaves it no longer unavailable (available then stops the session, naming the
    state the switch left); a switch ending before or at that instant does not."""
    avail = Availability(["h0", "h1", "h2"])
    avail.switched([2], 1.0)  # h2 switches from 0 to 1
    down = ExternalEvent(1.0, "machine_unavailable", (0, 1, 2), where="f:1")
    avail.apply(down, 1.0, lambda h: "idle")
    avail.switched([0], 3.0)  # begins at 1 s, after the event: overwrites h0 at once
    assert not avail.is_down(0, 1.0) and avail.is_down(1, 1.0) and avail.is_down(2, 1.0)
    avail.check("0", [0], "EXECUTE_JOB", 1.0)  # h0 is switching, no longer unavailable
    with pytest.raises(SimulationError, match=r"f:2: at t=4.000000 the making of machine 0 "
                       r"\('h0'\) available was requested but this machine was not in "
                       r"UNAVAILABLE state \(current state: sleeping; the binary aborts\)"):
        avail.apply(ExternalEvent(4.0, "machine_available", (0,), where="f:2"), 4.0,
                    lambda h: "sleeping")
    avail.apply(ExternalEvent(4.0, "machine_available", (1, 2), where="f:3"), 4.0,
                lambda h: "idle")
    assert avail.down == set()
    avail.apply(ExternalEvent(5.0, "machine_unavailable", (0,), where="f:4"), 5.0,
                lambda h: "idle")  # h0 is sleeping, not unavailable: no abort
    assert avail.is_down(0, 5.0)


# ---------------------------------------------------------------------------------- sessions
def fcfs_avail(nb_hosts: int):
    """Raw FCFS on the lowest free machines that are not unavailable."""
    free, down, queue = set(range(nb_hosts)), set(), []

    def reply(doc: dict) -> str:
        out = []
        for e in doc["events"]:
            d = e["data"]
            if e["type"] == "JOB_SUBMITTED":
                queue.append((d["job_id"], d["job"]["res"]))
            elif e["type"] == "JOB_COMPLETED":
                free.update(ids_of(d["alloc"]))
            elif e["type"] == "NOTIFY" and d["type"] == "event_machine_unavailable":
                down.update(ids_of(d["resources"]))
            elif e["type"] == "NOTIFY" and d["type"] == "event_machine_available":
                down.difference_update(ids_of(d["resources"]))
        while queue and queue[0][1] <= len(free - down):
            job_id, res = queue.pop(0)
            alloc = sorted(free - down)[:res]
            free.difference_update(alloc)
            out.append({"timestamp": doc["now"], "type": "EXECUTE_JOB",
                        "data": {"job_id": job_id, "alloc": " ".join(map(str, alloc))}})
        return json.dumps({"now": doc["now"], "events": out})
    return reply


def step(sim: BatsimSimulation, reply) -> list[str]:
    """The messages of a session stepped without sockets."""
    sent, message = [], sim.begin()
    while message is not None:
        text = p.encode_message(message)
        sent.append(text)
        sim.react(p.decode_message(reply(json.loads(text)), "scheduler"))
        message = sim.next_message()
    return sent


def summary(sent: list[str]) -> list[tuple]:
    out = []
    for text in sent[1:]:
        doc = json.loads(text)
        out.append((doc["now"], [(e["type"][:4], e["data"].get("job_id") or e["data"].get("type"))
                                 for e in doc["events"]]))
    return out


def session(tmp_path: Path, lines: list, forward: bool, instant: bool = False,
            energy: bool = False) -> BatsimSimulation:
    platform = write_platform(tmp_path / "p.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5), (2, 2, 6), (5, 1, 3), (8, 4, 1)])
    events = write_events(tmp_path / "e.txt", lines)
    config = ServerConfig(energy=energy, events=(str(events),), forward_unknown_events=forward)
    server = BatsimServer(platform, workload, ServeOptions(export_prefix=None, config=config))
    if instant:
        return BatsimSimulation(server.hosts, server.table, config)
    return server.simulation


EVENTS = [U("3", 0), U("0", 2), A("0 3", 5), {"type": "foo", "timestamp": 8, "x": 1.5},
          {"type": "bar", "timestamp": 20}]
#: Batsim 4.2.1's messages on this session (runs/s28/E exp1), after SIMULATION_BEGINS
EXPECTED = [
    (0.0, [("JOB_", "w0!0"), ("NOTI", "event_machine_unavailable")]),
    (2.0, [("JOB_", "w0!1"), ("NOTI", "event_machine_unavailable")]),
    (5.0, [("JOB_", "w0!0"), ("JOB_", "w0!2"), ("NOTI", "event_machine_available")]),
    (8.0, [("JOB_", "w0!1"), ("JOB_", "w0!3"), ("NOTI", "foo"), ("JOB_", "w0!2"),
           ("NOTI", "no_more_static_job_to_submit")]),
    (9.0, [("JOB_", "w0!3")]),
    (20.0, [("NOTI", "bar")]),
    (20.0, [("NOTI", "no_more_external_event_to_occur")]),
    (20.0, [("SIMU", None)]),
]


@pytest.mark.parametrize("instant", [False, True], ids=["actors", "instant"])
def test_events_at_their_instants_in_batsims_order(tmp_path, instant):
    """Submissions, job ends and events of one instant in the order their waits began; the
    generic events' NOTIFY carry the line's object; SIMULATION_ENDS waits for the last event
    (20 s, after the last job end at 9 s), and its goodbye opens a message of its own."""
    sim = session(tmp_path, EVENTS, True, instant)
    sent = step(sim, fcfs_avail(4))
    assert summary(sent) == EXPECTED
    assert '"data":{"type":"foo","timestamp":8,"x":1.500000}' in sent[4]
    assert json.loads(sent[0])["events"][0]["data"]["config"]["forward-unknown-events"] is True
    assert [r.allocated_resources for r in sim.results()] == ["0", "1-2", "0", "0-3"]


@pytest.mark.parametrize("instant", [False, True], ids=["actors", "instant"])
def test_under_energy_the_first_submission_comes_after_the_events_of_its_instant(tmp_path,
                                                                                  instant):
    """Batsim -E reads every host's energy before sending the first submission (at 2 s here:
    every account is stale, a simcall each), so the event submitter's batch goes first, and it
    goes to sleep first: at 6 s its batch comes first again, and the two goodbyes follow in the
    order of the last batches, in the same message (the binary's messages, runs/s28/E exp8)."""
    platform = write_platform(tmp_path / "p.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(2, 1, 5), (6, 1, 1)])
    events = write_events(tmp_path / "e.txt", [U("3", 2), U("2", 6)])
    config = ServerConfig(energy=True, events=(str(events),))
    server = BatsimServer(platform, workload, ServeOptions(export_prefix=None, config=config))
    sim = BatsimSimulation(server.hosts, server.table, config) if instant else server.simulation
    got = summary(step(sim, fcfs_avail(4)))
    assert got == [
        (2.0, [("NOTI", "event_machine_unavailable"), ("JOB_", "w0!0")]),
        (6.0, [("NOTI", "event_machine_unavailable"), ("JOB_", "w0!1"),
               ("NOTI", "no_more_external_event_to_occur"),
               ("NOTI", "no_more_static_job_to_submit")]),
        (7.0, [("JOB_", "w0!0"), ("JOB_", "w0!1")]), (7.0, [("SIMU", None)])]


def test_forwarding_is_off_without_event_files(tmp_path):
    sim = BatsimSimulation(*_hosts_table(tmp_path), ServerConfig(forward_unknown_events=True))
    assert p.encode_message(sim.begin()).count('"forward-unknown-events":false') == 1


def _hosts_table(tmp_path: Path):
    platform = write_platform(tmp_path / "p.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5)])
    server = BatsimServer(platform, workload, ServeOptions(export_prefix=None))
    return server.hosts, server.table


@pytest.mark.parametrize("instant", [False, True], ids=["actors", "instant"])
def test_execute_on_an_unavailable_machine_stops_the_session(tmp_path, instant):
    from batsim_helpers import fcfs
    sim = session(tmp_path, [U("0", 0)], False, instant)
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB .*job 'w0!0': invalid job allocation "
                       r"\('0'\): machine 0 \(hostname='h00'\) cannot compute jobs now"):
        step(sim, fcfs(4))


def test_an_unavailable_machine_runs_its_job_to_the_end(tmp_path):
    """Machine 0 goes down at 2 s under job 0 (0-5 s): the job ends at 5 s, successfully."""
    sim = session(tmp_path, [U("0", 2), A("0", 12)], False)
    step(sim, fcfs_avail(4))
    first = sim.results()[0]
    assert (first.job_id, first.final_state) == ("0", "COMPLETED_SUCCESSFULLY")
    assert first.finish_time == pytest.approx(5.0, abs=1e-6)  # (the actors' sub-ns times)


def test_unknown_types_need_forwarding(tmp_path):
    with pytest.raises(ConfigError, match=r"e.txt:4: unknown event type 'foo'"):
        session(tmp_path, EVENTS, False)


@pytest.mark.parametrize("instant", [False, True], ids=["actors", "instant"])
def test_empty_event_files_say_goodbye_at_once(tmp_path, instant):
    """As the binary: after the first submission (the job submitter started first)."""
    sim = session(tmp_path, [], False, instant)
    got = summary(step(sim, fcfs_avail(4)))
    assert got[0] == (0.0, [("JOB_", "w0!0"), ("NOTI", "no_more_external_event_to_occur")])
    assert got[-1] == (9.0, [("SIMU", None)])


def test_event_files_run_on_the_delayed_model(tmp_path, monkeypatch):
    """The delayed model (latencies on routes the actor model does not read): an event file's
    submitter on the master host (no latency to itself here) sends its batches at their times;
    a job's end takes its host's 1 ms link, so the end at 3 s comes with the event of 3 s, the
    last job end and NOTIFY no_more_external_event_to_occur at 3.001 s (as the binary:
    test_serve_events_vs_real.py)."""
    import hdrm.batsim.server as server_module
    from hdrm.batsim.delayed import DelayedSimulation
    monkeypatch.setattr(server_module, "message_bandwidths", lambda *args, **kwargs: None)
    platform = tmp_path / "p.xml"
    platform.write_text(write_platform(tmp_path / "q.xml", 4).read_text().replace(
        'latency="0us"', 'latency="1ms"'))
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5), (2, 1, 1)])
    events = write_events(tmp_path / "e.txt", [U("0", 1), A("0", 3)])
    options = ServeOptions(export_prefix=None, config=ServerConfig(events=(str(events),)))
    sim = BatsimServer(platform, workload, options).simulation
    assert isinstance(sim, DelayedSimulation)
    got = [(json.loads(m)["now"], [(e["timestamp"], e["type"], e["data"].get("type"))
                                   for e in json.loads(m)["events"]])
           for m in step(sim, fcfs_avail(4))[1:]]
    assert got == [
        (0.0, [(0.0, "JOB_SUBMITTED", None)]),
        (1.0, [(1.0, "NOTIFY", "event_machine_unavailable")]),
        (2.0, [(2.0, "JOB_SUBMITTED", None)]),
        (2.0, [(2.0, "NOTIFY", "no_more_static_job_to_submit")]),
        (3.001, [(3.0, "NOTIFY", "event_machine_available"), (3.001, "JOB_COMPLETED", None),
                 (3.001, "NOTIFY", "no_more_external_event_to_occur")]),
        (5.001, [(5.001, "JOB_COMPLETED", None)]),
        (5.001, [(5.001, "SIMULATION_ENDS", None)])]


# ---------------------------------------------------------------------------------- command line
def test_the_command_line_refuses_a_bad_event_file_in_one_line(tmp_path, capsys):
    from hdrm.cli.main import main
    platform = write_platform(tmp_path / "p.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5)])
    events = write_events(tmp_path / "e.txt", [U("0", 1), {"type": "reboot", "timestamp": 2}])
    status = main(["serve", "-p", str(platform), "-w", str(workload), "--events", str(events),
                   "-s", "tcp://localhost:1", "--timeout", "1"])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1
    assert f"--events {events}:2: unknown event type 'reboot'" in err


def test_the_command_line_passes_the_options(monkeypatch, tmp_path):
    import hdrm.batsim.server as server_module
    from hdrm.cli.main import main
    seen = {}

    def fake_serve(platform, workloads, options):
        seen["options"] = options
        raise ConfigError("stopped here")
    monkeypatch.setattr(server_module, "serve", fake_serve)
    platform = write_platform(tmp_path / "p.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5)])
    assert main(["serve", "-p", str(platform), "-w", str(workload), "--events", "a.txt",
                 "--events", "b.txt", "--forward-unknown-events", "-e", str(tmp_path / "o")]) == 2
    config = seen["options"].config
    assert config.events == ("a.txt", "b.txt") and config.forward_unknown_events is True
