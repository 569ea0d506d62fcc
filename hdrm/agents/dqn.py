"""Deep Q-learning with dueling heads, double Q targets, n-step returns and prioritized replay.

The learner of the ADAS scheduling work, with the Rainbow-style improvements that matter here
(Hessel et al., 2018): every decision is epsilon-greedy over the VALID actions; finished steps
become n-step transitions (:class:`~hdrm.agents.replay.NStepAccumulator`) stored with both
states' masks in a :class:`~hdrm.agents.replay.PrioritizedReplayBuffer`. Every ``train_freq``
decisions (after ``learning_starts``), ``gradient_steps`` minibatches are drawn by priority and the
online network moves towards the double Q-learning targets
``R + gamma^n Q_target(s', argmax_{valid a'} Q_online(s', a'))`` under an importance-weighted Huber
loss, with gradient-norm clipping; the sampled transitions get the new ``|TD error|`` as priority.
The target network follows the online one every ``target_update`` gradient steps, by a hard copy
(``tau`` 1) or Polyak averaging (``tau`` < 1).

Q values come from :class:`~hdrm.agents.q_networks.DuelingQNetwork` over the same encoders as the
policy learners: an MLP for 1-D observations, and for ``job_pick`` windows a Q value per job row
(kernel or attention network) plus the void action's. Exploration and replay sampling use seeded
numpy generators; network initialisation is seeded too, so a seed fixes the run.
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, NamedTuple, Sequence

import numpy as np
import torch
from gymnasium import spaces

from hdrm.agents.catalog import AGENTS
from hdrm.agents.devices import PRECISIONS, check_device_name, to_cpu, update_autocast
from hdrm.agents.distributions import mask_tensor
from hdrm.agents.learning import ValueLearningAgent, as_tensor
from hdrm.agents.q_networks import DuelingQNetwork, double_q_targets
from hdrm.agents.replay import NStepAccumulator, PrioritizedReplayBuffer, ReplayBatch, Transition

logger = logging.getLogger(__name__)

EPSILON_SCHEDULES = ("linear", "exponential")


@dataclass(frozen=True)
class DQNSettings:
    """Settings of DQN (``pybatsim.agent.params``); ``lr`` and ``gamma`` are top-level keys."""

    network: str = "auto"
    """Encoder: "auto" (kernel for job windows, mlp otherwise), "mlp", "kernel" or "attention"."""
    heads: int = field(default=4, metadata={"min": 1})
    """Attention heads of the "attention" network."""
    layers: int = field(default=1, metadata={"min": 1})
    """Encoder layers of the "attention" network."""
    dueling: bool = True
    """Q = V + A - mean of A over the valid actions; false uses the per-action outputs as Q."""
    double: bool = True
    """Double Q-learning: the online network picks the next action, the target network rates it."""
    n_step: int = field(default=3, metadata={"min": 1})
    """Rewards summed per transition before bootstrapping (1: one-step Q-learning)."""
    buffer_size: int = field(default=20_000, metadata={"min": 1})
    """Transitions kept in the replay buffer."""
    batch_size: int = field(default=64, metadata={"min": 1})
    """Transitions per gradient step."""
    learning_starts: int = field(default=1_000, metadata={"min": 0})
    """Decisions before the first gradient step."""
    train_freq: int = field(default=1, metadata={"min": 1})
    """Decisions between two rounds of gradient steps."""
    gradient_steps: int = field(default=1, metadata={"min": 1})
    """Gradient steps per round."""
    target_update: int = field(default=1_000, metadata={"min": 1})
    """Gradient steps between two updates of the target network."""
    tau: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Target update: target = tau * online + (1 - tau) * target (1: hard copy)."""
    prioritized: bool = True
    """Sample transitions by priority; false samples uniformly (unit weights)."""
    alpha: float = field(default=0.6, metadata={"min": 0.0})
    """Priority exponent: priority = (|TD error| + priority_eps) ^ alpha."""
    beta: float = field(default=0.4, metadata={"min": 0.0, "max": 1.0})
    """Initial importance-sampling exponent, annealed linearly to 1 over beta_steps decisions."""
    beta_steps: int = field(default=100_000, metadata={"min": 1})
    """Decisions over which beta reaches 1."""
    priority_eps: float = field(default=1e-6, metadata={"min": 1e-12})
    """Added to |TD error| so that every transition can be sampled."""
    epsilon_start: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Probability of a random valid action at the first decision."""
    epsilon_end: float = field(default=0.05, metadata={"min": 0.0, "max": 1.0})
    """Final exploration probability."""
    epsilon_steps: int = field(default=10_000, metadata={"min": 1})
    """Linear: decisions to reach epsilon_end; exponential: decisions per e-fold of the gap."""
    epsilon_schedule: str = field(default="linear", metadata={"choices": EPSILON_SCHEDULES})
    """Decay of epsilon: "linear" or "exponential"."""
    eval_epsilon: float = field(default=0.0, metadata={"min": 0.0, "max": 1.0})
    """Exploration probability when evaluating (training off)."""
    huber_delta: float = field(default=1.0, metadata={"min": 1e-12})
    """TD errors beyond this are penalised linearly (Huber loss)."""
    max_grad_norm: float = field(default=10.0, metadata={"min": 0.0})
    """Clip the global gradient norm to this value; 0 disables clipping."""
    reward_scale: float = field(default=1.0, metadata={"min": 0.0})
    """Multiply every reward by this before learning."""
    torch_threads: int = field(default=0, metadata={"min": 0})
    """Set torch's intra-op threads (1 is fastest for small networks); 0 leaves torch's default."""
    rollout_device: str = field(default="auto", metadata={"check": check_device_name})
    """Where decisions are computed: "cpu", "cuda", "cuda:N" or "auto" (the CPU)."""
    update_device: str = field(default="auto", metadata={"check": check_device_name})
    """Where the Q networks are trained: "cpu", "cuda", "cuda:N" or "auto" (the first GPU when
    torch sees one, else the CPU); the weights are copied to the rollout device after each round
    of gradient steps."""
    precision: str = field(default="fp32", metadata={"choices": PRECISIONS})
    """Forward passes of the updates in "fp32", or "bf16" (bfloat16 autocast, for the attention
    network on a GPU; the loss stays float32)."""
    apex: Mapping[str, Any] = field(default_factory=dict)
    """Ape-X's settings, read when the agent trains with rollout workers (``--workers N``:
    ``hdrm.distributed.apex.ApexSettings``, checked there); unused in one process."""


def epsilon_at(step: int, settings: DQNSettings) -> float:
    """Exploration probability after ``step`` training decisions.

    Linear: from ``epsilon_start`` to ``epsilon_end`` over ``epsilon_steps``, then constant.
    Exponential: ``end + (start - end) * exp(-step / epsilon_steps)``.
    """
    start, end = settings.epsilon_start, settings.epsilon_end
    if settings.epsilon_schedule == "exponential":
        return end + (start - end) * math.exp(-step / settings.epsilon_steps)
    return start + (end - start) * min(1.0, step / settings.epsilon_steps)


def beta_at(step: int, settings: DQNSettings) -> float:
    """Importance-sampling exponent after ``step`` decisions: linear from ``beta`` to 1."""
    return settings.beta + (1.0 - settings.beta) * min(1.0, step / settings.beta_steps)


class _Pending(NamedTuple):
    """The last decision, waiting for its reward and the next observation."""

    obs: np.ndarray
    mask: np.ndarray
    action: int
    reward: float | None


class TensorBatch(NamedTuple):
    """A :class:`~hdrm.agents.replay.ReplayBatch` as tensors (indices stay in numpy)."""

    obs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    returns: torch.Tensor
    next_obs: torch.Tensor
    next_masks: torch.Tensor
    discounts: torch.Tensor
    weights: torch.Tensor


def to_tensors(batch: ReplayBatch) -> TensorBatch:
    """The arrays of ``batch`` (all but ``indices``) as tensors sharing their memory."""
    return TensorBatch(*(torch.from_numpy(a) for a in batch[:-1]))


@AGENTS.register("dqn")
class DQNAgent(ValueLearningAgent):
    """DQN with dueling heads, double Q-learning, n-step returns and prioritized replay.

    Settings: :class:`DQNSettings`. ``state_dict`` holds the online network (``q.*``), the target
    network (``target.*``) and ``counters`` (decisions and gradient steps, which drive the epsilon,
    beta and target schedules); the replay buffer is not saved.

    Attributes:
        target: the target network (no gradients).
        replay: the prioritized replay buffer.
        env_steps: training decisions made.
        updates: gradient steps made.
    """

    Settings: ClassVar[type] = DQNSettings

    def __init__(
        self,
        config: Mapping[str, Any],
        observation_space: spaces.Space,
        action_space: spaces.Space,
        action_names: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(config, observation_space, action_space, action_names, seed)
        s = self.settings
        self.target = copy.deepcopy(self.network).requires_grad_(False)
        shape = tuple(int(d) for d in observation_space.shape)
        alpha = s.alpha if s.prioritized else 0.0
        self.replay = PrioritizedReplayBuffer(
            s.buffer_size, shape, self.n_actions, alpha, s.priority_eps
        )
        self.nstep = NStepAccumulator(s.n_step, self.gamma)
        self.replay_rng = np.random.default_rng((self.seed, 1))
        self.env_steps = 0
        self.updates = 0
        self._pending: _Pending | None = None
        self._stats: list[dict[str, float]] = []
        self.sink: Callable[[list[Transition]], Any] | None = None
        """When set, finished transitions go to it instead of the replay and the agent never
        learns: an acting-only copy, as Ape-X's actors (:mod:`hdrm.distributed.apex`)."""

    def build_network(self) -> DuelingQNetwork:
        """The Q network: dueling heads over the configured encoder."""
        return DuelingQNetwork(super().build_network(), self.settings.dueling)

    @property
    def epsilon(self) -> float:
        """Current exploration probability (``eval_epsilon`` when evaluating)."""
        if not self.training:
            return self.settings.eval_epsilon
        return epsilon_at(self.env_steps, self.settings)

    @property
    def beta(self) -> float:
        """Current importance-sampling exponent."""
        return beta_at(self.env_steps, self.settings)

    def start_episode(self) -> None:
        super().start_episode()
        self._drop_pending()

    def decide(self, observation: Any, mask: np.ndarray) -> int:
        """An epsilon-greedy valid action; when training, the previous step is completed first."""
        obs = self.observe(observation)
        mask_t = mask_tensor(mask)
        if not self.training:
            return self._choose(obs, mask_t, self.settings.eval_epsilon)
        mask_np = mask_t.numpy().copy()
        obs = np.array(obs, dtype=np.float32)
        self._complete_pending(obs, mask_np)
        action = self._choose(obs, mask_t, epsilon_at(self.env_steps, self.settings))
        self.env_steps += 1
        self._pending = _Pending(obs, mask_np, action, None)
        return action

    def _choose(self, obs: np.ndarray, mask: torch.Tensor, epsilon: float) -> int:
        if epsilon > 0 and self.rng.random() < epsilon:
            return int(self.rng.choice(np.flatnonzero(mask.numpy())))
        with torch.inference_mode():
            return int(self.rollout_network.greedy(self.to_rollout(as_tensor(obs)),
                                                   self.to_rollout(mask)))

    def rewarded(self, reward: float, done: bool) -> None:
        """Attach the reward to the last decision; learn when it is time."""
        super().rewarded(reward, done)
        if not self.training or self._pending is None:
            return
        p = self._pending
        scaled = float(reward) * self.settings.reward_scale + (p.reward or 0.0)
        if done:
            placeholder = np.ones_like(p.mask)  # discount 0: the next state is never used
            self._store(self.nstep.push(p.obs, p.mask, p.action, scaled, p.obs, placeholder, True))
            self._pending = None
        else:
            self._pending = p._replace(reward=scaled)
        self._maybe_learn()

    def _complete_pending(self, next_obs: np.ndarray, next_mask: np.ndarray) -> None:
        p = self._pending
        self._pending = None
        if p is None:
            return
        if p.reward is None:
            logger.debug("decision without a reward before the next one: step dropped")
            self.nstep.clear()
            return
        self._store(self.nstep.push(p.obs, p.mask, p.action, p.reward, next_obs, next_mask, False))

    def _store(self, transitions: list[Transition]) -> None:
        if self.sink is not None:
            if transitions:
                self.sink(transitions)
            return
        for transition in transitions:
            self.replay.add(transition)

    def _drop_pending(self) -> None:
        dropped = len(self.nstep) + (self._pending is not None)
        if dropped:
            logger.debug("episode cut before its end: %d pending steps dropped", dropped)
        self._pending = None
        self.nstep.clear()

    def _maybe_learn(self) -> None:
        if self.sink is not None:
            return
        s = self.settings
        if self.env_steps < s.learning_starts or len(self.replay) < s.batch_size:
            return
        if self.env_steps % s.train_freq == 0:
            for _ in range(s.gradient_steps):
                self._stats.append(self.learn_batch())
            self.sync_rollout()

    def learn_batch(self) -> dict[str, float]:
        """One gradient step on a prioritized minibatch; returns its loss, mean Q and mean |TD|."""
        batch = self.replay.sample(self.settings.batch_size, self.beta, self.replay_rng)
        stats, td = self.learn_on(batch)
        self.replay.update_priorities(batch.indices, td)
        return stats

    def learn_on(self, batch: ReplayBatch) -> tuple[dict[str, float], np.ndarray]:
        """One gradient step on ``batch``, drawn from this agent's replay or another one.

        Ape-X's learner (:mod:`hdrm.distributed.apex`) draws its batches from a replay actor and
        sends the TD errors back as priorities.

        Returns:
            the step's loss, mean Q and mean |TD error|, and the TD errors of the batch.
        """
        t = TensorBatch(*(self.to_update(x) for x in to_tensors(batch)))
        q, targets = self._q_and_targets(t)
        huber = torch.nn.functional.huber_loss(q, targets, reduction="none",
                                               delta=self.settings.huber_delta)
        loss = (t.weights * huber).mean()
        self.optimise(loss)
        td = (q - targets).detach()
        self.updates += 1
        if self.updates % self.settings.target_update == 0:
            self.update_target()
        stats = {"loss": loss.item(), "q_mean": q.mean().item(), "td_abs": td.abs().mean().item()}
        return stats, td.cpu().numpy()

    def td_errors(self, batch: ReplayBatch) -> np.ndarray:
        """TD errors of ``batch`` under the current networks, without learning (Ape-X's actors
        send them as the initial priorities of their transitions)."""
        t = TensorBatch(*(self.to_update(x) for x in to_tensors(batch)))
        with torch.no_grad():
            q, targets = self._q_and_targets(t)
        return (q - targets).cpu().numpy()

    def _q_and_targets(self, t: TensorBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Q values of the batch's actions (with gradient) and their double Q-learning targets."""
        with update_autocast(self.devices.update, self.settings.precision):
            q_all, next_online = self._online_q(t)
            with torch.no_grad():
                next_target = self.target.q_values(t.next_obs, t.next_masks).float()
        q_all = q_all.float()
        next_online = None if next_online is None else next_online.float()
        q = q_all.gather(-1, t.actions.unsqueeze(-1)).squeeze(-1)
        targets = double_q_targets(next_target, next_online, t.next_masks, t.returns, t.discounts)
        return q, targets

    def _online_q(self, t: TensorBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Online Q values of the states and, for double Q-learning, of the next states (one pass)."""
        if not self.settings.double:
            return self.network.q_values(t.obs, t.masks), None
        n = t.obs.shape[0]
        q = self.network.q_values(torch.cat([t.obs, t.next_obs]), torch.cat([t.masks, t.next_masks]))
        return q[:n], q[n:].detach()

    def update_target(self) -> None:
        """Move the target network to the online one (hard copy, or Polyak with ``tau`` < 1)."""
        tau = self.settings.tau
        with torch.no_grad():
            for target, online in zip(self.target.parameters(), self.network.parameters()):
                if tau >= 1.0:
                    target.copy_(online)
                else:
                    target.lerp_(online, tau)

    def _learn_episode(self) -> dict[str, float]:
        """DQN learns per decision: report the episode's gradient steps (loss nan if none)."""
        self._drop_pending()
        done, self._stats = self._stats, []
        stats = {"loss": math.nan, "gradient_steps": float(len(done))}
        if done:
            stats.update({key: float(np.mean([d[key] for d in done])) for key in done[0]})
        stats.update(epsilon=self.epsilon, beta=self.beta, replay_size=float(len(self.replay)))
        return stats

    def learn(self, episode: Any) -> dict[str, float]:  # pragma: no cover - DQN learns per step
        raise NotImplementedError("DQNAgent learns per decision, in rewarded()")

    def state_dict(self) -> dict[str, Any]:
        state = {f"q.{k}": v for k, v in to_cpu(self.network.state_dict()).items()}
        state.update({f"target.{k}": v for k, v in to_cpu(self.target.state_dict()).items()})
        state["counters"] = torch.tensor([self.env_steps, self.updates], dtype=torch.int64)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if "counters" not in state:
            raise ValueError("not a DQN state: 'counters' is missing")
        self.network.load_state_dict(_with_prefix(state, "q."))
        self.target.load_state_dict(_with_prefix(state, "target."))
        self.env_steps, self.updates = (int(v) for v in state["counters"])
        self.sync_rollout()


def _with_prefix(state: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The entries of ``state`` whose key starts with ``prefix``, without it."""
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
