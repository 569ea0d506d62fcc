"""Action validation: type, range and mask, each refused with the reason and the valid actions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hdrm.launch.actions import ActionProblem, describe_mask, valid_action

MASK = np.array([True, True, False, True, False, False, True])


@pytest.mark.parametrize("action, expected", [
    (0, 0), (3, 3), (np.int64(6), 6), (np.array(1), 1), (np.array([3]), 3), (torch.tensor(6), 6),
    (torch.tensor([0]), 0),
])
def test_integers_in_range_that_the_mask_allows_pass(action, expected):
    got = valid_action(action, MASK)
    assert got == expected and type(got) is int


@pytest.mark.parametrize("action, reason", [
    (1.7, "of type float, expected an int in 0..6"),
    (2.0, "of type float, expected an int in 0..6"),
    (np.float32(1.0), "of type float32, expected an int in 0..6"),
    (True, "of type bool, expected an int in 0..6"),
    ("1", "of type str, expected an int in 0..6"),
    (None, "of type NoneType, expected an int in 0..6"),
    (np.array([1, 3]), "an array of 2 values, expected one int in 0..6"),
    (torch.tensor([1, 3]), "a tensor of 2 values, expected one int in 0..6"),
    (-1, "out of range 0..6"),
    (7, "out of range 0..6"),
    (2, "masked out"),
    (np.int32(5), "masked out"),
])
def test_invalid_actions_say_why_and_what_the_mask_allows(action, reason):
    with pytest.raises(ActionProblem) as caught:
        valid_action(action, MASK)
    assert str(caught.value) == f"{reason}; the mask allows 0-1, 3, 6 (4 of 7 actions)"


def test_mask_descriptions_are_ranges_cut_after_eight():
    assert describe_mask(np.ones(36, dtype=bool)) == "0-35 (36 of 36 actions)"
    assert describe_mask(np.zeros(3, dtype=bool)) == "nothing (0 of 3 actions)"
    alternate = np.arange(40) % 2 == 0
    assert describe_mask(alternate) == "0, 2, 4, 6, 8, 10, 12, 14, ... (20 of 40 actions)"
    assert describe_mask(np.array([0, 1, 1, 0, 1], dtype=np.int8)) == "1-2, 4 (3 of 5 actions)"
