"""GAE and the rollout buffer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hdrm.agents.buffers import RolloutBuffer, gae, minibatches


def test_gae_lambda_one_is_returns_minus_values():
    rewards = np.array([1.0, 0.0, 2.0])
    values = np.array([0.5, 0.2, 1.0])
    adv, ret = gae(rewards, values, np.array([False, False, True]), 9.0, gamma=0.5, lam=1.0)
    np.testing.assert_allclose(ret, [1.5, 1.0, 2.0])  # last value ignored: episode done
    np.testing.assert_allclose(adv, [1.0, 0.8, 1.0])


def test_gae_lambda_zero_is_td_error_and_bootstraps():
    rewards = np.array([1.0, 0.0])
    values = np.array([0.5, 0.2])
    adv, _ = gae(rewards, values, np.array([False, False]), 4.0, gamma=0.5, lam=0.0)
    np.testing.assert_allclose(adv, [1.0 + 0.5 * 0.2 - 0.5, 0.0 + 0.5 * 4.0 - 0.2])


def test_gae_does_not_cross_episode_boundaries():
    rewards = np.array([1.0, 10.0])
    values = np.zeros(2)
    adv, _ = gae(rewards, values, np.array([True, True]), 0.0, gamma=0.9, lam=0.95)
    np.testing.assert_allclose(adv, [1.0, 10.0])


def test_gae_hand_checked_mixed():
    # gamma 0.9, lambda 0.5: deltas d1 = 1 + 0.9*2 - 1 = 1.8 (bootstrap), d0 = 0 + 0.9*1 - 0 = 0.9
    adv, ret = gae(np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([False, False]), 2.0, 0.9, 0.5)
    np.testing.assert_allclose(adv, [0.9 + 0.45 * 1.8, 1.8])
    np.testing.assert_allclose(ret, adv + [0.0, 1.0])


def test_buffer_fills_with_outcomes():
    buf = RolloutBuffer(2, (3,), 4)
    buf.add(np.ones(3), np.array([1, 0, 1, 1]), 2, -0.5, 0.1)
    assert not buf.full and buf.awaiting_outcome
    with pytest.raises(RuntimeError, match="no reward yet"):
        buf.add(np.ones(3), np.ones(4), 0, 0.0, 0.0)
    assert buf.set_outcome(1.0, False)
    assert not buf.set_outcome(1.0, False)  # nothing awaits a reward
    buf.add(np.zeros(3), np.ones(4), 1, -0.7, 0.2)
    assert not buf.full
    buf.set_outcome(0.0, True)
    assert buf.full
    batch = buf.finish(0.0, gamma=1.0, lam=1.0)
    assert batch.obs.shape == (2, 3) and batch.masks.dtype == torch.bool
    assert batch.masks[0].tolist() == [True, False, True, True]
    assert batch.actions.tolist() == [2, 1]
    torch.testing.assert_close(batch.returns, torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(batch.advantages, torch.tensor([0.9, -0.2]))
    buf.reset()
    assert buf.pos == 0 and not buf.full


def test_minibatches_cover_every_step_once_deterministically():
    buf = RolloutBuffer(10, (1,), 2)
    for i in range(10):
        buf.add(np.array([i]), np.ones(2), i % 2, 0.0, 0.0)
        buf.set_outcome(0.0, False)
    batch = buf.finish(0.0, 0.9, 0.9)
    first = [mb.obs[:, 0].tolist() for mb in minibatches(batch, 4, torch.Generator().manual_seed(5))]
    again = [mb.obs[:, 0].tolist() for mb in minibatches(batch, 4, torch.Generator().manual_seed(5))]
    assert first == again
    assert [len(x) for x in first] == [4, 4, 2]
    assert sorted(sum(first, [])) == [float(i) for i in range(10)]
    for mb in minibatches(batch, 3, torch.Generator()):
        assert mb.actions.tolist() == [int(o) % 2 for o in mb.obs[:, 0].tolist()]
