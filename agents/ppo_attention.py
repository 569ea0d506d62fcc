"""PPO whose policy reads the job window through self-attention (the transformer of DAS).

In ``job_pick`` mode the observation is a window of queued jobs, one row each. The per-job
"kernel" network scores every row on its own; here the rows first attend to each other and to a
summary token of the cluster state, so a job's score can depend on the rest of the queue (is it
the shortest? would it block a wider job?). There are no positional encodings: permuting the
rows permutes the scores. Padding rows (the window is not full) are masked out of the attention.

Two settings say where the network finds what it needs in a row (negative indexes count from
the last feature; the defaults fit hdrm's ``job_window`` observation):

- ``real_column``: the real-job flag (1 for a queued job, 0 for padding), default -2;
- ``cluster_columns``: the cluster-state features repeated on every row, default [-1] (the
  free-core fraction); they feed the summary token.

Run::

    hdeeprm-launch agents/ppo_attention.py options.json --outmodel ppo_attention.pt

with an agent block such as::

    "agent": {"run": "train", "lr": 0.0003, "hidden": [32, 32],
              "params": {"heads": 4, "layers": 1, "rollout_steps": 4096, "minibatch": 512}}

Other settings under ``params``: see :class:`hdrm.agents.ppo.PPOSettings`.
"""

from dataclasses import dataclass, field

from hdrm.agents.networks import build_network
from hdrm.agents.ppo import PPOAgent, PPOSettings


@dataclass(frozen=True)
class AttentionPPOSettings(PPOSettings):
    """The built-in PPO settings, with the attention network by default, plus its row layout."""

    network: str = "attention"
    """Policy network; "attention" here (any registered name still works)."""
    real_column: int = -2
    """Feature of a row holding the real-job flag (0 marks a padding row)."""
    cluster_columns: tuple = field(default=(-1,))
    """Features of a row holding the cluster state (the same on every row); may be empty."""


class AttentionPPO(PPOAgent):
    """PPO with the self-attention job-window network."""

    Settings = AttentionPPOSettings

    def build_network(self):
        """The network of the settings, told where the real-job flag and cluster state are."""
        return build_network(
            self.network_name,
            self.observation_space,
            self.n_actions,
            self.hidden,
            heads=self.settings.heads,
            layers=self.settings.layers,
            real_column=self.settings.real_column,
            cluster_columns=tuple(self.settings.cluster_columns),
            where="pybatsim.agent.params.network",
        )
