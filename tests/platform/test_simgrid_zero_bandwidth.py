"""Platforms the real Batsim 4.2.1 cannot run because of a bandwidth of 0: hdrm refuses them up
front, in one line naming the file, the line, the element, the attribute and the fix, wherever
it reads a SimGrid file for a Batsim session (``read_simgrid_all_hosts``, behind ``hdrm
serve``'s ``load_hosts``, the batsim engine's checks and the built-in engine's
``platform_from_simgrid``). The binary's behaviour on each platform is checked by
tests/batsim/test_real_batsim_zero_bandwidth.py."""

from __future__ import annotations

import re

import pytest
from builders import write_platform
from zero_bandwidth_platforms import ACCEPTED, REFUSED, clusters, full

from hdrm.batsim.platform_hosts import load_hosts
from hdrm.errors import PlatformError
from hdrm.platform.simgrid import platform_from_simgrid, read_simgrid_all_hosts
from hdrm.platform.simgrid_routes import parse_bandwidth

_DEADLOCK = ("; SimGrid 3.32 never ends a transfer over it, so Batsim 4.2.1 sends no further "
             "event ")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_in_one_line_naming_file_line_and_element(name, tmp_path):
    text, start = REFUSED[name]
    path = write_platform(tmp_path, text)
    with pytest.raises(PlatformError) as info:
        read_simgrid_all_hosts(path)
    message = str(info.value)
    assert message.startswith(f"{path}{start}"), message
    assert "\n" not in message


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_bandwidth_of_0_that_no_message_crosses_is_read(name, tmp_path):
    hosts = read_simgrid_all_hosts(write_platform(tmp_path, ACCEPTED[name]))
    assert len(hosts) >= 7  # a master and at least 6 compute hosts


@pytest.mark.parametrize("text", ["0", "0Bps", "0bps", "0GBps", "0.0kBps", "0e3Mbps", "0GiBps"])
def test_every_spelling_of_0_is_0_as_in_simgrid(text):
    # SimGrid 3.32 (xbt_parse_get_bandwidth): strtod, then a unit; a bare 0 needs none
    assert parse_bandwidth(text) == 0.0


def test_a_host_link_names_the_host_and_its_fix(tmp_path):
    path = write_platform(tmp_path, full("0Bps", "h0"))
    with pytest.raises(PlatformError, match=re.escape(
            _DEADLOCK + "when a job on that host ends (it reports \"Deadlock detected\" and "
            "exits, without SIMULATION_ENDS); give bandwidth a bandwidth above 0 (e.g. "
            "bandwidth=\"1GBps\")") + "$"):
        read_simgrid_all_hosts(path)


def test_the_master_s_own_route_stops_before_any_submission(tmp_path):
    path = write_platform(tmp_path, full("0", "master"))
    with pytest.raises(PlatformError, match=re.escape(
            _DEADLOCK + "after SIMULATION_BEGINS, before any job is submitted")):
        read_simgrid_all_hosts(path)


def test_a_loopback_without_bandwidth_says_give_loopback_bw(tmp_path):
    path = write_platform(tmp_path, clusters(cm='loopback_lat="5us"'))
    with pytest.raises(PlatformError, match=re.escape(
            "give loopback_bw a bandwidth above 0 (e.g. loopback_bw=\"10GBps\"), or remove "
            "loopback_lat") + "$"):
        read_simgrid_all_hosts(path)


def test_a_backbone_of_0_says_give_bb_bw_or_remove_both(tmp_path):
    path = write_platform(tmp_path, clusters(ca='bb_bw="0Bps"'))
    with pytest.raises(PlatformError, match=re.escape(
            "; give bb_bw a bandwidth above 0, or remove bb_bw and bb_lat (no backbone)") + "$"):
        read_simgrid_all_hosts(path)


def test_a_topology_cluster_aborts_at_load_before_it_starts(tmp_path):
    text, _ = REFUSED["torus: bw 0"]
    with pytest.raises(PlatformError, match=re.escape(
            "Batsim 4.2.1 aborts before it starts; give bw a bandwidth above 0") + "$"):
        read_simgrid_all_hosts(write_platform(tmp_path, text))


@pytest.mark.parametrize("reader", [load_hosts, platform_from_simgrid, read_simgrid_all_hosts])
def test_every_reader_of_a_batsim_platform_refuses(reader, tmp_path):
    path = write_platform(tmp_path, clusters(cm='loopback_lat="5us"'))
    with pytest.raises(PlatformError, match=r"platform\.xml:6: <cluster id='cm'>: no loopback_bw"):
        reader(path)


def test_the_first_host_over_the_link_is_named(tmp_path):
    # z on h3's route only: h0..h2 reach the master; h3 is the one named
    text = full("0Bps", "").replace('<link_ctn id="l3"/>', '<link_ctn id="l3"/><link_ctn id="z"/>')
    with pytest.raises(PlatformError, match="from host 'h3' to the master host"):
        read_simgrid_all_hosts(write_platform(tmp_path, text))
