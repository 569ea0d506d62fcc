"""The reward identity: for every objective the episode return is minus the objective, computed
independently from the episode's outputs by :mod:`hdrm.results.metrics`, in the documented units
(hours for times, MJ for energy)."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.objectives import OBJECTIVES
from hdrm.results import metrics
from hdrm.sim.outputs import job_results

from .conftest import LUBLIN, PLATFORMS, TINY_HETERO, random_valid, rollout, write_jobs

HOUR_S = 3600.0
MJ = 1e6


def objective_from_outputs(name: str, env: SchedulingEnv) -> float:
    """The objective of the finished episode, from out_jobs.csv rows and the platform energy."""
    result = env.result()
    rows = job_results(result)
    energy_mj = metrics.energy_consumption(rows, result.energy_j) / MJ
    span_h = metrics.makespan(rows) / HOUR_S
    return {
        "avg_job_slowdown": metrics.avg_job_slowdown(rows),
        "avg_bounded_slowdown": metrics.avg_bounded_slowdown(rows),
        "avg_waiting_time": metrics.avg_waiting_time(rows) / HOUR_S,
        "avg_job_completion": metrics.avg_job_completion(rows) / HOUR_S,
        "avg_jct": metrics.avg_job_completion(rows) / HOUR_S,
        "avg_utilization": 1.0 - metrics.avg_utilization(rows, result.platform.nb_cores),
        "makespan": span_h,
        "energy_consumption": energy_mj,
        "edp": energy_mj * span_h,
    }[name]


SETTINGS = {
    "hetero-pairs-easy": dict(platform_file=TINY_HETERO, backfilling="easy", void=True),
    "tiny4-pairs-commit": dict(PLATFORMS["tiny4"], decision="commit"),
    "homogeneous-pick-event": dict(PLATFORMS["homogeneous"], mode="job_pick", window=8),
    "homogeneous-pick-commit-easy": dict(PLATFORMS["homogeneous"], mode="job_pick", window=8,
                                         decision="commit", backfilling="easy"),
}


#: The objectives of CPU platforms (the GPU ones: tests/env/test_gpu_env.py).
CPU_OBJECTIVES = [n for n in OBJECTIVES.names()
                  if not getattr(OBJECTIVES.get(n), "needs_gpus", False)
                  and not getattr(OBJECTIVES.get(n), "needs_tenants", False)]


def test_every_registered_objective_is_covered():
    assert sorted(CPU_OBJECTIVES) == sorted([
        "avg_job_slowdown", "avg_bounded_slowdown", "avg_waiting_time", "avg_job_completion",
        "avg_jct", "avg_utilization", "makespan", "energy_consumption", "edp"])
    assert sorted(set(OBJECTIVES.names()) - set(CPU_OBJECTIVES)) == [
        "fairness", "gpu_allocation", "gpu_cost", "sla_energy", "sla_satisfaction", "tardiness"]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("objective", CPU_OBJECTIVES)
def test_return_is_minus_the_objective_of_the_outputs(small_swf, objective, setting):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=40, objective=objective,
                        **SETTINGS[setting])
    played = rollout(env, random_valid(np.random.default_rng(3)), seed=11)
    assert len(played.actions) > 10
    assert env.sim.done and len(env.result().outcomes) == 40
    expected = objective_from_outputs(objective, env)
    assert expected > 0
    assert sum(played.rewards) == pytest.approx(-expected, rel=1e-9, abs=1e-12)
    assert played.infos[-1]["objective"] == pytest.approx(expected, rel=1e-9)


def test_identity_holds_with_rejected_and_killed_jobs(tmp_path):
    # 4 one-core resources. Job 1 takes 3 cores for 10 s; job 2 asks for 8 cores (rejected);
    # job 3 (2 cores, submitted at 5 s) waits until 10 s, then overruns its requested 20 s and
    # is killed at 30 s. Mean waiting time over all 3 jobs, as Batsim: (0 + 5) / 3 s.
    swf = write_jobs(tmp_path / "w.swf", [(0, 10, 3, 20), (0, 10, 8, 20), (5, 50, 2, 20)])
    env = SchedulingEnv(workload_file=swf, platform_file=None, homogeneous_procs=4,
                        objective="avg_waiting_time")
    played = rollout(env, lambda obs, info: 0, seed=0)
    outcomes = {o.job.id: (o.state, o.start_s, o.finish_s) for o in env.result().outcomes}
    assert outcomes == {1: ("COMPLETED_SUCCESSFULLY", 0.0, 10.0), 2: ("REJECTED", -1.0, -1.0),
                        3: ("COMPLETED_WALLTIME_REACHED", 10.0, 30.0)}
    assert objective_from_outputs("avg_waiting_time", env) == pytest.approx(5.0 / 3.0 / HOUR_S)
    assert sum(played.rewards) == pytest.approx(-5.0 / 3.0 / HOUR_S, rel=1e-12)


def test_hand_checked_slowdown_return(tmp_path):
    # 2 one-core resources, FCFS-like picks: job 1 (0-100 s) and job 2 (0-50 s) start at 0;
    # job 3 (submitted at 10 s, 10 s long) waits until 50 s: turnaround 50, slowdown 5.
    # Mean slowdown (1 + 1 + 5) / 3 = 7/3; the return is -7/3.
    swf = write_jobs(tmp_path / "w.swf", [(0, 100, 1, 200), (0, 50, 1, 200), (10, 10, 1, 200)],
                     max_procs=2)
    env = SchedulingEnv(workload_file=swf, platform_file=None, homogeneous_procs=2,
                        mode="job_pick", window=4, objective="avg_job_slowdown")
    played = rollout(env, lambda obs, info: 0, seed=0)
    assert sum(played.rewards) == pytest.approx(-7.0 / 3.0)
    # a step's reward covers the jobs that ended before the next decision: step 1 starts job 1
    # (nothing ends), step 2 starts job 2, which ends at 50 s (-1/3) when job 3 fits; step 3
    # starts job 3 and the episode runs out: job 3 at 60 s (-5/3) and job 1 at 100 s (-1/3).
    assert played.rewards == pytest.approx([0.0, -1 / 3, -2.0])
    assert [info["time"] for info in played.infos] == [0.0, 0.0, 50.0, 100.0]


def test_makespan_return_in_hours_on_lublin():
    env = SchedulingEnv(workload_file=LUBLIN, platform_file=None, homogeneous_procs=256,
                        conventions="rlscheduler", nb_jobs=64, mode="job_pick", window=16,
                        objective="makespan")
    played = rollout(env, random_valid(np.random.default_rng(0)), seed=1)
    span_h = max(o.finish_s for o in env.result().outcomes) / HOUR_S
    assert sum(played.rewards) == pytest.approx(-span_h, rel=1e-9)


ACCRUABLE = ("avg_bounded_slowdown", "avg_job_slowdown", "avg_job_completion")


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("objective", ACCRUABLE)
def test_accrued_timing_keeps_the_return_identity(small_swf, objective, setting):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=40, objective=objective,
                        reward_timing="accrued", **SETTINGS[setting])
    played = rollout(env, random_valid(np.random.default_rng(3)), seed=11)
    expected = objective_from_outputs(objective, env)
    assert sum(played.rewards) == pytest.approx(-expected, rel=1e-9, abs=1e-12)
    # the jobs in the system are counted as they wait, so penalties come earlier than with "end"
    end = SchedulingEnv(workload_file=small_swf, nb_jobs=40, objective=objective,
                        **SETTINGS[setting])
    late = rollout(end, random_valid(np.random.default_rng(3)), seed=11)
    assert late.actions == played.actions
    half = len(played.rewards) // 2
    assert sum(played.rewards[:half]) < sum(late.rewards[:half])


def test_hand_checked_accrued_slowdown_rewards(tmp_path):
    # The schedule of test_hand_checked_slowdown_return. At 50 s job 2 has ended (slowdown 1)
    # while job 1 has accrued 50/100 and job 3, waiting since 10 s, (50 - 10)/10 = 4: the
    # running value is (1 + 0.5 + 4)/3 at step 2, and 7/3 at the end.
    swf = write_jobs(tmp_path / "w.swf", [(0, 100, 1, 200), (0, 50, 1, 200), (10, 10, 1, 200)],
                     max_procs=2)
    env = SchedulingEnv(workload_file=swf, platform_file=None, homogeneous_procs=2,
                        mode="job_pick", window=4, objective="avg_job_slowdown",
                        reward_timing="accrued")
    played = rollout(env, lambda obs, info: 0, seed=0)
    assert [info["time"] for info in played.infos] == [0.0, 0.0, 50.0, 100.0]
    assert played.rewards == pytest.approx([0.0, -5.5 / 3, -(7.0 - 5.5) / 3])


def test_accrued_timing_counts_rejected_jobs_out(tmp_path):
    # job 2 asks for 8 of 4 cores and is rejected at once: it must not accrue afterwards
    swf = write_jobs(tmp_path / "w.swf", [(0, 10, 3, 20), (0, 10, 8, 20), (5, 50, 2, 60)])
    env = SchedulingEnv(workload_file=swf, platform_file=None, homogeneous_procs=4,
                        objective="avg_bounded_slowdown", reward_timing="accrued")
    played = rollout(env, lambda obs, info: 0, seed=0)
    assert sum(played.rewards) == pytest.approx(-objective_from_outputs("avg_bounded_slowdown",
                                                                        env), rel=1e-12)
    assert env.tracker.accrual_w == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kwargs,message", [
    ({"objective": "energy_consumption", "reward_timing": "accrued"},
     "reward_timing: 'accrued' counts what the jobs in the system have accrued, defined for "
     "avg_bounded_slowdown, avg_job_completion, avg_job_slowdown; objective "
     "'energy_consumption' takes 'end'"),
    ({"reward_timing": "acrued"},
     "reward_timing: unknown value 'acrued'; did you mean 'accrued'? choose one of: end, accrued"),
])
def test_reward_timing_errors_are_one_line(kwargs, message):
    from hdrm.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        SchedulingEnv(**kwargs)
    assert str(info.value) == message
