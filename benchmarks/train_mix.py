"""Training on several traces at once: ``benchmarks/train.py --trace sdsc,lublin``.

Each trace keeps its own no-leakage rule (:mod:`benchmarks.train_rule`): its training range,
validation sequences and platform (the trace's MaxProcs), in an environment of its own
(:class:`Part`). With one trace everything is as before, draw for draw.

* **Training episodes** go round-robin over the traces in the order of ``--trace`` (episode
  ``i`` plays trace ``i mod n``), each drawing its start index uniformly from its trace's pool
  with the run's seeded generator, so every trace gets the same number of episodes and a run is
  reproducible.
* **The warm start** (``--imitate``) plays the teacher on ``--imitate-episodes`` training
  sequences split the same way (trace ``k`` gets the episodes ``k, k + n, ...``), drawn without
  replacement from each trace's pool, and fits the policy to all the decisions together.
* **Validation** scores the greedy policy on each trace's validation sequences and combines the
  traces scale-free: the mean over traces of the model's mean score on that trace divided by
  the best reference heuristic's on the same sequences (the guard's heuristics,
  :data:`benchmarks.train_guard.REFERENCE_HEURISTICS`, with the guard's backfilling). 1 means
  "as good as each trace's best heuristic"; a bounded slowdown of hundreds on one trace does not
  drown a few tens on another. ``--validation-guard`` applies to each trace with its own
  reference: a validated model is a candidate only if every trace keeps the bound.
* **The model file** records every trace's rule (:func:`benchmarks.protocol_rule.make_mix_rule`)
  and ``setting["trace"]`` as given (``"sdsc,lublin"``); ``benchmarks/compare.py`` refuses it on
  every window of any of its traces that shares a job with what it saw, and names it
  ``"..., from SDSC-SP2+Lublin-1"``.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from benchmarks import protocol, train_guard, train_rule
from benchmarks.imitation import Demonstrations
from benchmarks.protocol_rule import make_mix_rule, trace_keys
from benchmarks.train_validation import make_env
from hdrm.errors import ConfigError

if TYPE_CHECKING:
    from benchmarks.train_settings import TrainSettings
    from hdrm.env import SchedulingEnv


@dataclass(frozen=True)
class Part:
    """One trace of a run: its settings (``trace`` set to it), training environment and split."""

    key: str
    settings: "TrainSettings"
    env: "SchedulingEnv"
    split: train_rule.Split


def check_mix(s: "TrainSettings") -> None:
    """The settings of a run on several traces (called for two or more).

    Raises:
        ConfigError: a trace named twice, ``policy_pair`` mode, an option that names one trace's
            jobs (``--train-range``, ``--validation-range``, ``--validation-starts``), or rollout
            workers (one line each).
    """
    keys = trace_keys(s.trace)
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ConfigError(f"--trace {s.trace}: {', '.join(twice)} named twice; name each trace "
                          "once (e.g. sdsc,lublin)")
    if s.mode != "job_pick":
        raise ConfigError(f"--trace {s.trace}: several traces are defined for job_pick mode; "
                          f"{s.mode} mode trains on one workload")
    given = [flag for flag, value in (("--train-range", s.train_range),
                                      ("--validation-range", s.validation_range),
                                      ("--validation-starts", s.validation_starts))
             if value is not None]
    if given:
        raise ConfigError(f"{given[0]}: names jobs of one trace; with --trace {s.trace} each "
                          "trace keeps its own rule (protocol.TRACES), so leave it out")
    if s.workers or s.num_envs > 1:
        raise ConfigError(f"--trace {s.trace}: several traces are played in this process; "
                          "leave --workers and --num-envs out")


def parts_for(s: "TrainSettings") -> list[Part]:
    """The :class:`Part` of each trace of ``s.trace``, in its order (one: ``s`` itself).

    Raises:
        ConfigError: a trace's rule does not hold (:func:`benchmarks.train_rule.split_for`), or
            the traces' environments differ in what the learner sees or does.
    """
    keys = trace_keys(s.trace)
    parts = []
    for key in keys:
        sk = s if len(keys) == 1 else dataclasses.replace(s, trace=key)
        env = make_env(sk, sk.train_jobs)
        parts.append(Part(key, sk, env, train_rule.split_for(sk, len(env.trace))))
    first = parts[0].env
    for part in parts[1:]:
        if (part.env.observation_space != first.observation_space
                or part.env.action_space != first.action_space):
            raise ConfigError(f"--trace {s.trace}: {part.key}'s observations or actions differ "
                              f"from {parts[0].key}'s ({part.env.observation_space} vs "
                              f"{first.observation_space}); one learner cannot play both")
    return parts


def rule_of(parts: Sequence[Part]) -> dict[str, Any]:
    """What the model file records: the trace's rule, or every trace's for several."""
    if len(parts) == 1:
        return parts[0].split.rule
    return make_mix_rule([p.split.rule for p in parts])


def episode_part(parts: Sequence[Part], episode: int) -> Part:
    """The trace of training episode ``episode`` (0-based): round-robin."""
    return parts[episode % len(parts)]


def pool_text(parts: Sequence[Part]) -> str:
    """Where training draws its episodes, as the model file records it."""
    texts = [f"{len(p.split.pool)} start indices in jobs [{p.split.train[0]}, "
             f"{p.split.train[1]})" for p in parts]
    if len(parts) == 1:
        return texts[0]
    return "; ".join(f"{p.key}: {text}" for p, text in zip(parts, texts)) + " (round-robin)"


def imitation_starts(parts: Sequence[Part], rng: np.random.Generator, episodes: int
                     ) -> list[np.ndarray]:
    """The warm start's training sequences of each trace: ``episodes`` split round-robin,
    each trace's drawn without replacement from its pool (one trace: as before)."""
    n = len(parts)
    counts = [len(range(k, episodes, n)) for k in range(n)]
    return [rng.choice(p.split.pool, size=c, replace=False) for p, c in zip(parts, counts)]


def collect_all(parts: Sequence[Part], starts: Sequence[np.ndarray],
                collect: Callable[[Any, np.ndarray], Demonstrations]
                ) -> tuple[Demonstrations, dict[str, float]]:
    """The teacher's demonstrations on every trace's ``starts`` (``collect(env, starts)``),
    merged, and the teacher's mean score on each trace."""
    got, means = [], {}
    for part, chosen in zip(parts, starts):
        if len(chosen) == 0:
            continue
        for start in chosen:
            train_rule.assert_training_window(int(start), part.settings.train_jobs, part.split)
        demos = collect(part.env, chosen)
        got.append(demos)
        means[part.key] = float(np.mean(demos.scores))
    if len(got) == 1:
        return got[0], means
    merged = Demonstrations(*(np.concatenate([getattr(d, f) for d in got]) for f in
                              ("obs", "masks", "actions", "targets", "returns")),
                            [x for d in got for x in d.scores])
    return merged, means


@dataclass(frozen=True)
class _Set:
    """One trace's validation: environment, sequences, reference and guard."""

    key: str
    env: "SchedulingEnv"
    starts: tuple[int, ...]
    reference: str
    reference_value: float
    guard: train_guard.Guard | None


class MixGuard:
    """The guards of several traces, as the run records them (``validation_guard``)."""

    def __init__(self, guards: dict[str, train_guard.Guard]) -> None:
        self.guards = guards

    def record(self) -> dict[str, Any]:
        """Each trace's guard record under ``"traces"``."""
        return {"traces": {key: g.record() for key, g in self.guards.items()}}


class MixValidator:
    """Scores the greedy policy on every trace's validation sequences, combined scale-free
    (module docstring), and keeps the best state; the interface of
    :class:`benchmarks.train_validation.Validator`."""

    def __init__(self, s: "TrainSettings", parts: Sequence[Part]) -> None:
        self.settings = s
        self.sets: list[_Set] = []
        for part in parts:
            sk, split = part.settings, part.split
            env = make_env(sk, split.validation_jobs)
            scores = train_guard.reference_scores(sk, split.validation_starts,
                                                  env.config.nb_jobs)
            best = train_guard.best_reference(sk, scores)
            guard = train_guard.guard_from(sk, scores) if sk.validation_guard else None
            self.sets.append(_Set(part.key, env, tuple(split.validation_starts), best,
                                  float(scores[best].value(s.objective)), guard))
        self.best = float("inf")
        self.best_state: tuple[dict, dict] | None = None
        self.best_env_steps = 0
        self.guard = (MixGuard({v.key: v.guard for v in self.sets if v.guard is not None})
                      if s.validation_guard else None)
        #: the last validation's worst longest-wait and makespan ratio over the traces (or NaN)
        self.ratios = (float("nan"), float("nan"))
        #: the last validation's mean score on each trace
        self.values = tuple(float("nan") for _ in self.sets)

    def __call__(self, agent: Any, env_steps: int) -> tuple[float, bool]:
        """Validate now; returns the combined score and whether it is the best so far (and
        within every trace's guard)."""
        s = self.settings
        agent.train_mode(False)
        scores = [[protocol.run_agent(agent, v.env, start, seed=0, pick=s.pick,
                                      load_factor=factor).score
                   for factor in s.validation_load_factors for start in v.starts]
                  for v in self.sets]
        agent.train_mode(True)
        self.values = tuple(float(np.mean([sc.value(s.objective) for sc in per]))
                            for per in scores)
        value = float(np.mean([x / v.reference_value for x, v in zip(self.values, self.sets)]))
        improved = value < self.best
        guarded = [(v.guard, protocol.Score.mean(per)) for v, per in zip(self.sets, scores)
                   if v.guard is not None]
        if guarded:
            ratios = [guard.ratios(combined) for guard, combined in guarded]
            self.ratios = (max(r[0] for r in ratios), max(r[1] for r in ratios))
            improved = improved and all(guard.allows(combined) for guard, combined in guarded)
        if improved:
            self.best, self.best_env_steps = value, env_steps
            self.best_state = (copy.deepcopy(agent.state_dict()),
                               copy.deepcopy(agent.optimizer_state_dict()))
        return value, improved

    def record(self) -> dict[str, Any]:
        """What the model file records of the combined validation: each trace's sequences,
        reference heuristic and its score there."""
        return {v.key: {"validation_starts": list(v.starts), "reference": v.reference,
                        "reference_value": v.reference_value} for v in self.sets}

    def text(self) -> str:
        """The last validation's score on each trace, for the progress line."""
        return "  (" + ", ".join(f"{v.key} {x:.2f}" for v, x in zip(self.sets, self.values)
                                 if not math.isnan(x)) + ")"
