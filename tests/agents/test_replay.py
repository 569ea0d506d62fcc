"""Replay: the sum tree, n-step transitions by hand, importance weights and prioritized sampling."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.agents.replay import (
    NStepAccumulator,
    PrioritizedReplayBuffer,
    SumTree,
    Transition,
    importance_weights,
)


def tree_of(priorities) -> SumTree:
    tree = SumTree(len(priorities))
    tree.update(np.arange(len(priorities)), priorities)
    return tree


# -- sum tree ----------------------------------------------------------------------------------
def test_sums_follow_updates():
    tree = tree_of([1.0, 2.0, 3.0, 4.0, 5.0])  # 5 leaves: not a power of two
    assert tree.total == 15.0
    tree.update(2, 0.5)
    assert tree.total == 12.5
    tree.update([0, 4], [0.0, 10.0])
    assert tree.total == 16.5
    assert tree.get([0, 1, 2, 3, 4]).tolist() == [0.0, 2.0, 0.5, 4.0, 10.0]


def test_a_repeated_index_keeps_its_last_value():
    tree = tree_of([1.0, 1.0, 1.0])
    tree.update([1, 1, 1], [7.0, 8.0, 9.0])
    assert tree.get(1) == 9.0 and tree.total == 11.0


def test_find_maps_prefix_sums_to_leaves_at_the_boundaries():
    tree = tree_of([1.0, 2.0, 3.0, 4.0])  # cumulative bounds 1, 3, 6, 10
    values = [0.0, 0.999, 1.0, 2.999, 3.0, 5.999, 6.0, 9.999]
    assert tree.find(np.array(values)).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert tree.find(np.array([-5.0, 10.0, 1e9])).tolist() == [0, 3, 3]  # clipped into [0, total)


def test_find_never_returns_a_zero_priority_leaf():
    tree = tree_of([1.0, 0.0, 2.0, 0.0, 0.0])
    found = tree.find(np.linspace(0.0, 3.0, 301))
    assert set(found.tolist()) == {0, 2}
    assert tree.find(np.array([1.0])).tolist() == [2]  # the boundary skips the empty leaf 1


def test_evenly_spaced_prefix_sums_hit_leaves_in_proportion():
    tree = tree_of([1.0, 2.0, 3.0, 4.0])
    grid = (np.arange(1000) + 0.5) * tree.total / 1000
    assert np.bincount(tree.find(grid), minlength=4).tolist() == [100, 200, 300, 400]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 20), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 39), st.integers(0, 20)), max_size=30),
)
def test_tree_matches_a_cumulative_sum(priorities, updates):
    leaves = np.array(priorities, dtype=float)
    tree = tree_of(leaves)
    for index, value in updates:
        index %= len(leaves)
        leaves[index] = value
        tree.update(index, float(value))
    assert tree.total == leaves.sum()
    if leaves.sum() > 0:  # integers: sums are exact, so the search must equal searchsorted
        values = np.arange(0.0, leaves.sum(), 0.5)
        expected = np.searchsorted(np.cumsum(leaves), values, side="right")
        assert tree.find(values).tolist() == expected.tolist()


def test_tree_errors_state_the_rule():
    tree = SumTree(3)
    with pytest.raises(ValueError, match=r"index out of 0\.\.2: \[3\]"):
        tree.update(3, 1.0)
    with pytest.raises(ValueError, match=r"finite and >= 0, got \[-1\.0\]"):
        tree.update(0, -1.0)
    with pytest.raises(ValueError, match="every priority is zero"):
        tree.find(np.array([0.0]))
    with pytest.raises(ValueError, match="capacity must be >= 1, got 0"):
        SumTree(0)
    assert tree_of([2.5]).find(np.array([0.0, 2.4])).tolist() == [0, 0]  # a single leaf


# -- n-step returns -------------------------------------------------------------------------------
def obs(i: int) -> np.ndarray:
    return np.full(2, float(i), dtype=np.float32)


MASK = np.array([True, False, True])


def push(acc: NStepAccumulator, i: int, reward: float, done: bool = False) -> list[Transition]:
    return acc.push(obs(i), MASK, i % 3, reward, obs(i + 1), MASK, done)


def summary(transitions: list[Transition]) -> list[tuple[float, float, float, float]]:
    """(first obs, return, next obs, discount) of each transition."""
    return [(t.obs[0], t.ret, t.next_obs[0], t.discount) for t in transitions]


def test_n_step_returns_by_hand_with_the_episode_end():
    acc = NStepAccumulator(n=3, gamma=0.5)
    assert push(acc, 0, 1.0) == [] and push(acc, 1, 2.0) == []
    # s0: 1 + 0.5 * 2 + 0.25 * 3 = 2.75, bootstrapped from s3 with 0.5^3
    assert summary(push(acc, 2, 3.0)) == [(0.0, 2.75, 3.0, 0.125)]
    assert summary(push(acc, 3, 4.0)) == [(1.0, 4.5, 4.0, 0.125)]  # 2 + 1.5 + 1
    ends = push(acc, 4, 5.0, done=True)
    # terminal: the pending steps keep the rewards left, no bootstrap
    assert [(t.obs[0], t.ret, t.discount) for t in ends] == [
        (2.0, 6.25, 0.0),  # 3 + 0.5 * 4 + 0.25 * 5
        (3.0, 6.5, 0.0),  # 4 + 0.5 * 5
        (4.0, 5.0, 0.0),
    ]
    assert len(acc) == 0
    assert [t.action for t in ends] == [2, 0, 1]


def test_an_episode_shorter_than_n():
    acc = NStepAccumulator(n=5, gamma=0.9)
    assert push(acc, 0, 1.0) == []
    ends = push(acc, 1, 10.0, done=True)
    assert [(t.ret, t.discount) for t in ends] == [(pytest.approx(1.0 + 0.9 * 10.0), 0.0), (10.0, 0.0)]


def test_one_step_transitions_bootstrap_at_once():
    acc = NStepAccumulator(n=1, gamma=0.9)
    assert summary(push(acc, 0, 2.0)) == [(0.0, 2.0, 1.0, 0.9)]
    assert summary(push(acc, 1, 3.0, done=True)) == [(1.0, 3.0, 2.0, 0.0)]


def test_clear_drops_a_cut_episode():
    acc = NStepAccumulator(n=3, gamma=1.0)
    push(acc, 0, 1.0)
    push(acc, 1, 1.0)
    acc.clear()
    assert len(acc) == 0
    assert push(acc, 5, 1.0) == []  # a fresh start: nothing of the cut episode is emitted
    with pytest.raises(ValueError, match="n >= 1, got 0"):
        NStepAccumulator(0, 0.9)


# -- importance weights and the prioritized buffer ------------------------------------------------
def test_importance_weights_by_hand():
    probs = np.array([0.1, 0.4, 0.5])
    # (N P)^-beta with N = 4, beta = 0.5: 0.4^-0.5, 1.6^-0.5, 2^-0.5, divided by the largest
    np.testing.assert_allclose(importance_weights(probs, 4, 0.5), [1.0, 0.5, np.sqrt(0.2)])
    np.testing.assert_allclose(importance_weights(probs, 4, 1.0), [1.0, 0.25, 0.2])
    np.testing.assert_allclose(importance_weights(probs, 4, 0.0), [1.0, 1.0, 1.0])


def transition(i: int, ret: float = 0.0) -> Transition:
    return Transition(obs(i), MASK, i % 3, ret, obs(i + 1), ~MASK, 0.5)


def filled(n: int, capacity: int = 8, alpha: float = 1.0) -> PrioritizedReplayBuffer:
    buffer = PrioritizedReplayBuffer(capacity, (2,), 3, alpha=alpha, eps=0.0)
    for i in range(n):
        buffer.add(transition(i, ret=float(i)))
    return buffer


def test_new_transitions_get_the_largest_priority_seen():
    buffer = filled(3)
    assert buffer.tree.get([0, 1, 2]).tolist() == [1.0, 1.0, 1.0]
    buffer.update_priorities(np.array([0, 1]), np.array([-3.0, 0.5]))
    assert buffer.tree.get([0, 1, 2]).tolist() == [3.0, 0.5, 1.0]
    assert buffer.add(transition(3)) == 3
    assert buffer.tree.get(3) == 3.0  # max |delta| + eps so far


def test_priorities_use_alpha_and_eps():
    buffer = PrioritizedReplayBuffer(4, (2,), 3, alpha=0.5, eps=0.01)
    buffer.add(transition(0))
    buffer.update_priorities(np.array([0]), np.array([0.24]))
    assert buffer.tree.get(0) == pytest.approx(0.5)  # (0.24 + 0.01) ^ 0.5
    assert buffer.max_priority == 1.0  # 0.25 < the initial 1


def test_sample_returns_the_stored_arrays_and_hand_checked_weights():
    buffer = filled(4)
    buffer.update_priorities(np.arange(4), np.array([1.0, 1.0, 2.0, 4.0]))  # P = 1/8, 1/8, 2/8, 4/8
    batch = buffer.sample(400, beta=1.0, rng=np.random.default_rng(0))
    counts = np.bincount(batch.indices, minlength=4)
    assert counts.tolist() == [50, 50, 100, 200]  # stratified: exact at this batch size
    expected = {0: 1.0, 1: 1.0, 2: 0.5, 3: 0.25}  # (4 P)^-1 / max
    assert all(batch.weights[k] == pytest.approx(expected[i]) for k, i in enumerate(batch.indices))
    k = int(np.flatnonzero(batch.indices == 2)[0])
    assert batch.returns[k] == 2.0 and batch.actions[k] == 2 and batch.discounts[k] == 0.5
    assert batch.obs[k].tolist() == [2.0, 2.0] and batch.next_obs[k].tolist() == [3.0, 3.0]
    assert batch.masks[k].tolist() == MASK.tolist() and batch.next_masks[k].tolist() == [0, 1, 0]


def test_sampling_frequencies_follow_priorities_with_a_fixed_rng():
    buffer = filled(5, alpha=1.0)
    buffer.update_priorities(np.arange(5), np.array([1.0, 2.0, 3.0, 0.5, 3.5]))
    rng = np.random.default_rng(7)
    counts = np.zeros(5)
    for _ in range(200):
        counts += np.bincount(buffer.sample(32, 0.4, rng).indices, minlength=5)
    np.testing.assert_allclose(counts / counts.sum(), np.array([1, 2, 3, 0.5, 3.5]) / 10, atol=0.01)


def test_alpha_zero_samples_uniformly_with_unit_weights():
    buffer = filled(4, alpha=0.0)
    buffer.update_priorities(np.arange(4), np.array([0.1, 5.0, 9.0, 100.0]))
    batch = buffer.sample(400, beta=1.0, rng=np.random.default_rng(1))
    assert np.bincount(batch.indices).tolist() == [100, 100, 100, 100]
    assert np.all(batch.weights == 1.0)


def test_the_ring_overwrites_the_oldest():
    buffer = filled(11, capacity=8)
    assert len(buffer) == 8 and buffer.pos == 3
    assert sorted(buffer.returns.tolist()) == [3, 4, 5, 6, 7, 8, 9, 10]
    with pytest.raises(ValueError, match="empty replay buffer"):
        filled(0).sample(2, 0.4, np.random.default_rng(0))


def _filled(capacity: int, n: int, seed: int = 0) -> PrioritizedReplayBuffer:
    rng = np.random.default_rng(seed)
    buf = PrioritizedReplayBuffer(capacity, (2,), 3)
    for i in range(n):
        obs = rng.random(2).astype(np.float32)
        buf.add(Transition(obs, np.array([True, i % 2 == 0, True]), i % 3, float(i), obs + 1,
                           np.ones(3, bool), 0.9), td_error=float(rng.random()) * 10)
    return buf


@pytest.mark.parametrize("n", [5, 13])  # part filled; wrapped around the ring
def test_a_restored_buffer_samples_as_the_saved_one(n):
    # benchmarks/train.py's resume state keeps a DQN's replay buffer (its filled rows only)
    buf = _filled(8, n)
    state = buf.resume_state()
    assert (state["pos"], state["size"]) == (n % 8, min(n, 8))
    fresh = PrioritizedReplayBuffer(8, (2,), 3)
    fresh.load_resume_state(state)
    assert (fresh.pos, fresh.size, fresh.max_priority) == (buf.pos, buf.size, buf.max_priority)
    a = buf.sample(4, 0.5, np.random.default_rng(3))
    b = fresh.sample(4, 0.5, np.random.default_rng(3))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    slot = fresh.add(Transition(buf.obs[0], buf.masks[0], 1, 2.0, buf.obs[0], buf.masks[0], 0.5))
    assert slot == n % 8 and fresh.size == min(n + 1, 8)  # the ring goes on where it stopped


def test_a_buffer_of_another_capacity_is_refused():
    with pytest.raises(ValueError, match=r"^replay: the saved buffer holds 8 transitions, this "
                                         r"one 16$"):
        PrioritizedReplayBuffer(16, (2,), 3).load_resume_state(_filled(8, 3).resume_state())


def _nstep_filled(capacity: int, steps: int, episode: int, n: int = 3, seed: int = 0
                  ) -> PrioritizedReplayBuffer:
    """A buffer fed by an n-step accumulator over episodes of ``episode`` steps (next
    observations repeat the observation n slots on, but at each episode's end)."""
    rng = np.random.default_rng(seed)
    buf = PrioritizedReplayBuffer(capacity, (4, 3), 5)
    acc = NStepAccumulator(n, 0.9)
    obs = rng.random((4, 3)).astype(np.float32)
    for t in range(steps):
        nxt = np.where(rng.random((4, 3)) < 0.5, 0.0, rng.random((4, 3))).astype(np.float32)
        done = (t + 1) % episode == 0
        for tr in acc.push(obs, np.ones(5, bool), t % 5, float(t), nxt, np.ones(5, bool), done):
            buf.add(tr, td_error=float(rng.random()))
        obs = rng.random((4, 3)).astype(np.float32) if done else nxt
    return buf


@pytest.mark.parametrize("steps", [7, 40, 150])  # part filled, just wrapped, wrapped twice
def test_a_saved_buffer_comes_back_bit_for_bit_and_smaller(steps):
    # the next observations that repeat a later slot's observation are not stored: the state
    # of a buffer of n-step transitions holds a few of them (each episode's last steps)
    buf = _nstep_filled(64, steps, episode=20)
    buf.next_obs[1, 0, 0] = -0.0  # bits kept: -0.0 is not stored as 0.0, nor nan lost
    buf.obs[4, 0, 0], buf.next_obs[1, 0, 1] = np.nan, np.nan
    state = buf.resume_state()
    assert state["codec"] == "zlib-shift-1" and state["next_shift"] == 3
    stored = np.frombuffer(zlib.decompress(state["next_obs"].numpy()), np.float32).size // 12
    assert stored == state["shapes"]["next_obs"][0]
    if steps >= 40:
        assert stored < buf.size // 2
    fresh = PrioritizedReplayBuffer(64, (4, 3), 5)
    fresh.load_resume_state(state)
    for name in PrioritizedReplayBuffer.ARRAYS:
        a, b = getattr(buf, name)[: buf.size], getattr(fresh, name)[: buf.size]
        assert a.tobytes() == b.tobytes(), name


def test_a_state_of_the_first_layout_still_loads():
    # written before the compact layout: every filled row as a tensor
    import torch

    buf = _filled(8, 13)
    old = {name: torch.from_numpy(getattr(buf, name)[: buf.size].copy())
           for name in PrioritizedReplayBuffer.ARRAYS}
    old.update(tree=torch.from_numpy(buf.tree._tree.copy()), max_priority=buf.max_priority,
               pos=buf.pos, size=buf.size, capacity=buf.capacity)
    fresh = PrioritizedReplayBuffer(8, (2,), 3)
    fresh.load_resume_state(old)
    for name in PrioritizedReplayBuffer.ARRAYS:
        assert getattr(fresh, name).tobytes() == getattr(buf, name).tobytes(), name


def test_a_saved_buffer_of_other_shapes_is_refused():
    state = _filled(8, 5).resume_state()
    with pytest.raises(ValueError, match=r"^replay: saved obs of shape \(5, 2\) does not fit this "
                                         r"buffer's \(8, 5\)$"):
        PrioritizedReplayBuffer(8, (5,), 3).load_resume_state(state)
