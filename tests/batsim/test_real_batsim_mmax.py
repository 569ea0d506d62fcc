"""hdrm serve --mmax / --mmax-workload against the real Batsim 4.2.1: with an FCFS decision
process, the same messages, out_jobs.csv and out_schedule.csv (Batsim's columns but its version
and wall-clock times), with -E for the energy of the kept hosts only; the same refusal of more
machines than the platform has."""

from __future__ import annotations

import csv
import json
import random
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, fcfs
from real_batsim import real_batsim
from test_serve_mmax import platform

from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

SKIP = {"batsim_version", "scheduling_time", "simulation_time"}


def seeded(path: Path, seed: int, nb_res: int, max_res: int) -> Path:
    """Ten jobs (delay 2 s or 3 s, or 2 Gflop) on 1..max_res hosts at random times in [0, 10]."""
    rng = random.Random(seed)
    jobs = [{"id": i, "subtime": round(rng.uniform(0, 10), 2), "res": rng.randint(1, max_res),
             "walltime": -1, "profile": rng.choice(["d2", "d3", "ph"])} for i in range(10)]
    profiles = {"d2": {"type": "delay", "delay": 2}, "d3": {"type": "delay", "delay": 3},
                "ph": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 0}}
    path.write_text(json.dumps({"nb_res": nb_res, "jobs": jobs, "profiles": profiles}))
    return path


def outputs(prefix: Path):
    jobs = Path(f"{prefix}_jobs.csv").read_text()
    with open(f"{prefix}_schedule.csv", encoding="utf-8") as handle:
        schedule = next(csv.DictReader(handle))
    return jobs, schedule


@pytest.mark.parametrize("mmax, by_workload, nb_res, energy", [
    (2, False, [2], False), (3, False, [3], True), (0, True, [3, 2], True),
    (2, True, [3], False), (4, True, [3], False), (-1, False, [3], False),
], ids=["mmax2", "mmax3-E", "workloads-E", "both-mmax-smaller", "both-nb_res-smaller",
        "negative"])
@pytest.mark.parametrize("seed", [1, 2])
def test_sessions_are_identical(tmp_path: Path, seed: int, mmax: int, by_workload: bool,
                                nb_res: list[int], energy: bool) -> None:
    plat = platform(tmp_path / "p.xml")
    files = [seeded(tmp_path / f"w{i}.json", seed + 10 * i, n, min(n, 2))
             for i, n in enumerate(nb_res)]
    kept = (min(mmax, max(nb_res)) if mmax > 0 else max(nb_res)) if by_workload else (
        mmax if mmax > 0 else 5)
    flags = (["--mmax", str(mmax)] if mmax else []) + (["--mmax-workload"] if by_workload else [])
    flags += ["-E"] if energy else []
    real = RawScheduler(fcfs(kept))
    real.start()
    try:
        args = [BATSIM, "-p", str(plat), "-e", str(tmp_path / "real"), "-q", *flags,
                "-s", real.endpoint.replace("localhost", "127.0.0.1")]
        for path in files:
            args += ["-w", str(path)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        real.stop()
    ours = RawScheduler(fcfs(kept))
    ours.start()
    try:
        serve(plat, files if len(files) > 1 else files[0],
              ServeOptions(ours.endpoint, str(tmp_path / "ours"), 10.0, config=ServerConfig(
                  mmax=mmax, mmax_workload=by_workload, energy=energy)))
    finally:
        ours.stop()
    assert len(json.loads(real.received[0])["events"][0]["data"]["compute_resources"]) == kept
    assert real.received == ours.received
    real_jobs, real_schedule = outputs(tmp_path / "real")
    our_jobs, our_schedule = outputs(tmp_path / "ours")
    assert real_jobs == our_jobs
    assert {k: v for k, v in real_schedule.items() if k not in SKIP} == {
        k: our_schedule[k] for k in real_schedule if k not in SKIP}


def test_more_machines_than_the_platform_has(tmp_path: Path) -> None:
    plat, wl = platform(tmp_path / "p.xml"), seeded(tmp_path / "w.json", 1, 3, 2)
    done = subprocess.run([BATSIM, "-p", str(plat), "-w", str(wl), "-e", str(tmp_path / "o"),
                           "-q", "--mmax", "9"], capture_output=True, text=True, timeout=60)
    assert "Impossible to compute on M=9 machines: only 5 machines" in done.stderr
    from hdrm.cli.main import main
    assert main(["serve", "-p", str(plat), "-w", str(wl), "--mmax", "9"]) == 2
