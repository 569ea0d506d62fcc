"""``hdrm serve`` with jobs that communicate (``parallel_homogeneous`` with ``com`` > 0):
SimGrid 3.32's ptask_L07 actions on the lmm system of :mod:`hdrm.batsim.lmm`, in the actor
model (:mod:`hdrm.batsim.ptask`), against Batsim 4.2.1.

Platforms: (a) a Full-routed zone of ``<host>``\\ s with a route between every two (latencies,
a FATPIPE loopback: ../shared's small_various platform), (b) a ``<cluster>`` whose shared
backbone the jobs contend for, (c) the same with a FATPIPE backbone. Workloads: seeded mixes
of ``delay`` jobs, ``parallel_homogeneous`` jobs that only compute, and jobs that communicate
(1 to 3 hosts; some killed by their walltime), scheduled by a raw FCFS.
"""

from __future__ import annotations

import csv
import json
import random
import shutil
from pathlib import Path

import pytest
from batsim_helpers import fcfs
from test_serve_energy_order import BATSIM, WHY_NOT, messages

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden"
HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1">')


def cluster_platform(path: Path, policy: str = "SHARED", nodes: int = 6,
                     watts: bool = False) -> Path:
    """``nodes`` 1 GFLOPS nodes (125 MBps, 50 us links), a 250 MBps backbone of ``policy``
    (100 us), the master a one-node cluster behind a 1.25 GBps link."""
    prop = '<prop id="wattage_per_state" value="100:200"/>' if watts else ""
    path.write_text(
        f'{HEAD}<zone id="AS0" routing="Full">'
        f'<cluster id="ca" prefix="c" suffix="" radical="0-{nodes - 1}" speed="1Gf" '
        f'bw="125MBps" lat="50us" bb_bw="250MBps" bb_lat="100us" bb_sharing_policy="{policy}">'
        f'{prop}</cluster>'
        '<cluster id="cm" prefix="master_host" suffix="" radical="0-0" speed="1Gf" '
        'bw="125MBps" lat="50us" bb_bw="2.25GBps" bb_lat="500us">'
        f'<prop id="role" value="master"/>{prop}</cluster>'
        '<link id="between" bandwidth="1.25GBps" latency="500us"/>'
        '<zoneRoute src="ca" dst="cm" gw_src="cca_router" gw_dst="master_hostcm_router">'
        '<link_ctn id="between"/></zoneRoute></zone></platform>\n')
    return path


def hosts_platform(path: Path) -> Path:
    """../shared's small_various platform: 4 hosts, a route between every two."""
    shutil.copy(GOLDEN / "small_various" / "platform.xml", path)
    return path


def mixed_workload(path: Path, seed: int, nb_res: int, nb_jobs: int = 16) -> Path:
    """Seeded jobs: delays, computing ptasks and communicating ones (1e5 to 1e8 bytes)."""
    rng = random.Random(seed)
    profiles = {"d3": {"type": "delay", "delay": 3}, "d7": {"type": "delay", "delay": 7.5},
                "cpu": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 0}}
    for k, com in enumerate((1e5, 3e6, 2.5e7, 1e8)):
        profiles[f"com{k}"] = {"type": "parallel_homogeneous", "cpu": rng.choice([0, 1e8, 1e9]),
                               "com": com}
    jobs, t = [], 0.0
    for i in range(nb_jobs):
        t += rng.choice([0, 0, 0.5, 1, 2.25])
        name = rng.choice(list(profiles))
        walltime = rng.choice([-1, -1, 100, 1.5])
        jobs.append({"id": str(i), "subtime": t, "res": rng.randint(1, min(3, nb_res)),
                     "profile": name, "walltime": walltime})
    path.write_text(json.dumps({"nb_res": nb_res, "jobs": jobs, "profiles": profiles}))
    return path


def session(platform: Path, workload: Path, prefix: Path, nb_res: int, real: bool):
    """(messages, out_jobs.csv rows) of a raw FCFS session."""
    got = messages(platform, [workload], prefix, False, fcfs(nb_res), real)
    with open(f"{prefix}_jobs.csv", newline="") as handle:
        rows = [row[:15] for row in csv.reader(handle)]
    return got, rows


def serve_error(platform: Path, workload: Path, energy: bool = False) -> str:
    from hdrm.batsim.server import BatsimServer, ServeOptions
    from hdrm.batsim.simulator import ServerConfig
    from hdrm.errors import WorkloadError

    with pytest.raises(WorkloadError) as info:
        BatsimServer(platform, workload, ServeOptions(config=ServerConfig(energy=energy)))
    return str(info.value)


def test_a_communicating_session_runs_in_the_actor_model_with_an_lmm_system(tmp_path):
    from hdrm.batsim.actors import ActorSimulation
    from hdrm.batsim.server import BatsimServer

    platform = cluster_platform(tmp_path / "p.xml")
    sim = BatsimServer(platform, mixed_workload(tmp_path / "w.json", 1, 6)).simulation
    assert type(sim) is ActorSimulation and sim.network is not None
    # a backbone and node links known, the master's messages over its routes' links
    route = sim.bandwidths.between(0, 1)
    assert [link.name for link in route.links] == ["ca_link_0_UP", "ca_backbone",
                                                   "ca_link_1_DOWN"]
    assert [link.bps for link in route.links] == [1.25e8, 2.5e8, 1.25e8]
    assert sim.bandwidths.links(-1) and sim.bandwidths.links(0)


def test_a_session_without_communication_keeps_its_model(tmp_path):
    from hdrm.batsim.server import BatsimServer

    workload = mixed_workload(tmp_path / "w.json", 1, 6)
    doc = json.loads(workload.read_text())
    for profile in doc["profiles"].values():
        if profile.get("com"):
            profile.update(com=0, cpu=1e9)
    workload.write_text(json.dumps(doc))
    sim = BatsimServer(cluster_platform(tmp_path / "p.xml"), workload).simulation
    assert getattr(sim, "network", None) is None
    assert not getattr(sim, "bandwidths", None) or sim.bandwidths.between is None


def test_communicating_jobs_are_refused_under_energy_accounting(tmp_path):
    err = serve_error(cluster_platform(tmp_path / "p.xml", watts=True),
                      mixed_workload(tmp_path / "w.json", 1, 6), energy=True)
    assert "communicates (com > 0)" in err and "-E" in err and "real batsim" in err


def test_communicating_jobs_are_refused_where_the_actor_model_does_not_apply(tmp_path):
    """An hdrm JSON platform has no SimGrid routes: the refusal names the profile type, the
    first jobs, why and the real batsim."""
    platform = Path(__file__).resolve().parents[2] / "platforms"
    json_platform = sorted(platform.glob("*.json"))[0]
    workload = mixed_workload(tmp_path / "w.json", 1, 6)
    err = serve_error(json_platform, workload)
    talking = [j["id"] for j in json.loads(workload.read_text())["jobs"]
               if json.loads(workload.read_text())["profiles"][j["profile"]].get("com")]
    assert f"jobs ({talking[0]!r}, {talking[1]!r}, {talking[2]!r}, ...)" in err
    assert "'parallel_homogeneous' profile with com > 0" in err
    assert "is not a SimGrid XML platform" in err and "run this workload with the real batsim" \
        in err and "\n" not in err


# ---------------------------------------------------------------- against the real binary
@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("kind", ["hosts", "SHARED", "FATPIPE"])
@pytest.mark.parametrize("seed", [1, 5])
def test_against_the_binary(tmp_path, kind, seed):
    """Same messages and out_jobs.csv rows as Batsim 4.2.1 (checked: seeds 1-8, 24 jobs, on
    the three platforms: 24 of 24 sessions identical; runs/s27S)."""
    platform = (hosts_platform(tmp_path / "p.xml") if kind == "hosts"
                else cluster_platform(tmp_path / "p.xml", kind))
    nb = 4 if kind == "hosts" else 6
    workload = mixed_workload(tmp_path / "w.json", seed, nb)
    ours = session(platform, workload, tmp_path / "ours", nb, False)
    assert ours == session(platform, workload, tmp_path / "real", nb, True)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_a_timed_out_ptask_runs_on_while_its_executor_reports(tmp_path):
    """SimGrid 3.32's wait_for leaves a timed-out ptask running until its actor ends: a job
    killed at its walltime still loads its links while its JOB_COMPLETED crosses them (seed 1
    on the host platform: dropping it at once made a later message 0.14 us early)."""
    platform = hosts_platform(tmp_path / "p.xml")
    workload = mixed_workload(tmp_path / "w.json", 1, 4)
    ours = session(platform, workload, tmp_path / "ours", 4, False)
    assert ours == session(platform, workload, tmp_path / "real", 4, True)
