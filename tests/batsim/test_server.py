"""``hdrm serve`` over real ZeroMQ: transcripts, output files, time-outs, bad replies.

The golden cases of the real Batsim are in ``test_goldens.py``; the comparisons with the real
binary on tie-heavy workloads in ``test_serve_vs_real.py``.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
import zmq
from batsim_helpers import GOLDEN, REPO, PybatsimProcess, RawScheduler, fcfs, read_session, replay

from hdrm.batsim.server import BatsimServer, ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.errors import ProtocolError
from hdrm.results.csvio import read_schedule_csv


def test_transcript_of_pstate_demo_equals_the_recorded_session(tmp_path):
    case = GOLDEN / "pstate_slowdown"
    sched = PybatsimProcess(str(case / "pstateDemo.py"), tmp_path / "sched.log")
    try:
        options = ServeOptions(sched.endpoint, None, 20.0, ServerConfig(energy=True), record=True)
        result = serve(case / "platform.xml", case / "workload.json", options)
        sched.finish()
    finally:
        sched.close()
    recorded = read_session(case / "session.txt")
    assert len(result.transcript) == len(recorded) == 28
    for (who, text), rec in list(zip(result.transcript, recorded))[1:]:
        assert who == rec.sender
        assert (text if who == "batsim" else text.replace(" ", "")) == (
            rec.text if who == "batsim" else rec.text.replace(" ", ""))
    assert result.files == []


def test_outputs_are_batsim_files(tmp_path):
    scheduler = RawScheduler(fcfs(4))
    scheduler.start()
    try:
        prefix = tmp_path / "deep" / "run" / "out"
        options = ServeOptions(scheduler.endpoint, str(prefix), 10.0)
        result = serve(GOLDEN / "small_delays" / "platform.xml", GOLDEN / "small_delays" / "workload.json", options)
    finally:
        scheduler.stop()
    assert scheduler.error is None
    assert [f.name for f in result.files] == ["out_jobs.csv", "out_schedule.csv",
                                              "out_machine_states.csv", "out_schedule.trace"]
    lines = (tmp_path / "deep" / "run" / "out_jobs.csv").read_text().splitlines()
    # the platform's 15 us loopback: greeting, SCHED_READY, batch, EXECUTE_JOB (as Batsim: 0.000060)
    assert lines[1] == ("0,w0,delay10,0.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,0.000060,10.000000,"
                        "10.000060,0.000060,10.000060,1.000006,0,-1.000000,\"\"")
    schedule = read_schedule_csv(tmp_path / "deep" / "run" / "out_schedule.csv")
    # the last job (27 s): its batch arrives 2 latencies late, its EXECUTE_JOB behind the goodbye
    assert schedule["nb_jobs"] == 10 and schedule["makespan"] == 37.00006 and schedule["consumed_joules"] == 0
    assert schedule["batsim_version"].startswith("hdrm-")


def test_no_scheduler_times_out(tmp_path):
    from batsim_helpers import free_port

    options = ServeOptions(f"tcp://localhost:{free_port()}", None, 0.3)
    with pytest.raises(ProtocolError, match=r"no reply from the decision process at tcp://localhost:\d+ "
                                            r"within 0.3 s; is a scheduler bound there"):
        serve(GOLDEN / "small_delays" / "platform.xml", GOLDEN / "small_delays" / "workload.json", options)


def test_invalid_reply_stops_the_session(tmp_path):
    # answered at t=1 (the first submission reaches the server at 0.000045 s on this platform)
    bad = '{"now": 1, "events": [{"timestamp": 1, "type": "EXECUTE_JOB", "data": {"job_id": "w0!0", "alloc": "0-1"}}]}'
    scheduler = RawScheduler(replay(['{"now": 0, "events": []}', bad]))
    scheduler.start()
    try:
        server = BatsimServer(GOLDEN / "small_delays" / "platform.xml", GOLDEN / "small_delays" / "workload.json",
                              ServeOptions(scheduler.endpoint, None, 5.0))
        seen = []
        server.on_message = lambda who, text: seen.append(who)
        with pytest.raises(ProtocolError, match="job 'w0!0': alloc '0-1' has 2 resources, the job requests 1"):
            server.run()
    finally:
        scheduler.stop()
    assert seen == ["batsim", "scheduler", "batsim", "scheduler"]


def _reply_bytes(socket: zmq.Socket, replies: list[bytes]) -> None:
    """Answer each request with the next raw reply (a thread of the test below)."""
    for reply in replies:
        if not socket.poll(30_000):
            return
        socket.recv()
        socket.send(reply)


def test_non_utf8_reply_is_a_one_line_error(tmp_path):
    """A scheduler replying with bytes that are not UTF-8 (here Latin-1 text) ends ``hdrm serve``
    with one line naming the peer, the message it answered and the bad byte (was a traceback)."""
    context = zmq.Context()
    socket = context.socket(zmq.REP)
    socket.setsockopt(zmq.LINGER, 0)
    port = socket.bind_to_random_port("tcp://127.0.0.1")
    replies = [b'{"now": 0, "events": []}', '{"now": 1, "events": [], "note": "d\u00e9j\u00e0"}'.encode("latin-1")]
    thread = threading.Thread(target=_reply_bytes, args=(socket, replies), daemon=True)
    thread.start()
    small = GOLDEN / "small_delays"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "hdrm.cli.main", "serve", "-p", str(small / "platform.xml"),
             "-w", str(small / "workload.json"), "-s", f"tcp://127.0.0.1:{port}", "-e", str(tmp_path / "out"),
             "--timeout", "20"],
            capture_output=True, text=True, timeout=120, cwd=REPO,
        )
    finally:
        thread.join(35)
        socket.close(0)
        context.term()
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("hdrm serve: error: ")
    assert (f"the decision process at tcp://127.0.0.1:{port} replied to the message at t=0.000045 "
            "(JOB_SUBMITTED) with bytes that are not UTF-8 (byte 0xe9 at offset 35") in lines[0]
    assert not (tmp_path / "out_jobs.csv").exists()
