"""The validation of a training run of benchmarks/train.py, and the environment it plays in.

:func:`make_env` builds the setting's environment (the training episodes' and, shorter, the
validation's); :class:`Validator` scores the greedy policy on the validation sequences every
``--validate-every`` episodes and keeps the best state, within the validation guard
(:mod:`benchmarks.train_guard`) when there is one. Both are importable from
:mod:`benchmarks.train`, as before.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from benchmarks import protocol, train_guard
from benchmarks.train_settings import TrainSettings
from hdrm.env import SchedulingEnv


def make_env(s: TrainSettings, nb_jobs: int) -> SchedulingEnv:
    """The environment of the setting, with episodes of ``nb_jobs`` jobs."""
    if s.mode == "policy_pair":
        workload = protocol.hetero_workload_file(s.traces)
        config = protocol.hetero_env_config(workload, s.objective, s.decision, nb_jobs,
                                            s.observation, s.job_selections)
    else:
        config = protocol.protocol_env_config(
            s.trace, s.traces, s.backfill, s.decision, window=s.window, nb_jobs=nb_jobs,
            observation=s.observation, reservation=s.reservation, pick_limit=s.pick_limit)
    return SchedulingEnv(config=dataclasses.replace(config, reward_timing=s.reward_timing))



class Validator:
    """Scores the greedy policy on the validation sequences and keeps the best state."""

    def __init__(self, s: TrainSettings, starts: tuple[int, ...], nb_jobs: int | None = None
                 ) -> None:
        self.settings = s
        self.starts = starts
        if nb_jobs is None:  # the rule's validation length, at most an episode's
            nb_jobs = min(protocol.training_spec(s.trace, s.mode).validation_jobs, s.train_jobs)
        self.env = make_env(s, nb_jobs)
        self.best = float("inf")
        self.best_state: tuple[dict, dict] | None = None
        self.best_env_steps = 0
        self.guard = train_guard.build_guard(s, starts, self.env.config.nb_jobs)
        #: the last validation's longest wait and makespan over the guard's reference (or NaN)
        self.ratios = (float("nan"), float("nan"))

    def __call__(self, agent: Any, env_steps: int) -> tuple[float, bool]:
        """Validate now; returns the mean objective and whether it is the best so far (and,
        with a guard, within its bound)."""
        agent.train_mode(False)
        scores = [protocol.run_agent(agent, self.env, start, seed=0,
                                     pick=self.settings.pick, load_factor=factor).score
                  for factor in self.settings.validation_load_factors for start in self.starts]
        agent.train_mode(True)
        value = float(np.mean([sc.value(self.settings.objective) for sc in scores]))
        improved = value < self.best
        if self.guard is not None:
            combined = protocol.Score.mean(scores)
            self.ratios = self.guard.ratios(combined)
            improved = improved and self.guard.allows(combined)
        if improved:
            self.best, self.best_env_steps = value, env_steps
            self.best_state = (copy.deepcopy(agent.state_dict()),
                               copy.deepcopy(agent.optimizer_state_dict()))
        return value, improved
