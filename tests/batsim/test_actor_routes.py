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
  which the binary's first message never arrives: it sends no event).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from real_batsim import real_batsim
from test_real_batsim_routes import HEAD, _spaced_workload
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


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "platform.xml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_a_master_node_s_own_messages_as_the_binary(name, tmp_path):
    text, own_s = CLUSTERS[name]
    platform = _write(tmp_path, text)
    workload = [_spaced_workload(tmp_path / "w.json")]
    theirs = timed(_session(platform, workload, tmp_path / "real", True, calls=False))
    ours = timed(_session(platform, workload, tmp_path / "ours", False, calls=False))
    assert theirs[0][1][0] == ("JOB_SUBMITTED", "w0!0", round(3 * own_s, 7))
    assert ours == theirs


@pytest.mark.parametrize("name", ["shared node links"])
def test_sessions_on_master_clusters_as_the_binary(name, tmp_path):
    """Seeded workloads with ties, seeds 0 and 1: the same messages and rows."""
    platform = _write(tmp_path, CLUSTERS[name][0])
    workloads = [seeded_workload(tmp_path / f"w{i}.json", s) for i, s in enumerate((0, 1))]
    theirs = _session(platform, workloads, tmp_path / "real", True)
    ours = _session(platform, workloads, tmp_path / "ours", False)
    _assert_same(tmp_path, ours, theirs)
