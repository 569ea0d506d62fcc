"""Masked categorical distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hdrm.agents.distributions import MASKED_LOGIT, choose, evaluate, mask_tensor, masked_logits


def test_mask_tensor_accepts_int8_and_bool():
    assert mask_tensor(np.array([1, 0, 1], dtype=np.int8)).tolist() == [True, False, True]
    assert mask_tensor(np.array([0, 2], dtype=np.int64)).tolist() == [False, True]
    assert mask_tensor(np.array([True, False])).dtype == torch.bool


def test_empty_mask_is_refused():
    with pytest.raises(ValueError, match="action mask has no valid action"):
        mask_tensor(np.zeros(3, dtype=np.int8))


def test_masked_logits_and_choose_never_pick_masked():
    logits = torch.tensor([5.0, 0.0, 1.0, 3.0])
    mask = torch.tensor([False, True, True, False])
    masked = masked_logits(logits, mask)
    assert masked[0] == MASKED_LOGIT and masked[2] == 1.0
    assert choose(masked, greedy=True, generator=torch.Generator()) == 2
    gen = torch.Generator().manual_seed(3)
    picks = {choose(masked, greedy=False, generator=gen) for _ in range(300)}
    assert picks == {1, 2}


def test_evaluate_hand_checked():
    logits = torch.tensor([[0.0, 0.0, 7.0], [1.0, 2.0, 3.0]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    actions = torch.tensor([1, 2])
    ev = evaluate(logits, mask, actions)
    expected_lp1 = 3.0 - math.log(math.exp(1) + math.exp(2) + math.exp(3))
    np.testing.assert_allclose(ev.log_prob.numpy(), [math.log(0.5), expected_lp1], rtol=1e-6)
    p = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(ev.entropy.numpy(), [math.log(2), -(p * np.log(p)).sum()], rtol=1e-6)


def test_gradients_stay_finite_with_masks():
    logits = torch.tensor([[0.3, -1.0, 2.0]], requires_grad=True)
    ev = evaluate(logits, torch.tensor([[True, False, True]]), torch.tensor([0]))
    (ev.log_prob.sum() + ev.entropy.sum()).backward()
    assert torch.isfinite(logits.grad).all()
    assert logits.grad[0, 1] == 0.0
