"""Inputs a Batsim user feeds ``hdrm serve`` and the ``batsim`` engine, and which the real Batsim
4.2.1 handles in a way the recorded cases did not show (found in session 23 by running new
scenarios under the real binary; ``test_real_batsim_scenarios.py`` checks them against it):

* a parallel job on hosts of different speeds, or on hosts of several cores, loads some of its
  hosts only in part, and SimGrid's energy plugin charges them less than their full wattage
  (``hdrm.batsim.partial_load``; the server charged full watts);
* ``consumed_joules`` in ``out_schedule.csv`` is the energy from the first job submission to the
  last job end (the server counted from time 0);
* job ids the real Batsim refuses (integers past 32 bits, text with ``!``) are refused in one
  line, by ``hdrm serve`` as by the ``batsim`` engine (which failed inside Batsim);
* ``hdrm serve`` refuses a second ``-w`` in one line (it kept the last one silently).

Every figure below is computed by hand from SimGrid's rule ``epsilon + load x (full - epsilon)``
and was measured with the real binary on the same inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, fcfs

from hdrm.batsim.hosts import HostBoard, load_hosts
from hdrm.batsim.jobs import check_batsim_ids, read_job_table
from hdrm.batsim.process import run_batsim
from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.cli.main import main
from hdrm.errors import PlatformError, WorkloadError
from hdrm.platform.simgrid import HostSpec, platform_from_simgrid
from hdrm.results.csvio import read_schedule_csv
from hdrm.workload.batsim_json import read_batsim_json
from hdrm.workload.job import Job, Workload

FAST = HostSpec("fast", (20.0, 15.0), 0, ((95.0, 200.0), (90.0, 160.0)), None,
                {"wattage_per_state": "95:200, 90:160"})
SLOW = HostSpec("slow", (5.0, 3.0), 0, ((40.0, 80.0), (35.0, 60.0)), None,
                {"wattage_per_state": "40:80, 35:60"})


def _fast(cores: int = 1, watts: str = "95:200, 90:160") -> HostSpec:
    pairs = tuple((float(p.split(":")[0]), float(p.split(":")[-1])) for p in watts.split(","))
    return HostSpec("fast", (20.0, 15.0), 0, pairs, None, {"wattage_per_state": watts}, cores)


def _run_job(board: HostBoard, hosts: list[int], gflop: float) -> float:
    board.start(0, hosts, ops_gflop=gflop)
    ((_, end),) = board.advance(100.0)
    return end.energy_j


def test_the_fast_host_of_a_two_speed_job_draws_part_power():
    """50 GFLOP per host, 20 and 5 GFLOP/s: 10 s at the slow host's pace; the fast host is loaded
    at 5 / 20: 95 + 0.25 x 105 = 121.25 W, the slow one 80 W (was 200 + 80 W: 2,800 J)."""
    board = HostBoard([FAST, SLOW])
    assert _run_job(board, [0, 1], 50.0) == pytest.approx(10 * (121.25 + 80.0))
    assert board.energy_j() == pytest.approx(2012.5 + 90 * (95 + 40))  # then idle to 100 s


def test_a_host_of_four_cores_is_loaded_a_quarter_by_one_task():
    """core="4": a task uses one core of the host, so the load is divided by 4."""
    board = HostBoard([_fast(cores=4), SLOW])
    assert _run_job(board, [0, 1], 50.0) == pytest.approx(10 * (95 + 0.0625 * 105 + 80.0))
    alone = HostBoard([_fast(cores=4)])
    assert _run_job(alone, [0], 10.0) == pytest.approx(0.5 * (95 + 0.25 * 105))


def test_epsilon_of_three_wattage_values():
    """idle:epsilon:full: a loaded host draws epsilon + load x (full - epsilon)."""
    board = HostBoard([_fast(watts="95:120:200, 90:110:160"), SLOW])
    assert _run_job(board, [0, 1], 50.0) == pytest.approx(10 * (120 + 0.25 * 80 + 80.0))


def test_a_power_state_change_re_times_the_load():
    """The slow host goes to 3 GFLOP/s after 5 s: the remaining 25 GFLOP take 25/3 s, the fast host
    loaded at 3 / 20 (95 + 0.15 x 105 W), the slow one at 60 W."""
    board = HostBoard([FAST, SLOW])
    board.start(0, [0, 1], ops_gflop=50.0)
    board.advance(5.0)
    board.request([1], 1, "test")
    ((t, end),) = [e for e in board.advance(100.0) if not isinstance(e[1], tuple)]
    assert t == pytest.approx(5 + 25 / 3)
    assert end.energy_j == pytest.approx(5 * 201.25 + 25 / 3 * (95 + 0.15 * 105 + 60.0))


def test_equal_hosts_and_equal_idle_and_full_watts_are_unchanged():
    """hdrm's exported hosts give equal idle and full watts: no part load to count."""
    same = HostSpec("h", (10.0,), 0, ((100.0, 100.0),), None, {"wattage_per_state": "100:100"})
    board = HostBoard([same, same])
    assert _run_job(board, [0, 1], 100.0) == 2000.0


def test_core_attribute_is_read_and_checked(tmp_path):
    xml = ("<?xml version='1.0'?><!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">"
           "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
           '<zone id="m" routing="Full"><host id="master_host" speed="1Gf"/></zone>'
           '<cluster id="c" prefix="n" suffix="" radical="0-1" speed="1Gf" core="{}" bw="1GBps" '
           'lat="0us"/><link id="l" bandwidth="1GBps" latency="0"/>'  # the route to the master
           '<zoneRoute src="c" dst="m" gw_src="nc_router" gw_dst="master_host"><link_ctn id="l"/>'
           '</zoneRoute></zone></platform>')
    (tmp_path / "p.xml").write_text(xml.format(4))
    assert [h.cores for h in load_hosts(tmp_path / "p.xml")] == [4, 4]
    (tmp_path / "p.xml").write_text(xml.format("x"))
    with pytest.raises(PlatformError, match=r"cluster 'c': core 'x' must be an integer >= 1"):
        load_hosts(tmp_path / "p.xml")


def two_hosts(speed: str, watts: str, latency: str) -> str:
    """A SimGrid platform of a master host and two hosts ``h0``, ``h1`` of ``speed`` and
    ``wattage_per_state`` ``watts``, all routes through one link of ``latency``."""
    hosts = "".join(f'<host id="h{i}" speed="{speed}"><prop id="wattage_per_state" '
                    f'value="{watts}"/></host>\n' for i in range(2))
    routes = "".join(f'<route src="{a}" dst="{b}"><link_ctn id="l"/></route>\n'
                     for a, b in (("master_host", "h0"), ("master_host", "h1"), ("h0", "h1")))
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1"><zone id="z" routing="Full">\n'
            '<host id="master_host" speed="1Gf"/>\n' + hosts
            + f'<link id="l" bandwidth="10GBps" latency="{latency}"/>\n' + routes
            + "</zone></platform>\n")


PLATFORM = two_hosts("10Gf", "10:100", "0us")
#: The first job comes at 10 s; the last ends at 18 s: consumed_joules counts [10, 18] only.
WINDOW_WORKLOAD = {"nb_res": 2, "profiles": {"d": {"type": "delay", "delay": 5},
                                             "w": {"type": "parallel_homogeneous", "cpu": 3e10,
                                                   "com": 0}},
                   "jobs": [{"id": 1, "subtime": 10, "res": 1, "profile": "d"},
                            {"id": 2, "subtime": 15, "res": 2, "profile": "w"}]}


def write_inputs(folder: Path, workload: dict) -> tuple[Path, Path]:
    (folder / "platform.xml").write_text(PLATFORM)
    (folder / "workload.json").write_text(json.dumps(workload))
    return folder / "platform.xml", folder / "workload.json"


def test_consumed_joules_runs_from_the_first_submission_to_the_last_end(tmp_path):
    """Hosts idle at 10 W: [10, 15] the delay job (idle) 2 x 10 x 5 = 100 J, [15, 18] the
    parallel job (full) 2 x 100 x 3 = 600 J; Batsim 4.2.1 writes 700 J (the server wrote 900 J,
    counting [0, 10] too). The total energy still counts from 0."""
    platform, workload = write_inputs(tmp_path, WINDOW_WORKLOAD)
    scheduler = RawScheduler(fcfs(2))
    scheduler.start()
    try:
        result = serve(platform, workload, ServeOptions(scheduler.endpoint, str(tmp_path / "out"),
                                                        10.0, ServerConfig(energy=True)))
    finally:
        scheduler.stop()
    assert scheduler.error is None
    assert read_schedule_csv(tmp_path / "out_schedule.csv")["consumed_joules"] == 700.0
    assert result.energy_j == pytest.approx(900.0, abs=1e-6)  # jobs end 0.1 ns late, as Batsim's


@pytest.mark.parametrize("job_id, message", [
    (2**31, "job id 2147483648 is outside Batsim's 32-bit integer ids (-2147483648..2147483647), "
            "which Batsim 4 refuses; write it as a string (\"2147483648\") or renumber the jobs"),
    (-2**31 - 1, "job id -2147483649 is outside Batsim's 32-bit integer ids"),
    ("user!7", "job id 'user!7' contains '!', which Batsim 4 refuses (it separates the workload id "
               "from the job id, as in 'w0!42'); rename the job"),
])
def test_job_ids_the_real_batsim_refuses(job_id, message, tmp_path, capsys):
    doc = {"nb_res": 2, "profiles": {"d": {"type": "delay", "delay": 5}},
           "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"},
                    {"id": job_id, "subtime": 1, "res": 1, "profile": "d"}]}
    platform, workload = write_inputs(tmp_path, doc)
    with pytest.raises(WorkloadError, match="workload.json: " + message.replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")):
        read_job_table(workload)
    assert main(["serve", "-p", str(platform), "-w", str(workload), "-s", "tcp://localhost:9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "use engine" not in err
    # the batsim engine refuses it before looking for Batsim (the binary need not exist)
    with pytest.raises(WorkloadError, match=r"or use engine 'builtin'$"):
        run_batsim(platform_from_simgrid(platform)[0], read_batsim_json(workload),
                   tmp_path / "run", None, binary=str(tmp_path / "no-batsim"))


@pytest.mark.parametrize("job_id", [2**31 - 1, -2**31, "user.7", "", "w0"])
def test_ids_batsim_accepts_pass(job_id):
    check_batsim_ids(Workload([Job(0, job_id, 0.0, 1, 10.0, 10.0)], "w"), "")  # no error


#: Workload values hdrm's reader lets pass and the real Batsim 4.2.1 refuses (it aborts), with
#: the line hdrm serve now stops with (test_real_batsim_scenarios.py checks the binary's side).
REFUSED_VALUES = {
    "walltime 0": ({"walltime": 0}, {"type": "delay", "delay": 1},
                   "jobs[0].walltime is 0, which Batsim 4 refuses; write -1 (or leave it out) for "
                   "no walltime, or a number > 0"),
    "walltime -5": ({"walltime": -5}, {"type": "delay", "delay": 1},
                    "jobs[0].walltime is -5, which Batsim 4 refuses"),
    "delay 0": ({}, {"type": "delay", "delay": 0},
                "job 1 has a delay of 0 s (profile 'p'), which Batsim 4 refuses (a delay must be "
                "> 0); give it a positive delay"),
    "no com": ({}, {"type": "parallel_homogeneous", "cpu": 1e9},
               "profiles.p has no 'com' field, which Batsim 4 refuses; add \"com\": 0"),
}
#: ... and values both accept.
ACCEPTED_VALUES = {
    "walltime -1": ({"walltime": -1}, {"type": "delay", "delay": 1}),
    "delay 1e-7": ({}, {"type": "delay", "delay": 1e-7}),
    "cpu 0": ({}, {"type": "parallel_homogeneous", "cpu": 0, "com": 0}),
}


def one_job_workload(job_fields: dict, profile: dict) -> dict:
    return {"nb_res": 2, "profiles": {"p": profile},
            "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p", **job_fields}]}


@pytest.mark.parametrize("case", sorted(REFUSED_VALUES))
def test_values_the_real_batsim_refuses(case, tmp_path, capsys):
    job_fields, profile, message = REFUSED_VALUES[case]
    platform, workload = write_inputs(tmp_path, one_job_workload(job_fields, profile))
    assert main(["serve", "-p", str(platform), "-w", str(workload), "-s", "tcp://localhost:9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize("case", sorted(ACCEPTED_VALUES))
def test_values_the_real_batsim_accepts(case, tmp_path):
    platform, workload = write_inputs(tmp_path, one_job_workload(*ACCEPTED_VALUES[case]))
    assert read_job_table(workload).jobs[0].batsim_id == "w0!1"


def test_a_job_of_no_work_is_written_as_lasting_ten_microseconds(tmp_path):
    """Batsim 4.2.1 writes a job that computed in no time with an execution time of 1e-5 s
    ("Putting epsilon instead"), its finish time moved with it; the run itself is not."""
    doc = one_job_workload({}, {"type": "parallel_homogeneous", "cpu": 0, "com": 0})
    doc["jobs"].append({"id": 2, "subtime": 0, "res": 1, "profile": "d"})
    doc["profiles"]["d"] = {"type": "delay", "delay": 3}
    platform, workload = write_inputs(tmp_path, doc)
    scheduler = RawScheduler(fcfs(2))
    scheduler.start()
    try:
        serve(platform, workload, ServeOptions(scheduler.endpoint, str(tmp_path / "out"), 10.0))
    finally:
        scheduler.stop()
    rows = (tmp_path / "out_jobs.csv").read_text().splitlines()
    assert rows[1].startswith("1,w0,p,0.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,0.000000,"
                              "0.000010,0.000010,0.000000,0.000010,")
    assert rows[2].startswith("2,w0,d,0.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,0.000000,"
                              "3.000000,3.000000,")


#: Platforms (their hosts) by how Batsim 4.2.1 finds its master host: None where it runs, else
#: hdrm serve's message where the binary aborts.
MASTER_CASES = {
    "named": ('<host id="master_host" speed="1Gf"/><host id="h0" speed="1Gf"/>', None),
    "by role": ('<host id="boss" speed="1Gf"><prop id="role" value="master"/></host>'
                '<host id="h0" speed="1Gf"/>', None),
    "none": ('<host id="h0" speed="1Gf"/><host id="h1" speed="1Gf"/>',
             "no master host, which Batsim 4 refuses; add a host named 'master_host' (or give one "
             "host the property role=master) for Batsim's server: it runs no job"),
    "two roles": ('<host id="b1" speed="1Gf"><prop id="role" value="master"/></host>'
                  '<host id="b2" speed="1Gf"><prop id="role" value="master"/></host>'
                  '<host id="h0" speed="1Gf"/>',
                  "2 master hosts (b1, b2: the host named 'master_host' and each host with "
                  "role=master count), which Batsim 4 refuses; keep exactly one"),
    "role on master_host": ('<host id="master_host" speed="1Gf"><prop id="role" value="master"/>'
                            '</host><host id="h0" speed="1Gf"/>',
                            "host 'master_host' is the master by its name and also has the "
                            "property role=master, which Batsim 4 refuses"),
}


def master_platform(folder: Path, hosts: str) -> Path:
    (folder / "p.xml").write_text(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        f'<platform version="4.1"><zone id="z" routing="Full">{hosts}</zone></platform>\n')
    return folder / "p.xml"


@pytest.mark.parametrize("case", sorted(MASTER_CASES))
def test_master_host_rule(case, tmp_path):
    hosts, message = MASTER_CASES[case]
    path = master_platform(tmp_path, hosts)
    if message is None:
        assert [h.name for h in load_hosts(path)][0] == "h0"
    else:
        with pytest.raises(PlatformError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_hosts(path)


LATENCY_PLATFORM = two_hosts("10Gf, 5Gf", "10:100, 10:50", "100us")


def slow_down_at_submission(doc: dict) -> str:
    """At the submission: host 0 to power state 1, then the job on hosts 0-1."""
    out = []
    for event in doc["events"]:
        if event["type"] == "JOB_SUBMITTED":
            out += [{"timestamp": doc["now"], "type": "SET_RESOURCE_STATE",
                     "data": {"resources": "0", "state": "1"}},
                    {"timestamp": doc["now"], "type": "EXECUTE_JOB",
                     "data": {"job_id": event["data"]["job_id"], "alloc": "0-1"}}]
    return json.dumps({"now": doc["now"], "events": out})


def state_change_acks(messages: list[str]) -> list[tuple[float, float]]:
    """(message now, event timestamp) of each RESOURCE_STATE_CHANGED received."""
    return [(doc["now"], e["timestamp"]) for doc in map(json.loads, messages)
            for e in doc["events"] if e["type"] == "RESOURCE_STATE_CHANGED"]


#: The job comes at 1 s; the reply's decisions reach the server at once (the master host's
#: loopback), which writes RESOURCE_STATE_CHANGED then; the job's end message (2e10 flops at
#: 5 GFLOP/s: 4 s) takes its host's 100 us: 5.0001 s (the real Batsim's figures).
LATENCY_WORKLOAD = {"nb_res": 2, "profiles": {"w": {"type": "parallel_homogeneous", "cpu": 2e10,
                                                    "com": 0}},
                    "jobs": [{"id": 1, "subtime": 1, "res": 2, "profile": "w"}]}


def test_an_immediate_power_state_change_is_acknowledged_when_the_server_handles_it(tmp_path):
    """With link latencies the acknowledgement of a change between computation states came one
    host latency late (posted as a message from the hosts): 1.0001 s instead of 1.0 s, where the
    real Batsim 4.2.1 writes it at once (test_real_batsim_scenarios.py checks the binary)."""
    (tmp_path / "p.xml").write_text(LATENCY_PLATFORM)
    (tmp_path / "w.json").write_text(json.dumps(LATENCY_WORKLOAD))
    scheduler = RawScheduler(slow_down_at_submission)
    scheduler.start()
    try:
        serve(tmp_path / "p.xml", tmp_path / "w.json",  # -E, as the real Batsim needs
              ServeOptions(scheduler.endpoint, str(tmp_path / "out"), 10.0,
                           ServerConfig(energy=True)))
    finally:
        scheduler.stop()
    assert state_change_acks(scheduler.received) == [(1.0, 1.0)]
    assert json.loads(scheduler.received[-2])["now"] == 5.0001  # the job's end


@pytest.mark.parametrize("energy", [False, True])
def test_serve_refuses_a_power_state_change_without_energy(energy, tmp_path, capsys):
    """The real Batsim 4.2.1 aborts on a SET_RESOURCE_STATE when launched without -E ("forbidden
    as Batsim has not been launched with energy support"; test_real_batsim_scenarios.py runs the
    binary); hdrm serve stops with one line, and serves the same session with -E."""
    (tmp_path / "p.xml").write_text(LATENCY_PLATFORM)
    (tmp_path / "w.json").write_text(json.dumps(LATENCY_WORKLOAD))
    scheduler = RawScheduler(slow_down_at_submission)
    scheduler.start()
    try:
        rc = main(["serve", "-p", str(tmp_path / "p.xml"), "-w", str(tmp_path / "w.json"), "-s",
                   scheduler.endpoint, "-e", str(tmp_path / "out"), *(["-E"] if energy else [])])
    finally:
        scheduler.stop()
    err = capsys.readouterr().err
    if energy:
        assert rc == 0 and (tmp_path / "out_jobs.csv").exists(), err
        return
    assert rc == 2 and err.count("\n") == 1, err
    assert ("SET_RESOURCE_STATE (event 0 of the reply at t=1.000000): a power-state change needs "
            "energy accounting; start hdrm serve with -E/--energy (as batsim needs -E)") in err
