"""PPO for the SLA comparison: work-conserving in ``job_pick`` mode.

An agent file for ``hdeeprm-launch`` (:mod:`benchmarks.sla_learners`): PPO with masks (the
built-in :class:`~hdrm.agents.ppo.PPOAgent`), except that the void action (wait for the next
event) is masked out whenever a request fits now. The heuristics it is compared with never
leave a partition idle while a request waits; a first job_pick model trained with the void
action open learned to wait and ran the partitions at 6% (0.2% of the targets met under
overload). In ``policy_pair`` mode (no void action) nothing changes.

Run::

    hdeeprm-launch benchmarks/sla_agent.py options.json --outmodel model.pt
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hdrm.agents.ppo import PPOAgent

VOID = "void"


class WorkConservingPPO(PPOAgent):
    """PPO that never waits while a request fits."""

    def decide(self, observation: Any, mask: np.ndarray) -> int:
        """Mask the void action when another action is valid, then decide as PPO."""
        return super().decide(observation, work_conserving(mask, self.action_names))


def work_conserving(mask: np.ndarray, action_names: list[str] | None) -> np.ndarray:
    """``mask`` without the void action (the last, named ``void``) when another is valid."""
    if not action_names or action_names[-1] != VOID or not mask[:-1].any() or not mask[-1]:
        return mask
    out = np.array(mask, dtype=bool, copy=True)
    out[-1] = False
    return out
