"""``benchmarks/train.py --workers N --num-envs K``: the benchmark's training episodes played by
rollout workers (or K environments in this process), through :mod:`hdrm.distributed.learners`.

Each environment is a :class:`ProtocolEpisodes`: at every reset it draws the episode as
``train.py`` does (a start index from the training pool, an episode seed and, with
``--load-factors``, a load factor) from its own generator, seeded with ``--seed`` + its number,
and it maps the learner's picks to the environment's actions (``--pick``). The learner stays in
the driver process: validation, the best model and the logs are those of the single-process run.

Such a run resumes as the single-process one does (``train.py``'s ``OUT.resume``): with PPO
the state holds the distributed learner's (:class:`hdrm.distributed.learners.ResumeHandle`:
its counters, the episodes not yet logged, each environment's episode under way, which
:meth:`ProtocolEpisodes.load_resume_state` resets as it was and the collector replays, and the
workers' generators). An Ape-X (DQN) run saves none: it restarts.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from benchmarks import protocol


class ProtocolEpisodes(gym.Wrapper):
    """An environment of the benchmark whose resets draw the training episodes.

    Args:
        env: the benchmark's environment (``train.make_env``).
        pool: the start indices training may draw.
        load_factors: ``(LO, HI)`` to draw a load factor from, or None (the trace's load).
        pick: how the learner's picks map to actions (:func:`benchmarks.protocol.agent_mask`).
    """

    def __init__(self, env: Any, pool: np.ndarray, load_factors: tuple[float, float] | None,
                 pick: str) -> None:
        super().__init__(env)
        self.pool, self.load_factors, self.pick = pool, load_factors, pick
        self.draws = np.random.default_rng(0)
        self.start, self.factor = 0, 1.0
        self._mask: np.ndarray | None = None
        #: the draws' state before the episode under way was drawn
        self._drawn_from: dict[str, Any] = dict(self.draws.bit_generator.state)

    def resume_state(self) -> dict[str, Any]:
        """How the episode under way was drawn (the draws' state before it)."""
        return {"draws": self._drawn_from}

    def load_resume_state(self, state: dict[str, Any]) -> tuple[Any, dict]:
        """Draw and reset the episode :meth:`resume_state` saved; returns ``reset``'s values."""
        self.draws.bit_generator.state = dict(state["draws"])
        return self.reset()

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        """A new episode; ``seed`` (the first reset) seeds the episodes' draws."""
        if seed is not None:
            self.draws = np.random.default_rng(seed)
        self._drawn_from = dict(self.draws.bit_generator.state)
        self.start = int(self.draws.choice(self.pool))
        episode_seed = int(self.draws.integers(2**31))
        self.factor = float(self.draws.uniform(*self.load_factors)) if self.load_factors else 1.0
        obs, info = self.env.reset(seed=episode_seed, options={"start_index": self.start,
                                                               "load_factor": self.factor})
        return obs, self._masked(info)

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        """The learner's pick, as the environment's action."""
        obs, reward, terminated, truncated, info = self.env.step(
            protocol.env_action(self._mask, int(action)))
        return obs, reward, terminated, truncated, self._masked(info)

    def _masked(self, info: dict) -> dict:
        self._mask = info["action_mask"]
        return {**info, "action_mask": protocol.agent_mask(self.env.unwrapped, self._mask,
                                                           self.pick)}


class TrainTask:
    """How a worker builds the benchmark's environments and learner (see the module doc).

    Args:
        settings: the run's :class:`train.TrainSettings`.
        config: the learner's options block.
        pool: the start indices training may draw.
    """

    def __init__(self, settings: Any, config: dict[str, Any], pool: np.ndarray) -> None:
        self.settings, self.config, self.pool = settings, config, np.asarray(pool)

    def make_env(self, index: int) -> ProtocolEpisodes:
        """Environment ``index`` (its episodes drawn from ``--seed`` + ``index``)."""
        from benchmarks import train

        s = self.settings
        return ProtocolEpisodes(train.make_env(s, s.train_jobs), self.pool, s.load_factors, s.pick)

    def first_seed(self, index: int) -> int:
        """``--seed`` + ``index``."""
        return self.settings.seed + index

    def make_agent(self, env: Any, params: Mapping[str, Any], seed: int) -> Any:
        """The learner of ``--learner`` with ``params`` merged into its settings."""
        from benchmarks import train

        config = {**self.config, "params": {**self.config.get("params", {}), **params}}
        return train.build_agent(self.settings.learner, config, env.unwrapped, seed)

    def summary(self, env: Any, info: Mapping[str, Any]) -> dict[str, float]:
        """The episode's start index, load factor and score on the run's objective."""
        score = protocol.score_result(env.unwrapped.result())
        return {"start": env.start, "factor": env.factor,
                "value": score.value(self.settings.objective)}


def loop_with_workers(run: Any) -> str:
    """``train._Run.loop`` with rollout workers: returns the budget that stopped it."""
    from hdrm.distributed.learners import WorkerPlan, train_with_workers

    s = run.s
    plan = WorkerPlan(s.workers, s.num_envs, s.address,
                      env_steps=s.max_steps if s.max_steps else math.inf)

    def on_episode(ended: Any) -> None:
        run.env_steps += ended.steps
        run.episode += 1
        info = ended.summary
        run.last_value = info["value"]
        run.episodes_log.row(run.episode, info["start"], round(info["factor"], 4), ended.steps,
                             run.env_steps, info["value"], ended.stats()["loss"], run.wall_s())
        if run.episode % s.validate_every == 0 and not run.reached():
            run.validation(info["value"], run.wall_s())

    def out_of_time() -> bool:
        return run.reached() or (s.minutes > 0 and run.wall_s() >= s.minutes * 60)

    done = train_with_workers(run.agent, TrainTask(s, run.config, run.pool), plan, on_episode,
                              out_of_time, run.learner_state)
    if not run.reached():
        run.validation(run.last_value, run.wall_s())
    run.distributed = {"workers": s.workers, "num_envs": s.num_envs, "updates": done.updates,
                       "restarts": done.restarts, "collected_env_steps": done.env_steps}
    if run.reached():
        return "stop_at"
    return "minutes" if out_of_time() else "max_steps"
