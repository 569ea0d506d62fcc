"""SLA objectives (hdrm.env.objectives): sla_satisfaction, tardiness, fairness and sla_energy on
the four-job, two-tenant case of tests/results/test_sla.py, by hand, fed as the jobs end."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env.objectives import (
    HOUR_S,
    SLA_ENERGY_WEIGHT,
    SlaAccounting,
    Tracker,
    make_objective,
)
from hdrm.errors import ConfigError
from hdrm.workload.job import Job
from hdrm.workload.tenants import Sla, Tenant, TenantTable

TABLE = TenantTable((Tenant("A", 1.0, Sla("latency", 30.0)), Tenant("B", 2.0, Sla("latency", 30.0))),
                    np.array([0, 0, 1, 1], np.int32), np.array([30.0, 30.0, 70.0, 40.0]))
JOBS = [Job(i, i, s, 1, 100.0, a) for i, (s, a) in enumerate([(0, 10), (0, 10), (10, 20), (10, 5)])]


def _tracker(upto: int = 4) -> Tracker:
    tracker = Tracker(nb_jobs=4, energy_j=2e6)
    sla = SlaAccounting(TABLE)
    sla.start(tracker)
    for job, finish, ok in list(zip(JOBS, [10.0, 40.0, 50.0, None], [True, True, True, False]))[:upto]:
        sla.ended(tracker, job, finish, ok)
    return tracker


def test_sla_satisfaction_is_the_miss_rate():
    objective = make_objective("sla_satisfaction")
    assert objective.value(_tracker(1), False) == 0.0
    assert objective.value(_tracker(2), False) == 0.25  # job 1 missed: 1 of 4 deadlines
    assert objective.value(_tracker(), True) == 0.5  # and the rejected job 3


def test_tardiness_in_hours():
    assert make_objective("tardiness").value(_tracker(), True) == pytest.approx(10 / 4 / HOUR_S)


def test_fairness_is_one_minus_jain():
    # share-normalised progress: A (1 + 0.25) / 2 / 1 = 0.625, B 0.5 / 2 = 0.25
    jain = 0.875 ** 2 / (2 * (0.625 ** 2 + 0.25 ** 2))
    assert make_objective("fairness").value(_tracker(), True) == pytest.approx(1 - jain)
    assert make_objective("fairness").value(_tracker(2), False) == 0.0  # one tenant so far


def test_sla_energy_weights_energy_per_job():
    value = make_objective("sla_energy").value(_tracker(), True)
    assert value == pytest.approx(0.5 + SLA_ENERGY_WEIGHT * 2.0 / 4)  # 2 MJ over 4 jobs


def test_the_environment_refuses_them_without_tenants_in_one_line(small_swf):
    from hdrm.env.scheduling_env import SchedulingEnv

    with pytest.raises(ConfigError, match=r"objective: 'tardiness' needs tenants and SLAs; give "
                                          r"tenants"):
        SchedulingEnv(workload_file=small_swf, nb_jobs=5, objective="tardiness")


KTH = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "workloads"
          / "KTH-SP2-1996-2.1-cln_27200-27399.swf")


@pytest.mark.parametrize("objective", ["sla_satisfaction", "tardiness", "fairness", "sla_energy"])
def test_env_return_is_minus_the_objective_of_the_run(objective):
    from hdrm.env.scheduling_env import SchedulingEnv
    from hdrm.results.sla import sla_report
    from hdrm.sim.outputs import job_results

    env = SchedulingEnv(workload_file=KTH, platform_file=None, homogeneous_procs=100, nb_jobs=80,
                        objective=objective, tenants="user", sla="relative:1.2",
                        selection=("edf-high_gflops", "fcfs-high_gflops", "fair_share-high_gflops",
                                   "least_laxity-high_gflops"))
    env.reset(seed=0)
    rng, total, done = np.random.default_rng(1), 0.0, False
    while not done:
        _, reward, term, trunc, info = env.step(int(rng.integers(4)))
        total += reward
        done = term or trunc
    result = env.result()
    report = sla_report(env._sla.table, result.workload.jobs, job_results(result))
    expected = {
        "sla_satisfaction": report.overall.deadline_miss_rate,
        "tardiness": report.overall.tardiness_mean_s / HOUR_S,  # no job rejected here
        "fairness": 1 - report.jain_fairness,
        "sla_energy": report.overall.deadline_miss_rate + result.energy_j / 1e6 / 80,
    }[objective]
    assert len(result.outcomes) == 80 and expected > 0
    assert total == pytest.approx(-expected, rel=1e-9)


def test_sla_selections_without_tenants_are_refused():
    from hdrm.env.scheduling_env import SchedulingEnv

    with pytest.raises(ConfigError, match=r"actions.selection: edf, least_laxity, fair_share"):
        SchedulingEnv(workload_file=KTH, platform_file=None, homogeneous_procs=100, nb_jobs=5,
                      selection=("edf-high_gflops",))


def test_env_with_tenants_passes_check_env_and_pickles_mid_episode():
    import pickle

    from gymnasium.utils.env_checker import check_env

    from hdrm.env.scheduling_env import SchedulingEnv

    env = SchedulingEnv(workload_file=KTH, platform_file=None, homogeneous_procs=100, nb_jobs=40,
                        objective="fairness", tenants="user",
                        selection=("edf-high_gflops", "fair_share-high_gflops"))
    check_env(env, skip_render_check=True)
    env.reset(seed=0)
    env.step(1)
    copy = pickle.loads(pickle.dumps(env))
    # the copy's fair share reads the usage its own decision core keeps
    assert copy.sim.core.usage_hooks[0] is copy.pairs[1].job.key.usage
    assert [env.step(i % 2)[1] for i in range(10)] == [copy.step(i % 2)[1] for i in range(10)]


def test_gpu_env_with_qos_tenants_matches_the_replay(tmp_path, capsys):
    import csv
    from pathlib import Path

    from hdrm.cli.main import main
    from hdrm.env.scheduling_env import SchedulingEnv

    root = Path(__file__).resolve().parents[2] / "workloads"
    pods, nodes = str(root / "openb_pods_400.csv"), str(root / "openb_nodes_41.csv")
    env = SchedulingEnv(workload_file=pods, platform_file=nodes, observation="gpu",
                        objective="sla_satisfaction", tenants="qos", sla="relative:1",
                        selection=("fifo-fgd",))
    env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        _, reward, term, trunc, _ = env.step(0)
        total += reward
        done = term or trunc
    assert main(["replay", "--platform", nodes, "--workload", pods, "--policy", "fifo-fgd",
                 "--tenants", "qos", "--sla", "relative:1", "--outdir", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    rows = {r["tenant"]: r for r in csv.DictReader((tmp_path / "r" / "out_sla.csv").open())}
    miss = float(rows["overall"]["deadline_miss_rate"])
    assert miss > 0 and total == pytest.approx(-miss, rel=1e-9)
