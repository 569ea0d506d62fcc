"""Action masks and decision semantics, on hand-built cases checked step by step.

The hand-built workload (4 one-core resources)::

    job 1: submitted at 0 s, 3 cores, runs 100 s
    job 2: submitted at 0 s, 2 cores, runs 50 s
    job 3: submitted at 10 s, 1 core, runs 10 s

After job 1 starts, job 2 does not fit (1 free core) until job 1 ends at 100 s; job 3 fits as
soon as it arrives.
"""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env import SchedulingEnv

from .conftest import PLATFORMS, random_valid, rollout, write_jobs

JOBS = [(0, 100, 3, 100), (0, 50, 2, 50), (10, 10, 1, 10)]


@pytest.fixture
def three_jobs(tmp_path) -> str:
    return write_jobs(tmp_path / "three.swf", JOBS)


def pick_env(swf: str, decision: str, backfilling: str = "none", **kw) -> SchedulingEnv:
    return SchedulingEnv(workload_file=swf, platform_file=None, homogeneous_procs=4,
                         mode="job_pick", window=4, decision=decision, backfilling=backfilling, **kw)


def starts(env: SchedulingEnv) -> dict[int, float]:
    return {o.job.id: o.start_s for o in env.result().outcomes}


def test_commit_holds_a_pick_that_does_not_fit_until_it_starts(three_jobs):
    env = pick_env(three_jobs, "commit")
    _, info = env.reset(seed=0)
    assert info["time"] == 0.0
    assert info["action_mask"].tolist() == [True, True, False, False, False]  # no void in commit
    _, _, _, _, info = env.step(0)  # job 1 starts; asked again at 0 s with job 2 alone
    assert (info["time"], info["queue_size"]) == (0.0, 1)
    assert info["action_mask"].tolist() == [True, False, False, False, False]
    _, _, _, _, info = env.step(0)  # job 2 does not fit: held until job 1 ends at 100 s
    assert (info["time"], info["queue_size"]) == (100.0, 1)  # job 3 could not overtake it
    _, _, done, _, info = env.step(0)
    assert done
    assert starts(env) == {1: 0.0, 2: 100.0, 3: 100.0}


def test_commit_with_easy_backfills_around_the_held_pick(three_jobs):
    env = pick_env(three_jobs, "commit", "easy")
    played = rollout(env, lambda obs, info: 0, seed=0)
    assert len(played.actions) == 2  # job 3 is backfilled at 10 s without asking the agent
    assert starts(env) == {1: 0.0, 2: 100.0, 3: 10.0}


def test_event_masks_exactly_the_jobs_that_fit(three_jobs):
    env = pick_env(three_jobs, "event")
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [True, True, False, False, True]
    _, _, _, _, info = env.step(0)  # job 1 starts; job 2 does not fit: no choice until 10 s
    assert info["time"] == 10.0
    # window = [job 2 (does not fit), job 3 (fits)], void waits for job 1's end
    assert info["action_mask"].tolist() == [False, True, False, False, True]
    _, _, _, _, info = env.step(1)
    # at 100 s nothing runs and nothing will arrive: the void is masked (it would wait forever)
    assert info["time"] == 100.0
    assert info["action_mask"].tolist() == [True, False, False, False, False]
    _, _, done, _, _ = env.step(0)
    assert done and starts(env) == {1: 0.0, 2: 100.0, 3: 10.0}


def test_void_waits_for_the_next_event(three_jobs):
    env = pick_env(three_jobs, "event")
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert info["time"] == 10.0
    _, _, _, _, info = env.step(4)  # void: nothing starts; the next event is job 1's end
    assert (info["time"], info["queue_size"], info["jobs_done"]) == (100.0, 2, 1)
    assert info["action_mask"].tolist() == [True, True, False, False, False]


def test_void_is_masked_when_no_event_can_come(tmp_path):
    swf = write_jobs(tmp_path / "one.swf", [(0, 10, 1, 10)])
    env = pick_env(swf, "event")
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [True, False, False, False, False]
    _, _, done, _, _ = env.step(4)  # taken anyway: the first valid action (the job) is applied
    assert done and starts(env) == {1: 0.0}


def test_policy_pair_void_is_masked_when_no_event_can_come(tmp_path):
    swf = write_jobs(tmp_path / "two.swf", [(0, 10, 1, 10), (5, 10, 1, 10)])
    env = SchedulingEnv(workload_file=swf, platform_file=None, homogeneous_procs=4,
                        selection=["fcfs", "sjf"], void=True)
    assert env.action_names == ["fcfs", "sjf", "void"]
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [True, True, True]  # job 2 will arrive at 5 s
    _, _, _, _, info = env.step(2)
    assert info["time"] == 5.0 and info["queue_size"] == 2
    assert info["action_mask"].tolist() == [True, True, False]  # nothing runs, nothing comes
    _, _, done, _, _ = env.step(0)
    assert done and starts(env) == {1: 5.0, 2: 5.0}


@pytest.mark.parametrize("decision", ["event", "commit"])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_valid_actions_always_suffice(small_swf, platform, decision):
    """Along random valid rollouts: one action at least is valid, event masks are the fits of
    the window, commit masks are the queued jobs, and every job ends."""
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=40, mode="job_pick", window=8,
                        decision=decision, **PLATFORMS[platform])
    rng = np.random.default_rng(5)
    obs, info = env.reset(seed=2)
    done = False
    while not done:
        mask = info["action_mask"]
        window = env.window_jobs()
        assert mask.any() and len(window) > 0
        if decision == "event":
            state = env.sim.core.state
            assert mask[: len(window)].tolist() == [state.fits(j) for j in window]
            assert any(state.fits(j) for j in window)
        else:
            assert mask[: len(window)].all() and not mask[len(window):-1].any()
        assert np.array_equal(mask, env.action_masks())
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
    assert len(env.result().outcomes) == 40


@pytest.mark.parametrize("void", [False, True])
def test_policy_pair_episodes_end_with_every_job_done(small_swf, void):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=40, void=void, **PLATFORMS["tiny4"])
    played = rollout(env, random_valid(np.random.default_rng(1)), seed=4)
    assert len(env.result().outcomes) == 40
    assert all(info["action_mask"][:36].all() for info in played.infos)


def test_memory_masks_a_job_whose_node_memory_is_taken(tmp_path):
    """tiny4 (one node of 4,096 MB): once a job holds 3,000 MB, a later job of 3,000 MB a core
    is masked although 3 cores are free, while a job that needs no memory is not."""
    lines = ["; Version: 2.2", "; MaxProcs: 4",
             "1 0 -1 100 1 -1 3072000 1 100 3072000 1 1 -1 -1 -1 -1 -1 -1",  # 3,000 MB
             "2 0 -1 100 2 -1 -1 2 100 -1 1 1 -1 -1 -1 -1 -1 -1",  # no memory
             "3 1 -1 100 1 -1 3072000 1 100 3072000 1 1 -1 -1 -1 -1 -1 -1"]  # 3,000 MB, at 1 s
    swf = tmp_path / "memory.swf"
    swf.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = SchedulingEnv(workload_file=str(swf), platform_file=PLATFORMS["tiny4"]["platform_file"],
                        mode="job_pick", window=4)
    _, info = env.reset(seed=0)
    assert [j.mem_mb for j in env.sim.workload.jobs] == [3000.0, 0.0, 3000.0]
    _, _, _, _, info = env.step(0)  # job 1 starts: 1,096 MB left on the node
    _, _, _, _, info = env.step(4)  # void: wait for job 3 at 1 s
    assert info["time"] == 1.0 and [j.id for j in env.window_jobs()] == [2, 3]
    assert env.sim.core.state.free_cores == 3
    assert info["action_mask"].tolist() == [True, False, False, False, True]
    _, _, _, _, info = env.step(0)  # job 2 starts; job 3 does not fit until job 1 ends
    assert info["time"] == 100.0 and info["action_mask"].tolist()[:2] == [True, False]
