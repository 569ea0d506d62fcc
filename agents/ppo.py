"""PPO with action masks, plus a linearly annealed learning rate.

PPO collects ``rollout_steps`` decisions (across episodes), then runs ``epochs`` passes of shuffled
minibatches over the clipped surrogate objective, a value loss and an entropy bonus, stopping early
when the policy moves too far (approximate KL above 1.5 x ``target_kl``). Masked actions get
probability zero. On ``job_pick`` observations the default network scores every job row with
the same small MLP (RLScheduler's kernel network).

This file adds one setting to the built-in learner, ``anneal_updates``: the learning rate decays
linearly from ``lr`` to 0 over that many updates (CleanRL's ``anneal_lr``).

Run::

    hdeeprm-launch agents/ppo.py examples/ppo/options.json --outmodel ppo.pt

with an agent block such as::

    "agent": {"run": "train", "lr": 0.0003, "gamma": 0.99,
              "params": {"rollout_steps": 2048, "epochs": 4, "minibatch": 256, "clip": 0.2,
                         "anneal_updates": 100}}

Other settings under ``params``: see :class:`hdrm.agents.ppo.PPOSettings`.
"""

from dataclasses import dataclass, field

from hdrm.agents.ppo import PPOAgent, PPOSettings


@dataclass(frozen=True)
class AnnealedPPOSettings(PPOSettings):
    """The built-in PPO settings, plus:"""

    anneal_updates: int = field(default=0, metadata={"min": 0})
    """Decay the learning rate linearly from ``lr`` to 0 over this many updates; 0 keeps it constant."""


class AnnealedPPO(PPOAgent):
    """PPO whose learning rate shrinks linearly with the number of updates made."""

    Settings = AnnealedPPOSettings

    def update(self, batch):
        """Set this update's learning rate, then run the PPO update."""
        if self.settings.anneal_updates:
            remaining = max(0.0, 1.0 - self.updates / self.settings.anneal_updates)
            for group in self.optimizer.param_groups:
                group["lr"] = self.lr * remaining
        return super().update(batch)
