"""Scenarios a Batsim user feeds hdrm, run under the REAL Batsim 4.2.1 and under hdrm (session 23).

* Two clusters of different speeds and sizes behind a master host, with power states and energy,
  hosts of one or four cores, two- or three-value wattages: pybatsim's easyBackfill under the
  real Batsim and under ``hdrm serve`` gives the same rows (states, resources, times) and the
  same energies, per job and in total (``test_user_scenarios.py`` has the hand-checked rules).
* The energy window of ``consumed_joules`` (first submission to last end), as hand-computed.
* The job-id rule of ``check_batsim_ids`` is the binary's: it aborts on exactly those ids.
* An SWF trace converted by ``hdrm workload --json`` (KTH-SP2, three times its load) replayed by
  the ``batsim`` engine equals the built-in engine job by job.
* A parallel job whose work ends exactly at its walltime, started in the same decision after
  another parallel job: Batsim kills it at its walltime (the built-in engine too since session
  24), and the other cases of ``test_walltime_ties.py``: ``hdrm serve`` decides them as the binary.

Skipped, with the reason, when no real Batsim can run (``real_batsim.py``); ``-m slow`` runs them.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import REPO, PybatsimProcess, RawScheduler, fcfs
from real_batsim import real_batsim
from test_user_scenarios import (
    ACCEPTED_VALUES,
    LATENCY_PLATFORM,
    LATENCY_WORKLOAD,
    MASTER_CASES,
    PLATFORM,
    REFUSED_VALUES,
    WINDOW_WORKLOAD,
    master_platform,
    one_job_workload,
    slow_down_at_submission,
    state_change_acks,
    write_inputs,
)
from test_walltime_ties import CASES as TIE_CASES
from test_walltime_ties import platform_xml, serve_messages, summary, write_case
from test_walltime_ties import scheduler as tie_scheduler

from hdrm.batsim.engine import replay_with_batsim
from hdrm.batsim.jobs import check_batsim_ids
from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.cli.main import main
from hdrm.errors import WorkloadError
from hdrm.policies.pairs import resolve_policy
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.inputs import InputSpec, load_inputs
from hdrm.workload.batsim_json import read_batsim_json

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

CLUSTERS = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
  <cluster id="fast" prefix="fast-" suffix=".grid" radical="0-3" speed="20Gf,15Gf" core="{cores}"
           bw="10GBps" lat="0us" bb_bw="40GBps" bb_lat="0us">
    <prop id="wattage_per_state" value="{fast_watts}"/>
  </cluster>
  <cluster id="slow" prefix="slow-" suffix=".grid" radical="0-7" speed="5Gf,3Gf"
           bw="10GBps" lat="0us" bb_bw="40GBps" bb_lat="0us">
    <prop id="wattage_per_state" value="40:80, 35:60"/>
  </cluster>
  <cluster id="mgmt" prefix="master_host" suffix="" radical="0-0" speed="1Gf"
           bw="10GBps" lat="0us" bb_bw="40GBps" bb_lat="0us">
    <prop id="role" value="master"/>
  </cluster>
  <link id="bb" bandwidth="40GBps" latency="0us"/>
  <zoneRoute src="fast" dst="slow" gw_src="fast-fast_router.grid" gw_dst="slow-slow_router.grid">
    <link_ctn id="bb"/></zoneRoute>
  <zoneRoute src="fast" dst="mgmt" gw_src="fast-fast_router.grid" gw_dst="master_hostmgmt_router">
    <link_ctn id="bb"/></zoneRoute>
  <zoneRoute src="slow" dst="mgmt" gw_src="slow-slow_router.grid" gw_dst="master_hostmgmt_router">
    <link_ctn id="bb"/></zoneRoute>
</zone></platform>
"""


def mixed_workload(seed: int, nb_jobs: int, nb_res: int) -> dict:
    """Delay and parallel jobs of 1 to all hosts, some killed at their walltime, first at > 0 s."""
    rng = random.Random(seed)
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        if rng.random() < 0.5:
            delay = round(rng.uniform(5, 200), 3)
            profiles[f"d{i}"] = {"type": "delay", "delay": delay}
            walltime = round(delay * rng.choice([0.8, 1.5, 3]), 3)
        else:
            cpu = rng.choice([1e10, 5e10, 2e11, 7.5e11])
            profiles[f"d{i}"] = {"type": "parallel_homogeneous", "cpu": cpu, "com": 0}
            walltime = round(cpu / 5e9 * rng.choice([0.45, 1.2, 3]), 3)
        jobs.append({"id": i, "subtime": round(rng.uniform(10, 600), 3), "walltime": walltime,
                     "res": rng.choice([1, 2, 3, 4, nb_res // 2, nb_res]), "profile": f"d{i}"})
    jobs.sort(key=lambda j: j["subtime"])
    return {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}


def real_and_serve(platform: Path, workload: Path, tmp_path: Path, scheduler: str = "easyBackfill"):
    """out_jobs.csv rows and out_schedule.csv of the real Batsim, then of hdrm serve."""
    sched = PybatsimProcess(scheduler, tmp_path / "real.log")
    try:
        done = subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-e",
                               str(tmp_path / "real"), "-s", sched.endpoint, "-E", "-q"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert sched.finish() == 0
    finally:
        sched.close()
    sched = PybatsimProcess(scheduler, tmp_path / "serve.log")
    try:
        serve(platform, workload, ServeOptions(sched.endpoint, str(tmp_path / "serve"), 30.0,
                                               ServerConfig(energy=True)))
        assert sched.finish() == 0
    finally:
        sched.close()
    return [(read_jobs_csv(tmp_path / f"{who}_jobs.csv"),
             read_schedule_csv(tmp_path / f"{who}_schedule.csv")) for who in ("real", "serve")]


@pytest.mark.parametrize("cores, fast_watts", [(1, "95:200, 90:160"), (4, "95:200, 90:160"),
                                               (1, "95:120:200, 90:110:160")])
def test_two_clusters_with_power_states_as_the_real_batsim(cores, fast_watts, tmp_path):
    (tmp_path / "platform.xml").write_text(CLUSTERS.format(cores=cores, fast_watts=fast_watts))
    (tmp_path / "workload.json").write_text(json.dumps(mixed_workload(23, 60, 12)))
    (real, real_sched), (ours, our_sched) = real_and_serve(
        tmp_path / "platform.xml", tmp_path / "workload.json", tmp_path)
    mine = {r.job_id: r for r in ours}
    assert sorted(mine) == sorted(r.job_id for r in real)
    spanning = 0
    for row in real:
        got = mine[row.job_id]
        assert (got.final_state, got.allocated_resources) == (row.final_state,
                                                              row.allocated_resources)
        assert got.starting_time == pytest.approx(row.starting_time, abs=1e-6)
        assert got.finish_time == pytest.approx(row.finish_time, abs=1e-6)
        assert got.consumed_energy == pytest.approx(row.consumed_energy, rel=1e-9), row.job_id
        spanning += "-" in row.allocated_resources and row.profile.startswith("d")
    assert spanning > 10  # jobs on several hosts: some over both clusters
    assert {r.final_state for r in real} == {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"}
    assert our_sched["consumed_joules"] == pytest.approx(real_sched["consumed_joules"], rel=1e-9)


def test_consumed_joules_window_as_the_real_batsim(tmp_path):
    """The hand-computed 700 J of test_user_scenarios (first job at 10 s, last end at 18 s)."""
    platform, workload = write_inputs(tmp_path, WINDOW_WORKLOAD)
    assert "h1" in PLATFORM
    scheduler = RawScheduler(fcfs(2))
    scheduler.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-e",
                               str(tmp_path / "out"), "-s", scheduler.endpoint, "-E", "-q"],
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    assert read_schedule_csv(tmp_path / "out_schedule.csv")["consumed_joules"] == 700.0


@pytest.mark.parametrize("job_id", [2**31 - 1, 2**31, -2**31, -2**31 - 1, "a.b", "a!b"])
def test_job_ids_refused_exactly_where_the_real_batsim_aborts(job_id, tmp_path):
    doc = {"nb_res": 2, "profiles": {"d": {"type": "delay", "delay": 1}},
           "jobs": [{"id": job_id, "subtime": 0, "res": 1, "profile": "d"}]}
    platform, workload = write_inputs(tmp_path, doc)
    try:
        check_batsim_ids(read_batsim_json(workload), "")
        refused = False
    except WorkloadError:
        refused = True
    scheduler = RawScheduler(fcfs(2))
    scheduler.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-e",
                               str(tmp_path / "out"), "-s", scheduler.endpoint, "-q"],
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()
    assert (done.returncode != 0) == refused, done.stderr[-1000:]


def run_fcfs(platform: Path, workload: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    scheduler = RawScheduler(fcfs(2))
    scheduler.start()
    try:
        return subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-e",
                               str(tmp_path / "out"), "-s", scheduler.endpoint, "-q"],
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()


@pytest.mark.parametrize("case", sorted(REFUSED_VALUES) + sorted(ACCEPTED_VALUES))
def test_workload_values_refused_where_the_real_batsim_aborts(case, tmp_path):
    fields, profile = (REFUSED_VALUES.get(case) or ACCEPTED_VALUES[case])[:2]
    platform, workload = write_inputs(tmp_path, one_job_workload(fields, profile))
    done = run_fcfs(platform, workload, tmp_path)
    assert (done.returncode != 0) == (case in REFUSED_VALUES), done.stderr[-1000:]
    if case == "cpu 0":  # "computed in null time. Putting epsilon instead": 1e-5 s in the row
        row = (tmp_path / "out_jobs.csv").read_text().splitlines()[1].split(",")
        assert row[8:11] == ["0.000000", "0.000010", "0.000010"]


@pytest.mark.parametrize("case", sorted(MASTER_CASES))
def test_master_host_refused_where_the_real_batsim_aborts(case, tmp_path):
    platform = master_platform(tmp_path, MASTER_CASES[case][0])
    (tmp_path / "w.json").write_text(json.dumps(one_job_workload({}, {"type": "delay",
                                                                      "delay": 1})))
    done = run_fcfs(platform, tmp_path / "w.json", tmp_path)
    assert (done.returncode != 0) == (MASTER_CASES[case][1] is not None), done.stderr[-1000:]


def replay_both(platform: str, workload: Path, policy: str, config: SimulationConfig,
                outdir: Path) -> list[str]:
    """Jobs whose state, cores or times (1 ms) differ between the two engines."""
    plat, wl = load_inputs(InputSpec(workload_path=str(workload), platform_path=platform))
    expected = Simulation(plat, wl, config).run(resolve_policy(policy))
    _, paths = replay_with_batsim(plat, wl, resolve_policy(policy), config, outdir,
                                  binary=BATSIM)
    rows = {r.job_id: r for r in read_jobs_csv(paths["jobs"])}
    assert len(rows) == len(wl.jobs)
    differ = []
    for out in expected.outcomes:
        row = rows[str(out.job.id)]
        same = (row.final_state, row.core_ids()) == (out.state, sorted(out.cores))
        if same and out.state != "REJECTED":
            same = (abs(row.starting_time - out.start_s) <= 1e-3
                    and abs(row.finish_time - out.finish_s) <= 1e-3)
        if not same:
            differ.append(str(out.job.id))
    return differ


@pytest.mark.parametrize("policy, backfill, contention", [
    ("fcfs", "easy", "hdeeprm"), ("smallest-low_power", "conservative", "none")])
def test_converted_swf_trace_under_the_batsim_engine(policy, backfill, contention, tmp_path):
    """hdrm workload --json of another trace than the shipped SDSC slice, at 3 x its load: queues,
    rejections (jobs wider than tiny_hetero) and walltime kills."""
    wl = tmp_path / "kth.json"
    assert main(["workload", str(REPO / "workloads" / "KTH-SP2-1996-2.1-cln_27200-27399.swf"),
                 "--platform", str(REPO / "platforms" / "tiny_hetero.json"), "--load-factor", "3",
                 "--json", str(wl)]) == 0
    config = SimulationConfig(contention=contention, backfilling=backfill, seed=0)
    assert replay_both(str(REPO / "platforms" / "tiny_hetero.json"), wl, policy, config,
                       tmp_path / "run") == []


TIE = {"nb_res": 16, "profiles": {"d": {"type": "delay", "delay": 500},
                                  "d5": {"type": "delay", "delay": 5},
                                  "w": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0}},
       "jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": 100, "profile": "d5"},
                {"id": 111, "subtime": 1587.026, "res": 16, "walltime": 165.803, "profile": "d"},
                {"id": 103, "subtime": 1600, "res": 1, "walltime": 1, "profile": "w"},
                {"id": 25, "subtime": 1600, "res": 4, "walltime": 1, "profile": "w"}]}


def test_walltime_tie_started_with_another_parallel_job(tmp_path):
    """Jobs 103 and 25 (1e10 flops per host at 10 GFLOP/s, walltime 1 s) start together when job
    111 is killed at its walltime (t = 1752.829), job 103 first. Both end at their walltime with
    their work done; Batsim kills job 25 there: its EXECUTE_JOB reached Batsim's server 1e-10 s
    after job 103's (a one-byte message on the master host's loopback), so job 103's end is a
    SimGrid step 1e-10 s before job 25's, within the 1e-9 s timing precision of job 25's walltime
    timer, which fires first (``hdrm.sim.running``; alone, job 25 succeeds)."""
    hosts = "".join(f'<host id="h{i:02d}" speed="10Gf"/>' for i in range(16))
    (tmp_path / "p.xml").write_text(
        "<?xml version='1.0'?><!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">"
        "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
        f'<host id="master_host" speed="1Gf"/>{hosts}</zone></platform>')
    (tmp_path / "w.json").write_text(json.dumps(TIE))
    config = SimulationConfig(contention="none", backfilling="none", seed=0)
    assert replay_both(str(tmp_path / "p.xml"), tmp_path / "w.json", "fcfs", config,
                       tmp_path / "run") == []


def test_immediate_power_state_change_acknowledged_at_once(tmp_path):
    """The figures of test_user_scenarios' latency case, from the binary."""
    (tmp_path / "p.xml").write_text(LATENCY_PLATFORM)
    (tmp_path / "w.json").write_text(json.dumps(LATENCY_WORKLOAD))
    scheduler = RawScheduler(slow_down_at_submission)
    scheduler.start()
    try:  # -E: the real Batsim needs energy accounting for SET_RESOURCE_STATE
        done = subprocess.run([BATSIM, "-p", str(tmp_path / "p.xml"), "-w",
                               str(tmp_path / "w.json"), "-e", str(tmp_path / "out"), "-s",
                               scheduler.endpoint, "-q", "-E"],
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()
    assert done.returncode == 0, done.stderr[-1000:]
    assert state_change_acks(scheduler.received) == [(1.0, 1.0)]
    assert json.loads(scheduler.received[-2])["now"] == 5.0001


def test_power_state_change_without_energy_aborts_the_real_batsim(tmp_path):
    """Without -E the binary aborts on the first SET_RESOURCE_STATE, as hdrm serve refuses it
    (test_user_scenarios.py)."""
    (tmp_path / "p.xml").write_text(LATENCY_PLATFORM)
    (tmp_path / "w.json").write_text(json.dumps(LATENCY_WORKLOAD))
    scheduler = RawScheduler(slow_down_at_submission)
    scheduler.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(tmp_path / "p.xml"), "-w",
                               str(tmp_path / "w.json"), "-e", str(tmp_path / "out"), "-s",
                               scheduler.endpoint],
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()
    assert done.returncode != 0
    assert ("Receiving a pstate modification request, which is forbidden as Batsim has not been "
            "launched with energy support") in done.stdout + done.stderr


def toggling(nb_hosts: int):
    """FCFS, and hosts 4-7 to power state 1 during every other 137 s (0 otherwise), at the first
    message of each period: decisions that depend on times only, not on how events are grouped."""
    inner, current = fcfs(nb_hosts), [0]

    def reply(doc: dict) -> str:
        out = json.loads(inner(doc))
        want = int(doc["now"] // 137) % 2
        if want != current[0] and doc["events"][0]["type"] != "SIMULATION_ENDS":
            current[0] = want
            out["events"].insert(0, {"timestamp": doc["now"], "type": "SET_RESOURCE_STATE",
                                     "data": {"resources": "4-7", "state": str(want)}})
        return json.dumps(out)
    return reply


@pytest.mark.parametrize("latencies", [("0us", "0us"), ("50us", "500us")])
def test_power_state_changes_on_two_clusters_with_latencies(latencies, tmp_path):
    """Part loads re-timed by power-state changes (both clusters in one job), with and without
    link latencies (50 us node links, 500 us backbones): the same rows within 2 us and the same
    per-job energies (before the acknowledgement fix, serve's starts drifted by 0.3 ms a change)."""
    lat, bb_lat = latencies
    xml = CLUSTERS.format(cores=4, fast_watts="95:200, 90:160")
    (tmp_path / "platform.xml").write_text(xml.replace('lat="0us"', f'lat="{lat}"')
                                           .replace('bb_lat="0us"', f'bb_lat="{bb_lat}"'))
    (tmp_path / "workload.json").write_text(json.dumps(mixed_workload(23, 60, 12)))
    rows = []
    for who in ("real", "serve"):
        scheduler = RawScheduler(toggling(12))
        scheduler.start()
        try:
            if who == "real":
                done = subprocess.run([BATSIM, "-p", str(tmp_path / "platform.xml"), "-w",
                                       str(tmp_path / "workload.json"), "-e", str(tmp_path / who),
                                       "-s", scheduler.endpoint, "-q", "-E"],
                                      capture_output=True, text=True, timeout=120)
                assert done.returncode == 0, done.stderr[-1000:]
            else:
                serve(tmp_path / "platform.xml", tmp_path / "workload.json",
                      ServeOptions(scheduler.endpoint, str(tmp_path / who), 30.0,
                                   ServerConfig(energy=True)))
        finally:
            scheduler.stop()
        rows.append({r.job_id: r for r in read_jobs_csv(tmp_path / f"{who}_jobs.csv")})
    real, ours = rows
    assert sorted(real) == sorted(ours)
    for job_id, row in real.items():
        got = ours[job_id]
        assert (got.final_state, got.allocated_resources) == (row.final_state,
                                                              row.allocated_resources), job_id
        # both rows print 6 decimals: 2 us between them is a rounding
        assert got.starting_time == pytest.approx(row.starting_time, abs=2e-6), job_id
        assert got.finish_time == pytest.approx(row.finish_time, abs=2e-6), job_id
        assert got.consumed_energy == pytest.approx(row.consumed_energy, rel=1e-9), job_id


#: Ties whose messages would differ in order or split only: none since hdrm serve runs these
#: sessions in its actor model (the instant model's approximation differed on delay_second and
#: tie_then_longer_walltime).
ORDER_APPROXIMATED: set[str] = set()


@pytest.mark.parametrize("energy", [False, True])
@pytest.mark.parametrize("name", sorted(TIE_CASES))
def test_walltime_ties_as_the_real_batsim(name, energy, tmp_path):
    """The cases of ``test_walltime_ties.py`` under the binary and ``hdrm serve``: the final
    states recorded there, the same job rows (resources, finish time) and, but for
    ``ORDER_APPROXIMATED``, the same messages (events, order, split)."""
    platform, workload = write_case(tmp_path, name)
    sched = tie_scheduler(TIE_CASES[name][1])
    sched.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-e",
                               str(tmp_path / "real"), "-s", sched.endpoint, "-q"]
                              + (["-E"] if energy else []),
                              capture_output=True, text=True, timeout=60)
    finally:
        sched.stop()
    assert done.returncode == 0, done.stderr[-1000:]
    real = {r.job_id: r for r in read_jobs_csv(tmp_path / "real_jobs.csv")}
    assert {int(k): r.final_state for k, r in real.items()} == TIE_CASES[name][2]
    ours = serve_messages(tmp_path, name, energy)
    if name not in ORDER_APPROXIMATED:
        assert summary(ours) == summary(sched.received)
    rows = {r.job_id: r for r in read_jobs_csv(tmp_path / "serve_jobs.csv")}
    for job_id, row in real.items():
        assert (rows[job_id].final_state, rows[job_id].allocated_resources) == (
            row.final_state, row.allocated_resources), job_id
        assert rows[job_id].finish_time == pytest.approx(row.finish_time, abs=1e-6), job_id


@pytest.mark.parametrize("energy", [False, True])
def test_walltime_tie_with_energy_and_a_parallel_profile(energy, tmp_path):
    """A ``parallel`` profile (a cpu vector, no communication) behaves as parallel_homogeneous:
    of two ties started together the second is killed; so with -E (binary only: hdrm serve
    refuses the ``parallel`` profile)."""
    (tmp_path / "p.xml").write_text(platform_xml())
    (tmp_path / "w.json").write_text(json.dumps({
        "nb_res": 16, "profiles": {"p": {"type": "parallel", "cpu": [1e10, 1e10],
                                         "com": [0, 0, 0, 0]}},
        "jobs": [{"id": i, "subtime": 0, "res": 2, "walltime": 1, "profile": "p"}
                 for i in (1, 2)]}))
    sched = tie_scheduler(None)
    sched.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(tmp_path / "p.xml"), "-w",
                               str(tmp_path / "w.json"), "-e", str(tmp_path / "real"), "-s",
                               sched.endpoint, "-q"] + (["-E"] if energy else []),
                              capture_output=True, text=True, timeout=60)
    finally:
        sched.stop()
    assert done.returncode == 0, done.stderr[-1000:]
    rows = {r.job_id: r.final_state for r in read_jobs_csv(tmp_path / "real_jobs.csv")}
    assert rows == {"1": "COMPLETED_SUCCESSFULLY", "2": "COMPLETED_WALLTIME_REACHED"}


def tie_workload(seed: int) -> tuple[dict, list[int]]:
    """30 jobs submitted at whole seconds 0-15 on 16 hosts of 10 GFLOP/s, most of them exact
    ties (parallel_homogeneous jobs of 1-3 s with the same walltime), some parallel jobs with
    another walltime, delay jobs; and four requested calls at whole seconds."""
    rng = random.Random(seed)
    profiles, jobs = {}, []
    for i in range(30):
        if rng.random() < 0.6:
            k = rng.choice([1, 2, 3])
            profiles[f"p{i}"] = {"type": "parallel_homogeneous", "cpu": k * 1e10, "com": 0}
            wall = k if rng.random() < 0.7 else k + rng.choice([-0.5, 1])
        else:
            delay = rng.choice([1, 2, 3])
            profiles[f"p{i}"] = {"type": "delay", "delay": delay}
            wall = rng.choice([delay, delay + 1, 100])
        jobs.append({"id": i, "subtime": rng.randint(0, 15), "res": rng.randint(1, 6),
                     "walltime": wall, "profile": f"p{i}"})
    jobs.sort(key=lambda j: j["subtime"])
    return {"nb_res": 16, "profiles": profiles, "jobs": jobs}, sorted(rng.sample(range(1, 20), 4))


def tie_states(seed: int, tmp_path: Path) -> tuple[dict[int, str], dict[int, str]]:
    """Final states of ``tie_workload(seed)`` under the binary, then under hdrm serve (FCFS, the
    calls asked at the first submission)."""
    doc, calls = tie_workload(seed)
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "p.xml").write_text(platform_xml())
    (tmp_path / "w.json").write_text(json.dumps(doc))
    out = []
    for who in ("real", "serve"):
        inner, asked = fcfs(16), [False]

        def reply(msg: dict, inner=inner, asked=asked) -> str:
            answer = json.loads(inner(msg))
            if not asked[0] and any(e["type"] == "JOB_SUBMITTED" for e in msg["events"]):
                asked[0] = True
                answer["events"] += [{"timestamp": msg["now"], "type": "CALL_ME_LATER",
                                      "data": {"timestamp": c}} for c in calls]
            return json.dumps(answer)
        sched = RawScheduler(reply)
        sched.start()
        try:
            if who == "real":
                done = subprocess.run([BATSIM, "-p", str(tmp_path / "p.xml"), "-w",
                                       str(tmp_path / "w.json"), "-e", str(tmp_path / who), "-s",
                                       sched.endpoint, "-q"], capture_output=True, text=True,
                                      timeout=60)
                assert done.returncode == 0, done.stderr[-1000:]
            else:
                serve(tmp_path / "p.xml", tmp_path / "w.json",
                      ServeOptions(sched.endpoint, str(tmp_path / who), 30.0))
        finally:
            sched.stop()
        rows = read_jobs_csv(tmp_path / f"{who}_jobs.csv")
        out.append({int(r.job_id): r.final_state for r in rows})
    return out[0], out[1]


def test_seeded_walltime_ties_as_the_real_batsim(tmp_path):
    """20 seeded tie-heavy workloads: every job ends in the binary's state under hdrm serve (its
    actor model; 13 of the 600 jobs differed under the instant model with B's rule, 202 before
    it). Its messages too: runs/s24l/exp.py, PLAT=noroute, 20/20 with and without -E."""
    differ = 0
    for seed in range(20):
        real, ours = tie_states(seed, tmp_path / str(seed))
        assert sorted(real) == sorted(ours)
        differ += sum(real[k] != ours[k] for k in real)
        if seed == 3:  # the case of the test below
            assert real[27] == "COMPLETED_SUCCESSFULLY"
    assert differ == 0


def test_seeded_walltime_tie_decided_by_message_offsets(tmp_path):
    """Seed 3, job 27 (a tie started at 4 s, first of its decision) succeeds at 6 s under the
    binary although delay job 13, started at 3 s, ends then too: decided by the sub-nanosecond
    message times of Batsim's actors (a strict xfail under the instant model)."""
    real, ours = tie_states(3, tmp_path)
    assert ours == real
