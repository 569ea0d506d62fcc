"""Reading SimGrid platforms: the real Batsim files of ../shared/batsim, units, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hdrm.errors import PlatformError
from hdrm.platform.simgrid import (
    parse_radical,
    parse_speeds_gflops,
    parse_wattage,
    platform_from_simgrid,
    read_simgrid_hosts,
)

BATSIM = Path(__file__).resolve().parents[3] / "shared" / "batsim"
needs_shared = pytest.mark.skipif(not BATSIM.is_dir(), reason="../shared/batsim is not here")

#: Every SimGrid file of the shared Batsim material and its number of compute hosts.
SHARED_XML = {
    "golden/cluster256_1k/platform.xml": 256,
    "golden/pstate_lockstep/platform.xml": 4,
    "golden/pstate_slowdown/platform.xml": 4,
    "golden/sdsc1024_1k/platform.xml": 1024,
    "golden/small_delays/platform.xml": 4,
    "golden/small_various/platform.xml": 4,
    "sessions/protocol_demo/energy_platform_8.xml": 7,
}


@needs_shared
def test_the_list_covers_every_shared_xml():
    found = {str(p.relative_to(BATSIM)) for p in BATSIM.rglob("*.xml")}
    assert found == set(SHARED_XML)


@needs_shared
@pytest.mark.parametrize("name, nb_hosts", SHARED_XML.items())
def test_every_shared_platform_reads(name, nb_hosts):
    hosts = read_simgrid_hosts(BATSIM / name)
    assert len(hosts) == nb_hosts
    names = [h.name for h in hosts]
    assert names == sorted(names)
    assert not any(n.startswith("master_host") for n in names)
    platform, same = platform_from_simgrid(BATSIM / name)
    assert same == hosts
    assert platform.nb_cores == nb_hosts
    assert [n.name for n in platform.nodes] == names
    assert all(math.isinf(m) for m in platform.node_memory_mb)
    assert all(math.isinf(b) for b in platform.processor_mem_bw_gbps)


def _simulation_begins() -> list[list[dict]]:
    """compute_resources of each SIMULATION_BEGINS that real Batsim sent in protocol_sample.txt."""
    lines = (BATSIM / "sessions" / "protocol_sample.txt").read_text().splitlines()
    found = []
    for header, body in zip(lines, lines[1:]):
        if header.startswith("#001 BATSIM -> SCHED  [SIMULATION_BEGINS]"):
            found.append(json.loads(body)["events"][0]["data"]["compute_resources"])
    return found


@needs_shared
def test_order_and_properties_match_real_batsim():
    energy, small, _ = _simulation_begins()
    hosts = read_simgrid_hosts(BATSIM / "sessions/protocol_demo/energy_platform_8.xml")
    assert [h.name for h in hosts] == [r["name"] for r in energy]
    assert hosts[0].properties["wattage_per_state"] == energy[0]["properties"]["wattage_per_state"]
    hosts = read_simgrid_hosts(BATSIM / "golden/small_delays/platform.xml")
    # The XML declares Jupiter first; Batsim numbers hosts by name.
    assert [h.name for h in hosts] == [r["name"] for r in small]
    assert [h.name for h in hosts] == ["Bourassa", "Fafard", "Ginette", "Jupiter"]


@needs_shared
def test_host_platform_with_power_states():
    hosts = read_simgrid_hosts(BATSIM / "golden/pstate_slowdown/platform.xml")
    assert hosts[0].speeds_gflops == pytest.approx((10.0, 7.5, 1e-12, 1e-12))
    assert hosts[0].wattage_per_state_w == ((100, 100), (100, 100), (25, 25), (5, 5))
    assert hosts[0].pstate == 0 and hosts[0].power_w == 100.0
    platform, _ = platform_from_simgrid(BATSIM / "golden/pstate_slowdown/platform.xml")
    assert platform.core_gflops == (10.0,) * 4 and platform.total_power_w == 400.0


@needs_shared
def test_energy_platform_speeds_watts_and_off_power():
    host = read_simgrid_hosts(BATSIM / "sessions/protocol_demo/energy_platform_8.xml")[3]
    assert host.name == "host3"
    assert host.speeds_gflops == pytest.approx((0.1, 1e-12, 5e-10, 5e-11))  # 100Mf, 1e-9Mf ...
    assert host.wattage_per_state_w[0] == (30.0, 100.0)  # idle 30 W, fully loaded 100 W
    assert host.power_w == 100.0 and host.wattage_off_w == 42.0
    assert host.properties["sleep_pstates"] == "1:2:3"


@needs_shared
def test_cluster_platform_expands_radical_and_drops_the_master_cluster():
    hosts = read_simgrid_hosts(BATSIM / "golden/cluster256_1k/platform.xml")
    assert [h.name for h in hosts[:4]] == ["a0", "a1", "a10", "a100"]  # by name, as SimGrid
    assert {h.name for h in hosts} == {f"a{i}" for i in range(256)}
    assert all(h.speeds_gflops == (1.0,) for h in hosts)
    assert all(h.wattage_per_state_w == () and h.power_w == 0.0 for h in hosts)


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "p.xml"
    path.write_text(
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        f'<platform version="4.1"><zone id="z" routing="Full">{body}</zone></platform>\n'
    )
    return path


def test_old_watt_per_state_and_nested_zone_and_roles(tmp_path):
    path = _write(tmp_path, (
        '<zone id="admin" routing="Full">'
        '<host id="boss" speed="1Gf"><prop id="role" value="master"/></host>'
        '<host id="disk" speed="1Gf"><prop id="role" value="storage"/></host></zone>'
        '<zone id="inner" routing="Full">'
        '<host id="h2" speed="2Gf, 1Gf" pstate="1"><prop id="watt_per_state" value="10:20, 5:6"/>'
        "</host></zone>"
        '<cluster id="c" prefix="n" suffix=".x" radical="0-1,4" speed="500Mf" bw="1GBps" lat="0"/>'
        # the zones' routes to the master host (without them Batsim aborts: "Bad gateways")
        '<link id="l" bandwidth="1GBps" latency="0"/>'
        '<zoneRoute src="inner" dst="admin" gw_src="h2" gw_dst="boss"><link_ctn id="l"/>'
        "</zoneRoute>"
        '<zoneRoute src="c" dst="admin" gw_src="nc_router.x" gw_dst="boss"><link_ctn id="l"/>'
        "</zoneRoute>"
    ))
    hosts = read_simgrid_hosts(path)
    assert [h.name for h in hosts] == ["h2", "n0.x", "n1.x", "n4.x"]
    assert hosts[0].speeds_gflops == (2.0, 1.0) and hosts[0].pstate == 1
    assert hosts[0].wattage_per_state_w == ((10.0, 20.0), (5.0, 6.0))
    assert hosts[1].speeds_gflops == (0.5,)


@pytest.mark.parametrize(
    "text, gflops",
    [
        ("10Gf, 7.5Gf, 0.001f", (10.0, 7.5, 1e-12)),
        ("98.095Mf", (0.098095,)),
        ("1e-9Mf", (1e-12,)),
        ("2Tf", (2000.0,)),
        ("1kf", (1e-6,)),
        ("250", (2.5e-7,)),  # unit-less: flop/s
        ("2gigaflops", (2.0,)),  # SimGrid's long units
        ("3e-3Tf", (3.0,)),
        ("1e-15Yf", (1.0,)),
        (" 1.5Gf", (1.5,)),  # strtod skips leading white space
        (" 1Gf , 2Mf", (1.0, 0.002)),  # list items are trimmed
    ],
)
def test_speed_units(text, gflops):
    assert parse_speeds_gflops(text, "w") == pytest.approx(gflops)


def test_bad_speed_unit():
    with pytest.raises(PlatformError, match=r"^p\.xml: host 'h': bad speed '10Qf' \(unknown unit "
                       r"'Qf'\); write a number and a unit among f, kf, Mf, Gf"):
        parse_speeds_gflops("1Gf, 10Qf", "p.xml: host 'h'")


@pytest.mark.parametrize("text, unit", [
    ("1Gif", "'Gif'"),  # SimGrid has no binary prefix for flops (Batsim: "unknown unit: Gif")
    ("500Kf", "'Kf'"),  # nor an upper-case kilo ("unknown unit: Kf")
    ("2.5GF", "'GF'"),
    ("1gf", "'gf'"),
    ("2 Gf", "' Gf'"),  # nothing may separate the number and its unit
    ("1Gf ", "'Gf '"),  # a single speed is not trimmed
])
def test_speed_units_simgrid_refuses(text, unit):
    with pytest.raises(PlatformError, match=rf"bad speed .*\(unknown unit {unit}\)"):
        parse_speeds_gflops(text, "w")


@pytest.mark.parametrize("text", ["", "nanf", "Gf", "inf"])
def test_speed_that_is_not_a_number(text):
    with pytest.raises(PlatformError, match=r"^w: bad speed .*\(not a number\)"):
        parse_speeds_gflops(text, "w")


def test_wattage_forms():
    assert parse_wattage("100:200", "w") == ((100.0, 200.0),)
    assert parse_wattage("95:100:200, 7:8", "w") == ((95.0, 200.0), (7.0, 8.0))
    with pytest.raises(PlatformError, match=r"^w: bad power state 'x:1' in wattage_per_state"):
        parse_wattage("1:2, x:1", "w")
    # one value (or four) per state: SimGrid's energy plugin refuses ("It should be
    # 'Idle:AllCores' (or 'Idle:Epsilon:AllCores')"), as it refuses 'Off'
    for text in ("100:200, 7", "1:2:3:4", "100:200, Off"):
        with pytest.raises(PlatformError, match=r"write 'idle:full' \(or 'idle:epsilon:full'\)"):
            parse_wattage(text, "w")


def test_radicals():
    assert parse_radical("0-3,7,9-10", "w") == [0, 1, 2, 3, 7, 9, 10]
    assert parse_radical("5", "w") == [5]
    with pytest.raises(PlatformError, match=r"^w: bad radical '0-a'; write ranges like"):
        parse_radical("0-a", "w")
    # SimGrid makes no host of a reversed range, silently (Batsim ran with no compute host)
    with pytest.raises(PlatformError, match=r"^w: radical '0-3,9-7': the range 9-7 is empty .*"
                       r"write '7-9'$"):
        parse_radical("0-3,9-7", "w")


@pytest.mark.parametrize(
    "body, message",
    [
        ('<host speed="1Gf"/>',
         r"p\.xml:3: <host>: missing attribute 'id', which SimGrid requires of a <host>; add it$"),
        ('<host id="h"/>',
         r"p\.xml:3: <host id='h'>: missing attribute 'speed', which SimGrid requires of a "
         r"<host>; add it$"),
        ('<host id="h" speed="1Gf" pstate="2"/>',
         r"p\.xml: host 'h': pstate 2 out of range; the host has 1 speeds, so use 0 to 0$"),
        # hosts sharing their texts are read once per distinct set: a later host's own bad
        # value is still found, and named
        ('<host id="a" speed="1Gf"/><host id="b" speed="1Gf" pstate="1"/>',
         r"p\.xml: host 'b': pstate 1 out of range; the host has 1 speeds, so use 0 to 0$"),
        ('<host id="a" speed="1Gf"><prop id="wattage_off" value="0"/></host>'
         '<host id="b" speed="1Gf"><prop id="wattage_off" value="x"/></host>',
         r"p\.xml: host 'b': wattage_off 'x' is not a number of watts; fix the property$"),
        ('<host id="h" speed="1Gf, 2Gf" pstate="one"/>',
         r"p\.xml: host 'h': pstate 'one' is not a power state number \(0, 1, \.\.\.\); fix"),
        ('<host id="h" speed="1Gf, 2Gf" pstate="0.5"/>', r"pstate '0\.5' is not a power state"),
        ('<host id="h" speed="1Gf"/><host id="h" speed="2Gf"/>',
         r"p\.xml: host 'h' is declared twice; host names must be unique$"),
        ('<cluster id="c" prefix="a" suffix="" radical="x" speed="1Gf" bw="1Bps" lat="0"/>',
         r"p\.xml: cluster 'c': bad radical 'x'"),
        ('<cluster id="c" prefix="a" suffix="" speed="1Gf" bw="1Bps" lat="0"/>',
         r"p\.xml:3: <cluster id='c'>: missing attribute 'radical', which SimGrid requires"),
    ],
)
def test_malformed_hosts(tmp_path, body, message):
    with pytest.raises(PlatformError, match=message):
        read_simgrid_hosts(_write(tmp_path, body))


def test_invalid_xml_names_line_and_column(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text('<platform version="4.1">\n<zone>\n<host id="a" speed="1Gf">\n</platform>')
    with pytest.raises(PlatformError, match=r"p\.xml:4:2: invalid XML \(mismatched tag"):
        read_simgrid_hosts(path)


def test_entities_are_refused(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE platform [<!ENTITY a "aaaa">]>\n'
                    '<platform version="4.1"><zone><host id="&a;" speed="1Gf"/></zone></platform>')
    with pytest.raises(PlatformError, match=r"p\.xml: refused unsafe XML"):
        read_simgrid_hosts(path)


def test_missing_file_and_wrong_root(tmp_path):
    with pytest.raises(PlatformError, match=r"nope\.xml: no such SimGrid platform file"):
        read_simgrid_hosts(tmp_path / "nope.xml")
    path = tmp_path / "w.xml"
    path.write_text("<workload/>")
    with pytest.raises(PlatformError, match=r"w\.xml: root element is <workload>, expected "
                       r"<platform>"):
        read_simgrid_hosts(path)


def test_master_only_platform_has_no_compute_host(tmp_path):
    path = _write(tmp_path, '<host id="master_host" speed="1Gf"/>')
    assert read_simgrid_hosts(path) == []
    with pytest.raises(PlatformError, match=r"p\.xml: no compute host"):
        platform_from_simgrid(path)
