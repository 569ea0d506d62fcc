"""The environments' action space: a :class:`gymnasium.spaces.Discrete` that also samples with the
environments' own boolean masks.

The environments give their valid actions as a boolean array (``info["action_mask"]`` and
``action_masks()``, the dtype sb3-contrib's ``MaskablePPO`` documents). Gymnasium's
``Discrete.sample(mask=...)`` asserts an ``int8`` mask, so the idiom of Gymnasium's own examples,
``env.action_space.sample(info["action_mask"])``, failed on them. :class:`MaskedDiscrete` takes
either dtype; everything else is ``Discrete``'s (``isinstance`` checks, equality, seeding,
pickling).

Gymnasium's vector environments (``gymnasium.make_vec``, ``SyncVectorEnv``, ``AsyncVectorEnv``)
batch the action space with ``gymnasium.vector.utils.batch_space``, which makes a plain
``MultiDiscrete`` of a ``Discrete``; its ``sample`` asks for a tuple of ``int8`` masks, one per
environment, while the vector ``info["action_mask"]`` stacks the boolean masks in one array. The
batch of a :class:`MaskedDiscrete` is a :class:`MaskedMultiDiscrete`, whose ``sample`` takes the
stacked array (or a tuple of masks) as it comes.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space


class CurrentMask:
    """The valid actions of one agent in its environment's current state, kept up to date by the
    environment (``mask``: an ``int8`` or boolean array, or None before the first reset).

    A :class:`MaskedDiscrete` built with one samples from it when ``sample()`` is given no mask:
    PettingZoo's ``parallel_seed_test`` and ``max_cycles_test`` call ``action_space(agent)
    .sample()`` bare, and an environment that refuses masked actions then still plays valid ones.
    A small object rather than a reference to the environment, so that copying or pickling the
    space alone does not copy the environment (a copy keeps the mask it had).
    """

    __slots__ = ("mask",)

    def __init__(self, mask: np.ndarray | None = None) -> None:
        self.mask = mask

    def __getstate__(self) -> np.ndarray | None:
        return self.mask

    def __setstate__(self, mask: np.ndarray | None) -> None:
        self.mask = mask


class MaskedDiscrete(spaces.Discrete):
    """``Discrete(n)`` whose :meth:`sample` also takes boolean masks and probabilities' masks.

    Args:
        n, seed, start: as :class:`gymnasium.spaces.Discrete`.
        current: the environment's :class:`CurrentMask` for this space: ``sample()`` without a
            mask or probabilities then draws among the currently valid actions; None (the
            default): uniformly over all ``n``, as ``Discrete``.
    """

    def __init__(self, n: int, seed: Any = None, start: int = 0,
                 current: CurrentMask | None = None) -> None:
        super().__init__(n, seed=seed, start=start)
        self.current = current

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        """A random action; ``mask`` (boolean or ``int8``, one entry per action): only where it
        is true; ``probability``: as :meth:`gymnasium.spaces.Discrete.sample`; neither: among
        the valid actions of ``current`` where it is set and holds a mask, else any action."""
        if mask is None and probability is None and self.current is not None:
            mask = self.current.mask
        if mask is not None:
            mask = _int8(mask)
        return super().sample(mask=mask, probability=probability)

    def __setstate__(self, state: Any) -> None:
        super().__setstate__(state)
        if "current" not in self.__dict__:  # pickled before ``current`` existed
            self.current = None


class MaskedMultiDiscrete(spaces.MultiDiscrete):
    """The batch of :class:`MaskedDiscrete` spaces (vector environments): a ``MultiDiscrete``
    whose :meth:`sample` also takes the vector ``info["action_mask"]`` (one boolean row per
    environment)."""

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        """Random actions, one per environment; ``mask``: a 2-D array with one row per
        environment, or a tuple of rows (boolean or ``int8``); ``probability``: as
        :meth:`gymnasium.spaces.MultiDiscrete.sample`."""
        if mask is not None and self.nvec.ndim == 1:
            mask = tuple(_int8(row) for row in mask)
        return super().sample(mask=mask, probability=probability)


def _int8(mask: Any) -> Any:
    """A boolean mask as ``int8`` (Gymnasium's mask dtype); any other mask as it is."""
    array = np.asarray(mask)
    return array.astype(np.int8) if array.dtype == np.bool_ else mask


@batch_space.register(MaskedDiscrete)
def _batch_masked_discrete(space: MaskedDiscrete, n: int = 1) -> MaskedMultiDiscrete:
    """``n`` copies of ``space`` (Gymnasium's batch of a ``Discrete``, masks as they come)."""
    return MaskedMultiDiscrete(np.full((n,), space.n, dtype=space.dtype), dtype=space.dtype,
                               seed=copy.deepcopy(space.np_random),
                               start=np.full((n,), space.start, dtype=space.dtype))


def action_index(action: Any, n: int) -> int:
    """``action`` as one index of ``Discrete(n)``, for an action that is not an integer already
    (the environments try ``operator.index`` first): a whole float (``2.0``) or a 0-d array of
    one is taken; a batch (``array([2])``, a policy's output with its batch dimension) or any
    other value is refused naming it.

    Raises:
        ValueError: not one whole number, or a whole float outside ``0 .. n - 1`` (named as
            given: ``1e+300``, not its 301 digits).
    """
    array = np.asarray(action)
    if array.ndim != 0:
        raise ValueError(f"action {action!r}: expected one action of Discrete({n}) (an int or "
                         f"a 0-d array), got shape {array.shape}; for a batch of one environment "
                         f"give action[0] or action.item()")
    value = array.item()
    if isinstance(value, float) and value.is_integer():
        if not 0 <= value < n:
            raise ValueError(f"action {action!r} outside Discrete({n})")
        return int(value)
    if isinstance(value, int):
        return value
    raise ValueError(f"action {action!r}: expected a whole number, one action of Discrete({n})")
