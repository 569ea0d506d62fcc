"""SLA orders on the real Batsim: ``hdrm replay --engine batsim --policy edf|least_laxity`` with
tenants makes exactly the built-in engine's schedule (and not FCFS's), and fair_share, which
counts usage in the built-in decision core, is a one-line error there."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from real_batsim import real_batsim

from hdrm.cli.main import main

BATSIM, WHY_NOT = real_batsim()
ROOT = Path(__file__).resolve().parents[2]
KTH = str(ROOT / "workloads" / "KTH-SP2-1996-2.1-cln_27200-27399.swf")


def _replay(tmp_path, engine, policy, *extra):
    out = tmp_path / f"{engine}_{policy}"
    status = main(["replay", "--engine", engine, "--batsim", BATSIM or "batsim",
                   "--homogeneous-procs", "100", "--workload", KTH, "--nb-jobs", "120",
                   "--policy", policy, "--backfill", "easy", "--contention", "none",
                   "--sla", "relative:1.5", "--outdir", str(out), *extra])
    return status, out


def _schedule(out: Path) -> dict[str, tuple[str, str]]:
    rows = csv.DictReader((out / "out_jobs.csv").open())
    return {r["job_id"]: (r["starting_time"], r["finish_time"]) for r in rows}


@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("policy", ["edf", "least_laxity"])
def test_batsim_makes_the_builtin_schedule(tmp_path, capsys, policy):
    runs = {e: _replay(tmp_path, e, policy, "--tenants", "user") for e in ("builtin", "batsim")}
    assert all(status == 0 for status, _ in runs.values())
    _, fcfs = _replay(tmp_path, "builtin", "fcfs")
    builtin, batsim = (_schedule(runs[e][1]) for e in ("builtin", "batsim"))
    assert len(builtin) == 120 and builtin == batsim and builtin != _schedule(fcfs)
    sla = [(runs[e][1] / "out_sla.csv").read_text() for e in ("builtin", "batsim")]
    assert sla[0] == sla[1]


def test_fair_share_on_batsim_is_refused(tmp_path, capsys):
    status, _ = _replay(tmp_path, "batsim", "fair_share", "--tenants", "user")
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "fair_share counts the tenants' usage in the built-in engine's decision core" in err


@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_env_on_batsim_with_fair_share_and_edf_matches_the_builtin_env(monkeypatch):
    from hdrm.env.scheduling_env import SchedulingEnv

    monkeypatch.setenv("PATH", str(Path(BATSIM).parent), prepend=":")
    played = {}
    for engine in ("builtin", "batsim"):
        env = SchedulingEnv(workload_file=KTH, platform_file=None, homogeneous_procs=100,
                            nb_jobs=60, objective="sla_satisfaction", tenants="user",
                            sla="relative:1.2", contention="none", backfilling="easy",
                            engine=engine, selection=("fair_share-high_gflops", "edf-high_gflops"))
        env.reset(seed=0)
        total, done, step = 0.0, False, 0
        while not done:  # alternate fair share and EDF
            _, reward, term, trunc, _ = env.step(step % 2)
            total, done, step = total + reward, term or trunc, step + 1
        starts = {o.job.id: o.start_s for o in env.result().outcomes}
        played[engine] = (total, starts)
        env.close()
    assert played["builtin"] == played["batsim"] and played["builtin"][0] < 0
