"""Advantage actor-critic: a policy (actor) and a state-value estimate (critic), learning per episode.

The critic ``V(s)`` is trained towards the discounted returns; the actor's policy gradient is
weighted by the advantage ``G_t - V(s_t)`` (or GAE with ``gae_lambda`` < 1), which has less variance
than REINFORCE's raw returns. One gradient step per episode on
``-mean(log pi * A) + vf_coef * 0.5 * mean((V - G)^2) - ent_coef * entropy``.

Run::

    hdeeprm-launch agents/actor_critic.py options.json --outmodel a2c.pt

with an agent block such as::

    "agent": {"run": "train", "lr": 0.001, "gamma": 0.99,
              "params": {"vf_coef": 0.5, "gae_lambda": 1.0, "reward_scale": 0.01}}

Settings under ``params``: see :class:`hdrm.agents.learning.ValueSettings`.
"""

from hdrm.agents.a2c import A2CAgent


class ActorCritic(A2CAgent):
    """Episode-level advantage actor-critic, exactly as built in."""
