"""Batsim's actors on platforms whose routes have latency (no binary needed, except ``slow``).

A message over a route with latency is SimGrid 3.32's ``ptask_L07`` action: it waits out the
latency (which ends, as a sleep, at the first solver step with less than 1 ns of it left), then
sends its byte at ``min(bandwidth, TCP-gamma / (2 x latency))`` (``L07Action::updateBound``,
TCP-gamma 4194304 bytes): 0.4768 ns after a 1 ms latency on 10 GBps links, 1 ns on 1 GBps
links; its rate is that of the route's slowest link otherwise. Batsim's server takes one
message at a time, so no two transfers ever share a link.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from real_batsim import real_batsim
from test_real_batsim_routes import HEAD, MASTER, ROUTED, _route
from test_serve_workloads import seeded_workload
from test_serve_workloads_latency import _assert_same, _session

from hdrm.batsim.actors import ActorSimulation
from hdrm.batsim.bandwidth import LOOPBACK_BPS, message_bandwidths
from hdrm.batsim.delayed import DelayedSimulation
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.latency import route_latencies
from hdrm.batsim.maestro import ANSWERED, RECV, SEND, SLEEP, TCP_GAMMA, WAIT, Maestro
from hdrm.batsim.server import BatsimServer

BATSIM, WHY_NOT = real_batsim()


def _sender(payload: str, bandwidth: float, latency: float, sleep_s: float = 0.0):
    if sleep_s:
        yield (SLEEP, sleep_s, 0)
    yield (ANSWERED, None)
    transfer = yield (SEND, payload, bandwidth, 0, latency)
    yield (WAIT, transfer)


def _server(maestro: Maestro, log: list, count: int):
    for _ in range(count):
        yield (ANSWERED, None)
        transfer = yield (RECV,)
        payload = yield (WAIT, transfer)
        log.append((payload, maestro.now))


def _sleeper(maestro: Maestro, log: list, duration: float):
    yield (SLEEP, duration, 0)
    log.append(("woke", maestro.now))


def _received(senders: list, count: int, *others) -> list:
    maestro, log = Maestro(), []
    maestro.spawn(_server(maestro, log, count))
    for actor in senders:
        maestro.spawn(actor)
    for make in others:
        maestro.spawn(make(maestro, log))
    assert maestro.run() is None
    return log


def test_the_latency_then_the_byte_at_the_tcp_gamma_bound():
    """1 ms on 10 GBps: the bound 4194304 / 0.002 = 2.097e9 B/s is below the link's rate."""
    log = _received([_sender("a", 1e10, 1e-3)], 1)
    assert TCP_GAMMA == 4194304.0
    assert log == [("a", 1e-3 + 1.0 / (4194304.0 / 2e-3))]
    assert log[0][1] == pytest.approx(0.001000000476837, abs=1e-15)


def test_a_slow_link_sets_the_rate_below_the_bound():
    """1 ms on 100 MBps: the link (1e8 B/s) is below the bound, the byte takes 10 ns."""
    log = _received([_sender("a", 1e8, 1e-3)], 1)
    assert log == [("a", 1e-3 + 1e-8)]


def test_messages_are_taken_one_at_a_time_each_with_its_latency():
    """Posted together: the second transfer starts when the first has arrived."""
    log = _received([_sender("a", 1e9, 1e-3), _sender("b", 1e9, 2e-3)], 2)
    assert [what for what, _ in log] == ["a", "b"]
    assert log[0][1] == pytest.approx(1e-3 + 1e-9, abs=1e-15)
    assert log[1][1] == pytest.approx(3e-3 + 2e-9, abs=1e-15)


@pytest.mark.parametrize("early_s, same_step", [(0.5e-9, True), (0.9e-9, True), (1.1e-9, False)])
def test_a_latency_ends_within_a_nanosecond_like_a_sleep(early_s, same_step):
    """A step that leaves under 1 ns of latency ends it: the byte starts from that step."""
    log = _received([_sender("a", 1e9, 1e-3)], 1,
                    lambda m, lg: _sleeper(m, lg, 1e-3 - early_s))
    woke, arrived = log[0][1], log[1][1]
    assert [what for what, _ in log] == ["woke", "a"]
    start = woke if same_step else 1e-3
    assert arrived == pytest.approx(start + 1e-9, abs=1e-15)


def test_an_empty_route_ignores_latency():
    log = _received([_sender("a", math.inf, 0.0)], 1)
    assert log == [("a", 0.0)]


def _platform(tmp: Path, text: str) -> Path:
    path = tmp / "platform.xml"
    path.write_text(text)
    return path


def _workload(tmp: Path) -> Path:
    path = tmp / "w.json"
    path.write_text(json.dumps({"nb_res": 6, "jobs": [
        {"id": "1", "subtime": 1, "res": 1, "walltime": -1, "profile": "d"}],
        "profiles": {"d": {"type": "delay", "delay": 2}}}))
    return path


def test_a_latency_platform_of_one_bandwidth_runs_in_the_actor_model(tmp_path):
    """'Full, hosts without a route': h0, h2, h4 cross l1 (1 ms), h1, h3, h5 have no route (0 s,
    nothing to cross); the master reaches itself over lo (30 us)."""
    platform = _platform(tmp_path, ROUTED["Full, hosts without a route"])
    workload = _workload(tmp_path)
    hosts = load_hosts(platform)
    latencies = route_latencies(platform, hosts)
    found = message_bandwidths(platform, hosts, read_job_table(workload), latencies)
    assert found.master_bps == 1e10 and found.latency(-1) == pytest.approx(30e-6)
    assert found.host_bps == (1e10, math.inf) * 3
    assert [found.latency(h) for h in range(6)] == [1e-3, 0.0] * 3
    assert type(BatsimServer(platform, workload).simulation) is ActorSimulation


def test_the_master_without_its_own_route_crosses_the_loopback(tmp_path):
    text = ROUTED["Full, hosts without a route"].replace(
        '<route src="master_host" dst="master_host"><link_ctn id="lo"/></route>', "")
    platform, workload = _platform(tmp_path, text), _workload(tmp_path)
    hosts = load_hosts(platform)
    found = message_bandwidths(platform, hosts, read_job_table(workload),
                               route_latencies(platform, hosts))
    assert (found.master_bps, found.latency(-1)) == (LOOPBACK_BPS, 0.0)


@pytest.mark.parametrize(("change", "host_bps", "host_s"), [
    (('<link id="l2" bandwidth="10GBps"', '<link id="l2" bandwidth="1GBps"'),
     (1e9, 1e10) * 3, (2e-3, 1e-3) * 3),  # two bandwidths (before session 26: delayed)
    (('<link id="l2" bandwidth="10GBps" latency="2ms"', '<link id="l2" bandwidth="10GBps" '
      'latency="0"'), (1e10,) * 6, (0.0, 1e-3) * 3)])  # l2 without latency: a route, not empty
def test_routes_of_several_bandwidths_or_without_latency_run_in_the_actor_model(
        tmp_path, change, host_bps, host_s):
    """Dijkstra: even hosts cross l2, odd ones l1, the master its loop lo (30 us)."""
    platform = _platform(tmp_path, ROUTED["Dijkstra"].replace(*change))
    workload = _workload(tmp_path)
    hosts = load_hosts(platform)
    found = message_bandwidths(platform, hosts, read_job_table(workload),
                               route_latencies(platform, hosts))
    assert found.host_bps == host_bps and found.latencies.host_s == host_s
    assert (found.master_bps, found.latency(-1)) == (1e10, 30 * 1e-6)  # as SimGrid reads 30us
    assert type(BatsimServer(platform, workload).simulation) is ActorSimulation


@pytest.mark.parametrize("change", [
    ('"p": {"type": "delay", "delay": 1}', '"p": {"type": "parallel_homogeneous_total", '
     '"cpu": 1e9, "com": 0}'),  # a job outside the actor model
    ('<link id="l2" bandwidth="10GBps"', '<link id="l2" bandwidth_file="bw.txt" '
     'bandwidth="10GBps"'),  # a bandwidth a file changes
    ('<link id="l2" bandwidth="10GBps"', '<link id="l2" sharing_policy="WIFI" '
     'bandwidth="10GBps"'),  # a policy not modelled
])  # (a bandwidth of 0 on a route to the master: refused, test_simgrid_zero_bandwidth.py)
def test_other_latency_sessions_keep_the_delayed_model(tmp_path, change):
    text = ROUTED["Dijkstra"]
    platform = _platform(tmp_path, text.replace(*change))
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 6, "jobs": [
        {"id": "1", "subtime": 1, "res": 1, "walltime": -1, "profile": "p"}],
        "profiles": {"p": {"type": "delay", "delay": 1}}}).replace(*change))
    hosts = load_hosts(platform)
    assert message_bandwidths(platform, hosts, read_job_table(workload),
                              route_latencies(platform, hosts)) is None
    assert type(BatsimServer(platform, workload).simulation) is DelayedSimulation


#: one Full zone, links of several bandwidths: h0 la (10 GBps, 1 ms), h1 lb (1 GBps, 1 ms),
#: h2 la + lc (100 MBps, 2 ms), h3 ld (125 MBps, 500 us), h4 lb + ld, h5 no route (empty)
MIXED_LINKS = ('<link id="la" bandwidth="10GBps" latency="1ms"/><link id="lb" bandwidth="1GBps" '
               'latency="1ms"/><link id="lc" bandwidth="100MBps" latency="2ms"/>'
               '<link id="ld" bandwidth="125MBps" latency="500us"/>'
               '<link id="lo" bandwidth="1GBps" latency="30us"/>')
MIXED_ROUTES = {0: ["la"], 1: ["lb"], 2: ["la", "lc"], 3: ["ld"], 4: ["lb", "ld"]}


def _mixed(loop: bool = True) -> str:
    hosts = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(6))
    routes = "".join(_route(f"h{i}", "master_host", *ls) for i, ls in MIXED_ROUTES.items())
    if loop:
        routes = _route("master_host", "master_host", "lo") + routes
    return (f'{HEAD}<zone id="w" routing="Full">{MASTER}{hosts}{MIXED_LINKS}{routes}</zone>'
            '</platform>\n')


def test_one_full_zone_with_latencies_takes_each_route_s_slowest_link(tmp_path):
    platform, workload = _platform(tmp_path, _mixed()), _workload(tmp_path)
    hosts = load_hosts(platform)
    found = message_bandwidths(platform, hosts, read_job_table(workload),
                               route_latencies(platform, hosts))
    assert found.host_bps == (1e10, 1e9, 1e8, 1.25e8, 1.25e8, math.inf)
    assert [found.latency(h) for h in range(6)] == [1e-3, 1e-3, 3e-3, 5e-4, 1.5e-3, 0.0]
    assert (found.of(-1), found.latency(-1)) == (1e9, 30 * 1e-6)
    assert type(BatsimServer(platform, workload).simulation) is ActorSimulation


def _clusters(node_bw: str) -> str:
    """cluster256_1k's shape on 6 hosts: a cluster, a one-node master cluster, a link between."""
    return (f'{HEAD}<zone id="AS0" routing="Full">'
            f'<cluster id="ca" prefix="c" suffix="" radical="0-5" speed="1Gf" bw="{node_bw}" '
            'lat="50us" bb_bw="2.25GBps" bb_lat="500us"/>'
            '<cluster id="cm" prefix="master_host" suffix="" radical="0-0" speed="1Gf" '
            f'bw="{node_bw}" lat="50us" bb_bw="2.25GBps" bb_lat="500us">'
            '<prop id="role" value="master"/></cluster>'
            '<link id="backbone" bandwidth="1.25GBps" latency="500us"/>'
            '<zoneRoute src="ca" dst="cm" gw_src="cca_router" gw_dst="master_hostcm_router">'
            '<link_ctn id="backbone"/></zoneRoute></zone></platform>\n')


@pytest.mark.parametrize("node_bw, host_bps, master_bps", [
    ("125MBps", 1.25e8, 1.25e8), ("1.25GBps", 1.25e9, 1.25e9), ("10GBps", 1.25e9, 2.25e9)])
def test_a_master_node_s_routes_take_their_slowest_links(tmp_path, node_bw, host_bps, master_bps):
    """A node's message crosses its node link, the cluster's backbone (2.25 GBps), the link
    between the clusters (1.25 GBps), the master cluster's backbone and the master's node link;
    the master's own goes up its node link, over its backbone and down again: with 10 GBps node
    links its slowest link is the backbone (before session 26: the delayed model)."""
    platform, workload = _platform(tmp_path, _clusters(node_bw)), _workload(tmp_path)
    hosts = load_hosts(platform)
    found = message_bandwidths(platform, hosts, read_job_table(workload),
                               route_latencies(platform, hosts))
    simulation = BatsimServer(platform, workload).simulation
    assert found.host_bps == (host_bps,) * 6 and found.master_bps == master_bps
    # node link, backbone, the link between, backbone, the master's node link; its own: 2 x 50
    # + 500 us
    assert [found.latency(h) for h in range(-1, 6)] == pytest.approx([6e-4] + [1.6e-3] * 6)
    assert type(simulation) is ActorSimulation


#: -E needs every host's wattage: a <prop> of each <host> and of each <cluster> (whose props
#: reach SIMULATION_BEGINS as zone_properties too, the binary's since session 25)
WATTS = '<prop id="wattage_per_state" value="100:200"/>'


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize(("name", "energy"), [(n, e) for e in (False, True)
                                              for n in sorted(ROUTED)])
def test_routed_zones_with_1gbps_links_as_the_binary(name, energy, tmp_path):
    """With 1 GBps links (each byte 1 ns; the TCP-gamma bound of a 1 ms route, 0.48 ns): the
    binary's messages and rows, on seeds 2 and 3. The delayed model (no byte) differs on every
    one of them; this model without the bound on "Floyd, through a router"."""
    text = (ROUTED[name].replace('bandwidth="10GBps"', 'bandwidth="1GBps"')
            .replace('bw="10GBps"', 'bw="1GBps"'))
    _as_the_binary(tmp_path, text, (2, 3), energy)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("energy", [False, True])
@pytest.mark.parametrize("loop", [True, False])
def test_one_full_zone_of_several_bandwidths_as_the_binary(loop, energy, tmp_path):
    """Routes of 10 GBps to 100 MBps with latency, seeds 4 and 5: the delayed model differs on
    all four (with and without -E, with and without the master's loop)."""
    _as_the_binary(tmp_path, _mixed(loop), (4, 5), energy)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("node_bw", ["125MBps", "1GBps"])
def test_a_master_in_a_cluster_as_the_binary(node_bw, tmp_path):
    """cluster256_1k's shape, seeds 0 and 1 (the delayed model differs on both bandwidths)."""
    _as_the_binary(tmp_path, _clusters(node_bw), (0, 1), False)


def _as_the_binary(tmp_path, text: str, seeds: tuple[int, int], energy: bool) -> None:
    """The platform ``text`` (its hosts given WATTS with ``energy``) and two seeded workloads:
    hdrm serve's messages and rows are the binary's."""
    if energy:
        text = (text.replace('speed="1Gf"/>', f'speed="1Gf">{WATTS}</host>')
                .replace('bb_lat="5us"/>', f'bb_lat="5us">{WATTS}</cluster>'))
    platform = _platform(tmp_path, text)
    workloads = [seeded_workload(tmp_path / f"w{i}.json", s) for i, s in enumerate(seeds)]
    theirs = _session(platform, workloads, tmp_path / "real", True, energy=energy)
    ours = _session(platform, workloads, tmp_path / "ours", False, energy=energy)
    _assert_same(tmp_path, ours, theirs)
