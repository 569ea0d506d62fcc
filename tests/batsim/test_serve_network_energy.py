"""``hdrm serve -E`` with jobs that communicate: SimGrid 3.32's lazy host energy accounts
(:class:`hdrm.batsim.lazy_energy.HostAccounts`) on the ptask_L07 lmm system, hand-checked and
against Batsim 4.2.1 (messages, out_jobs.csv with consumed_energy, out_schedule.csv's
consumed_joules), with power-state changes, kills and energy queries."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest
from batsim_helpers import fcfs, ids_of, raw_session, start_in_order
from test_serve_energy_order import BATSIM, WHY_NOT
from test_serve_network import GOLDEN, HEAD, mixed_workload, various_workload

from hdrm.batsim.lazy_energy import HostAccounts

RANGES = [(100.0, 120.0, 200.0), (90.0, 95.0, 150.0)]  # (idle, epsilon, full) of states 0, 1
SPEEDS = [1e9, 0.5e9]


def accounts(usage: dict[int, float], cores: int = 1, speeds=SPEEDS) -> HostAccounts:
    return HostAccounts([RANGES], [speeds], [cores], [0], lambda h: usage[h])


# ---------------------------------------------------------------- the accounts, by hand
def test_the_time_since_the_last_update_is_charged_at_the_load_now():
    usage = {0: 0.25e9}
    acc = accounts(usage)
    acc.update(0, 2.0)  # load 0.25: 120 + 0.25 x 80 = 140 W for 2 s
    assert acc.energy_j[0] == pytest.approx(280.0)
    usage[0] = 1e9  # fully loaded from 2 s, read at 3 s: 200 W
    acc.update(0, 3.0)
    assert acc.energy_j[0] == pytest.approx(480.0)
    usage[0] = 0.0  # the load is 0 when the account is read at 5 s: all of [3, 5] at idle
    acc.update(0, 5.0)
    assert acc.energy_j[0] == pytest.approx(680.0)
    acc.update(0, 5.0)  # no time passed: nothing charged
    assert acc.energy_j[0] == pytest.approx(680.0) and acc.updated_s[0] == 5.0


def test_a_power_state_change_charges_the_state_the_account_had():
    usage = {0: 0.5e9}
    acc = accounts(usage)
    acc.set_pstate(0, 1, 1.0)  # [0, 1] in state 0 at load 0.5 of 1 Gflop/s: 160 W
    assert acc.energy_j[0] == pytest.approx(160.0)
    acc.update(0, 2.0)  # [1, 2] in state 1: 0.5 Gflop/s is its full speed: 150 W
    assert acc.energy_j[0] == pytest.approx(310.0)


def test_the_load_is_over_all_cores_and_a_speed_of_zero_is_full_load():
    acc = accounts({0: 1e9}, cores=4)  # a quarter of 4 cores: 120 + 0.25 x 80 = 140 W
    acc.update(0, 1.0)
    assert acc.energy_j[0] == pytest.approx(140.0)
    acc = accounts({0: 0.0}, speeds=[0.0, 0.0])  # nothing runs, speed 0: SimGrid says full
    acc.update(0, 1.0)
    assert acc.energy_j[0] == pytest.approx(200.0)


def test_batsim_sums_the_accounts_as_long_doubles():
    acc = HostAccounts([RANGES] * 3, [SPEEDS] * 3, [1] * 3, [0] * 3, lambda h: 0.0)
    acc.energy_j[:] = [1e16, 1.0, 1.0]
    assert isinstance(acc.total_j([0, 1, 2]), np.longdouble)
    assert acc.total_j([0, 1, 2]) - np.longdouble(1e16) == 2.0  # float64 would lose both


# ---------------------------------------------------------------- sessions
def cluster(path: Path, policy: str = "SHARED", watts: str = "100:200") -> Path:
    """6 nodes of 1 and 0.5 Gflop/s (2 power states when ``watts`` has two), 125 MBps and
    50 us links, a 250 MBps, 100 us backbone of ``policy``; the master behind a 1.25 GBps
    link."""
    speed = "1Gf,0.5Gf" if "," in watts else "1Gf"
    prop = f'<prop id="wattage_per_state" value="{watts}"/>'
    path.write_text(
        f'{HEAD}<zone id="AS0" routing="Full">'
        f'<cluster id="ca" prefix="c" suffix="" radical="0-5" speed="{speed}" '
        f'bw="125MBps" lat="50us" bb_bw="250MBps" bb_lat="100us" bb_sharing_policy="{policy}">'
        f'{prop}</cluster>'
        f'<cluster id="cm" prefix="master_host" suffix="" radical="0-0" speed="{speed}" '
        'bw="125MBps" lat="50us" bb_bw="2.25GBps" bb_lat="500us">'
        f'<prop id="role" value="master"/>{prop}</cluster>'
        '<link id="between" bandwidth="1.25GBps" latency="500us"/>'
        '<zoneRoute src="ca" dst="cm" gw_src="cca_router" gw_dst="master_hostcm_router">'
        '<link_ctn id="between"/></zoneRoute></zone></platform>\n')
    return path


def hosts(path: Path) -> Path:
    """../shared's small_various platform (a route between every two hosts), each host with a
    second power state at half speed and ``idle:epsilon:full`` watts."""
    import re

    def host(m: re.Match) -> str:
        speed = float(m.group(2))
        return (f'<host id="{m.group(1)}" speed="{speed}Mf,{speed / 2}Mf"><prop '
                'id="wattage_per_state" value="95:110:200,80:90:140"/></host>')

    text = (GOLDEN / "small_various" / "platform.xml").read_text()
    path.write_text(re.sub(r'<host id="([^"]+)" speed="([0-9.]+)Mf"/>', host, text))
    return path


def one_job(path: Path, cpu: float, com: float) -> Path:
    path.write_text(json.dumps({"nb_res": 6, "jobs": [
        {"id": "0", "subtime": 0, "res": 2, "profile": "p", "walltime": -1}], "profiles": {
        "p": {"type": "parallel_homogeneous", "cpu": cpu, "com": com}}}))
    return path


def rows(prefix: Path) -> list[dict]:
    with open(f"{prefix}_jobs.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("cpu,extra_w", [(0.0, 0.0), (1e8, 100 * 0.1 / 0.8)])
def test_a_network_bound_job_loads_its_hosts_in_part(tmp_path, cpu, extra_w):
    """2 hosts exchanging 1e8 bytes each way over their split-duplex 125 MBps links and the
    250 MBps backbone (0.8 s after 200 us of latency): with no flops they draw their idle
    100 W; with 1e8 flops each at a rate of 1/0.8 s, a load of 0.1 / 0.8, read once at the
    job's end, so the latency too is charged at 100 + 100 x 0.1 / 0.8 W (SimGrid's lazy
    account), per host."""
    prefix = tmp_path / "out"
    raw_session(fcfs(6), cluster(tmp_path / "p.xml"), one_job(tmp_path / "w.json", cpu, 1e8),
                prefix, True)
    row = rows(prefix)[0]
    duration = float(row["execution_time"])
    assert duration == pytest.approx(0.8 + 200e-6, abs=2e-6)
    assert float(row["consumed_energy"]) == pytest.approx(2 * (100 + extra_w) * duration,
                                                          abs=2e-5)


def test_a_computing_job_draws_full_power(tmp_path):
    prefix = tmp_path / "out"
    raw_session(fcfs(6), cluster(tmp_path / "p.xml"), one_job(tmp_path / "w.json", 2e9, 0),
                prefix, True)
    row = rows(prefix)[0]
    assert float(row["execution_time"]) == pytest.approx(2.0, abs=1e-6)
    assert float(row["consumed_energy"]) == pytest.approx(2 * 200 * 2.0, abs=1e-3)


def decider(nb: int, seed: int, kills: bool, pstates: bool):
    """FCFS; every 3rd reply kills the oldest running job, every 2nd switches 1-2 random hosts
    between power states 0 and 1, every 5th asks for the consumed energy."""
    base, rng, count, running = fcfs(nb), random.Random(seed * 7 + 1), [0], []

    def reply(doc: dict) -> str:
        out = json.loads(base(doc))
        count[0] += 1
        ended = {e["data"]["job_id"] for e in doc["events"] if e["type"] == "JOB_COMPLETED"}
        running[:] = [j for j in running if j not in ended]
        running.extend(e["data"]["job_id"] for e in out["events"] if e["type"] == "EXECUTE_JOB")
        events = out["events"]
        if kills and count[0] % 3 == 0 and running:
            events.append({"timestamp": doc["now"], "type": "KILL_JOB",
                           "data": {"job_ids": [running.pop(0)]}})
        if pstates and count[0] % 2 == 0:
            chosen = sorted(rng.sample(range(nb), rng.randint(1, 2)))
            events.append({"timestamp": doc["now"], "type": "SET_RESOURCE_STATE",
                           "data": {"resources": " ".join(map(str, chosen)),
                                    "state": str(rng.randint(0, 1))}})
        if count[0] % 5 == 0:
            events.append({"timestamp": doc["now"], "type": "QUERY",
                           "data": {"requests": {"consumed_energy": {}}}})
        return json.dumps(out)

    return reply


def run(platform: Path, workload: Path, prefix: Path, nb: int, seed: int, kills: bool,
        pstates: bool, real: bool):
    scheduler = raw_session(decider(nb, seed, kills, pstates), platform, [workload], prefix,
                            True, BATSIM if real else None)
    with open(f"{prefix}_jobs.csv", newline="") as handle:
        table = [row[:16] for row in csv.reader(handle)]
    with open(f"{prefix}_schedule.csv", newline="") as handle:
        joules = dict(zip(*csv.reader(handle)))["consumed_joules"]
    return [json.loads(text) for text in scheduler.received], table, joules


def test_a_communicating_session_runs_under_energy_accounting(tmp_path):
    """No refusal any more; the answers to QUERY grow, and the jobs' energies (0 for a job
    killed as it starts) add up to no more than consumed_joules."""
    platform = cluster(tmp_path / "p.xml", watts="100:120:200,90:95:150")
    received, table, joules = run(platform, mixed_workload(tmp_path / "w.json", 1, 6),
                                  tmp_path / "o", 6, 1, True, True, False)
    answers = [e["data"]["consumed_energy"] for m in received for e in m["events"]
               if e["type"] == "ANSWER"]
    assert answers and answers == sorted(answers) and answers[0] > 0
    energies = [float(r[15]) for r in table[1:]]
    assert min(energies) >= 0 and max(energies) > 0 and sum(energies) <= float(joules)


# ---------------------------------------------------------------- against the real binary
@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("kind", ["hosts", "SHARED", "FATPIPE"])
@pytest.mark.parametrize("seed,kills,pstates,various", [
    (1, False, False, False), (2, True, True, False), (3, True, True, True)])
def test_against_the_binary(tmp_path, kind, seed, kills, pstates, various):
    """Same messages (energy answers included), out_jobs.csv rows with consumed_energy and
    consumed_joules as Batsim 4.2.1 -E (checked, runs/s27X/expE.py: 3 platforms x seeds 1-4 x
    {none, P-states, kills, both}: 48 of 48; every profile type, seeds 1-3 x {none, both}:
    18 of 18)."""
    if kind == "hosts":
        platform, nb = hosts(tmp_path / "p.xml"), 4
    else:
        platform, nb = cluster(tmp_path / "p.xml", kind, "100:120:200,90:95:150"), 6
    workload = (various_workload if various else mixed_workload)(tmp_path / "w.json", seed, nb)
    ours = run(platform, workload, tmp_path / "ours", nb, seed, kills, pstates, False)
    assert ours == run(platform, workload, tmp_path / "real", nb, seed, kills, pstates, True)


# ---------------------------------------------------------------- sleep states
SLEEP_W = "95:110:200,80:90:140,9:9:9,50:60:150,60:70:160"  # states 2 sleep, 3 off, 4 on


def sleepy_hosts(path: Path) -> Path:
    """small_various's hosts with two computing states, a sleep state 2 and the virtual states
    3 (switching off) and 4 (switching on) of ``sleep_pstates="2:3:4"``."""
    import re

    def host(m: re.Match) -> str:
        s = float(m.group(2))
        return (f'<host id="{m.group(1)}" speed="{s}Mf,{s / 2}Mf,1e-9Mf,{s / 10}Mf,{s / 5}Mf">'
                f'<prop id="wattage_per_state" value="{SLEEP_W}"/>'
                '<prop id="sleep_pstates" value="2:3:4"/></host>')

    text = (GOLDEN / "small_various" / "platform.xml").read_text()
    path.write_text(re.sub(r'<host id="([^"]+)" speed="([0-9.]+)Mf"/>', host, text))
    return path


def sleepy_platform(tmp_path: Path, kind: str) -> tuple[Path, int]:
    """(platform, compute hosts) with sleep states: small_various's hosts (``kind`` "hosts") or
    a 6-node cluster whose backbone is ``kind`` (SHARED or FATPIPE), speeds with the virtual
    states 2-4 of ``sleep_pstates``."""
    if kind == "hosts":
        return sleepy_hosts(tmp_path / "p.xml"), 4
    platform = tmp_path / "p.xml"
    cluster(platform, kind, "100:120:200,90:95:150")
    text = platform.read_text().replace('speed="1Gf,0.5Gf"',
                                        'speed="1Gf,0.5Gf,1e-9Gf,0.1Gf,0.2Gf"')
    text = text.replace('value="100:120:200,90:95:150"/>',
                        f'value="{SLEEP_W}"/><prop id="sleep_pstates" value="2:3:4"/>')
    platform.write_text(text)
    return platform, 6


def sleeper(nb: int, seed: int, wake: str = "0"):
    """FCFS over the awake hosts; every 2nd reply before 12 s sends a random free host to
    sleep, and sleeping hosts are woken (one request, into P-state ``wake``) when a job waits;
    every 5th a QUERY."""
    rng, count = random.Random(seed), [0]
    free, asleep, queue = set(range(nb)), set(), []

    def reply(doc: dict) -> str:
        now, out = doc["now"], []
        count[0] += 1
        for e in doc["events"]:
            d = e["data"]
            if e["type"] == "JOB_SUBMITTED":
                queue.append((d["job_id"], d["job"]["res"]))
            elif e["type"] == "JOB_COMPLETED":
                free.update(ids_of(d["alloc"]))
            elif e["type"] == "RESOURCE_STATE_CHANGED":
                (asleep if d["state"] == "2" else free).update(ids_of(d["resources"]))
        out += start_in_order(queue, free, now)
        if queue and asleep:
            woken = " ".join(map(str, sorted(asleep)))
            asleep.clear()
            out.append({"timestamp": now, "type": "SET_RESOURCE_STATE",
                        "data": {"resources": woken, "state": wake}})
        elif free and count[0] % 2 == 0 and now < 12:
            h = rng.choice(sorted(free))
            free.discard(h)
            out.append({"timestamp": now, "type": "SET_RESOURCE_STATE",
                        "data": {"resources": str(h), "state": "2"}})
        if count[0] % 5 == 0:
            out.append({"timestamp": now, "type": "QUERY",
                        "data": {"requests": {"consumed_energy": {}}}})
        return json.dumps({"now": now, "events": out})

    return reply


def sleepy_run(platform: Path, workload: Path, prefix: Path, nb: int, seed: int, real: bool,
               wake: str = "0"):
    scheduler = raw_session(sleeper(nb, seed, wake), platform, [workload], prefix, True,
                            BATSIM if real else None)
    with open(f"{prefix}_jobs.csv", newline="") as handle:
        table = [row[:16] for row in csv.reader(handle)]
    with open(f"{prefix}_schedule.csv", newline="") as handle:
        joules = dict(zip(*csv.reader(handle)))["consumed_joules"]
    return [json.loads(text) for text in scheduler.received], table, joules


def test_one_acknowledgement_per_request_whatever_each_host_s_switch_takes(tmp_path):
    """Hosts 0 and 2 (76.3 and 48.5 Mflop/s) sent to sleep together: their 1-flop switches end
    at different times, Batsim acknowledges the request once, when both are done (hdrm serve
    sent one message per duration)."""
    def reply(doc: dict) -> str:
        events = []
        for event in doc["events"]:
            if event["type"] == "SIMULATION_BEGINS":
                events.append({"timestamp": doc["now"], "type": "SET_RESOURCE_STATE",
                               "data": {"resources": "0 2", "state": "2"}})
            elif event["type"] == "JOB_SUBMITTED":
                events.append({"timestamp": doc["now"], "type": "EXECUTE_JOB",
                               "data": {"job_id": event["data"]["job_id"], "alloc": "1"}})
        return json.dumps({"now": doc["now"], "events": events})

    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": "0", "subtime": 1, "res": 1, "profile": "d", "walltime": -1}],
        "profiles": {"d": {"type": "delay", "delay": 1}}}))
    scheduler = raw_session(reply, sleepy_hosts(tmp_path / "p.xml"), [workload],
                            tmp_path / "o", True)
    acks = [e["data"] for text in scheduler.received for e in json.loads(text)["events"]
            if e["type"] == "RESOURCE_STATE_CHANGED"]
    assert acks == [{"resources": "0 2", "state": "2"}]


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("kind,wake", [("hosts", "0"), ("SHARED", "0"), ("hosts", "1"),
                                       ("SHARED", "1")])
def test_sleep_states_against_the_binary(tmp_path, kind, wake):
    """Switches through virtual states while jobs communicate: each switch ends with an energy
    reading of every host (mark_switch_as_done's trace), which the lazy accounts see
    (checked, runs/s27X/expS.py: 3 platforms x seeds 1-3, 9 of 9; 4 of 9 without that
    reading and with one acknowledgement per duration); woken into P-state 1, the host's speed
    (its tasks' bounds) is the new state's (runs/s27X/expS1.py: 9 of 9; 2 of 9 when the
    switcher left the speed as before the sleep)."""
    platform, nb = sleepy_platform(tmp_path, kind)
    workload = mixed_workload(tmp_path / "w.json", 1, nb)
    ours = sleepy_run(platform, workload, tmp_path / "ours", nb, 1, False, wake)
    assert ours == sleepy_run(platform, workload, tmp_path / "real", nb, 1, True, wake)


# ---------------------------------------------------------------- routes checked up front
TIE = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Floyd">
<host id="master_host" speed="1Gf"/><host id="h0" speed="1Gf"/><host id="h1" speed="1Gf"/>
<router id="ra"/><router id="rb"/>
<link id="m0" bandwidth="100MBps" latency="10us"/>
<link id="m1" bandwidth="100MBps" latency="10us"/>
<link id="a0" bandwidth="100MBps" latency="10us"/>
<link id="a1" bandwidth="100MBps" latency="10us"/>
<link id="b0" bandwidth="50MBps" latency="20us"/><link id="b1" bandwidth="50MBps" latency="20us"/>
<route src="master_host" dst="h0"><link_ctn id="m0"/></route>
<route src="master_host" dst="h1"><link_ctn id="m1"/></route>
<route src="h0" dst="ra"><link_ctn id="a0"/></route>
<route src="ra" dst="h1"><link_ctn id="a1"/></route>
<route src="h0" dst="rb"><link_ctn id="b0"/></route>
<route src="rb" dst="h1"><link_ctn id="b1"/></route>
</zone></platform>
"""


def two_host_workload(path: Path, com: float) -> Path:
    path.write_text(json.dumps({"nb_res": 2, "jobs": [
        {"id": "7", "subtime": 0, "res": 1, "profile": "d", "walltime": -1},
        {"id": "8", "subtime": 1, "res": 2, "profile": "p", "walltime": -1}], "profiles": {
        "d": {"type": "delay", "delay": 1},
        "p": {"type": "parallel_homogeneous", "cpu": 1e6, "com": com}}}))
    return path


def test_a_route_between_compute_hosts_not_known_exactly_is_refused_at_the_start(tmp_path):
    """h0 -> h1 has three 2-link chains in a Floyd zone (through the master, ra or rb): which
    one SimGrid takes is not known. The routes to the master are exact, so this used to fail
    only when a job communicated between them (EXECUTE_JOB); now at the start, in one line."""
    from hdrm.batsim.server import BatsimServer, ServeOptions
    from hdrm.errors import WorkloadError

    platform = tmp_path / "p.xml"
    platform.write_text(TIE)
    with pytest.raises(WorkloadError) as info:
        BatsimServer(platform, two_host_workload(tmp_path / "w.json", 1e6), ServeOptions())
    err = str(info.value)
    assert "w.json: job '8' communicates (com > 0)" in err
    assert f"route of {platform} from host 'h0' to 'h1' is not known exactly" in err
    assert "run this workload with the real batsim" in err and "\n" not in err
    # the same jobs without communication keep running there
    BatsimServer(platform, two_host_workload(tmp_path / "w0.json", 0), ServeOptions())


def test_unroutable_pair_checks_every_pair_or_the_first_host_s_routes():
    from hdrm.batsim.ptask import ALL_PAIRS_UP_TO, unroutable_pair
    from hdrm.platform.simgrid_routes import Link, Route

    asked = []

    def route(i: int, j: int) -> Route:
        asked.append((i, j))
        bad = (i, j) == (2, 1)
        return Route((Link("l", 1e6, 0.0, "SHARED"),), 0.0, not bad)

    assert unroutable_pair(route, 3) == (2, 1, "not known exactly")
    assert asked == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    asked.clear()
    assert unroutable_pair(route, ALL_PAIRS_UP_TO + 1) is None  # (2, 1) is not checked
    assert len(asked) == 2 * ALL_PAIRS_UP_TO and (0, 2) in asked and (2, 0) in asked
    unknown = lambda i, j: Route((Link("w", None, 0.0, "WIFI"),), 0.0, True)  # noqa: E731
    assert unroutable_pair(unknown, 2) == (0, 1, "through link 'w' (WIFI, bandwidth None)")
