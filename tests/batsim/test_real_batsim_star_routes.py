"""A ``<zone routing="Cluster">`` (SimGrid 3.32's StarZone) with and without the master host's
own ``<route>``: hdrm serve against the Batsim binary on seeded FCFS sessions whose timing
depends on that route (every submission and decision is a 1-byte message from the master host to
itself, here over a slow loopback of 7 ms where its host_link takes 1 ms).

Before session 29 hdrm read the master's route to itself as its host_link (``ctl``), so 5 of the
9 sessions below differed from the binary's, and hdrm ran the 4 platforms the binary aborts on
(this file against the code before it)."""

from __future__ import annotations

import json

import pytest
from batsim_helpers import fcfs
from real_batsim import real_batsim
from serve_vs_binary import run
from star_platforms import BACKBONE, CTL, SELF, SPLIT, star
from test_serve_workloads import seeded_workload

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

MASTER_CTL = '<host_link id="master_host" up="ctl" down="ctl"/>'
M = "master_host"
#: name -> (platform, the master's route to itself in seconds, derived by hand)
RUNS = {
    "self-route": (star(CTL, MASTER_CTL, SELF), 0.007),
    "self-route, backbone": (star(CTL, MASTER_CTL, SELF, BACKBONE), 0.007),
    "split-duplex self-route, lo twice": (star(CTL + SPLIT, MASTER_CTL, (
        f'<route src="{M}" dst="{M}"><link_ctn id="sd" direction="DOWN"/><link_ctn id="lo"/>'
        '<link_ctn id="lo"/></route>')), 0.010),
    "two self-routes": (star(CTL, MASTER_CTL, SELF + f'<route src="{M}" dst="{M}">'
                             '<link_ctn id="ctl"/><link_ctn id="lo"/></route>'), 0.008),
    "no self-route": (star(CTL, MASTER_CTL), 0.001),
    "empty self-route": (star(CTL, MASTER_CTL, f'<route src="{M}" dst="{M}"></route>'), 0.001),
    "no self-route, backbone": (star(CTL + SPLIT, '<host_link id="master_host" up="mu" '
                                     'down="sd_DOWN"/>', "", BACKBONE), 0.00802),
    "no master host_link": (star(CTL, ""), 0.0),
    # a 1-byte message over 1 kBps: 1 ms of transfer (hdrm.batsim.bandwidth) after 2 ms
    "self-route of low bandwidth": (star(CTL.replace(
        '"1GBps" latency="7ms"', '"1kBps" latency="2ms"'), MASTER_CTL, SELF), 0.003),
}
#: name -> (platform, the binary's words when it aborts, hdrm's refusal)
ABORTS = {
    "self-route, no host_link": (
        star(CTL, "", SELF), "StarZone routing (h0 - master_host): no link DOWN to destination "
        "node", "give 'master_host' a <host_link"),
    "route between hosts": (
        star(CTL, MASTER_CTL, '<route src="h0" dst="master_host"><link_ctn id="lo"/></route>'),
        "Cannot add route from h0 to master_host. In a StarZone",
        "a route between two points of a Cluster zone"),
    "self-route over the backbone": (
        star(CTL, MASTER_CTL, SELF.replace('"lo"', '"bb"'), BACKBONE), "Link not found: bb",
        "it names backbone 'bb'"),
    "self-route of a cabinet host": (
        star(CTL + '<cabinet id="cb" prefix="k" suffix="" radical="0-1" speed="1Gf" bw="1GBps" '
             'lat="50us"/>', MASTER_CTL, '<route src="k0" dst="k0"><link_ctn id="lo"/></route>'),
        "Route src='k0' does name a node", "'k0' is a host of a <cabinet>"),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_same_messages_and_jobs_as_the_binary(name, tmp_path):
    text, master_s = RUNS[name]
    platform = tmp_path / "platform.xml"
    platform.write_text(text)
    workloads = [seeded_workload(tmp_path / f"w{seed}.json", seed) for seed in (1, 2)]
    theirs = run(fcfs(6), platform, workloads, tmp_path / "real", binary=BATSIM)
    ours = run(fcfs(6), platform, workloads, tmp_path / "ours")
    assert (theirs.error, theirs.status) == ("", 0)
    assert ours.messages == theirs.messages  # byte for byte
    assert ours.files["jobs.csv"] == theirs.files["jobs.csv"]
    assert ours.files == theirs.files
    first = min(j["subtime"] for w in workloads for j in json.loads(w.read_text())["jobs"])
    submitted = next(json.loads(m) for m in theirs.messages if "JOB_SUBMITTED" in m)
    assert submitted["now"] == pytest.approx(first + master_s, abs=1e-9)  # one own message


@pytest.mark.parametrize("name", sorted(ABORTS))
def test_what_the_binary_aborts_on_hdrm_refuses(name, tmp_path):
    text, theirs_words, our_words = ABORTS[name]
    platform = tmp_path / "platform.xml"
    platform.write_text(text)
    workloads = [seeded_workload(tmp_path / "w1.json", 1)]
    theirs = run(fcfs(6), platform, workloads, tmp_path / "real", binary=BATSIM)
    ours = run(fcfs(6), platform, workloads, tmp_path / "ours")
    assert theirs.status != 0 and theirs_words in theirs.error
    assert ours.status == 2 and ours.error.startswith(f"PlatformError: {platform}")
    assert our_words in ours.error and ours.messages == []
