"""The batsim engine's machine mirror (observations, rewards) charges a SimGrid XML platform's own
watts, as the built-in engine's environment does; hdrm's power table elsewhere."""

from __future__ import annotations

import pytest

from hdrm.batsim.engine import MachineMirror
from hdrm.platform.model import Platform
from hdrm.platform.simgrid import platform_from_simgrid
from hdrm.sim.simgrid_machine import SimgridMachine
from hdrm.workload.job import Job

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="1Gf"><prop id="wattage_per_state" value="50:200"/></host>
    <host id="b" speed="1Gf"><prop id="wattage_per_state" value="20:120"/></host>
    <host id="master_host" speed="1Gf"/>
    <link id="l" bandwidth="1GBps" latency="0"/>
    <route src="master_host" dst="a"><link_ctn id="l"/></route>
    <route src="master_host" dst="b"><link_ctn id="l"/></route>
  </zone>
</platform>
"""


def test_idle_hosts_draw_the_files_idle_watts_from_the_first_submission(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(PLATFORM)
    platform, _ = platform_from_simgrid(path)
    job = Job(idx=0, id="0", submit_s=4.0, res=1, walltime_s=100.0, run_time_s=10.0)
    mirror = MachineMirror(platform, [job])
    assert isinstance(mirror.machine, SimgridMachine)
    mirror.advance(10.0)
    # idle from the first submission at 4 s: (50 + 20) W x 6 s; hdrm's table would give the
    # sleep share, 0.05 x (200 + 120) W, from 0 s
    assert mirror.machine.energy_j() == pytest.approx(420.0)


def test_hdrm_platforms_keep_the_power_table():
    platform = Platform.homogeneous(2, gflops=1.0, power_w=100.0)
    mirror = MachineMirror(platform)
    assert not isinstance(mirror.machine, SimgridMachine)
    mirror.advance(10.0)
    assert mirror.machine.energy_j() == pytest.approx(2 * 5.0 * 10.0)
