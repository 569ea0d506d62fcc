"""Train a learner of the comparison benchmark and keep the best model by validation score.

Usage::

    python benchmarks/train.py --trace lublin|sdsc --backfill none|easy --learner ppo
        [--network kernel|attention] [--decision event|commit] [--pick any|fitting|env]
        [--observation job_window|job_window_reservation|job_window_predicted [--reservation wfp3]]
        [--window 128] [--rollout-device cpu|cuda|cuda:N|auto] [--update-device cpu|cuda|cuda:N|auto]
        [--imitate HEURISTIC [--imitate-backfill easy] [--imitate-episodes N] [--imitate-epochs E]]
        [--workers N [--address ADDR]] [--num-envs K]
        --seed 0 --minutes M [--max-steps N] --out models/NAME.pt
    python benchmarks/train.py --mode policy_pair --platform platforms/hetero.json --trace sdsc
        --objective avg_bounded_slowdown|energy_consumption
        [--observation small|small_waits|small_waits_predicted] [--job-selections J1,J2,...]
        [--load-factors LO,HI] [--validation-load-factors F1,F2] [--init-model MODEL.pt]
        --learner ppo --seed 0 --minutes M --out models/NAME.pt

``job_pick`` mode (the default) is RLScheduler's setting (:mod:`benchmarks.protocol`): homogeneous
processors, the trace's conventions, a window of 128 queued jobs, objective average bounded
slowdown. ``policy_pair`` mode is HDeepRM's setting on the heterogeneous platform with the
SDSC-SP2-derived workload. Episodes start at indices drawn from
:func:`benchmarks.protocol.training_starts` (never a test or validation sequence). Every
``--validate-every`` episodes the greedy policy is scored on the validation sequences; the best
model goes to ``--out`` with the settings and training figures (wall time, environment steps) in
the checkpoint's ``options``; ``episodes.csv`` and ``validation.csv`` go to ``--log-dir``.
``--load-factors LO,HI`` trains on heavier (or lighter) variants: each training episode divides
its submission times by a factor drawn uniformly in ``[LO, HI]``; evaluation keeps the trace's
load, and so does validation unless ``--validation-load-factors`` lists factors to validate at
(each validation sequence at each factor, scored by the mean). In ``policy_pair`` mode the actions
are HDeepRM's 36 pairs unless ``--job-selections`` lists the job selections to pair with its six
core selections (e.g. the six of HDeepRM plus ``sjf_pred,wfp3_pred,unicep_pred``: 54 pairs).

``--imitate`` warm-starts a policy learner by imitating a heuristic first
(:mod:`benchmarks.imitation`): a queue heuristic with backfilling in ``job_pick`` mode, a fixed
pair in ``policy_pair`` mode. A learner is any name of the agent registry; ``--agent-json``
overrides its options block. ``--rollout-device`` and ``--update-device`` set the learner's
``rollout_device`` and ``update_device`` (:mod:`hdrm.agents.devices`; default ``auto``: updates
on the GPU when torch sees one, decisions on the CPU). Runs
are deterministic for a seed when bounded by ``--max-steps`` on the CPU (``--minutes`` is a wall-clock guard
checked between episodes; the steps made are recorded, so ``--max-steps`` reproduces a run).
``--workers N`` plays the training episodes in N rollout worker processes on Ray (distributed
PPO, :mod:`hdrm.distributed.ppo`) and ``--num-envs K`` steps K environments per worker (or in this
process) with one forward pass for all (:mod:`benchmarks.train_workers`); validation, logs and
the best model stay in this process.
"""

from __future__ import annotations

import argparse
import copy
import csv
import dataclasses
import json
import math
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import imitation, protocol, train_workers  # noqa: E402
from hdrm.agents import get_agent_class  # noqa: E402
from hdrm.agents.checkpoint import load_checkpoint  # noqa: E402
from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.env.objectives import REWARD_TIMINGS  # noqa: E402
from hdrm.env.observations import job_window_kinds  # noqa: E402
from hdrm.errors import AgentLoadError, ConfigError, HdrmError  # noqa: E402
from hdrm.policies.backfill import BACKFILLING  # noqa: E402
from hdrm.policies.job_selection import JOB_POLICIES  # noqa: E402

#: Options blocks of the learners tuned for this benchmark (others get their own defaults).
#: Chosen on the validation sequences only: gamma 1 with GAE lambda 0.97 (RLScheduler's), rewards
#: scaled so that the value loss does not swamp the policy gradient under gradient clipping.
LEARNER_DEFAULTS: dict[str, dict[str, Any]] = {
    "ppo": {
        "lr": 1e-3, "gamma": 1.0,
        "params": {"gae_lambda": 0.97, "rollout_steps": 4096, "minibatch": 512, "epochs": 4,
                   "clip": 0.2, "ent_coef": 0.01, "target_kl": 0.02, "reward_scale": 0.01},
    },
    # DQN: a gradient step every 4 decisions keeps the throughput of the other learners within a
    # factor of a few; exploration decays over the first 100,000 decisions.
    "dqn": {
        "lr": 3e-4, "gamma": 0.99,
        "params": {"train_freq": 4, "batch_size": 128, "buffer_size": 50_000,
                   "learning_starts": 5_000, "target_update": 1_000, "epsilon_steps": 100_000,
                   "beta_steps": 500_000, "reward_scale": 0.01},
    },
}
#: Per-mode overrides of the defaults.
MODE_DEFAULTS = {("ppo", "policy_pair"): {"lr": 3e-4, "params": {"rollout_steps": 2048, "minibatch": 256}}}


@dataclass
class TrainSettings:
    """What to train and for how long (the command line, parsed)."""

    out: str
    trace: str = "lublin"
    backfill: str = "none"
    learner: str = "ppo"
    network: str | None = None
    rollout_device: str | None = None
    update_device: str | None = None
    decision: str = "event"
    mode: str = "job_pick"
    platform: str | None = None
    objective: str = "avg_bounded_slowdown"
    reward_timing: str = "end"
    pick: str = "any"
    observation: str | None = None
    reservation: str = "fcfs"
    job_selections: tuple[str, ...] | None = None
    window: int = protocol.WINDOW
    seed: int = 0
    minutes: float = 15.0
    max_steps: int = 0
    validate_every: int = 10
    train_jobs: int = protocol.SEQUENCE_JOBS
    validation_starts: tuple[int, ...] | None = None
    load_factors: tuple[float, float] | None = None
    validation_load_factors: tuple[float, ...] = (1.0,)
    agent_json: dict[str, Any] = field(default_factory=dict)
    imitate: str | None = None
    init_model: str | None = None
    imitate_backfill: str = "easy"
    imitate_episodes: int = 40
    imitate_epochs: int = 5
    traces: str = str(protocol.DEFAULT_TRACES)
    log_dir: str | None = None
    workers: int = 0
    num_envs: int = 1
    address: str | None = None
    command: str = ""

    def __post_init__(self) -> None:
        if self.observation is None:  # each mode's own default
            self.observation = "small" if self.mode == "policy_pair" else "job_window"


@dataclass
class TrainResult:
    """Figures of a finished training run."""

    wall_s: float
    env_steps: int
    episodes: int
    best_validation: float
    best_env_steps: int
    stopped_by: str
    out: Path


def check_settings(s: TrainSettings) -> None:
    """Refuse combinations the benchmark does not define (one-line ConfigErrors)."""
    protocol.trace_spec(s.trace)
    if s.trace not in protocol.TRAINABLE:
        raise ConfigError(f"--trace: {s.trace!r} is for evaluation only; train on one of: "
                          f"{', '.join(protocol.TRAINABLE)}")
    choices = {"backfill": protocol.BACKFILLS, "decision": protocol.DECISIONS,
               "mode": ("job_pick", "policy_pair"), "pick": protocol.PICK_MODES,
               "reward_timing": REWARD_TIMINGS}
    for name, valid in choices.items():
        if getattr(s, name) not in valid:
            flag = name.replace("_", "-")
            raise ConfigError(f"--{flag}: invalid value {getattr(s, name)!r}; "
                              f"choose one of: {', '.join(valid)}")
    if s.mode == "policy_pair":
        if s.platform is None or Path(s.platform).resolve() != protocol.HETERO_PLATFORM.resolve():
            raise ConfigError(f"--platform: policy_pair mode is defined on "
                              f"platforms/hetero.json, got {s.platform!r}")
        if s.trace != "sdsc" or s.objective not in protocol.HETERO_OBJECTIVES:
            raise ConfigError(f"--objective/--trace: policy_pair mode trains on the SDSC-SP2-derived "
                              f"workload (--trace sdsc) with one of: "
                              f"{', '.join(protocol.HETERO_OBJECTIVES)}; got {s.trace!r}, "
                              f"{s.objective!r}")
    elif s.objective != "avg_bounded_slowdown" or s.platform is not None:
        raise ConfigError("--objective/--platform: job_pick mode is RLScheduler's protocol "
                          "(homogeneous processors, avg_bounded_slowdown); use --mode policy_pair")
    windows = job_window_kinds()
    if s.mode == "job_pick" and s.observation not in windows:
        raise ConfigError(f"--observation: job_pick mode sees a job window; choose one of: "
                          f"{', '.join(windows)}; got {s.observation!r}")
    if s.mode == "policy_pair" and s.observation in windows:
        raise ConfigError(f"--observation: {s.observation!r} is for job_pick mode; policy_pair "
                          "mode takes minimal, small, small_waits, small_waits_predicted or normal")
    JOB_POLICIES.get(s.reservation, "--reservation")
    if s.job_selections is not None:
        if s.mode != "policy_pair":
            raise ConfigError("--job-selections: the actions of policy_pair mode; job_pick mode "
                              "picks jobs")
        if not s.job_selections or len(set(s.job_selections)) != len(s.job_selections):
            raise ConfigError(f"--job-selections: expected distinct job selections (e.g. "
                              f"random,first,sjf_pred), got {','.join(s.job_selections)!r}")
        for name in s.job_selections:
            JOB_POLICIES.get(name, "--job-selections")
    if s.load_factors is not None:
        lo, hi = s.load_factors
        if not (0 < lo <= hi and math.isfinite(hi)):
            raise ConfigError(f"--load-factors: expected LO,HI with 0 < LO <= HI (e.g. 1,2), got "
                              f"{lo:g},{hi:g}")
    bad = [f for f in s.validation_load_factors if not (0 < f and math.isfinite(f))]
    if bad or not s.validation_load_factors:
        raise ConfigError(f"--validation-load-factors: expected positive numbers (e.g. 1,1.5), got "
                          f"{','.join(f'{f:g}' for f in s.validation_load_factors) or 'none'}")
    if s.window < 1:
        raise ConfigError(f"--window: expected a positive number of jobs, got {s.window}")
    check_workers(s)
    if s.init_model is not None and s.imitate is not None:
        raise ConfigError("--init-model and --imitate are two ways to start: give one of them")
    if s.init_model is not None and not Path(s.init_model).is_file():
        raise ConfigError(f"--init-model {s.init_model}: no such file; give a checkpoint written "
                          "by train.py (models/NAME.pt)")
    if s.imitate is not None and s.mode == "policy_pair":
        if s.imitate not in protocol.hetero_pairs(s.job_selections):
            raise ConfigError(f"--imitate: in policy_pair mode the teacher is one of the "
                              f"learner's pairs (job-core, e.g. shortest-high_gflops); got "
                              f"{s.imitate!r}")
    elif s.imitate is not None:
        JOB_POLICIES.get(s.imitate, "--imitate")
        if s.pick != "any":
            raise ConfigError("--imitate: the warm start is defined for job_pick mode with "
                              f"--pick any; got pick {s.pick!r}")
        BACKFILLING.get(s.imitate_backfill, "--imitate-backfill")
        if s.decision != "event":
            raise ConfigError("--imitate: the teacher's schedule is event-driven; use "
                              f"--decision event, got {s.decision!r}")


def check_workers(s: TrainSettings) -> None:
    """``--workers``, ``--num-envs`` and ``--address``: counts, Ray, a learner that can use them."""
    from hdrm.distributed import RAY_MISSING, ray_installed
    from hdrm.distributed.learners import WorkerPlan

    WorkerPlan(s.workers, s.num_envs, s.address)
    if s.workers and not ray_installed():
        raise ConfigError(f"--workers {s.workers}: {RAY_MISSING}; or leave --workers out")
    if s.num_envs > 1 and s.workers == 0 and s.learner != "ppo":
        raise ConfigError(f"--num-envs {s.num_envs}: vectorised rollouts in this process need a "
                          f"learner that decides for several environments at once (ppo), got "
                          f"{s.learner!r}")


def agent_config(s: TrainSettings) -> dict[str, Any]:
    """The learner's options block: benchmark defaults, then ``--network``, then ``--agent-json``."""
    config = copy.deepcopy(LEARNER_DEFAULTS.get(s.learner, {}))
    _merge(config, copy.deepcopy(MODE_DEFAULTS.get((s.learner, s.mode), {})))
    if s.network:
        config.setdefault("params", {})["network"] = s.network
    for key in ("rollout_device", "update_device"):
        if getattr(s, key) is not None:
            config.setdefault("params", {})[key] = getattr(s, key)
    if s.num_envs > 1:
        config.setdefault("params", {})["num_envs"] = s.num_envs
    _merge(config, copy.deepcopy(s.agent_json))
    config["run"] = "train"
    return config


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def make_env(s: TrainSettings, nb_jobs: int) -> SchedulingEnv:
    """The environment of the setting, with episodes of ``nb_jobs`` jobs."""
    if s.mode == "policy_pair":
        workload = protocol.hetero_workload_file(s.traces)
        config = protocol.hetero_env_config(workload, s.objective, s.decision, nb_jobs,
                                            s.observation, s.job_selections)
    else:
        config = protocol.protocol_env_config(
            s.trace, s.traces, s.backfill, s.decision, window=s.window, nb_jobs=nb_jobs,
            observation=s.observation, reservation=s.reservation)
    return SchedulingEnv(config=dataclasses.replace(config, reward_timing=s.reward_timing))


def build_agent(learner: str, config: dict[str, Any], env: SchedulingEnv, seed: int) -> Any:
    """An agent of the registered class ``learner`` for ``env``."""
    cls = get_agent_class(learner, "--learner")
    return cls(config, env.observation_space, env.action_space, action_names=env.action_names,
               seed=seed)


def learner_label(learner: str, agent: Any) -> str:
    """How the learner is named in tables: ``PPO-kernel``, ``DQN`` ..."""
    network = getattr(agent, "network_name", None)
    return f"{learner.upper()}-{network}" if network else learner.upper()


class Validator:
    """Scores the greedy policy on the validation sequences and keeps the best state."""

    def __init__(self, s: TrainSettings, starts: tuple[int, ...]) -> None:
        self.settings = s
        self.starts = starts
        self.env = make_env(s, s.train_jobs)
        self.best = float("inf")
        self.best_state: tuple[dict, dict] | None = None
        self.best_env_steps = 0

    def __call__(self, agent: Any, env_steps: int) -> tuple[float, bool]:
        """Validate now; returns the mean objective and whether it is the best so far."""
        agent.train_mode(False)
        scores = [protocol.run_agent(agent, self.env, start, seed=0,
                                     pick=self.settings.pick, load_factor=factor).score
                  for factor in self.settings.validation_load_factors for start in self.starts]
        agent.train_mode(True)
        value = float(np.mean([sc.value(self.settings.objective) for sc in scores]))
        improved = value < self.best
        if improved:
            self.best, self.best_env_steps = value, env_steps
            self.best_state = (copy.deepcopy(agent.state_dict()),
                               copy.deepcopy(agent.optimizer_state_dict()))
        return value, improved


def metadata(s: TrainSettings, agent: Any, config: dict[str, Any], figures: dict[str, Any]
             ) -> dict[str, Any]:
    """What the checkpoint records about the model (read back by ``compare.py``)."""
    return {
        "learner": s.learner, "label": learner_label(s.learner, agent), "agent": config,
        "setting": {"trace": s.trace, "backfill": s.backfill, "decision": s.decision,
                    "mode": s.mode, "objective": s.objective, "platform": s.platform,
                    "reward_timing": s.reward_timing,
                    "pick": s.pick if s.mode == "job_pick" else "env",
                    "observation": s.observation, "reservation": s.reservation,
                    "job_selections": list(s.job_selections) if s.job_selections else None,
                    "window": s.window if s.mode == "job_pick" else None,
                    "train_jobs": s.train_jobs, "seed": s.seed, "imitate": s.imitate,
                    "init_model": s.init_model,
                    "load_factors": list(s.load_factors) if s.load_factors else None,
                    "validation_load_factors": list(s.validation_load_factors)},
        "training": figures,
    }


def save(agent: Any, s: TrainSettings, config: dict[str, Any], figures: dict[str, Any]) -> None:
    """Write ``agent`` to ``s.out`` with the metadata."""
    from hdrm.agents.checkpoint import save_checkpoint

    save_checkpoint(agent, s.out, metadata(s, agent, config, figures))


class CsvLog:
    """A CSV file written row by row (flushed, so progress can be followed)."""

    def __init__(self, path: Path, columns: tuple[str, ...]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = path.open("w", newline="", encoding="utf-8")
        self.writer = csv.writer(self.handle)
        self.writer.writerow(columns)

    def row(self, *values: Any) -> None:
        """Append one row."""
        self.writer.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in values])
        self.handle.flush()

    def close(self) -> None:
        """Close the file."""
        self.handle.close()


def train(s: TrainSettings, echo: Callable[[str], Any] = print) -> TrainResult:
    """Train as ``s`` says; returns the figures (the best model is in ``s.out``).

    Raises:
        ConfigError: a bad setting (see :func:`check_settings`) or learner options.
    """
    check_settings(s)
    run = _Run(s, echo)
    try:
        stopped_by = run.loop()
    finally:
        run.close()
    return run.finish(stopped_by)


class _Run:
    """One training run: the environment, the agent, the validator and the logs."""

    def __init__(self, s: TrainSettings, echo: Callable[[str], Any]) -> None:
        self.s, self.echo = s, echo
        self.t0 = time.perf_counter()
        self.env = make_env(s, s.train_jobs)
        spec = protocol.training_spec(s.trace, s.mode)
        self.val_starts = tuple(s.validation_starts if s.validation_starts is not None
                                else spec.validation_starts)
        pool = protocol.training_starts(s.trace, len(self.env.trace), s.train_jobs, s.mode)
        self.pool = pool[~np.isin(pool, np.array(self.val_starts, dtype=np.int64))]
        self.pool_text = f"{len(self.pool)} start indices from {spec.train_from}"
        self.config = agent_config(s)
        self.agent = build_agent(s.learner, self.config, self.env, s.seed).train_mode(True)
        self.rng = np.random.default_rng(s.seed)
        self.validate = Validator(s, self.val_starts)
        log_dir = Path(s.log_dir or Path("runs") / "train" / Path(s.out).stem)
        self.episodes_log = CsvLog(log_dir / "episodes.csv", (
            "episode", "start_index", "load_factor", "decisions", "env_steps", "objective", "loss",
            "wall_s"))
        self.val_log = CsvLog(log_dir / "validation.csv",
                              ("episode", "env_steps", "objective", "best", "wall_s"))
        self.env_steps = self.episode = 0
        self.imitation: dict[str, Any] = {}
        self.init: dict[str, Any] = {}
        self.distributed: dict[str, Any] = {}
        if s.imitate:
            self.warm_start()
        elif s.init_model:
            self.start_from_model()

    def start_from_model(self) -> None:
        """Start from the weights of ``--init-model`` (a fresh optimizer), then validate, so the
        starting model is the first candidate of the run."""
        try:
            checkpoint = load_checkpoint(self.agent, self.s.init_model, optimizer=False)
        except AgentLoadError as exc:
            raise ConfigError(f"--init-model: {exc}") from None
        prior = checkpoint["options"].get("training", {})
        self.init = {"model": self.s.init_model, "wall_s": prior.get("wall_s"),
                     "env_steps": prior.get("env_steps"), "command": prior.get("command")}
        self.echo(f"starting from {self.s.init_model} ({prior.get('env_steps')} environment "
                  f"steps, {prior.get('wall_s')} s of training)")
        self.validation(float("nan"), self.wall_s())

    def warm_start(self) -> None:
        """Imitate the teacher heuristic (:mod:`benchmarks.imitation`), then validate."""
        s = self.s
        network = getattr(self.agent, "network", None)
        if not hasattr(network, "logits") or hasattr(network, "q_values"):
            raise ConfigError(f"--imitate: learner {s.learner!r} has no policy network to warm "
                              "start; use a policy learner (ppo, a2c, reinforce)")
        starts = self.rng.choice(self.pool, size=s.imitate_episodes, replace=False)
        demos = imitation.collect(self.env, starts, s.imitate, s.imitate_backfill, s.pick,
                                  self.agent.gamma, self.agent.settings.reward_scale, s.objective)
        how = "" if s.mode == "policy_pair" else f" with {s.imitate_backfill} backfilling"
        self.echo(f"imitation: {len(demos)} decisions of {s.imitate}{how} on {len(starts)} "
                  f"training sequences (teacher's mean score {np.mean(demos.scores):.2f})")
        stats = imitation.fit(self.agent, demos, s.imitate_epochs, seed=s.seed,
                              echo=self.echo)
        self.imitation = {"teacher": s.imitate, "backfill": s.imitate_backfill,
                          "episodes": len(starts), "decisions": len(demos),
                          "epochs": s.imitate_epochs, "accuracy": round(stats["accuracy"], 4),
                          "wall_s": round(self.wall_s(), 1)}
        self.validation(float(np.mean(demos.scores)), self.wall_s())

    def wall_s(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.t0

    def loop(self) -> str:
        """Train episode after episode until a budget is spent; returns which one."""
        s = self.s
        if s.workers or s.num_envs > 1:
            return train_workers.loop_with_workers(self)
        while True:
            start = int(self.rng.choice(self.pool))
            seed = int(self.rng.integers(2**31))
            factor = float(self.rng.uniform(*s.load_factors)) if s.load_factors else 1.0
            episode = protocol.run_agent(self.agent, self.env, start, seed, s.pick, factor)
            value = episode.score.value(s.objective)
            self.env_steps += episode.steps
            self.episode += 1
            wall = self.wall_s()
            self.episodes_log.row(self.episode, start, round(factor, 4), episode.steps,
                                  self.env_steps, value,
                                  float(episode.stats.get("loss", float("nan"))), wall)
            done_steps = bool(s.max_steps) and self.env_steps >= s.max_steps
            done_time = s.minutes > 0 and wall >= s.minutes * 60
            if self.episode % s.validate_every == 0 or done_steps or done_time:
                self.validation(value, wall)
            if done_steps or done_time:
                return "max_steps" if done_steps else "minutes"

    def validation(self, train_value: float, wall: float) -> None:
        """Validate, log, and save the model when it is the best so far."""
        score, improved = self.validate(self.agent, self.env_steps)
        self.val_log.row(self.episode, self.env_steps, score, int(improved), self.wall_s())
        self.echo(f"episode {self.episode:5d}  env steps {self.env_steps:9d}  train "
                  f"{train_value:10.2f}  validation {score:10.2f}{'  *' if improved else ''}  "
                  f"{wall / 60:6.1f} min")
        if improved:
            save(self.agent, self.s, self.config, {"wall_s": wall, "env_steps": self.env_steps,
                                                   "episodes": self.episode, "final": False})

    def close(self) -> None:
        """Close the logs."""
        self.episodes_log.close()
        self.val_log.close()

    def finish(self, stopped_by: str) -> TrainResult:
        """Write the best model with the run's figures; returns them."""
        v, wall = self.validate, self.wall_s()
        figures = {"wall_s": round(wall, 1), "env_steps": self.env_steps,
                   "episodes": self.episode, "best_env_steps": v.best_env_steps,
                   "best_validation": v.best, "validation_starts": list(self.val_starts),
                   "training_starts": self.pool_text, "stopped_by": stopped_by,
                   "command": self.s.command, "final": True}
        if self.imitation:
            figures["imitation"] = self.imitation
        if self.init:
            figures["init_model"] = self.init
        if self.distributed:
            figures["distributed"] = self.distributed
        if v.best_state is not None:
            self.agent.load_state_dict(v.best_state[0])
            self.agent.load_optimizer_state_dict(v.best_state[1])
        save(self.agent, self.s, self.config, figures)
        return TrainResult(wall, self.env_steps, self.episode, v.best, v.best_env_steps,
                           stopped_by, Path(self.s.out))


def parse_args(argv: list[str] | None = None) -> TrainSettings:
    """The command line as :class:`TrainSettings`."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="checkpoint file to write (models/NAME.pt)")
    p.add_argument("--trace", default="lublin", help="lublin or sdsc")
    p.add_argument("--backfill", default="none", help="none or easy")
    p.add_argument("--learner", default="ppo", help="a name of the agent registry")
    p.add_argument("--network", help="policy network (kernel, attention, mlp)")
    p.add_argument("--rollout-device", help="where decisions run: cpu, cuda, cuda:N or auto "
                   "(default auto: the CPU)")
    p.add_argument("--update-device", help="where the learner trains: cpu, cuda, cuda:N or auto "
                   "(default auto: the first GPU when there is one, else the CPU)")
    p.add_argument("--decision", default="event", help="event or commit")
    p.add_argument("--mode", default="job_pick", help="job_pick or policy_pair")
    p.add_argument("--platform", help="policy_pair mode: platforms/hetero.json")
    p.add_argument("--objective", default="avg_bounded_slowdown")
    p.add_argument("--reward-timing", default="end",
                   help="end (rewards as jobs end) or accrued (also the slowdown the jobs in the "
                        "system have accrued: a waiting job is penalised while it waits)")
    p.add_argument("--observation",
                   help="policy_pair mode: minimal, small (default), small_waits, "
                        "small_waits_predicted or normal (HDeepRM's); "
                        "job_pick mode: job_window (default), job_window_reservation or "
                        "job_window_predicted")
    p.add_argument("--job-selections", metavar="J1,J2,...",
                   help="policy_pair mode: the job selections paired with the six core "
                        "selections to make the actions (default: HDeepRM's random, first, "
                        "shortest, smallest, low_mem, low_mem_bw; add e.g. sjf_pred, wfp3_pred, "
                        "unicep_pred for run times predicted from the users' ended jobs)")
    p.add_argument("--reservation", default="fcfs",
                   help="job_window_reservation and job_window_predicted: the policy whose "
                        "first waiting job is reserved for (fcfs, wfp3, wfp3_pred ...)")
    p.add_argument("--window", type=int, default=protocol.WINDOW,
                   help=f"job_pick mode: queued jobs the learner sees (default {protocol.WINDOW}, "
                        "RLScheduler's)")
    p.add_argument("--pick", default="any",
                   help="job_pick: 'any' queued job (one that does not fit waits for the next "
                        "event), 'fitting' jobs only (work-conserving), or 'env' (the env's mask)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--minutes", type=float, default=15.0, help="wall-clock budget (0: none)")
    p.add_argument("--max-steps", type=int, default=0, help="environment steps budget (0: none)")
    p.add_argument("--validate-every", type=int, default=10, help="episodes between validations")
    p.add_argument("--train-jobs", type=int, default=protocol.SEQUENCE_JOBS)
    p.add_argument("--validation-starts", help="comma-separated start indices (default: the trace's)")
    p.add_argument("--load-factors", metavar="LO,HI",
                   help="training episodes divide their submission times by a factor drawn "
                        "uniformly in [LO, HI] (heavier variants of the sequences; evaluation "
                        "keeps the trace's load, validation too unless "
                        "--validation-load-factors says otherwise)")
    p.add_argument("--validation-load-factors", metavar="F1,F2,...", default="1",
                   help="validate on every validation sequence at each of these load factors "
                        "(mean over all; default 1: the trace's load). Heavier variants make "
                        "model selection weigh the overloaded regime that dominates mean slowdowns")
    p.add_argument("--agent-json", default="{}", help="JSON merged into the learner's options")
    p.add_argument("--init-model", metavar="MODEL.pt",
                   help="start from this model's weights (a fresh optimizer): fine-tuning; its "
                        "training figures are recorded with the new model's")
    p.add_argument("--imitate", help="warm start: imitate this queue heuristic first (e.g. wfp3)")
    p.add_argument("--imitate-backfill", default="easy", help="the teacher's backfilling")
    p.add_argument("--imitate-episodes", type=int, default=40,
                   help="training sequences the teacher plays")
    p.add_argument("--imitate-epochs", type=int, default=5, help="passes over the demonstrations")
    p.add_argument("--traces", default=str(protocol.DEFAULT_TRACES), help="folder of the traces")
    p.add_argument("--log-dir", help="where episodes.csv and validation.csv go")
    p.add_argument("--workers", type=int, default=0, metavar="N",
                   help="play the training episodes in N rollout worker processes on Ray "
                        "(distributed PPO; 0: in this process)")
    p.add_argument("--num-envs", type=int, default=1, metavar="K",
                   help="environments per worker (or in this process) decided for together")
    p.add_argument("--address", help="with --workers: the Ray cluster to join (auto or HOST:PORT)")
    a = p.parse_args(argv)
    try:
        agent_json = json.loads(a.agent_json)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--agent-json: not JSON ({exc.msg} at character {exc.pos}); "
                          "give an object such as '{\"lr\": 0.001}'") from None
    starts = None
    if a.validation_starts:
        starts = tuple(int(x) for x in a.validation_starts.split(","))
    factors = None
    if a.load_factors:
        try:
            lo, hi = (float(x) for x in a.load_factors.split(","))
        except ValueError:
            raise ConfigError(f"--load-factors: expected two numbers LO,HI (e.g. 1,2), got "
                              f"{a.load_factors!r}") from None
        factors = (lo, hi)
    try:
        val_factors = tuple(float(x) for x in a.validation_load_factors.split(","))
    except ValueError:
        raise ConfigError(f"--validation-load-factors: expected comma-separated numbers (e.g. "
                          f"1,1.5), got {a.validation_load_factors!r}") from None
    selections = None
    if a.job_selections is not None:
        selections = tuple(x.strip() for x in a.job_selections.split(",") if x.strip())
    argv_used = sys.argv[1:] if argv is None else argv
    return TrainSettings(
        out=a.out, trace=a.trace, backfill=a.backfill, learner=a.learner, network=a.network,
        rollout_device=a.rollout_device, update_device=a.update_device,
        decision=a.decision, mode=a.mode, platform=a.platform, objective=a.objective,
        reward_timing=a.reward_timing,
        pick=a.pick, seed=a.seed, reservation=a.reservation, window=a.window,
        observation=a.observation, job_selections=selections,
        minutes=a.minutes, max_steps=a.max_steps, validate_every=max(1, a.validate_every),
        train_jobs=a.train_jobs, validation_starts=starts, load_factors=factors,
        validation_load_factors=val_factors, agent_json=agent_json,
        imitate=a.imitate, init_model=a.init_model, imitate_backfill=a.imitate_backfill,
        imitate_episodes=max(1, a.imitate_episodes), imitate_epochs=max(0, a.imitate_epochs),
        traces=a.traces, log_dir=a.log_dir, workers=a.workers, num_envs=a.num_envs,
        address=a.address, command="python benchmarks/train.py " + shlex.join(argv_used),
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: train, then print the wall time and environment steps."""
    import torch

    torch.set_num_threads(1)  # small networks: one thread is fastest, and runs are reproducible
    try:
        settings = parse_args(argv)
        result = train(settings)
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {result.out}: best validation {result.best_validation:.2f} at "
          f"{result.best_env_steps} env steps; trained {result.env_steps} env steps, "
          f"{result.episodes} episodes, wall time {result.wall_s / 60:.1f} min "
          f"(stopped by {result.stopped_by})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
