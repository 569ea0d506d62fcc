"""The Batsim export of a platform read from SimGrid XML keeps the file's idle watts.

Batsim on the user's own file charges a host with no job, or running a ``delay`` job, its idle
watts, and never changes its power state under a scheduler that sets none; hdrm's built-in engine
charges the same (:mod:`hdrm.sim.simgrid_machine`). The export must too: loaded ``idle:[eps:]run``
in the running states, ``idle:idle`` in the idle and sleep states hdrm's decision process uses.
"""

from __future__ import annotations

from pathlib import Path

import defusedxml.ElementTree as SafeET
import pytest

from hdrm.errors import PlatformError
from hdrm.platform.simgrid import MASTER_HOST, platform_from_simgrid, platform_to_xml

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="2Gf" core="4">
      <prop id="wattage_per_state" value="50:100:200"/>
    </host>
    <host id="b" speed="1Gf, 3Gf" pstate="1">
      <prop id="wattage_per_state" value="10:20, 30:90"/>
    </host>
    <host id="c" speed="1Gf"/>
    <host id="master_host" speed="1Gf"/>
    <link id="l" bandwidth="1GBps" latency="0"/>
    <route src="master_host" dst="a"><link_ctn id="l"/></route>
    <route src="master_host" dst="b"><link_ctn id="l"/></route>
    <route src="master_host" dst="c"><link_ctn id="l"/></route>
  </zone>
</platform>
"""


def _watts(xml: bytes) -> list[str]:
    hosts = SafeET.fromstring(xml).iter("host")
    return [h.find("prop[@id='wattage_per_state']").get("value") for h in hosts
            if h.get("id") != MASTER_HOST]


@pytest.fixture()
def xml_file(tmp_path: Path) -> Path:
    path = tmp_path / "p.xml"
    path.write_text(PLATFORM)
    return path


def test_idle_watts_in_every_state_and_running_watts_when_loaded(xml_file):
    platform, _ = platform_from_simgrid(xml_file)
    # a: core="4", 50:100:200 -> a job loads 1 core of 4: 100 + 100 / 4 = 125 W, epsilon 100;
    # b: starts in pstate 1 (30:90, epsilon = idle); c: no watts
    assert _watts(platform_to_xml(platform)) == [
        "50:100:125, 50:100:125, 50:50, 50:50",
        "30:90, 30:90, 30:30, 30:30",
        "0:0, 0:0, 0:0, 0:0",
    ]


def test_hdrm_platforms_keep_the_power_table():
    from hdrm.platform.model import Platform

    platform = Platform.homogeneous(2, gflops=1.0, power_w=100.0)
    assert _watts(platform_to_xml(platform)) == ["100:100, 100:100, 30:30, 5:5"] * 2


def test_a_changed_file_is_refused(xml_file):
    platform, _ = platform_from_simgrid(xml_file)
    xml_file.write_text(PLATFORM.replace('speed="1Gf"/>', 'speed="7Gf"/>', 1))
    with pytest.raises(PlatformError, match=r"p\.xml: the SimGrid file no longer describes"):
        platform_to_xml(platform)


def test_a_vanished_file_falls_back_to_the_power_table(xml_file, caplog):
    platform, _ = platform_from_simgrid(xml_file)
    xml_file.unlink()
    assert _watts(platform_to_xml(platform))[0] == "125:125, 125:125, 37.5:37.5, 6.25:6.25"
    assert "cannot read the SimGrid file again" in caplog.text
