"""SimGrid platforms as users write them (session 24): what SimGrid 3.32 / Batsim 4.2.1 accepts
is read with Batsim's hosts, speeds and powers; what it refuses is refused in one line naming
the file, the line and the fix. Each case was run under the real binary (runs/s24f; the slow
``tests/batsim/test_real_batsim_platforms.py`` runs them again when it is here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builders import SIMGRID_PROLOGS_READ, SIMGRID_PROLOGS_REFUSED

from hdrm.errors import PlatformError
from hdrm.platform.simgrid import platform_from_simgrid, read_simgrid_all_hosts, read_simgrid_hosts

HEAD = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
MASTER = '<zone id="m" routing="Full"><host id="master_host" speed="1Gf"/></zone>\n'
#: a zone's route to the master's zone (without one Batsim aborts: "Bad gateways")
LINK = '<link id="l" bandwidth="1GBps" latency="0"/>\n'


def to_master(zone: str, gateway: str) -> str:
    return (f'<zoneRoute src="{zone}" dst="m" gw_src="{gateway}" gw_dst="master_host">'
            '<link_ctn id="l"/></zoneRoute>\n')


def write(tmp_path: Path, body: str, version: str = ' version="4.1"') -> Path:
    """A platform file: ``body`` inside one Full zone (line 4 onwards)."""
    path = tmp_path / "p.xml"
    path.write_text(f"{HEAD}<platform{version}>\n<zone id=\"w\" routing=\"Full\">\n{body}\n"
                    "</zone>\n</platform>\n")
    return path


def cluster(attrs: str = "", inner: str = "") -> str:
    return (f'<cluster id="c" prefix="n" suffix="" radical="0-1" speed="2Gf" bw="1GBps" '
            f'lat="0" {attrs}>{inner}</cluster>')


@pytest.mark.parametrize("version", [' version="4"', ' version="4.0"', ' version="4.1"'])
def test_versions_simgrid_reads(tmp_path, version):
    path = write(tmp_path, MASTER + cluster() + LINK + to_master("c", "nc_router"), version)
    assert [h.name for h in read_simgrid_hosts(path)] == ["n0", "n1"]


@pytest.mark.parametrize("version, message", [
    ("", r"p\.xml:3: <platform> has no version, which SimGrid 3\.32 reads as 0\.0 and refuses "
         r"as too old; write version=\"4\.1\""),
    (' version="3"', r"p\.xml:3: <platform> version '3' is SimGrid's format before 3\.13 "
                     r"\(speeds as 'power'\).*simgrid_update_xml"),
    (' version="4.2"', r"p\.xml:3: <platform> version '4\.2' is newer than SimGrid 3\.32 "
                       r"\(Batsim 4\.2\.1\) reads"),
    (' version="5"', r"version '5' is newer"),
])
def test_versions_simgrid_refuses(tmp_path, version, message):
    # Batsim: "THIS FILE IS TOO OLD (v:3.0)", "BIG FAT WARNING" (none), "COMES FROM THE FUTURE"
    with pytest.raises(PlatformError, match=message):
        read_simgrid_hosts(write(tmp_path, MASTER + cluster(), version))


def test_old_file_is_named_too_old_not_missing_speed(tmp_path):
    # a DTD-3 file says power=, not speed=: the version is the reason, not a missing attribute
    path = write(tmp_path, '<host id="master_host" power="1E9"/><host id="h" power="2E9"/>',
                 ' version="3"')
    with pytest.raises(PlatformError, match=r"version '3' is SimGrid's format before 3\.13"):
        read_simgrid_hosts(path)


@pytest.mark.parametrize("body, message", [
    # Batsim: "Starting tag <cluster> is not allowed here" (and the reverse)
    ('<host id="master_host" speed="1Gf"/>' + cluster(),
     r"p\.xml:4: <zone id='w'>: holds both <host> and <cluster> elements, which SimGrid "
     r"refuses .*put the hosts in a <zone> of their own"),
    (cluster() + '<host id="master_host" speed="1Gf"/>', r"holds both <host> and <cluster>"),
    ('<host id="master_host" speed="1Gf"/><zone id="z" routing="Full"/>',
     r"holds both <host> and <zone>"),
])
def test_zone_mixing_hosts_and_zones(tmp_path, body, message):
    with pytest.raises(PlatformError, match=message):
        read_simgrid_hosts(write(tmp_path, body))


def test_host_outside_any_zone(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(f'{HEAD}<platform version="4.1">\n<host id="master_host" speed="1Gf"/>\n'
                    '<host id="h0" speed="1Gf"/>\n</platform>\n')
    with pytest.raises(PlatformError, match=r"p\.xml:4: <host id='master_host'>: a <host> "
                       r"directly in <platform>, which SimGrid refuses; put it in a <zone"):
        read_simgrid_hosts(path)


@pytest.mark.parametrize("attrs, message", [
    # a cluster has no pstate (Batsim: "Bad attribute `pstate' in `cluster' element"); hdrm read
    # the hosts in power state 1
    ('pstate="1"', r"p\.xml:6: <cluster id='c'>: attribute 'pstate' is not a <cluster> "
                   r"attribute, which SimGrid refuses; remove it \(valid: bb_bw, "),
    ('speeed="1Gf"', r"attribute 'speeed' is not a <cluster> attribute"),
])
def test_unknown_cluster_attributes(tmp_path, attrs, message):
    with pytest.raises(PlatformError, match=message):
        read_simgrid_hosts(write(tmp_path, MASTER + cluster(attrs)))


def test_cluster_without_its_required_attributes(tmp_path):
    body = MASTER + '<cluster id="c" prefix="n" radical="0-1" speed="2Gf" bw="1GBps" lat="0"/>'
    with pytest.raises(PlatformError, match=r"p\.xml:6: <cluster id='c'>: missing attribute "
                       r"'suffix', which SimGrid requires of a <cluster>; add it$"):
        read_simgrid_hosts(write(tmp_path, body))


@pytest.mark.parametrize("attr", ["speed_file", "availability_file", "state_file"])
def test_host_profiles_are_refused_not_ignored(tmp_path, attr):
    # Batsim runs the host at the speeds of its profile (or aborts: "Cannot open file"); hdrm
    # would run it at a constant speed
    body = f'<host id="master_host" speed="1Gf"/>\n<host id="h0" speed="1Gf" {attr}="p.txt"/>'
    with pytest.raises(PlatformError, match=rf"p\.xml:6: <host id='h0'>: {attr}='p\.txt' "
                       r"changes the host over time, which hdrm does not model"):
        read_simgrid_hosts(write(tmp_path, body))


def test_cabinet_and_peer_make_hosts(tmp_path):
    # the old <cabinet> is a cluster of hosts; a <peer> is a host of a Vivaldi zone: Batsim
    # runs jobs on them (hdrm found no compute host before)
    body = (MASTER + '<zone id="cab" routing="Cluster">'
            '<cabinet id="cb" prefix="k" suffix=".x" radical="0-1" speed="3Gf" bw="1GBps" '
            'lat="0"/><backbone id="bb" bandwidth="1GBps" latency="0"/><router id="cab_gw"/>'
            '</zone>\n<zone id="viv" routing="Vivaldi"><peer id="p0" speed="2gigaflops" '
            'bw_in="1GBps" bw_out="1GBps" coordinates="0 0 0"/></zone>\n'
            + LINK + to_master("cab", "cab_gw") + to_master("viv", "p0"))
    hosts = read_simgrid_hosts(write(tmp_path, body))
    assert [(h.name, h.speeds_gflops) for h in hosts] == [
        ("k0.x", (3.0,)), ("k1.x", (3.0,)), ("p0", (2.0,))]


@pytest.mark.parametrize("speed, shown, state", [
    ("0f", "0", 0), ("0", "0", 0), ("-1Gf", "-1e+09", 0), ("1Gf, 0f", "0", 1)])
def test_compute_host_of_non_positive_speed(tmp_path, speed, shown, state):
    # Batsim: "host 'h0' is a compute node but has an invalid (non-positive) computing speed";
    # hdrm replayed it at 0 GFLOP/s and hdrm serve killed its jobs at their walltime
    pstate = f' pstate="{state}"'
    body = f'<host id="master_host" speed="1Gf"/>\n<host id="h0" speed="{speed}"{pstate}/>'
    with pytest.raises(PlatformError, match=rf"p\.xml:6: host 'h0': speed {re.escape(shown)} "
                       rf"flop/s in its power state {state}; Batsim refuses a compute host of "
                       r"non-positive speed; give a positive speed \(or make it the master "
                       r"host\)$"):
        read_simgrid_hosts(write(tmp_path, body))


def test_master_host_of_zero_speed_is_accepted(tmp_path):
    body = '<host id="master_host" speed="0f"/>\n<host id="h0" speed="1Gf"/>'
    assert [h.name for h in read_simgrid_hosts(write(tmp_path, body))] == ["h0"]
    assert len(read_simgrid_all_hosts(write(tmp_path, body))) == 2


def test_pstate_written_as_a_float(tmp_path):
    # the DTD's default is "0.0": Batsim runs pstate="1.0" in state 1 (hdrm refused it as "not
    # a number")
    body = '<host id="master_host" speed="1Gf"/>\n<host id="h0" speed="2Gf, 1Gf" pstate="1.0"/>'
    (host,) = read_simgrid_hosts(write(tmp_path, body))
    assert host.pstate == 1


def test_platform_runs_hosts_in_their_starting_power_state(tmp_path):
    # real Batsim ran 1e9 flops on h1 (pstate 1) in 0.2 s at 150 W (runs/s24f, v16); hdrm's
    # platform gave it state 0's 10 GFLOP/s and 200 W
    body = ('<host id="master_host" speed="1Gf"/>\n'
            '<host id="h0" speed="10Gf, 5Gf"><prop id="wattage_per_state" value="100:200, 80:150"/>'
            '</host>\n<host id="h1" speed="10Gf, 5Gf" pstate="1">'
            '<prop id="wattage_per_state" value="100:200, 80:150"/></host>')
    platform, hosts = platform_from_simgrid(write(tmp_path, body))
    assert platform.core_gflops == (10.0, 5.0)
    assert platform.core_power_w == (200.0, 150.0)
    assert [h.pstate for h in hosts] == [0, 1]


@pytest.mark.parametrize("watts, power_w", [("100:120:200", 140.0), ("100:200", 125.0)])
def test_a_multi_core_host_runs_a_job_on_one_core(tmp_path, watts, power_w):
    # real Batsim -E: 1e9 flops on a core="4" host of 100:120:200 W took 0.1 s and 14 J, i.e.
    # 140 W = 120 + (200 - 120) / 4 (runs/s24f, v17); hdrm's platform gave the core 200 W
    body = ('<host id="master_host" speed="1Gf"/>\n<host id="h0" speed="10Gf" core="4">'
            f'<prop id="wattage_per_state" value="{watts}"/></host>')
    platform, _ = platform_from_simgrid(write(tmp_path, body))
    assert platform.core_power_w == (power_w,)


def test_include_is_refused(tmp_path):
    # Batsim: "<include> tag was removed in SimGrid v3.18"; hdrm ignored the included hosts
    body = '<include file="more.xml"/>\n<host id="master_host" speed="1Gf"/>'
    with pytest.raises(PlatformError, match=r"p\.xml:5: <include>: <include file='more\.xml'>, "
                       r"which SimGrid refuses since 3\.18; copy the included file's elements"):
        read_simgrid_hosts(write(tmp_path, body))


@pytest.mark.parametrize("kind", ["", ' kind="SPEED"', ' kind="HOST_AVAIL"'])
def test_host_traces_are_refused(tmp_path, kind):
    path = tmp_path / "p.xml"
    path.write_text(f'{HEAD}<platform version="4.1">\n<zone id="w" routing="Full">\n'
                    '<host id="master_host" speed="1Gf"/><host id="h0" speed="1Gf"/>\n</zone>\n'
                    '<trace id="t" periodicity="1">0 1</trace>\n'
                    f'<trace_connect trace="t" element="h0"{kind}/>\n</platform>\n')
    with pytest.raises(PlatformError, match=r"p\.xml:8: <trace_connect>: <trace_connect kind="
                       r"'(SPEED|HOST_AVAIL)' element='h0'> changes a host over time"):
        read_simgrid_hosts(path)


def test_link_traces_are_read_past(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(f'{HEAD}<platform version="4.1">\n<zone id="w" routing="Full">\n'
                    '<host id="master_host" speed="1Gf"/><host id="h0" speed="1Gf"/>\n'
                    '<link id="l" bandwidth="1GBps"/>\n</zone>\n'
                    '<trace id="t" periodicity="1">0 1</trace>\n'
                    '<trace_connect trace="t" element="l" kind="BANDWIDTH"/>\n</platform>\n')
    assert [h.name for h in read_simgrid_hosts(path)] == ["h0"]


def test_json_only_commands_name_a_simgrid_file_as_such(tmp_path):
    # hdrm dag, hdrm dag periodic and hdrm/PeriodicDag-v0 take a platform JSON: an XML file was
    # 'p.xml:1:1: invalid JSON: Expecting value'
    from hdrm.platform.loader import load_platform

    path = write(tmp_path, MASTER + cluster())
    with pytest.raises(PlatformError, match=r"^\S+p\.xml: a SimGrid XML platform, where this "
                       r"command takes an hdrm platform JSON file .*hdrm replay, hdeeprm-launch, "
                       r"hdrm/Scheduling-v0 and hdrm serve$"):
        load_platform(path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"clusters": [}')  # not XML: the JSON error stays
    with pytest.raises(PlatformError, match=r"bad\.json:1:15: invalid JSON"):
        load_platform(bad)


@pytest.mark.parametrize("role", [" storage ", "login", "storage,compute_node", ""])
def test_roles_batsim_does_not_know(tmp_path, role):
    # Batsim 4.2.1: "Cannot create any role from string description ' storage ' existing roles
    # are: compute_node, master, storage" (checked for the first three); hdrm stripped and split
    # them (' storage ' was a storage host, 'login' a compute host)
    body = (f'<host id="master_host" speed="1Gf"/>\n<host id="h0" speed="1Gf"/>\n'
            f'<host id="x" speed="1Gf"><prop id="role" value="{role}"/></host>')
    with pytest.raises(PlatformError, match=rf"p\.xml:7: host 'x': role {re.escape(repr(role))}, "
                       r"which Batsim 4 refuses .*give one role of compute_node, master and "
                       r"storage, written alone$"):
        read_simgrid_hosts(write(tmp_path, body))


def test_roles_batsim_knows(tmp_path):
    body = ('<host id="boss" speed="1Gf"><prop id="role" value="master"/></host>\n'
            '<host id="h0" speed="1Gf"><prop id="role" value="compute_node"/></host>\n'
            '<host id="d" speed="1Gf"><prop id="role" value="storage"/></host>')
    assert [h.name for h in read_simgrid_hosts(write(tmp_path, body))] == ["h0"]


@pytest.mark.parametrize("name", sorted(SIMGRID_PROLOGS_READ))
def test_the_prologs_simgrid_reads_are_read(name, tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(SIMGRID_PROLOGS_READ[name] + '<platform version="4.1"><zone id="z" '
                    'routing="Full"><host id="a" speed="1Gf"/></zone></platform>\n')
    assert [h.name for h in read_simgrid_hosts(path)] == ["a"]


@pytest.mark.parametrize("name", sorted(SIMGRID_PROLOGS_REFUSED))
def test_the_prologs_simgrid_refuses_are_refused_in_one_line(name, tmp_path):
    prolog, _ = SIMGRID_PROLOGS_REFUSED[name]
    path = tmp_path / "p.xml"
    path.write_text(prolog + '<platform version="4.1"><zone id="z" routing="Full">'
                    '<host id="a" speed="1Gf"/></zone></platform>\n')
    line = prolog.count("\n") + (0 if "DOCTYPE" in prolog else 1)
    with pytest.raises(PlatformError, match=rf"^{re.escape(str(path))}:{line}: .*SimGrid .*"
                       r'<!DOCTYPE platform SYSTEM "https://simgrid\.org/simgrid\.dtd">') as err:
        read_simgrid_hosts(path)
    assert "\n" not in str(err.value)
