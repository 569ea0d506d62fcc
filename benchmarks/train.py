"""Train a learner of the comparison benchmark and keep the best model by validation score.

Usage::

    python benchmarks/train.py --trace lublin|sdsc|sdsc,lublin --backfill none|easy --learner ppo
        [--network kernel|attention] [--decision event|commit] [--pick any|fitting|env]
        [--observation job_window|job_window_reservation|job_window_predicted|job_window_queue
         [--reservation wfp3]] [--pick-limit fits|easy]
        [--window 128] [--reward-timing end|accrued] [--wait-penalty W] [--validation-guard F]
        [--rollout-device cpu|cuda|cuda:N|auto] [--update-device cpu|cuda|cuda:N|auto]
        [--imitate HEURISTIC [--imitate-backfill easy] [--imitate-episodes N] [--imitate-epochs E]]
        [--workers N [--address ADDR]] [--num-envs K]
        --seed 0 --minutes M [--max-steps N] [--fresh] --out models/NAME.pt
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
``--validate-every`` episodes the greedy policy is scored on the validation sequences
(:mod:`benchmarks.train_validation`); the best model goes to ``--out`` with the settings and
training figures (wall time, environment steps) in the checkpoint's ``options``; ``episodes.csv``
and ``validation.csv`` go to ``--log-dir``.
``--trace sdsc,lublin`` trains one model on several traces, each under its own rule: episodes
round-robin over the traces, validation scored per trace over its best heuristic and averaged
(:mod:`benchmarks.train_mix`).
``--load-factors LO,HI`` trains on heavier (or lighter) variants: each training episode divides
its submission times by a factor drawn uniformly in ``[LO, HI]``; evaluation keeps the trace's
load, and so does validation unless ``--validation-load-factors`` lists factors to validate at
(each validation sequence at each factor, scored by the mean). In ``policy_pair`` mode the actions
are HDeepRM's 36 pairs unless ``--job-selections`` lists the job selections to pair with its six
core selections (e.g. the six of HDeepRM plus ``sjf_pred,wfp3_pred,unicep_pred``: 54 pairs).

``--wait-penalty W`` shapes the training rewards against starvation (issue 26): they also lose
``W`` times the jobs' mean waiting time in hours, so a schedule that holds long or wide jobs back
(which the mean bounded slowdown barely counts) costs the learner; validation and evaluation
score the schedule as before. The model records it (its column in ``benchmarks/compare.py``
says so), and the observation's feature names, which evaluation checks.

``--validation-guard F`` keeps a validated model only if its longest wait and makespan on the
validation sequences stay within ``F`` times the best heuristic's there
(:mod:`benchmarks.train_guard`); ``validation.csv`` logs both ratios.

``--imitate`` warm-starts a policy learner by imitating a heuristic first
(:mod:`benchmarks.imitation`): a queue heuristic with backfilling in ``job_pick`` mode (with
``--decision commit`` the teacher picks the first job of its order and the environment
backfills around it, so ``--imitate-backfill`` must be ``--backfill``), a fixed pair in
``policy_pair`` mode. A learner is any name of the agent registry; ``--agent-json``
overrides its options block. ``--rollout-device`` and ``--update-device`` set the learner's
``rollout_device`` and ``update_device`` (:mod:`hdrm.agents.devices`; default ``auto``: updates
on the GPU when torch sees one, decisions on the CPU). Runs are deterministic for a seed when
bounded by ``--max-steps`` on the CPU (``--minutes`` is a wall-clock guard checked between
episodes; the steps made are recorded, so ``--max-steps`` reproduces a run).
``--workers N`` plays the training episodes in N rollout worker processes on Ray (distributed
PPO, :mod:`hdrm.distributed.ppo`) and ``--num-envs K`` steps K environments per worker (or in this
process) with one forward pass for all (:mod:`benchmarks.train_workers`); validation, logs and
the best model stay in this process.

An interrupted run (Ctrl-C, SIGTERM, a crash) resumes: rerunning the same command continues from
the resume state ``OUT.resume`` written at validations, to the uninterrupted run's model and logs
with ``--max-steps`` (:mod:`benchmarks.train_resume` says what it holds; ``--fresh`` restarts).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import (  # noqa: E402
    imitation,
    protocol,
    train_mix,
    train_resume,
    train_rule,
    train_workers,
)
from benchmarks.train_model import (  # noqa: E402,F401 (importable from here, as before)
    learner_label,
    metadata,
    observation_features,
    save,
)
from benchmarks.train_resume import CsvLog  # noqa: E402,F401
from benchmarks.train_settings import (  # noqa: E402,F401 (importable from here, as before)
    LEARNER_DEFAULTS,
    MODE_DEFAULTS,
    TrainResult,
    TrainSettings,
    agent_config,
    check_settings,
    check_workers,
    parse_args,
)
from benchmarks.train_validation import Validator, make_env  # noqa: E402 (as before)
from hdrm.agents import get_agent_class  # noqa: E402
from hdrm.agents.checkpoint import load_checkpoint  # noqa: E402
from hdrm.distributed.learners import ResumeHandle  # noqa: E402
from hdrm.durable import signals_deferred  # noqa: E402
from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.errors import AgentLoadError, ConfigError, HdrmError  # noqa: E402


def build_agent(learner: str, config: dict[str, Any], env: SchedulingEnv, seed: int) -> Any:
    """An agent of the registered class ``learner`` for ``env``."""
    cls = get_agent_class(learner, "--learner")
    return cls(config, env.observation_space, env.action_space, action_names=env.action_names,
               seed=seed)


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
        #: each trace's environment and split (:mod:`benchmarks.train_mix`; one as a rule)
        self.parts = train_mix.parts_for(s)
        self.env, self.split = self.parts[0].env, self.parts[0].split
        self.rule = train_mix.rule_of(self.parts)
        self.val_starts = self.split.validation_starts
        self.pool = self.split.pool
        self.pool_text = train_mix.pool_text(self.parts)
        self.config = agent_config(s)
        self.agent = build_agent(s.learner, self.config, self.env, s.seed).train_mode(True)
        self.rng = np.random.default_rng(s.seed)
        self.mixed = len(self.parts) > 1
        self.validate: Validator | train_mix.MixValidator = (
            train_mix.MixValidator(s, self.parts) if self.mixed
            else Validator(s, self.val_starts, self.split.validation_jobs))
        #: a distributed learner's state (set while it runs, when it can save one)
        self.learner_state = ResumeHandle()
        self.last_value = float("nan")  # the last training episode's score
        self.resume_written_s = -float("inf")
        self.resume_file = train_resume.resume_path(s.out)
        state = self.resume_state()
        rows = state["log_rows"] if state else {}
        log_dir = Path(s.log_dir or Path("runs") / "train" / Path(s.out).stem)
        mix_columns = (("trace",), tuple(f"objective_{p.key}" for p in self.parts)) \
            if self.mixed else ((), ())
        self.episodes_log = CsvLog(log_dir / "episodes.csv", (
            "episode", "start_index", "load_factor", "decisions", "env_steps", "objective", "loss",
            "wall_s", *mix_columns[0]), rows.get("episodes"))
        self.val_log = CsvLog(log_dir / "validation.csv",
                              ("episode", "env_steps", "objective", "best", "wall_s",
                               "max_wait_ratio", "makespan_ratio", *mix_columns[1]),
                              rows.get("validation"))
        self.env_steps = self.episode = self.validations = 0
        self.imitation: dict[str, Any] = {}
        self.init: dict[str, Any] = {}
        self.distributed: dict[str, Any] = {}
        self.resumed = state is not None
        if state is not None:
            self.resume(state)
        elif s.imitate:
            self.warm_start()
        elif s.init_model:
            self.start_from_model()

    def resume_state(self) -> dict[str, Any] | None:
        """The interrupted run's state to continue from, or None (none, or ``--fresh``).

        Raises:
            ConfigError: a state unreadable or of other settings (one line).
        """
        path = self.resume_file
        if self.s.fresh and path.is_file():
            train_resume.remove(path)
            self.echo(f"{path}: resume state discarded (--fresh); training restarts")
        if not path.is_file():
            aside = train_resume.keep_unfinished_aside(self.s.out)
            if aside is not None:
                self.echo(f"{self.s.out}: an unfinished model with no resume state (its run "
                          f"was stopped); kept as {aside}, training starts anew")
            return None
        state = train_resume.read(path)
        train_resume.check_same_settings(state["settings"], self.s, path)
        return state

    def resume(self, state: dict[str, Any]) -> None:
        """Continue from the interrupted run's ``state`` (:mod:`benchmarks.train_resume`)."""
        train_resume.restore(self, state)
        rows = state["log_rows"]
        if (self.episodes_log.rows, self.val_log.rows) != (rows["episodes"], rows["validation"]):
            self.echo(f"note: the logs held fewer rows than the resume state had written "
                      f"({self.episodes_log.rows} episodes, {self.val_log.rows} validations); "
                      "they are continued as they are")
        self.echo(f"resuming from {self.resume_file}: episode {self.episode}, "
                  f"{self.env_steps} env steps, {self.wall_s() / 60:.1f} min, best validation "
                  f"{self.validate.best:.2f} at {self.validate.best_env_steps} env steps")

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
        starts = train_mix.imitation_starts(self.parts, self.rng, s.imitate_episodes)
        demos, means = train_mix.collect_all(self.parts, starts, lambda env, chosen: (
            imitation.collect(env, chosen, s.imitate, s.imitate_backfill, s.pick,
                              self.agent.gamma, self.agent.settings.reward_scale, s.objective)))
        how = "" if s.mode == "policy_pair" else (f" with {s.imitate_backfill} backfilling "
                                                   f"({s.decision} decisions)")
        if s.mode == "job_pick" and s.pick_limit == "easy":
            how = f"'s order within EASY's picks in {s.reservation} order"
        per = "" if not self.mixed else " (" + ", ".join(
            f"{key} {value:.2f}" for key, value in means.items()) + ")"
        self.echo(f"imitation: {len(demos)} decisions of {s.imitate}{how} on "
                  f"{len(demos.scores)} training sequences (teacher's mean score "
                  f"{np.mean(demos.scores):.2f}{per})")
        stats = imitation.fit(self.agent, demos, s.imitate_epochs, seed=s.seed,
                              echo=self.echo)
        self.imitation = {"teacher": s.imitate, "backfill": s.imitate_backfill,
                          "episodes": len(demos.scores), "decisions": len(demos),
                          "epochs": s.imitate_epochs, "accuracy": round(stats["accuracy"], 4),
                          "wall_s": round(self.wall_s(), 1)}
        if self.mixed:
            self.imitation["teacher_scores"] = {k: round(v, 4) for k, v in means.items()}
        self.validation(float(np.mean(demos.scores)), self.wall_s())

    def wall_s(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.t0

    def loop(self) -> str:
        """Train episode after episode until a budget is spent; returns which one."""
        s = self.s
        if s.workers or s.num_envs > 1:
            return train_workers.loop_with_workers(self)
        spent = self.spent() if self.resumed else None
        if spent:  # interrupted after its last validation: nothing left to train
            return spent
        while True:
            part = train_mix.episode_part(self.parts, self.episode)
            start = int(self.rng.choice(part.split.pool))
            train_rule.assert_training_window(start, s.train_jobs, part.split)
            seed = int(self.rng.integers(2**31))
            factor = float(self.rng.uniform(*s.load_factors)) if s.load_factors else 1.0
            episode = protocol.run_agent(self.agent, part.env, start, seed, s.pick, factor,
                                         s.wait_penalty)
            value = episode.score.value(s.objective)
            self.env_steps += episode.steps
            self.episode += 1
            wall = self.wall_s()
            self.episodes_log.row(self.episode, start, round(factor, 4), episode.steps,
                                  self.env_steps, value,
                                  float(episode.stats.get("loss", float("nan"))), wall,
                                  *((part.key,) if self.mixed else ()))
            done_steps = bool(s.max_steps) and self.env_steps >= s.max_steps
            done_time = s.minutes > 0 and wall >= s.minutes * 60
            if self.episode % s.validate_every == 0 or done_steps or done_time:
                self.validation(value, wall)
            if self.reached():
                return "stop_at"
            if done_steps or done_time:
                return "max_steps" if done_steps else "minutes"

    def resumable(self) -> bool:
        """Whether a resume state can be written now: always in one process; with rollout
        workers while a learner that saves its state runs (distributed PPO)."""
        s = self.s
        return not (s.workers or s.num_envs > 1) or self.learner_state.capture is not None

    def spent(self) -> str | None:
        """Which budget is spent now (``stop_at``, ``max_steps``, ``minutes``), or None."""
        s = self.s
        if self.reached():
            return "stop_at"
        if s.max_steps and self.env_steps >= s.max_steps:
            return "max_steps"
        return "minutes" if s.minutes > 0 and self.wall_s() >= s.minutes * 60 else None

    def reached(self) -> bool:
        """Whether ``--stop-at`` is given and a validation scored it or less."""
        return self.s.stop_at is not None and self.validate.best <= self.s.stop_at

    def validation(self, train_value: float, wall: float) -> None:
        """Validate, log, and save the model when it is the best so far."""
        score, improved = self.validate(self.agent, self.env_steps)
        self.validations += 1
        per = self.validate.values if isinstance(self.validate, train_mix.MixValidator) else ()
        self.val_log.row(self.episode, self.env_steps, score, int(improved), self.wall_s(),
                         *self.validate.ratios, *per)
        text = (self.validate.text() if isinstance(self.validate, train_mix.MixValidator)
                else "")
        self.echo(f"episode {self.episode:5d}  env steps {self.env_steps:9d}  train "
                  f"{train_value:10.2f}  validation {score:10.2f}{'  *' if improved else ''}  "
                  f"{wall / 60:6.1f} min{text}")
        with signals_deferred():  # the resume state and the model it names, both or neither
            if self.resumable() and (improved or self.wall_s() - self.resume_written_s
                                   >= train_resume.EVERY_S):
                train_resume.write(self.resume_file, train_resume.capture(self))
                self.resume_written_s = self.wall_s()
            if improved:
                save(self.agent, self.s, self.config, {"wall_s": wall, "env_steps": self.env_steps,
                                                       "episodes": self.episode, "final": False},
                     self.rule)

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
        if v.guard is not None:
            figures["validation_guard"] = v.guard.record()
        if isinstance(v, train_mix.MixValidator):
            figures["validation_starts"] = {key: rec["validation_starts"]
                                            for key, rec in v.record().items()}
            figures["validation_reference"] = v.record()
        if v.best_state is None and v.guard is not None:
            self.echo("note: no validated model kept within the validation guard; the last "
                      "weights are written")
        if v.best_state is not None:
            self.agent.load_state_dict(v.best_state[0])
            self.agent.load_optimizer_state_dict(v.best_state[1])
        save(self.agent, self.s, self.config, figures, self.rule)
        train_resume.remove(self.resume_file)
        return TrainResult(wall, self.env_steps, self.episode, v.best, v.best_env_steps,
                           stopped_by, Path(self.s.out))


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
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
