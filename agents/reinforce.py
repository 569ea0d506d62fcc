"""REINFORCE: the Monte-Carlo policy gradient, learning once per episode.

At the end of every episode the network takes one gradient step on
``-mean(log pi(a_t | s_t) * G_t) - ent_coef * entropy``, where ``G_t`` are the discounted returns
standardised over the episode (HDeepRM's policy-learning agent). Masked actions are never taken.

Train, then evaluate the saved model::

    hdeeprm-launch agents/reinforce.py examples/reinforce/options.json --outmodel reinforce.pt
    hdeeprm-launch agents/reinforce.py test_options.json --inmodel reinforce.pt

with an agent block such as::

    "agent": {"run": "train", "hidden": 64, "lr": 0.001, "gamma": 0.99,
              "params": {"ent_coef": 0.01, "network": "auto"}}

Settings under ``params``: see :class:`hdrm.agents.learning.PolicySettings`.
"""

from hdrm.agents.reinforce import ReinforceAgent


class Reinforce(ReinforceAgent):
    """REINFORCE with standardised returns and an entropy bonus, exactly as built in."""
