"""``hdrm serve`` with jobs that communicate (``parallel_homogeneous`` with ``com`` > 0):
SimGrid 3.32's ptask_L07 actions on the lmm system of :mod:`hdrm.batsim.lmm`, in the actor
model (:mod:`hdrm.batsim.ptask`), against Batsim 4.2.1.

Platforms: (a) a Full-routed zone of ``<host>``\\ s with a route between every two (latencies,
a FATPIPE loopback: ../shared's small_various platform), (b) a ``<cluster>`` whose shared
backbone the jobs contend for, (c) the same with a FATPIPE backbone, (d) a Floyd zone through a
router. Workloads: seeded mixes of ``delay`` jobs, ``parallel_homogeneous`` jobs that only
compute, and jobs that communicate (1 to 3 hosts; some killed by their walltime), scheduled by
a raw FCFS.
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


def floyd_platform(path: Path, policy: str = "SHARED") -> Path:
    """A Floyd zone: the master and 4 hosts, each linked to one router (50-150 MBps, 10-50 us,
    of ``policy``): every route between two hosts crosses two links, the master's link is
    every message's."""
    names = ["master_host"] + [f"h{i}" for i in range(4)]
    lines = [HEAD, '<zone id="AS0" routing="Floyd">']
    lines += [f'<host id="{h}" speed="1Gf"/>' for h in names] + ['<router id="r"/>']
    lines += [f'<link id="l{i}" bandwidth="{50 + 25 * i}MBps" latency="{10 * (i + 1)}us" '
              f'sharing_policy="{policy}"/>' for i in range(5)]
    lines += [f'<route src="{h}" dst="r"><link_ctn id="l{i}"/></route>'
              for i, h in enumerate(names)]
    path.write_text("\n".join([*lines, "</zone></platform>", ""]))
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


def various_workload(path: Path, seed: int, nb_res: int, nb_jobs: int = 16) -> Path:
    """Seeded jobs of every profile type the actor model runs where jobs communicate:
    ``parallel`` (a matrix for 2 hosts), ``parallel_homogeneous(_total)`` with ``com``, and
    sequences of them and of delays (repeated)."""
    rng = random.Random(seed)
    profiles = {
        "d2": {"type": "delay", "delay": 2},
        "par": {"type": "parallel", "cpu": [5e8, 0], "com": [0, 4e6, 2e7, 0]},
        "hom": {"type": "parallel_homogeneous", "cpu": 1e8, "com": 1e7},
        "tot": {"type": "parallel_homogeneous_total", "cpu": 2e9, "com": 6e7},
        "seq": {"type": "composed", "repeat": 2, "seq": ["hom", "d2", "tot"]},
        "seq2": {"type": "composed", "seq": ["par", "d2"]},
    }
    jobs, t = [], 0.0
    for i in range(nb_jobs):
        t += rng.choice([0, 0.5, 1, 3])
        name = rng.choice(list(profiles))
        res = 2 if name in ("par", "seq2") else rng.randint(1, min(3, nb_res))
        jobs.append({"id": str(i), "subtime": t, "res": res, "profile": name,
                     "walltime": rng.choice([-1, -1, 100, 2.5])})
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
    assert "'parallel_homogeneous' profile that communicates" in err
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


def killing(nb_res: int, every: int = 3):
    """FCFS that kills, in every ``every``-th reply, the job it started longest ago."""
    base, count, running = fcfs(nb_res), [0], []

    def reply(doc: dict) -> str:
        out = json.loads(base(doc))
        count[0] += 1
        ended = {e["data"]["job_id"] for e in doc["events"] if e["type"] == "JOB_COMPLETED"}
        running[:] = [j for j in running if j not in ended]
        running.extend(e["data"]["job_id"] for e in out["events"] if e["type"] == "EXECUTE_JOB")
        if count[0] % every == 0 and running:
            out["events"].append({"timestamp": doc["now"], "type": "KILL_JOB",
                                  "data": {"job_ids": [running.pop(0)]}})
        return json.dumps(out)
    return reply


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("kind", ["hosts", "SHARED", "FATPIPE", "floyd"])
def test_every_profile_type_against_the_binary(tmp_path, kind):
    """parallel, parallel_homogeneous(_total) with com, sequences (checked: seeds 1-3 on the
    first three platforms, 9 of 9 identical; the Floyd zone, SHARED and FATPIPE links, both
    workloads: 12 of 12)."""
    platform = (hosts_platform(tmp_path / "p.xml") if kind == "hosts"
                else floyd_platform(tmp_path / "p.xml") if kind == "floyd"
                else cluster_platform(tmp_path / "p.xml", kind))
    nb = 6 if kind in ("SHARED", "FATPIPE") else 4
    workload = various_workload(tmp_path / "w.json", 2, nb)
    ours = session(platform, workload, tmp_path / "ours", nb, False)
    assert ours == session(platform, workload, tmp_path / "real", nb, True)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("various", [False, True], ids=["mixed", "various"])
def test_kills_against_the_binary(tmp_path, various):
    """KILL_JOB of running jobs: the progress (a task's 1 - remains, a delay's share, a
    sequence's tree), return code -2 of a cancelled task (checked: seeds 1-4 on the three
    platforms, 12 of 12 identical for each workload)."""
    platform = cluster_platform(tmp_path / "p.xml")
    workload = (various_workload if various else mixed_workload)(tmp_path / "w.json", 3, 6)
    got = []
    for real in (False, True):
        prefix = tmp_path / str(real)
        received = messages(platform, [workload], prefix, False, killing(6), real)
        with open(f"{prefix}_jobs.csv", newline="") as handle:
            got.append((received, [row[:15] for row in csv.reader(handle)]))
    assert got[0] == got[1]
    kills = [e["data"] for m in got[0][0] for e in m["events"] if e["type"] == "JOB_KILLED"]
    trees = [p for k in kills for p in k["job_progress"].values() if "current_task" in p]
    assert kills and (bool(trees) == various)  # a sequence killed in its delay part, too


def batsim_file(path: str) -> str | None:
    """A file of Batsim v4.2.1's repository (its local mirror), or None."""
    import subprocess

    mirror = Path("/work/.mirror/oar-team+batsim/repo")
    if not mirror.exists():
        return None
    done = subprocess.run(["git", f"--git-dir={mirror}", "show", f"v4.2.1:{path}"],
                          capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("workload, platform", [
    ("test_various_profile_types", "small_platform"), ("test_various_profile_types", "cluster512"),
    ("test_long_workload", "cluster512"), ("test_energy_minimal_load50", "energy_platform"),
])
def test_batsim_s_own_workloads(tmp_path, workload, platform):
    """Batsim's test workloads on its platforms (from the v4.2.1 mirror), FCFS: identical
    (test_long_workload on small_platform differs by one double's ulp at t = 1e11 s,
    1.5e-5 s: the actor model's latency arithmetic there, the same with delay jobs only)."""
    texts = [batsim_file(f"workloads/{workload}.json"), batsim_file(f"platforms/{platform}.xml")]
    if None in texts:
        pytest.skip("no Batsim v4.2.1 mirror")
    (tmp_path / "w.json").write_text(texts[0])
    (tmp_path / "p.xml").write_text(texts[1])
    nb = json.loads(texts[0])["nb_res"]
    ours = session(tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "ours", nb, False)
    assert ours == session(tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "real", nb, True)
