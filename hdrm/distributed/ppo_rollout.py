"""One process's share of a PPO rollout: K environments stepped together by one PPO agent.

:class:`RolloutCollector` is what a rollout worker runs (a Ray actor of :mod:`hdrm.distributed.ppo`,
or this process when there are no workers). Every step, one forward pass decides for its K
environments (``decide_batch``); an environment whose episode ends is reset at once (Gymnasium's
``SAME_STEP`` autoreset), after its :class:`~hdrm.distributed.learners.EndedEpisode` is recorded.
:meth:`RolloutCollector.collect` plays until the agent's share of the rollout is full, or until
the episode budget is spent, in the order the single-process learner takes its steps:

1. decide for every environment, step them, hand the rewards to the agent;
2. a rollout full with every episode ended is finished with no bootstrap;
3. episodes that ended are recorded (and the environments reset);
4. when the budget of episodes is spent, stop (the single-process launcher stops there too);
5. a rollout full with episodes under way is finished with the values of the next observations.

*Local* collectors drive the learner itself, which learns when its rollout fills (this is
:func:`hdrm.agents.vector.run_vector`, with episode records). *Remote* collectors own a copy of the
learner's agent whose full rollouts go to a sink (``PPOAgent.rollout_sink``) and are returned by
:meth:`~RolloutCollector.collect`; the learner's weights come with the next call.

Between two calls a collector's state is :meth:`RolloutCollector.resume_state` (a resumed
training run's): for each environment, how its episode under way was reset (the environment's
own ``resume_state``) and the decisions made since, which
:meth:`~RolloutCollector.load_resume_state` plays again (the environments are deterministic), and
a remote collector's agent's generators.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import torch

from hdrm.agents.buffers import RolloutBatch
from hdrm.distributed.learners import EndedEpisode, EpisodeTrace, RolloutTask, episode_end
from hdrm.errors import HdrmError
from hdrm.launch.actions import ActionProblem, valid_action
from hdrm.launch.agent_failed import agent_call

logger = logging.getLogger(__name__)


@dataclass
class Collected:
    """What one :meth:`RolloutCollector.collect` gave.

    Attributes:
        batch: the rollout with advantages and returns (remote collectors; a rollout worker
            sends its columns as numpy arrays, :mod:`hdrm.distributed.wire`); None when the
            budget of episodes ran out first, or for a local collector (it learned already).
        episodes: the episodes that ended, in the order they ended (by environment within a
            step).
        env_steps: environment steps made.
        generator_state: the agent's sampling generator afterwards (the learner shuffles its
            minibatches with it, then hands it back: one random stream, as in one process).
        wall_s: seconds the call took.
        cpu_s: CPU seconds the collecting process spent in the call.
    """

    batch: RolloutBatch | None
    episodes: list[EndedEpisode]
    env_steps: int
    generator_state: torch.Tensor | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0


@dataclass
class _Slot:
    """One environment and its episode under way."""

    env: Any
    index: int
    obs: Any = None
    mask: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    trace: EpisodeTrace = field(default_factory=EpisodeTrace)

    def reset(self, seed: int | None) -> None:
        self.obs, self.info = self.env.reset(seed=seed)
        self.mask = self.info["action_mask"]
        self.trace = EpisodeTrace()

    def resume_state(self) -> dict[str, Any]:
        """How the episode under way was reset, and its trace so far (plain values)."""
        t = self.trace
        return {"env": self.env.resume_state(), "steps": t.steps, "return": t.return_,
                "times_s": list(t.times_s), "actions": list(t.actions),
                "update_stats": [dict(s) for s in t.update_stats],
                "elapsed_s": time.perf_counter() - t.t0}

    def load_resume_state(self, state: Mapping[str, Any]) -> None:
        """Reset the environment as :meth:`resume_state` says and replay the episode's decisions.

        Raises:
            HdrmError: the replayed episode ended early (the environment is not deterministic).
        """
        self.obs, self.info = self.env.load_resume_state(state["env"])
        for step, action in enumerate(state["actions"]):
            self.obs, _, terminated, truncated, self.info = self.env.step(int(action))
            if terminated or truncated:
                raise HdrmError(f"environment {self.index}: the resumed episode ended at "
                                f"decision {step + 1} of {len(state['actions'])} replayed; "
                                "the environment did not replay it the same way")
        self.mask = self.info["action_mask"]
        self.trace = EpisodeTrace(int(state["steps"]), float(state["return"]),
                                  [float(v) for v in state["times_s"]],
                                  [int(a) for a in state["actions"]],
                                  [dict(s) for s in state["update_stats"]],
                                  time.perf_counter() - float(state["elapsed_s"]))


class RolloutCollector:
    """K environments and the agent that decides for them (see the module docstring).

    Args:
        task: builds the environments and (remote) the agent, and summarises episodes.
        worker: this collector's number; its environments are ``worker * num_envs + i``.
        num_envs: environments stepped together.
        rollout_steps: steps of the agent's share of a rollout (all its environments together);
            remote collectors only.
        seed: the agent's seed (remote collectors only).
        agent: the learner itself (a local collector); None builds a remote collector's agent.
    """

    def __init__(self, task: RolloutTask, worker: int, num_envs: int, rollout_steps: int = 0,
                 seed: int = 0, agent: Any = None) -> None:
        self.task = task
        self.slots = [_Slot(task.make_env(worker * num_envs + i), worker * num_envs + i)
                      for i in range(num_envs)]
        self.local = agent is not None
        if agent is None:
            params = {"num_envs": num_envs, "rollout_steps": rollout_steps}
            agent = task.make_agent(self.slots[0].env, params, seed)
            agent.train_mode(True)
            agent.rollout_sink = self._sink
        self.agent = agent
        self._batch: RolloutBatch | None = None
        self._credit_running = False
        self._ended: list[EndedEpisode] = []
        self.results: dict[int, Any] = {}
        for slot in self.slots:
            slot.reset(task.first_seed(slot.index))

    def _sink(self, batch: RolloutBatch) -> None:
        self._batch = batch

    def resume_state(self) -> dict[str, Any]:
        """This collector's state between two :meth:`collect` calls (see the module doc); a local
        collector's agent is the learner, saved by the caller.

        Raises:
            HdrmError: an environment that cannot save its episode (no ``resume_state``).
        """
        from hdrm.agents.resume import agent_resume_state

        for slot in self.slots:
            if not callable(getattr(slot.env, "resume_state", None)):
                raise HdrmError(f"environment {slot.index} ({type(slot.env).__name__}) cannot "
                                "save its episode (no resume_state)")
        return {"slots": [slot.resume_state() for slot in self.slots],
                "credit_running": self._credit_running,
                "agent": None if self.local else agent_resume_state(self.agent)}

    def load_resume_state(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`resume_state`'s ``state`` (a collector built as that one was).

        Raises:
            HdrmError: a state of another number of environments, or an episode that did not
                replay.
        """
        from hdrm.agents.resume import restore_agent_resume_state

        if len(state["slots"]) != len(self.slots):
            raise HdrmError(f"a collector state of {len(state['slots'])} environments for "
                            f"{len(self.slots)}")
        for slot, saved in zip(self.slots, state["slots"]):
            slot.load_resume_state(saved)
        self._credit_running = bool(state["credit_running"])
        if state["agent"] is not None and not self.local:
            restore_agent_resume_state(self.agent, state["agent"])

    def collect(self, weights: Mapping[str, Any] | None = None,
                generator_state: torch.Tensor | None = None,
                update_stats: Mapping[str, float] | None = None,
                max_episodes: float = math.inf) -> Collected:
        """Play until one rollout is finished or ``max_episodes`` episodes have ended.

        Args:
            weights: the learner's weights to decide with (remote collectors).
            generator_state: the learner's sampling generator state, to continue from.
            update_stats: the statistics of the update made from this collector's last rollout;
                they belong to the episodes under way when that rollout was bootstrapped.
            max_episodes: the episodes left to play in the whole training.
        """
        t0, cpu0 = time.perf_counter(), time.process_time()
        if weights is not None:
            self.agent.load_state_dict(weights)
        if generator_state is not None:
            self.agent.generator.set_state(generator_state)
        if update_stats is not None and self._credit_running:
            self._credit([dict(update_stats)])
        self._batch, results = None, {}
        updates, ended, env_steps = self.agent.updates, [], 0
        self._ended = ended  # reported with an error of the agent's code
        while True:
            dones = self._step()
            env_steps += len(self.slots)
            finished = self._batch is not None or self.agent.updates > updates
            self._credit(self.agent.take_update_stats())
            if any(dones):
                ended.extend(self._close(dones, finished and not self.local, results, len(ended)))
            if len(ended) >= max_episodes:
                break
            if self.agent.rollout_waiting:
                self._agent("learn_pending_batch", np.stack([s.obs for s in self.slots]))
                self._credit(self.agent.take_update_stats())
                self._credit_running = True
                break
            if finished:
                self._credit_running = False
                break
        if ended:  # kept until episodes end again: the learner asks for the last one's
            self.results = results
        state = self.agent.generator.get_state()
        return Collected(self._batch, ended, env_steps, state, time.perf_counter() - t0,
                         time.process_time() - cpu0)

    def _step(self) -> list[bool]:
        """One decision per environment, then one step of each; returns which episodes ended."""
        slots = self.slots
        actions = self._agent("decide_batch", [slot.obs for slot in slots],
                              [slot.mask for slot in slots])
        rewards: list[float] = []
        dones: list[bool] = []
        for slot, chosen in zip(slots, actions):
            action = self._checked(slot, chosen)
            slot.trace.decided(slot.info, action)
            slot.obs, reward, terminated, truncated, slot.info = slot.env.step(action)
            slot.mask = slot.info["action_mask"]
            slot.trace.rewarded(reward)
            rewards.append(float(reward))
            dones.append(bool(terminated or truncated))
        self._agent("rewarded_batch", rewards, dones)
        return dones

    def _agent(self, method: str, *args: Any) -> Any:
        """``agent.method(*args)``; an exception of the agent's code is
        :class:`~hdrm.launch.agent_failed.AgentFailed` with the decisions and the result so far
        of the episode under way in this collector's first environment (its number is the
        caller's to set), and the episodes that ended earlier in the call."""
        from hdrm.launch.loop import EpisodeActions

        first = self.slots[0]
        return agent_call(self.agent, method,
                          lambda: EpisodeActions(0, first.trace.times_s, first.trace.actions),
                          *args, end=lambda: (episode_end(first.env), list(self._ended)))

    def _checked(self, slot: _Slot, action: Any) -> int:
        try:
            return valid_action(action, slot.mask)
        except ActionProblem as exc:
            raise HdrmError(f"environment {slot.index}: invalid action {action!r} at decision "
                            f"{slot.trace.steps}: {exc}") from None

    def _credit(self, stats: list[dict[str, float]]) -> None:
        """Updates made now belong to every episode under way."""
        if not stats:
            return
        for slot in self.slots:
            slot.trace.update_stats.extend(stats)

    def _close(self, dones: list[bool], awaiting: bool, results: dict[int, Any], first: int
               ) -> list[EndedEpisode]:
        """Record the episodes that ended (numbered from ``first`` in this call, their results
        put in ``results``) and reset their environments."""
        ended = []
        for slot, done in zip(self.slots, dones):
            if not done:
                continue
            episode = slot.trace.ended(slot.index, self.task.summary(slot.env, slot.info),
                                       awaiting)
            results[first + len(ended)] = episode_end(slot.env)
            ended.append(episode)
            slot.reset(None)
        return ended


__all__ = ["Collected", "RolloutCollector"]
