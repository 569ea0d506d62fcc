"""hdrm serve's messages over routes of links, against the real Batsim 4.2.1 (``slow``).

A message's route is :class:`hdrm.platform.simgrid_routes.RouteTable`'s list of links: its
latency is theirs summed, its byte goes at the slowest link's bandwidth (bounded by TCP-gamma,
:mod:`hdrm.batsim.maestro`). The platforms here test what the route's links decide:

* a ``<cluster>`` whose master node sends to itself: up its link, over the backbone, down its
  link, two links when they are split-duplex (the default), one when the cluster's
  sharing_policy is SHARED or FATPIPE (SimGrid adds each link of a star route once: the
  binary's times differ by the node link's latency, 1 ms here); over its loopback when the
  cluster's ``loopback_bw`` or ``loopback_lat`` is above 0 (``loopback_lat="0"`` alone makes
  none; ``loopback_lat`` above 0 without ``loopback_bw`` makes a loopback of bandwidth 0, on
  which the binary's first message never arrives: it sends no event);
* links of several bandwidths across zones, clusters, Floyd and Dijkstra chains through
  routers (test_real_batsim_routes' platforms, their links 10 GBps to 100 MBps);
* a master ``<host>`` named by role (``boss``, not ``master_host``);
* routes that cross one link twice: the byte goes at half its bandwidth (twice on its
  constraint), except on a FATPIPE link (the actor model without it: 0 of 10 seeded sessions
  as the binary's, runs/s26p/e_noweight_twice.log);
* ``-E`` on clusters whose ``wattage_per_state`` is a cluster ``<prop>``;
* the same platforms without any latency (their messages take only their byte's time).

Batsim's server takes one message at a time, and the jobs covered use no link: no two
transfers ever share a link (at most one was in flight in every session measured).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from builders import write_platform
from real_batsim import real_batsim
from test_real_batsim_routes import HEAD, ROUTED, _spaced_workload
from test_serve_workloads import seeded_workload
from test_serve_workloads_latency import _assert_same, _session, timed

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]


def master_cluster(policy: str = "SPLITDUPLEX", loop: str = "", props: str = "") -> str:
    """A cluster c0-c5 and a one-node master cluster of 1 ms node links (``policy``), backbones
    of 100 us, a 500 us link between them; ``loop`` adds attributes to the master's cluster."""
    def cluster(cid: str, prefix: str, radical: str, role: str) -> str:
        return (f'<cluster id="{cid}" prefix="{prefix}" suffix="" radical="{radical}" '
                f'speed="1Gf" bw="1GBps" lat="1ms" bb_bw="2GBps" bb_lat="100us" '
                f'sharing_policy="{policy}"{loop if role else ""}>{role}{props}</cluster>')
    return (f'{HEAD}<zone id="AS0" routing="Full">'
            + cluster("ca", "c", "0-5", "")
            + cluster("cm", "master_host", "0-0", '<prop id="role" value="master"/>')
            + '<link id="backbone" bandwidth="1.25GBps" latency="500us"/>'
            '<zoneRoute src="ca" dst="cm" gw_src="cca_router" gw_dst="master_hostcm_router">'
            '<link_ctn id="backbone"/></zoneRoute></zone></platform>\n')


#: name -> (platform, the master's own latency the binary shows: 3 messages before the first
#: JOB_SUBMITTED)
CLUSTERS = {
    "split-duplex node links": (master_cluster(), 2.1e-3),
    "shared node links": (master_cluster("SHARED"), 1.1e-3),
    "fatpipe node links": (master_cluster("FATPIPE"), 1.1e-3),
    "loopback_lat 0": (master_cluster(loop=' loopback_lat="0"'), 2.1e-3),
    "loopback_bw only": (master_cluster(loop=' loopback_bw="1GBps"'), 0.0),
    "loopback of 5us": (master_cluster(loop=' loopback_lat="5us" loopback_bw="1GBps"'), 5e-6),
}


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_a_master_node_s_own_messages_as_the_binary(name, tmp_path):
    text, own_s = CLUSTERS[name]
    platform = write_platform(tmp_path, text)
    workload = [_spaced_workload(tmp_path / "w.json")]
    theirs = timed(_session(platform, workload, tmp_path / "real", True, calls=False))
    ours = timed(_session(platform, workload, tmp_path / "ours", False, calls=False))
    assert theirs[0][1][0] == ("JOB_SUBMITTED", "w0!0", round(3 * own_s, 7))
    assert ours == theirs


@pytest.mark.parametrize("name", ["shared node links", "loopback_bw only"])
def test_sessions_on_master_clusters_as_the_binary(name, tmp_path):
    """Seeded workloads with ties, seeds 0 and 1: the same messages and rows."""
    platform = write_platform(tmp_path, CLUSTERS[name][0])
    workloads = [seeded_workload(tmp_path / f"w{i}.json", s) for i, s in enumerate((0, 1))]
    theirs = _session(platform, workloads, tmp_path / "real", True)
    ours = _session(platform, workloads, tmp_path / "ours", False)
    _assert_same(tmp_path, ours, theirs)


#: link bandwidths for test_real_batsim_routes' platforms (10 GBps everywhere there)
MIXED = {'"l1" bandwidth="10GBps"': '"l1" bandwidth="1GBps"',
         '"l2" bandwidth="10GBps"': '"l2" bandwidth="125MBps"',
         '"lo" bandwidth="10GBps"': '"lo" bandwidth="100MBps"',
         'bw="10GBps" lat=': 'bw="1.25GBps" lat='}
WATTS = '<prop id="wattage_per_state" value="100:200"/>'


def mixed(text: str) -> str:
    """Links of 1 GBps (l1), 125 MBps (l2), 100 MBps (lo), cluster nodes 1.25 GBps and backbones
    10 GBps."""
    for old, new in MIXED.items():
        text = text.replace(old, new)
    return text


def role(text: str) -> str:
    """The master host called boss, with role master."""
    return (text.replace('<host id="master_host" speed="1Gf"/>',
                         '<host id="boss" speed="1Gf"><prop id="role" value="master"/></host>')
            .replace('"master_host"', '"boss"'))


def _twice() -> str:
    links = ('<link id="ls" bandwidth="1GBps" latency="1ms"/>'
             '<link id="lf" bandwidth="1GBps" latency="1ms" sharing_policy="FATPIPE"/>'
             '<link id="l1" bandwidth="1GBps" latency="1ms"/>'
             '<link id="l2" bandwidth="1GBps" latency="1ms"/>'
             '<link id="lsd" bandwidth="1GBps" latency="1ms" sharing_policy="SPLITDUPLEX"/>'
             '<link id="lo" bandwidth="1GBps" latency="30us"/>')
    ways = {"master_host": ["lo", "lo"], "h0": ["ls", "ls"], "h1": ["lf", "lf"],
            "h2": ["l1", "l2"], "h3": ["lsd UP", "lsd DOWN"], "h4": ["lsd UP", "lsd UP"],
            "h5": ["ls", "l1", "ls"]}
    routes = ""
    for src, names in ways.items():
        ctn = "".join(f'<link_ctn id="{n.split()[0]}"'
                      + (f' direction="{n.split()[1]}"/>' if " " in n else "/>") for n in names)
        routes += f'<route src="{src}" dst="master_host">{ctn}</route>'
    hosts = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(6))
    return (f'{HEAD}<zone id="w" routing="Full"><host id="master_host" speed="1Gf"/>{hosts}'
            f'{links}{routes}</zone></platform>\n')


#: one Full zone whose routes cross links twice (all 1 GBps, 1 ms; lo 30 us)
TWICE = _twice()


def _as_the_binary(tmp_path: Path, text: str, seeds: tuple[int, int], energy: bool = False):
    platform = write_platform(tmp_path, text)
    workloads = [seeded_workload(tmp_path / f"w{i}.json", s) for i, s in enumerate(seeds)]
    theirs = _session(platform, workloads, tmp_path / "real", True, energy=energy)
    ours = _session(platform, workloads, tmp_path / "ours", False, energy=energy)
    _assert_same(tmp_path, ours, theirs)


#: (test_real_batsim_routes platform, seed, -E): on each, hdrm serve before session 26 (the
#: delayed model; the actor model at one bandwidth only) differed from the binary
#: (runs/s26p/e_before.log)
MIXED_CASES = [("Floyd, through a router", 0, False), ("a cluster in a Floyd sub-zone", 2, False),
               ("Floyd, a chain of zoneRoutes", 4, True), ("Full, zoneRoute", 0, True)]


@pytest.mark.parametrize(("name", "seed", "energy"), MIXED_CASES)
def test_links_of_several_bandwidths_as_the_binary(name, seed, energy, tmp_path):
    """Links of 100 MBps to 10 GBps; with -E, the clusters' wattage_per_state a <cluster> prop
    (their zone_properties are the binary's since session 25)."""
    text = mixed(ROUTED[name])
    if energy:
        text = (text.replace('speed="1Gf"/>', f'speed="1Gf">{WATTS}</host>')
                .replace('bb_lat="5us"/>', f'bb_lat="5us">{WATTS}</cluster>'))
        assert text.count(f"{WATTS}</cluster>") >= 1
    _as_the_binary(tmp_path, text, (seed, seed + 1), energy)


@pytest.mark.parametrize("energy", [False, True])
def test_a_master_host_named_by_role_as_the_binary(energy, tmp_path):
    text = role(mixed(ROUTED["Floyd, through a router"]))
    if energy:
        text = text.replace('speed="1Gf"/>', f'speed="1Gf">{WATTS}</host>').replace(
            '<prop id="role"', f'{WATTS}<prop id="role"')
    _as_the_binary(tmp_path, text, (2, 3), energy)


@pytest.mark.parametrize(("seed", "energy"), [(10, False), (0, True)])
def test_routes_crossing_a_link_twice_as_the_binary(seed, energy, tmp_path):
    text = TWICE
    if energy:
        text = text.replace('speed="1Gf"/>', f'speed="1Gf">{WATTS}</host>')
    _as_the_binary(tmp_path, text, (seed, seed + 1), energy)


def test_a_shared_cluster_with_wattage_props_under_e_as_the_binary(tmp_path):
    """10 GBps SHARED node links (the master's own message: its node link and backbone, 2 GBps),
    wattage_per_state on both clusters as a <prop>, -E."""
    text = master_cluster("SHARED", props=WATTS).replace('bw="1GBps" lat=', 'bw="10GBps" lat=')
    _as_the_binary(tmp_path, text, (2, 3), True)


def zero(text: str) -> str:
    """Every latency of ``text`` 0 (links, cluster links, backbones, loopbacks)."""
    return re.sub(r'(latency|lat|bb_lat|loopback_lat)="[^"]*"', r'\1="0"', text)


#: (platform, seed, -E) without latency: before session 26 the instant model ran them and
#: differed from the binary on each (runs/s26p/e_zero_before.log)
ZERO_CASES = [("Floyd, through a router", 0, False), ("twice", 2, False),
              ("role Dijkstra", 4, True)]


@pytest.mark.parametrize(("name", "seed", "energy"), ZERO_CASES)
def test_routes_without_latency_as_the_binary(name, seed, energy, tmp_path):
    text = {"twice": TWICE, "role Dijkstra": role(mixed(ROUTED["Dijkstra"]))}.get(
        name) or mixed(ROUTED.get(name, ""))
    if energy:
        text = text.replace('speed="1Gf"/>', f'speed="1Gf">{WATTS}</host>').replace(
            '<prop id="role"', f'{WATTS}<prop id="role"')
    _as_the_binary(tmp_path, zero(text), (seed, seed + 1), energy)
