"""Gymnasium's own conformance checker passes for every observation, action mode and platform."""

from __future__ import annotations

import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import FlattenObservation

from hdrm import ENV_ID
from hdrm.env import SchedulingEnv
from hdrm.env.registration import DAG_ENV_ID

from dag.periodic_gpu_case import write_case
from gpu_builders import SLICE

from .conftest import PLATFORMS, SDSC


def _check(env: SchedulingEnv) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a failure...
        warnings.filterwarnings("ignore", message=".*render.*")  # ...but the env has no render
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize("backfilling", ["none", "easy"])
@pytest.mark.parametrize("decision", ["event", "commit"])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("observation", ["normal", "small", "small_waits", "small_waits_predicted",
                                         "minimal"])
def test_policy_pair_mode_passes_check_env(small_swf, observation, platform, decision, backfilling):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=20, observation=observation,
                        decision=decision, backfilling=backfilling, void=decision == "event",
                        **PLATFORMS[platform])
    _check(env)
    assert env.observation_space.shape[0] >= 22


@pytest.mark.parametrize("backfilling", ["none", "easy"])
@pytest.mark.parametrize("decision", ["event", "commit"])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("observation, features", [("job_window", 8),
                                                   ("job_window_reservation", 12),
                                                   ("job_window_predicted", 13),
                                                   ("job_window_queue", 16)])
def test_job_pick_mode_passes_check_env(small_swf, platform, decision, backfilling, observation,
                                        features):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=20, mode="job_pick", window=8,
                        observation=observation, decision=decision, backfilling=backfilling,
                        **PLATFORMS[platform])
    _check(env)
    assert env.observation_space.shape == (8, features)
    assert env.action_names[-1] == "void" and env.action_space.n == 9


def test_normal_observation_size_counts_nodes_processors_and_cores():
    # tiny_hetero: 2 nodes, 3 processors, 8 cores -> 27 + 2 + 3 + 3 x 8 = 56 features
    env = SchedulingEnv(platform_file=PLATFORMS["tiny_hetero"]["platform_file"], nb_jobs=5)
    assert env.observation_space.shape == (56,)
    small = SchedulingEnv(platform_file=PLATFORMS["tiny_hetero"]["platform_file"], nb_jobs=5,
                          observation="small")
    assert small.observation_space.shape == (27,)


def _every_env(tmp_path):
    """(name, id, settings) of the GPU, SLA and periodic DAG environments in both action modes
    (the CPU ones are checked above on every observation, platform and decision kind)."""
    taskset, platform = write_case(tmp_path, gpus=1)
    (tmp_path / "cpu").mkdir()
    cpu_taskset, cpu_platform = write_case(tmp_path / "cpu", gpus=0)
    for mode in ("policy_pair", "job_pick"):
        yield f"gpu {mode}", ENV_ID, dict(
            mode=mode, observation="gpu" if mode == "policy_pair" else "gpu_job_window",
            nb_jobs=40, **SLICE)
        yield f"sla {mode}", ENV_ID, dict(
            workload_file=SDSC, nb_jobs=40, platform_file=None, homogeneous_procs=64,
            tenants="user", sla="relative:3", mode=mode, objective="sla_satisfaction",
            **({"observation": "job_window_sla"} if mode == "job_pick" else {}))
        yield f"dag gpu {mode}", DAG_ENV_ID, dict(workload_file=str(taskset),
                                                  platform_file=str(platform), mode=mode, window=3)
        yield f"dag cpu {mode}", DAG_ENV_ID, dict(workload_file=str(cpu_taskset),
                                                  platform_file=str(cpu_platform), mode=mode,
                                                  window=3)


def test_gymnasium_and_sb3_checkers_pass_on_every_other_env_without_a_warning(tmp_path):
    """Gymnasium's check_env (its render checks too: built by gymnasium.make, the env has a spec)
    and SB3's, any warning a failure. The periodic DAG env's Box(-inf, inf) drew two Gymnasium
    warnings ("A Box observation space maximum value is infinity ...", and minimum) before its
    bounds. job_pick's window is 2-D ([window, features]: one row per job, for per-job kernels),
    which SB3's checker calls an unconventional shape and suggests flattening: SB3 is checked
    through Gymnasium's FlattenObservation, the wrapper it asks for."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    for name, env_id, settings in _every_env(tmp_path):
        env = gymnasium.make(env_id, **settings).unwrapped
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env)
            flat = len(env.observation_space.shape) > 1
            sb3_check_env(FlattenObservation(env) if flat else env, warn=True)
        assert (name.split()[-1] == "job_pick" and not name.startswith("dag")) == flat, name
