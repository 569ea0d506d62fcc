"""Same seed, same episode: observations, rewards and actions; seeded sequence selection."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env import SchedulingEnv

from .conftest import LUBLIN, PLATFORMS, SDSC, TINY_HETERO, random_valid, rollout

CASES = {
    "pairs-hetero-normal": dict(platform_file=TINY_HETERO, observation="normal", void=True,
                                backfilling="easy", start_index="random", nb_jobs=30),
    "pick-homogeneous-event": dict(PLATFORMS["homogeneous"], mode="job_pick", window=8,
                                   start_index="random", nb_jobs=30),
    "pick-homogeneous-commit": dict(PLATFORMS["homogeneous"], mode="job_pick", window=8,
                                    decision="commit", start_index="random", nb_jobs=30),
}


def two_episodes(env: SchedulingEnv, seed: int):
    policy = random_valid(np.random.default_rng(seed))
    return [rollout(env, policy, seed=seed), rollout(env, policy)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_rollouts_with_the_same_seed_are_identical(small_swf, case):
    first = two_episodes(SchedulingEnv(workload_file=small_swf, **CASES[case]), 8)
    second = two_episodes(SchedulingEnv(workload_file=small_swf, **CASES[case]), 8)
    for a, b in zip(first, second):
        assert a.actions == b.actions and len(a.actions) > 5
        assert a.rewards == b.rewards
        assert all(np.array_equal(x, y) for x, y in zip(a.observations, b.observations))
        assert [i["time"] for i in a.infos] == [i["time"] for i in b.infos]
    assert first[0].actions != first[1].actions  # the second episode is another one


def test_another_seed_gives_another_episode(small_swf):
    env = SchedulingEnv(workload_file=small_swf, **CASES["pairs-hetero-normal"])
    a = rollout(env, random_valid(np.random.default_rng(0)), seed=1)
    b = rollout(env, random_valid(np.random.default_rng(0)), seed=2)
    assert a.rewards != b.rewards


def first_job_index(env: SchedulingEnv) -> int:
    ids = [j.id for j in env.trace.jobs]
    return ids.index(env.sim.workload.jobs[0].id)


def test_random_start_indices_are_seeded_and_in_range():
    env = SchedulingEnv(workload_file=SDSC, nb_jobs=50, start_index="random", observation="small")
    last = len(env.trace) - 50
    starts = []
    for seed in range(12):
        env.reset(seed=seed)
        starts.append(first_job_index(env))
        assert len(env.sim.workload) == 50
    assert all(0 <= s <= last for s in starts) and len(set(starts)) >= 8
    again = SchedulingEnv(workload_file=SDSC, nb_jobs=50, start_index="random", observation="small")
    for seed in (3, 7):
        again.reset(seed=seed)
        assert first_job_index(again) == starts[seed]


def test_reset_option_selects_the_sequence():
    env = SchedulingEnv(workload_file=LUBLIN, platform_file=None, homogeneous_procs=256,
                        conventions="rlscheduler", nb_jobs=20, mode="job_pick", window=8)
    env.reset(seed=0, options={"start_index": 123})
    assert first_job_index(env) == 123 and len(env.sim.workload) == 20
    assert env.sim.workload.jobs[0].submit_s == 0.0  # the selection starts at time 0
    env.reset()
    assert first_job_index(env) == 0  # without the option: the configured start (None = 0)


def test_start_index_list_cycles_through_episodes():
    env = SchedulingEnv(workload_file=LUBLIN, platform_file=None, homogeneous_procs=256,
                        conventions="rlscheduler", nb_jobs=10, start_index=[5, 40, 77],
                        mode="job_pick", window=8)
    seen = []
    for _ in range(4):
        env.reset()
        seen.append(first_job_index(env))
    assert seen == [5, 40, 77, 5]


def test_bandwidth_draw_follows_the_seed():
    def draw(seed: int) -> list[float]:
        env = SchedulingEnv(workload_file=SDSC, nb_jobs=30, platform_file=TINY_HETERO)
        env.reset(seed=seed)
        return [j.mem_bw_gbps for j in env.sim.workload.jobs]

    assert draw(4) == draw(4)
    assert draw(4) != draw(5)
    assert set(draw(4)) <= {4.0, 8.0, 12.0, 16.0, 20.0, 24.0}
