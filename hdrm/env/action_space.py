"""The environments' action space: a :class:`gymnasium.spaces.Discrete` that also samples with the
environments' own boolean masks.

The environments give their valid actions as a boolean array (``info["action_mask"]`` and
``action_masks()``, the dtype sb3-contrib's ``MaskablePPO`` documents). Gymnasium's
``Discrete.sample(mask=...)`` asserts an ``int8`` mask, so the idiom of Gymnasium's own examples,
``env.action_space.sample(info["action_mask"])``, failed on them. :class:`MaskedDiscrete` takes
either dtype; everything else is ``Discrete``'s (``isinstance`` checks, equality, seeding,
pickling).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


class MaskedDiscrete(spaces.Discrete):
    """``Discrete(n)`` whose :meth:`sample` also takes boolean masks and probabilities' masks."""

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        """A random action; ``mask`` (boolean or ``int8``, one entry per action): only where it
        is true; ``probability``: as :meth:`gymnasium.spaces.Discrete.sample`."""
        if mask is not None and np.asarray(mask).dtype == np.bool_:
            mask = np.asarray(mask, dtype=np.int8)
        return super().sample(mask=mask, probability=probability)
