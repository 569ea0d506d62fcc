"""hdrm serve --mmax / --mmax-workload (:mod:`hdrm.batsim.machine_limit`): the first M compute
hosts by name are the resources, as Batsim 4.2.1 keeps them; checked against the binary in
``test_real_batsim_mmax.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, fcfs

from hdrm.batsim.machine_limit import keep_machines, machine_count
from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.cli.main import main
from hdrm.errors import ConfigError

NAMES = ["master_host", "b", "a", "d", "c", "e"]  # compute hosts a..e, not in name order


def platform(path: Path) -> Path:
    """master_host and five 1 Gflop/s hosts (100 W idle, 200 W busy), no latency."""
    watts = '<prop id="wattage_per_state" value="100:200"/><prop id="wattage_off" value="10"/>'
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="AS0" routing="Full">']
    lines += [f'  <host id="{n}" speed="1Gf">{watts}</host>' for n in NAMES]
    lines += [f'  <link id="l{n}" bandwidth="10GBps" latency="0us"/>' for n in NAMES[1:]]
    lines += [f'  <route src="master_host" dst="{n}"><link_ctn id="l{n}"/></route>'
              for n in NAMES[1:]]
    path.write_text("\n".join([*lines, "</zone>", "</platform>", ""]))
    return path


def workload(path: Path, nb_res: int, res: int = 1) -> Path:
    """Three 2 s delay jobs at 0, 1 and 2 s."""
    path.write_text(json.dumps({"nb_res": nb_res, "jobs": [
        {"id": i, "subtime": i, "res": res, "walltime": -1, "profile": "d"} for i in range(3)],
        "profiles": {"d": {"type": "delay", "delay": 2}}}))
    return path


@pytest.mark.parametrize("mmax, by_workload, nb_res, expected", [
    (0, False, [3], None), (-1, False, [3], None), (2, False, [3], 2),
    (0, True, [3, 4], 4), (2, True, [3, 4], 2), (9, True, [3, 4], 4), (-1, True, [3], 3),
])
def test_machine_count(tmp_path: Path, mmax: int, by_workload: bool, nb_res, expected) -> None:
    files = [workload(tmp_path / f"w{i}.json", n) for i, n in enumerate(nb_res)]
    assert machine_count(mmax, by_workload, files) == expected


def test_more_machines_than_hosts_is_refused() -> None:
    assert keep_machines("abc", 2, "p.xml") == ["a", "b"]
    with pytest.raises(ConfigError, match="9 machines, but p.xml describes only 3 compute hosts"):
        keep_machines("abc", 9, "p.xml")


def test_the_first_hosts_by_name_are_the_resources(tmp_path: Path) -> None:
    scheduler = RawScheduler(fcfs(2))
    scheduler.start()
    try:
        done = serve(platform(tmp_path / "p.xml"), workload(tmp_path / "w.json", 3),
                     ServeOptions(scheduler.endpoint, str(tmp_path / "out"), 10.0,
                                  config=ServerConfig(mmax=2, energy=True)))
    finally:
        scheduler.stop()
    begins = json.loads(scheduler.received[0])["events"][0]["data"]
    assert [r["name"] for r in begins["compute_resources"]] == ["a", "b"]
    assert begins["nb_resources"] == 2
    # jobs 0 and 1 on a and b; job 2 waits for job 0 (2 s), ends at 4 s; a delay job sleeps
    # (its host idles): 2 hosts x 4 s x 100 W = 800 J; the other three hosts are not counted
    # (2000 J if they were)
    assert done.summary["makespan"] == pytest.approx(4.0, abs=1e-6)  # (sub-ns messages)
    assert done.summary["consumed_joules"] == pytest.approx(800.0)


def test_the_cli_options(tmp_path: Path, capsys) -> None:
    args = ["serve", "-p", str(platform(tmp_path / "p.xml")), "-w",
            str(workload(tmp_path / "w.json", 3)), "--timeout", "1"]
    assert main(args + ["--mmax", "9"]) == 2
    assert "--mmax/--mmax-workload: 9 machines, but" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(args + ["--mmax", "two"])
