"""DQN for scheduling: dueling heads, double Q-learning, n-step returns and prioritized replay.

The agent learns Q(s, a), the discounted reward still to come after taking action ``a`` in state
``s``, and schedules greedily with it:

- acting: with probability epsilon (decaying from ``epsilon_start`` to ``epsilon_end`` over
  ``epsilon_steps`` decisions) a random *valid* action, else the valid action of largest Q;
- remembering: each decision becomes an n-step transition ``(s, a, r + gamma r' + ..., s after n
  steps)`` in a replay buffer that samples surprising transitions (large TD error) more often,
  with importance weights correcting the bias;
- learning: after every decision, one minibatch step towards
  ``R + gamma^n Q_target(s', argmax_valid Q(s', .))`` (double Q-learning) with a Huber loss; the
  target network copies the online one every ``target_update`` steps.

Q values are ``V(s) + A(s, a) - mean of A over the valid actions`` (dueling heads). On
``job_pick`` windows there is one Q value per job row (the same small network scores every row)
plus one for the void action; on ``policy_pair`` observations an MLP gives one per pair.

Run::

    hdeeprm-launch agents/dqn.py options.json --outmodel dqn.pt

with an agent block such as::

    "agent": {"run": "train", "lr": 0.0005, "gamma": 0.99,
              "params": {"n_step": 3, "buffer_size": 20000, "batch_size": 64,
                         "learning_starts": 1000, "target_update": 1000,
                         "epsilon_steps": 20000, "reward_scale": 0.01}}

Every setting under ``params``: see :class:`hdrm.agents.dqn.DQNSettings`.
"""

from hdrm.agents.dqn import DQNAgent


class DQN(DQNAgent):
    """Dueling double DQN with n-step returns and prioritized replay, exactly as built in."""
