"""SIMULATION_BEGINS' ``zone_properties`` (and the order of ``properties``) as Batsim 4.2.1's.

The fast tests hold orders read off the binary (session 25's probes, ``runs/s25o/probe.py``, not
in git: nested zones, clusters, zones and hosts of 15 to 20 props); the slow one compares hdrm
serve's resources with the binary's, key order included, on a platform of routed nested zones,
a cluster of 19 props and hosts of 15 props with and without a role.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_helpers import PLATFORMS, raw_session
from real_batsim import real_batsim
from test_real_batsim_routes import HEAD

from hdrm.batsim.delayed import DelayedSimulation
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.latency import route_latencies
from hdrm.batsim.platform_hosts import load_hosts
from hdrm.batsim.simulator import BatsimSimulation
from hdrm.batsim.zone_properties import (
    merge_zone_props,
    resource_properties,
    zone_properties,
)
from hdrm.platform.loader import load_platform
from hdrm.platform.simgrid import read_simgrid_hosts, write_simgrid_xml

BATSIM, WHY_NOT = real_batsim()


def _props(*keys: str, value: str = "") -> dict[str, str]:
    return {k: value or f"v{k}" for k in keys}


@pytest.mark.parametrize(("chain", "order"), [
    # outermost first; each order as the binary sent it
    ([_props("z", "m", "a"), _props("m", "q"), _props("q")], "q a m z"),
    ([_props("z", "m", "a"), _props("m", "q"), {}], "q a m z"),
    ([{}, _props("zz", "aa", "B")], "B aa zz"),
    ([_props("top", "k"), _props("k", "b")], "b k top"),
    ([_props("top", "k"), _props("k", "cp")], "cp k top"),
    ([_props("y", "c"), _props("y", "d", "b"), _props("e", "a")], "e b a d c y"),
    ([_props("y", "c"), _props("y", "d", "b"), _props("f", "b", "Z")], "Z f b d c y"),
])
def test_zone_property_keys_in_the_binary_s_order(chain, order):
    assert list(merge_zone_props(chain)) == order.split()


def test_the_innermost_zone_s_value_wins_in_the_outer_key_s_place():
    outer, middle, inner = {"y": "0", "c": "0"}, {"y": "1", "d": "1"}, {"c": "2"}
    merged = merge_zone_props([outer, middle, inner])
    assert merged == {"y": "1", "c": "2", "d": "1"}
    assert list(merged) == ["d", "c", "y"]  # the binary's order (its "four" probe)


def test_twenty_props_in_one_zone_walk_as_the_binary():
    """The binary's walk of 20 props r0..r19 on the outer zone and 9 + r3 on the inner one (29
    keys in 29 buckets, several sharing one): its order, as sent."""
    outer = {f"r{i}": str(i) for i in range(20)}
    inner = {**{f"z{i}": str(i) for i in range(9)}, "r3": "in"}
    merged = merge_zone_props([outer, inner])
    assert list(merged) == (
        "z7 z4 z3 z1 r9 r2 z2 r14 r6 r10 r4 r11 z0 r8 r5 r13 z8 r7 z5 r15 r12 r3 r19 r18 r16 "
        "z6 r1 r17 r0").split()
    assert merged["r3"] == "in" and merged["r4"] == "4"


def test_host_properties_in_the_binary_s_order():
    """A host's props as the binary sent them: ``role`` (empty) inserted last when it has none,
    else where its walk puts it."""
    keys = [f"h{i}" for i in range(15)]
    plain = resource_properties({k: k[1:] for k in keys})
    assert list(plain) == ["role", "h11", "h10", "h0", "h1", "h2", "h5", "h3", "h7", "h4",
                           "h14", "h6", "h12", "h8", "h13", "h9"]
    assert plain["role"] == "" and plain["h3"] == "3"
    with_role = resource_properties({"role": "compute_node", **{k: k[1:] for k in keys}})
    assert list(with_role) == ["h11", "h9", "h13", "h12", "role", "h10", "h0", "h1", "h2", "h5",
                               "h3", "h7", "h6", "h14", "h4", "h8"]
    assert list(resource_properties({"f": "3", "b": "3", "Z": "3"})) == ["role", "f", "Z", "b"]
    assert resource_properties({}) == {"role": ""}
    node = resource_properties({"f": "3", "b": "3.50", "Z": "1e3",
                                **{f"c{i}": str(i / 4) for i in range(16)}})
    assert list(node) == ("c6 c3 c7 c5 c8 c15 c14 c12 c11 c10 f Z role b c0 c1 c2 c9 c4 c13"
                          .split())  # 20 keys: the role's bucket is taken, it goes after Z


def _platform(tmp: Path) -> Path:
    outer = "".join(f'<prop id="r{i}" value="{i}"/>' for i in range(20))
    node = "".join(f'<prop id="c{i}" value="{i / 4}"/>' for i in range(16))
    host = "".join(f'<prop id="h{i}" value="{i}"/>' for i in range(15))
    text = (
        f'{HEAD}<zone id="w" routing="Full"><prop id="y" value="0"/><prop id="c" value="0"/>'
        f'{outer}'
        '<zone id="zm" routing="Full"><prop id="y" value="zm"/>'
        '<host id="master_host" speed="1Gf"/></zone>'
        '<zone id="za" routing="Floyd"><prop id="y" value="za"/><prop id="d" value="1"/>'
        '<prop id="b" value="1"/>'
        '<cluster id="c" prefix="c" suffix="" radical="0-2" speed="1Gf" bw="10GBps" lat="0us">'
        f'<prop id="f" value="3"/><prop id="b" value="3.50"/><prop id="Z" value="1e3"/>{node}'
        '</cluster></zone>'
        '<zone id="zh" routing="Floyd"><prop id="e" value="2"/><prop id="r3" value="in"/>'
        f'<host id="h0" speed="1Gf"><prop id="role" value="compute_node"/>{host}</host>'
        f'<host id="h1" speed="1Gf">{host}</host><host id="h2" speed="1Gf"/>'
        '<router id="zr"/><link id="l3" bandwidth="10GBps" latency="0us"/>'
        '<route src="h0" dst="zr"><link_ctn id="l3"/></route>'
        '<route src="h1" dst="zr"><link_ctn id="l3"/></route>'
        '<route src="h2" dst="zr"><link_ctn id="l3"/></route></zone>'
        '<link id="l1" bandwidth="10GBps" latency="0us"/>'
        '<zoneRoute src="za" dst="zm" gw_src="cc_router" gw_dst="master_host">'
        '<link_ctn id="l1"/></zoneRoute>'
        '<zoneRoute src="zh" dst="zm" gw_src="zr" gw_dst="master_host">'
        '<link_ctn id="l1"/></zoneRoute>'
        '</zone></platform>\n')
    path = tmp / "platform.xml"
    path.write_text(text)
    return path


def test_a_platform_s_resources_get_their_zones_props(tmp_path):
    path = _platform(tmp_path)
    hosts = read_simgrid_hosts(path)
    zones = zone_properties(path, hosts)
    assert [h.name for h in hosts] == ["c0", "c1", "c2", "h0", "h1", "h2"]
    cluster, h0 = zones[0], zones[3]
    assert zones[1] == zones[2] == cluster and zones[4] == zones[5] == h0
    assert (cluster["y"], cluster["b"], cluster["Z"], cluster["c"]) == ("za", "3.50", "1e3", "0")
    assert cluster["c1"] == "0.25" and cluster["r3"] == "3" and len(cluster) == 20 + 2 + 2 + 2 + 16
    assert (h0["y"], h0["r3"], h0["e"]) == ("0", "in", "2") and len(h0) == 22 + 1
    assert "h1" not in h0  # a host's own props are its properties, not zone properties


def test_a_json_platform_has_no_zone_props(tmp_path):
    assert zone_properties(tmp_path / "p.json", [None, None]) == [{}, {}]  # type: ignore[list-item]


def _one_job(tmp: Path) -> Path:
    workload = tmp / "w.json"
    workload.write_text(json.dumps({"nb_res": 1, "profiles": {"d": {"type": "delay", "delay": 1}},
                                    "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "d"}]}))
    return workload


def test_every_simulation_built_from_the_hosts_sends_their_zone_props(tmp_path):
    # no server in between: the hosts carry their zone properties (one reader, load_hosts)
    path, workload = _platform(tmp_path), _one_job(tmp_path)
    hosts = load_hosts(path)
    expected = zone_properties(path, read_simgrid_hosts(path))
    assert [dict(h.zone_properties) for h in hosts] == expected and expected[0]["y"] == "za"
    for sim in (BatsimSimulation(hosts, read_job_table(workload)),
                DelayedSimulation(hosts, read_job_table(workload), None,
                                  route_latencies(path, hosts))):
        data = sim.begin().events[0].data
        sent = [r["zone_properties"] for r in data["compute_resources"]]
        assert sent == expected
        assert list(sent[0])[:3] == list(expected[0])[:3]  # Batsim's key order kept


def test_an_exported_json_platform_sends_empty_zone_props(tmp_path):
    # what the env bridge hands the binary: host props, a zone without any
    hosts = load_hosts(PLATFORMS / "tiny_hetero.json")
    assert len(hosts) == 8 and all(h.zone_properties == {} for h in hosts)
    assert hosts[0].properties["node"] and hosts[0].properties["wattage_off"] == "0"


def _rejecting(doc: dict) -> str:
    events = [{"timestamp": doc["now"], "type": "REJECT_JOB",
               "data": {"job_id": e["data"]["job_id"]}}
              for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
    return json.dumps({"now": doc["now"], "events": events})


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_simulation_begins_resources_as_the_binary(tmp_path):
    platform = _platform(tmp_path)
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 1, "profiles": {"d": {"type": "delay", "delay": 1}},
                                    "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "d"}]}))

    def resources(binary: str | None) -> str:
        prefix = tmp_path / ("real" if binary else "ours")
        sched = raw_session(_rejecting, platform, workload, prefix, binary=binary)
        data = json.loads(sched.received[0])["events"][0]["data"]
        return json.dumps(data["compute_resources"])  # key order included

    theirs = resources(BATSIM)
    assert '"zone_properties": {}' not in theirs
    assert resources(None) == theirs


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_the_env_bridge_s_exported_platform_as_the_binary_lists_it(tmp_path):
    # the batsim engine (env bridge) writes the platform with write_simgrid_xml and runs the
    # binary on it; hdrm serve reads the JSON file through the same export
    source = PLATFORMS / "tiny_hetero.json"
    exported = write_simgrid_xml(load_platform(source), tmp_path / "platform.xml")
    workload = _one_job(tmp_path)

    def resources(platform: Path, binary: str | None) -> list[dict]:
        prefix = tmp_path / ("real" if binary else "ours")
        sched = raw_session(_rejecting, platform, workload, prefix, binary=binary)
        text = json.dumps(json.loads(sched.received[0])["events"][0]["data"]["compute_resources"])
        return text

    theirs = resources(exported, BATSIM)
    assert json.loads(theirs)[0]["zone_properties"] == {} and len(json.loads(theirs)) == 8
    assert resources(source, None) == theirs  # key order included
