"""Platforms whose routes SimGrid computes (torus, fat-tree, dragonfly clusters; Cluster and
Vivaldi zones), peers, cabinets and repeated props: hdrm serve against the Batsim binary.

Before session 26 hdrm listed a topology cluster's props as zone properties and sent every
message of these platforms at once (latency 0, with a warning); the binary's messages take
their routes' latencies (runs/s26q/probe.py: 0 of 50 seeded sessions the same before, 50 of
50 after)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from batsim_helpers import binary_run, fcfs, raw_session
from real_batsim import real_batsim
from test_serve_workloads import seeded_workload
from test_serve_workloads_latency import _assert_same, _session
from topology_platforms import COMPUTED, HEAD, REFUSED, VIVALDI_ZONES

from hdrm.batsim.latency import route_latencies
from hdrm.batsim.platform_hosts import load_hosts
from hdrm.errors import PlatformError
from hdrm.results.csvio import read_jobs_csv

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]


def _write(tmp: Path, text: str) -> Path:
    path = tmp / "platform.xml"
    path.write_text(text)
    return path


def _rejecting(doc: dict) -> str:
    events = [{"timestamp": doc["now"], "type": "REJECT_JOB",
               "data": {"job_id": e["data"]["job_id"]}}
              for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
    return json.dumps({"now": doc["now"], "events": events})


@pytest.mark.parametrize("name", sorted(COMPUTED))
def test_same_messages_as_the_binary_on_computed_routes(name, tmp_path):
    """Two seeded workloads full of ties: every message and row the same (times to 1 us)."""
    platform = _write(tmp_path, COMPUTED[name])
    assert not route_latencies(platform, load_hosts(platform)).zero
    workloads = [seeded_workload(tmp_path / f"w{i}.json", seed) for i, seed in enumerate((1, 2))]
    theirs = _session(platform, workloads, tmp_path / "real", True)
    ours = _session(platform, workloads, tmp_path / "ours", False)
    _assert_same(tmp_path, ours, theirs)  # SIMULATION_BEGINS too: resources, zone props


WATTS = '<prop id="wattage_per_state" value="100:200"/>'


@pytest.mark.parametrize("name", ["torus, limiters and loopbacks", "dragonfly", "Vivaldi hosts"])
def test_same_messages_and_energy_as_the_binary_with_e(name, tmp_path):
    """-E (hosts of 100 W idle, 200 W computing): every message, row and energy the same."""
    text = COMPUTED[name].replace(' sharing_policy="SHARED">', f' sharing_policy="SHARED">{WATTS}')
    text = text.replace('<prop id="tp" value="3"/>', WATTS)
    text = re.sub(r'<host ([^>]*?)/>', rf'<host \1>{WATTS}</host>', text)
    assert text.count(WATTS) >= 2
    platform = _write(tmp_path, text)
    workloads = [seeded_workload(tmp_path / f"w{i}.json", seed) for i, seed in enumerate((3, 4))]
    theirs = _session(platform, workloads, tmp_path / "real", True, energy=True)
    ours = _session(platform, workloads, tmp_path / "ours", False, energy=True)
    _assert_same(tmp_path, ours, theirs)
    mine, ref = (read_jobs_csv(tmp_path / f"{n}_jobs.csv") for n in ("ours", "real"))
    assert [r.consumed_energy for r in mine] == pytest.approx(
        [r.consumed_energy for r in ref], abs=1e-3)  # the binary prints 6 decimals
    assert sum(r.consumed_energy for r in ref) > 0


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_binary_does_with_refused_hosts(name, tmp_path):
    """The binary aborts, or lists fewer hosts than the file declares; hdrm refuses."""
    text, _ = REFUSED[name]
    platform = _write(tmp_path, text)
    workload = seeded_workload(tmp_path / "w.json", 1)
    aborts = {"a peer in a Full zone": "<peer> tag can only be used in Vivaldi netzones",
              "a torus short of radicals": "Insufficient number of radicals"}
    if name in aborts:
        done = binary_run(BATSIM, _rejecting, platform, workload, tmp_path / "real")
        assert done.returncode != 0 and aborts[name] in done.stderr
    else:  # declared: h0 and 4 cabinet nodes; 13 torus nodes. Listed: h0; the first 12
        listed = {"a cabinet in a Full zone": 1, "a torus of more radicals": 12}[name]
        sched = raw_session(_rejecting, platform, workload, tmp_path / "real", binary=BATSIM)
        assert json.loads(sched.received[0])["events"][0]["data"]["nb_resources"] == listed
    with pytest.raises(PlatformError):
        load_hosts(platform)


def test_the_binary_aborts_on_hosts_in_two_zones_of_a_vivaldi_zone(tmp_path):
    platform = _write(tmp_path, VIVALDI_ZONES)
    done = binary_run(BATSIM, fcfs(6), platform, seeded_workload(tmp_path / "w.json", 1),
                      tmp_path / "real")  # the first job's end: a route from zh to zm
    assert done.returncode != 0
    assert "Please specify the Vivaldi coordinates of Netzone zh" in done.stderr
    with pytest.raises(PlatformError, match="two zones of Vivaldi zone 'v'"):
        load_hosts(platform)


def test_repeated_props_keep_their_first_value_as_in_the_binary(tmp_path):
    text = (f'{HEAD}<zone id="w" routing="Full"><prop id="a" value="1"/><prop id="b" value="x"/>'
            '<prop id="a" value="2"/><zone id="zm" routing="Full">'
            '<host id="master_host" speed="1Gf"/></zone><zone id="zh" routing="Full">'
            '<prop id="b" value="y"/><prop id="c" value="1"/><prop id="b" value="z"/>'
            '<host id="h0" speed="1Gf"><prop id="k" value="1"/><prop id="m" value="0"/>'
            '<prop id="k" value="2"/></host><host id="h1" speed="1Gf"/></zone>'
            '<cluster id="cl" prefix="n" suffix="" radical="0-1" speed="1Gf" bw="1GBps" '
            'lat="0us"><prop id="q" value="1"/><prop id="r" value="1"/><prop id="q" value="3"/>'
            '</cluster><link id="l" bandwidth="1GBps" latency="0us"/>'
            '<zoneRoute src="zh" dst="zm" gw_src="h0" gw_dst="master_host"><link_ctn id="l"/>'
            '</zoneRoute><zoneRoute src="cl" dst="zm" gw_src="ncl_router" gw_dst="master_host">'
            '<link_ctn id="l"/></zoneRoute></zone></platform>\n')
    platform = _write(tmp_path, text)
    workload = seeded_workload(tmp_path / "w.json", 1)

    def resources(binary: str | None) -> str:
        prefix = tmp_path / ("real" if binary else "ours")
        sched = raw_session(_rejecting, platform, workload, prefix, binary=binary)
        return json.dumps(json.loads(sched.received[0])["events"][0]["data"]["compute_resources"])

    theirs = resources(BATSIM)
    assert '"k": "1"' in theirs and '"q": "1"' in theirs and '"b": "y"' in theirs
    assert resources(None) == theirs  # key order included
