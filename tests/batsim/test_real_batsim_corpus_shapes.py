"""The shapes of tests/platform/test_simgrid_corpus_shapes.py under the real Batsim 4.2.1: what
the binary runs, hdrm serve runs to the same messages and out_jobs.csv rows (seeded delay jobs,
a raw FCFS decision process with calls); what it refuses, hdrm refuses too.

Found by benchmarks/platform_corpus.py on the platforms Batsim v4.2.1 and SimGrid v3.32 ship.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from corpus_platforms import (
    IN_ORDER,
    OUT_OF_ORDER,
    bypass_floyd,
    bypass_zones,
    watts_out_of_count,
)
from real_batsim import real_batsim
from test_serve_workloads import NB_HOSTS, seeded_workload, write_platform
from test_serve_workloads_latency import _assert_same, _session

from hdrm.batsim.platform_hosts import load_hosts
from hdrm.errors import PlatformError

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

DECL = "<?xml version='1.0'?>"
DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'


def _binary_fails(tmp_path: Path, platform: Path, energy: bool = False) -> str:
    """The binary's stderr, once it has exited with an error on ``platform``."""
    args = [BATSIM, "-p", str(platform), "-w", str(seeded_workload(tmp_path / "w.json", 1)),
            "-e", str(tmp_path / "real"), "-s", "tcp://127.0.0.1:9"] + ["-E"] * energy
    done = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=60)
    assert done.returncode != 0
    return done.stderr


def _same_sessions(tmp_path: Path, platform: Path, seed: int, energy: bool = False) -> None:
    workload = [seeded_workload(tmp_path / "w.json", seed)]
    theirs = _session(platform, workload, tmp_path / "real", True, energy=energy)
    ours = _session(platform, workload, tmp_path / "ours", False, energy=energy)
    _assert_same(tmp_path, ours, theirs)


def _prolog_platform(tmp_path: Path, before: str) -> Path:
    path = write_platform(tmp_path / "base.xml", NB_HOSTS, "100us")
    text = path.read_text()
    assert text.startswith(DECL)
    platform = tmp_path / "platform.xml"
    platform.write_bytes((before + text).encode("utf-8"))
    return platform


@pytest.mark.parametrize("before", ["\n", "  \n\t", "<!-- a note -->\n"])
def test_blanks_or_a_comment_before_the_declaration(tmp_path, before):
    _same_sessions(tmp_path, _prolog_platform(tmp_path, before), 3)


def test_a_byte_order_mark_is_refused_by_both(tmp_path):
    platform = _prolog_platform(tmp_path, "\ufeff")
    assert "Unexpected character" in _binary_fails(tmp_path, platform)
    with pytest.raises(PlatformError, match="byte-order mark"):
        load_hosts(platform)


def _split_duplex(tmp_path: Path, h0_down: str) -> Path:
    hosts = "".join(
        f'<host id="h{i}" speed="1Gf"/><link id="l{i}" bandwidth="{100 + 50 * i}MBps" '
        f'latency="{100 + 30 * i}us" sharing_policy="SPLITDUPLEX"/>'
        f'<host_link id="h{i}" up="l{i}_UP" down="{h0_down if i == 0 else f"l{i}_DOWN"}"/>'
        for i in range(NB_HOSTS))
    platform = tmp_path / "platform.xml"
    platform.write_text(
        f'{DECL}\n{DOCTYPE}\n<platform version="4.1"><zone id="w" routing="Full">'
        '<zone id="c" routing="Cluster"><host id="master_host" speed="1Gf"/>'
        '<link id="lm" bandwidth="1GBps" latency="30us" sharing_policy="SPLITDUPLEX"/>'
        f'<host_link id="master_host" up="lm_UP" down="lm_DOWN"/>{hosts}'
        '<backbone id="bb" bandwidth="2GBps" latency="500us"/></zone></zone></platform>\n')
    return platform


@pytest.mark.parametrize("seed", [1, 4])
def test_host_links_over_split_duplex_links(tmp_path, seed):
    _same_sessions(tmp_path, _split_duplex(tmp_path, "l0_DOWN"), seed)


def test_a_host_link_naming_the_split_duplex_link_itself_is_refused_by_both(tmp_path):
    platform = _split_duplex(tmp_path, "l0")
    assert "Link 'l0' not found!" in _binary_fails(tmp_path, platform)
    with pytest.raises(PlatformError, match="names a SPLITDUPLEX link"):
        load_hosts(platform)


def test_a_link_in_a_wifi_zone_is_refused_by_both(tmp_path):
    platform = tmp_path / "platform.xml"
    stations = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(NB_HOSTS))
    platform.write_text(
        f'{DECL}\n{DOCTYPE}\n<platform version="4.1"><zone id="w" routing="Wifi">'
        '<prop id="access_point" value="master_host"/><host id="master_host" speed="1Gf"/>'
        f'{stations}<link id="ap" sharing_policy="WIFI" bandwidth="54Mbps" latency="0ms"/>'
        '</zone></platform>\n')
    assert "create_wifi_link: Feature unimplemented yet" in _binary_fails(tmp_path, platform)
    with pytest.raises(PlatformError, match="a link in Wifi zone 'w'"):
        load_hosts(platform)


def test_watts_of_the_wrong_length_run_without_energy_and_are_refused_with_it(tmp_path):
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS, "100us")
    watts = '<prop id="wattage_per_state" value="100:200"/>'
    text = platform.read_text().replace('speed="1Gf"/>', f'speed="1Gf">{watts}</host>')
    text = text.replace(f'<host id="h00" speed="1Gf">{watts}',
                        '<host id="h00" speed="1Gf, 2Gf"><prop id="wattage_per_state" '
                        'value="100:200"/>')
    platform.write_text(text)
    _same_sessions(tmp_path, platform, 2)
    assert "Found 1 energetic profiles for 2 pstates" in _binary_fails(tmp_path, platform, True)
    with pytest.raises(PlatformError, match="1 wattage_per_state entries for 2 speeds"):
        load_hosts(platform, energy=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("shape", [bypass_floyd, bypass_zones], ids=["bypassRoute", "zones"])
def test_bypass_routes(tmp_path, shape, seed):
    platform = tmp_path / "platform.xml"
    platform.write_text(f"{DECL}\n{DOCTYPE}\n{shape(NB_HOSTS)}\n")
    _same_sessions(tmp_path, platform, seed)


@pytest.mark.parametrize("name", sorted(OUT_OF_ORDER))
def test_elements_out_of_the_dtd_order_are_refused_by_both(tmp_path, name):
    platform = tmp_path / "platform.xml"
    platform.write_text(f'{DECL}\n{DOCTYPE}\n<platform version="4.1">\n{OUT_OF_ORDER[name][0]}'
                        '</platform>\n')
    said = _binary_fails(tmp_path, platform)
    assert any(words in said for words in ("is not allowed here", "Link not found: l",
                                           "Route dst='h0' does name a node"))
    with pytest.raises(PlatformError, match="is not allowed here"):
        load_hosts(platform)


@pytest.mark.parametrize("name", sorted(IN_ORDER))
def test_elements_in_the_dtd_order_run(tmp_path, name):
    platform = tmp_path / "platform.xml"
    platform.write_text(f'{DECL}\n{DOCTYPE}\n<platform version="4.1">\n{IN_ORDER[name]}'
                        '</platform>\n')
    workload = tmp_path / "w.json"
    workload.write_text('{"nb_res": 1, "jobs": [{"id": "1", "subtime": 0, "res": 1, '
                        '"walltime": 10, "profile": "d"}], "profiles": {"d": {"type": "delay", '
                        '"delay": 2}}}')
    theirs = _session(platform, [workload], tmp_path / "real", True)
    ours = _session(platform, [workload], tmp_path / "ours", False)
    _assert_same(tmp_path, ours, theirs)


@pytest.mark.parametrize(("master_speed", "binary_says", "named"), [
    ("1Gf", "Found 1 energetic profiles for 3 pstates", "host 'hb'"),
    ("1Gf, 2Gf", "Found 1 energetic profiles for 2 pstates", "host 'master_host'")])
def test_with_energy_both_refuse_the_first_host_in_file_order(tmp_path, master_speed,
                                                              binary_says, named):
    platform = tmp_path / "platform.xml"
    platform.write_text(f"{DECL}\n{DOCTYPE}\n{watts_out_of_count(master_speed)}")
    assert binary_says in _binary_fails(tmp_path, platform, True)
    with pytest.raises(PlatformError, match=named):
        load_hosts(platform, energy=True)
