"""SimGrid platforms as users write them, under the REAL Batsim 4.2.1 and hdrm's reader (s24).

For each file: the real binary refuses it exactly when hdrm refuses it (``load_hosts``, with
``energy`` for ``-E``); when both accept it, Batsim's compute resources are hdrm's hosts in the
same order, and one job of 1e9 flops per host runs at hdrm's speed of the host's starting power
state and, with ``-E``, draws the power of hdrm's core (a one-core job on a host of N cores:
a load of 1/N).

Skipped, with the reason, when no real Batsim can run (``real_batsim.py``); ``-m slow`` runs them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler
from real_batsim import real_batsim

from hdrm.batsim.hosts import load_hosts
from hdrm.errors import PlatformError
from hdrm.platform.simgrid import platform_from_simgrid

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

HEAD = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
GAP_S = 1e4  # one job at a time


def hosts_zone(body: str, version: str = "4.1") -> str:
    return (f'{HEAD}<platform version="{version}"><zone id="z" routing="Full">\n'
            f'<host id="master_host" speed="1Gf"/>\n{body}\n</zone></platform>\n')


def cluster_zone(attrs: str, suffix: str = "") -> str:
    """A cluster ``c`` (prefix n) and a master cluster joined as in Batsim's examples."""
    return (f'{HEAD}<platform version="4.1"><zone id="w" routing="Full">\n'
            f'<cluster id="c" prefix="n" suffix="{suffix}" bw="1GBps" lat="0" {attrs}/>\n'
            '<cluster id="m" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="1GBps" '
            'lat="0"><prop id="role" value="master"/></cluster>\n'
            '<link id="bb" bandwidth="1GBps" latency="0"/>\n'
            f'<zoneRoute src="c" dst="m" gw_src="nc_router{suffix}" gw_dst="master_hostm_router">'
            '<link_ctn id="bb"/></zoneRoute>\n</zone></platform>\n')


WATTS = '<prop id="wattage_per_state" value="100:200, 80:150"/>'
#: name -> (platform text, energy accounting)
ACCEPTED = {
    "radical ranges and suffix": (cluster_zone('radical="0-2,10-11" speed="2Gf"', ".site"),
                                  False),
    "SimGrid's speed units": (hosts_zone(
        '<host id="a" speed="2gigaflops"/><host id="b" speed="1e9f"/>'
        '<host id="c" speed="1000000000"/><host id="d" speed=" 1.5Gf"/>'
        '<host id="e" speed="4Gf, 0.5Gf" pstate="1.0"/>'), False),
    "peers of a Vivaldi zone": (
        f'{HEAD}<platform version="4.1"><zone id="z" routing="Vivaldi">\n'
        '<peer id="master_host" speed="1Gf" bw_in="1GBps" bw_out="1GBps" coordinates="0 0 0"/>\n'
        '<peer id="p0" speed="2Gf" bw_in="1GBps" bw_out="1GBps" coordinates="0 0 0"/>\n'
        '<peer id="p1" speed="3Gf" bw_in="1GBps" bw_out="1GBps" coordinates="0 0 0"/>\n'
        '</zone></platform>\n', False),
    "power states, energy": (hosts_zone(
        f'<host id="h0" speed="10Gf, 5Gf">{WATTS}</host>'
        f'<host id="h1" speed="10Gf, 5Gf" pstate="1">{WATTS}</host>'), True),
    "hosts of four cores": (hosts_zone(
        '<host id="h0" speed="10Gf" core="4"><prop id="wattage_per_state" value="100:200"/>'
        '</host><host id="h1" speed="10Gf" core="4"><prop id="wattage_per_state" '
        'value="100:120:200"/></host>'), True),
    "zero speed in a sleep state": (hosts_zone(
        '<host id="h0" speed="1Gf, 0f, 1f, 1f"><prop id="wattage_per_state" '
        'value="100:200, 10:10, 50:50, 50:50"/><prop id="sleep_pstates" value="1:2:3"/></host>'),
        True),
}
REFUSED = {
    "upper-case kilo": (hosts_zone('<host id="h" speed="500Kf"/>'), False),
    "binary prefix": (hosts_zone('<host id="h" speed="1Gif"/>'), False),
    "space before the unit": (hosts_zone('<host id="h" speed="2 Gf"/>'), False),
    "no version": (hosts_zone('<host id="h" speed="1Gf"/>').replace(' version="4.1"', ""),
                   False),
    "version 5": (hosts_zone('<host id="h" speed="1Gf"/>', "5"), False),
    "host beside a cluster": (hosts_zone(
        '<cluster id="c" prefix="n" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="0"/>'),
        False),
    "pstate on a cluster": (cluster_zone('radical="0-1" speed="2Gf, 1Gf" pstate="1"'), False),
    "compute host of speed 0": (hosts_zone('<host id="h" speed="0f"/>'), False),
    "no wattage_per_state with -E": (hosts_zone('<host id="h" speed="1Gf"/>'), True),
    "old watt_per_state with -E": (hosts_zone(
        '<host id="h" speed="1Gf"><prop id="watt_per_state" value="1:2"/></host>'), True),
    "computing state of speed 0 with -E": (hosts_zone(
        '<host id="h" speed="1Gf, 0f"><prop id="wattage_per_state" value="1:2, 1:1"/></host>'),
        True),
}


def run_batsim(platform: Path, nb_jobs: int, energy: bool, tmp_path: Path):
    """Run one 1e9-flop job per resource under the real binary: (exit code, names, rows)."""
    jobs = [{"id": str(j), "subtime": j * GAP_S, "res": 1, "walltime": GAP_S / 2, "profile": "p"}
            for j in range(nb_jobs)]
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": nb_jobs, "jobs": jobs, "profiles": {
        "p": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}}))
    names: list[str] = []

    def reply(doc: dict) -> str:
        out = []
        for event in doc["events"]:
            if event["type"] == "SIMULATION_BEGINS":
                names.extend(r["name"] for r in event["data"]["compute_resources"])
            elif event["type"] == "JOB_SUBMITTED":
                job_id = event["data"]["job_id"]
                out.append({"timestamp": doc["now"], "type": "EXECUTE_JOB",
                            "data": {"job_id": job_id, "alloc": job_id.split("!")[1]}})
        return json.dumps({"now": doc["now"], "events": out})

    scheduler = RawScheduler(reply)
    scheduler.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(platform), "-w", str(tmp_path / "w.json"), "-e",
                               str(tmp_path / "out"), "-s", scheduler.endpoint, "-q"]
                              + (["-E"] if energy else []),
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()
    rows = []
    if done.returncode == 0:
        lines = (tmp_path / "out_jobs.csv").read_text().splitlines()
        head = lines[0].split(",")
        rows = sorted((dict(zip(head, line.split(","))) for line in lines[1:]),
                      key=lambda r: int(r["job_id"]))
    return done.returncode, names, rows


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_platform_batsim_accepts_reads_as_batsim_runs_it(case, tmp_path):
    text, energy = ACCEPTED[case]
    (tmp_path / "p.xml").write_text(text)
    hosts = load_hosts(tmp_path / "p.xml", energy)  # hdrm serve's hosts
    platform, _ = platform_from_simgrid(tmp_path / "p.xml")  # the built-in engine's cores
    code, names, rows = run_batsim(tmp_path / "p.xml", len(hosts), energy, tmp_path)
    assert code == 0
    assert names == [h.name for h in hosts] == [n.name for n in platform.nodes]
    for i, (host, row) in enumerate(zip(hosts, rows)):
        assert row["allocated_resources"] == str(i)
        speed_gflops = 1.0 / float(row["execution_time"])
        assert speed_gflops == pytest.approx(host.speeds_gflops[host.pstate], rel=1e-4)
        assert speed_gflops == pytest.approx(platform.core_gflops[i], rel=1e-4)
        if energy:
            watts = float(row["consumed_energy"]) / float(row["execution_time"])
            assert watts == pytest.approx(platform.core_power_w[i], rel=1e-4)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_platform_batsim_refuses_is_refused_in_one_line(case, tmp_path):
    text, energy = REFUSED[case]
    (tmp_path / "p.xml").write_text(text)
    with pytest.raises(PlatformError) as caught:
        load_hosts(tmp_path / "p.xml", energy)
    assert str(caught.value).startswith(str(tmp_path / "p.xml")) and "\n" not in str(caught.value)
    code, _, _ = run_batsim(tmp_path / "p.xml", 1, energy, tmp_path)
    assert code != 0
