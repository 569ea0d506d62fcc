"""The settings of a ``benchmarks/train.py`` run: the command line, its checks, the learner's options.

:class:`TrainSettings` is what to train and for how long, :func:`parse_args` reads it from the
command line, :func:`check_settings` refuses the combinations the benchmark does not define (one-line
:class:`~hdrm.errors.ConfigError`), and :func:`agent_config` makes the learner's options block from
the benchmark's defaults and the flags. :mod:`benchmarks.train` runs the training; these names stay
importable from there.
"""

from __future__ import annotations

import argparse
import copy
import math
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import cli_lists, imitation, protocol
from benchmarks.protocol_rule import trace_keys
from benchmarks.train_guard import check_guard
from hdrm.cli import script
from hdrm.env.config import PICK_LIMITS
from hdrm.env.objectives import REWARD_TIMINGS
from hdrm.env.observations import job_window_kinds
from hdrm.errors import ConfigError
from hdrm.policies.backfill import BACKFILLING
from hdrm.policies.job_selection import JOB_POLICIES

#: The command's description (``--help``): the first line of :mod:`benchmarks.train`'s docstring.
DESCRIPTION = "Train a learner of the comparison benchmark and keep the best model by validation score."

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
    wait_penalty: float = 0.0
    validation_guard: float = 0.0
    pick: str = "any"
    observation: str | None = None
    reservation: str = "fcfs"
    pick_limit: str = "fits"
    job_selections: tuple[str, ...] | None = None
    window: int = protocol.WINDOW
    seed: int = 0
    minutes: float = 15.0
    max_steps: int = 0
    stop_at: float | None = None
    validate_every: int = 10
    train_jobs: int = protocol.SEQUENCE_JOBS
    validation_starts: tuple[int, ...] | None = None
    train_range: tuple[int, int] | None = None
    validation_range: tuple[int, int] | None = None
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
    fresh: bool = False

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
    keys = trace_keys(s.trace)
    for key in keys:
        protocol.trace_spec(key)
        if key not in protocol.TRAINABLE:
            raise ConfigError(f"--trace: {key!r} is for evaluation only; train on one of: "
                              f"{', '.join(protocol.TRAINABLE)} (or several: sdsc,lublin)")
    if len(keys) > 1:
        from benchmarks.train_mix import check_mix

        check_mix(s)
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
    if s.pick_limit not in PICK_LIMITS:
        raise ConfigError(f"--pick-limit: invalid value {s.pick_limit!r}; choose one of: "
                          f"{', '.join(PICK_LIMITS)}")
    if s.pick_limit == "easy" and (s.mode != "job_pick" or s.decision != "event"):
        raise ConfigError(f"--pick-limit easy: limits the jobs a job_pick learner starts with "
                          f"event decisions (here --mode {s.mode} --decision {s.decision}); "
                          "use --mode job_pick --decision event, or leave --pick-limit out")
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
    if not (math.isfinite(s.wait_penalty) and s.wait_penalty >= 0):
        raise ConfigError(f"--wait-penalty: expected a number >= 0 (e.g. 4), got "
                          f"{s.wait_penalty:g}")
    if s.wait_penalty and (s.workers or s.num_envs > 1):
        raise ConfigError(f"--wait-penalty {s.wait_penalty:g}: shapes the rewards of episodes "
                          "played in this process; leave --workers and --num-envs out")
    check_guard(s)
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
        # within EASY's picks the teacher always starts an allowed job (the environment asks
        # only when one may start), so a learner that never waits can imitate it too
        if s.pick != "any" and not (s.pick == "fitting" and s.pick_limit == "easy"):
            raise ConfigError("--imitate: the warm start is defined for job_pick mode with "
                              f"--pick any (or --pick fitting with --pick-limit easy); got pick "
                              f"{s.pick!r}")
        BACKFILLING.get(s.imitate_backfill, "--imitate-backfill")
        imitation.check_commit_teacher(s.decision, s.backfill, s.imitate_backfill)
        imitation.check_limited_teacher(s.pick_limit, s.imitate_backfill)


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


def _job_range(flag: str, text: str | None) -> tuple[int, int] | None:
    """``FIRST,END`` as two job indices (None when not given)."""
    if text is None:
        return None
    try:
        first, end = (int(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"{flag}: expected two job indices FIRST,END (e.g. 0,1981), got "
                          f"{text!r}") from None
    return first, end


def parse_args(argv: list[str] | None = None) -> TrainSettings:
    """The command line as :class:`TrainSettings`."""
    p = argparse.ArgumentParser(description=DESCRIPTION)
    p.add_argument("--out", required=True, help="checkpoint file to write (models/NAME.pt)")
    p.add_argument("--trace", default="lublin",
                   help="lublin or sdsc, or several: sdsc,lublin (benchmarks/train_mix.py)")
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
    p.add_argument("--wait-penalty", type=float, default=0.0, metavar="W",
                   help="training only: rewards also lose W x the jobs' mean waiting time in "
                        "hours (as each job ends), against schedules that starve jobs the mean "
                        "slowdown barely counts (long, wide ones); default 0: none")
    p.add_argument("--validation-guard", type=float, default=0.0, metavar="F",
                   help="keep a validated model only if its longest wait and makespan on the "
                        "validation sequences stay within F x the best heuristic's there (e.g. "
                        "1.25; default 0: no guard)")
    p.add_argument("--observation",
                   help="policy_pair mode: minimal, small (default), small_waits, "
                        "small_waits_predicted or normal (HDeepRM's); "
                        "job_pick mode: job_window (default), job_window_reservation, "
                        "job_window_predicted or job_window_queue")
    p.add_argument("--job-selections", metavar="J1,J2,...",
                   help="policy_pair mode: the job selections paired with the six core "
                        "selections to make the actions (default: HDeepRM's random, first, "
                        "shortest, smallest, low_mem, low_mem_bw; add e.g. sjf_pred, wfp3_pred, "
                        "unicep_pred for run times predicted from the users' ended jobs)")
    p.add_argument("--reservation", default="fcfs",
                   help="job_window_reservation, job_window_predicted and job_window_queue: the "
                        "policy whose "
                        "first waiting job is reserved for (fcfs, wfp3, wfp3_pred ...)")
    p.add_argument("--pick-limit", default="fits",
                   help="job_pick with event decisions: the jobs the learner may start, any that "
                        "fits (fits) or only those EASY would start now (easy): the jobs before "
                        "the first in --reservation order that does not fit while any waits, "
                        "then none that delays its reservation")
    p.add_argument("--window", type=int, default=protocol.WINDOW,
                   help=f"job_pick mode: queued jobs the learner sees (default {protocol.WINDOW}, "
                        "RLScheduler's)")
    p.add_argument("--pick", default="any",
                   help="job_pick: 'any' queued job (one that does not fit waits for the next "
                        "event), 'fitting' jobs only (work-conserving), or 'env' (the env's mask)")
    p.add_argument("--seed", type=script.seed, default=0)
    p.add_argument("--minutes", type=float, default=15.0, help="wall-clock budget (0: none)")
    p.add_argument("--max-steps", type=int, default=0, help="environment steps budget (0: none)")
    p.add_argument("--stop-at", type=float, metavar="SCORE",
                   help="stop at the first validation scoring SCORE or less (to time a learner "
                        "to a score; default: train for the whole budget)")
    p.add_argument("--validate-every", type=int, default=10, help="episodes between validations")
    p.add_argument("--train-jobs", type=int, default=protocol.SEQUENCE_JOBS)
    p.add_argument("--validation-starts", help="comma-separated start indices (default: the trace's)")
    p.add_argument("--train-range", metavar="FIRST,END",
                   help="job indices training draws its sequences from, END excluded (default: "
                        "the trace's; must stay outside every test window)")
    p.add_argument("--validation-range", metavar="FIRST,END",
                   help="job indices of the validation sequences (default: the trace's; outside "
                        "every test window and the training range)")
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
    p.add_argument("--fresh", action="store_true",
                   help="discard the resume state an interrupted run left (OUT.resume) and "
                        "restart; without it, the same command continues that run")
    a = p.parse_args(argv)
    agent_json = script.json_object(a.agent_json, "--agent-json")
    starts = None
    if a.validation_starts:
        starts = tuple(cli_lists.ints(a.validation_starts, "--validation-starts", "6252,6668",
                                      minimum=0))
    factors = None
    if a.load_factors:
        try:
            lo, hi = (float(x) for x in a.load_factors.split(","))
        except ValueError:
            raise ConfigError(f"--load-factors: expected two numbers LO,HI (e.g. 1,2), got "
                              f"{a.load_factors!r}") from None
        factors = (lo, hi)
    val_factors = tuple(cli_lists.floats(a.validation_load_factors, "--validation-load-factors",
                                         "1,1.5", positive=True))
    ranges = {flag: _job_range(flag, text) for flag, text in
              (("--train-range", a.train_range), ("--validation-range", a.validation_range))}
    selections = None
    if a.job_selections is not None:
        selections = tuple(x.strip() for x in a.job_selections.split(",") if x.strip())
    argv_used = sys.argv[1:] if argv is None else argv
    return TrainSettings(
        out=a.out, trace=a.trace, backfill=a.backfill, learner=a.learner, network=a.network,
        rollout_device=a.rollout_device, update_device=a.update_device,
        decision=a.decision, mode=a.mode, platform=a.platform, objective=a.objective,
        reward_timing=a.reward_timing, wait_penalty=a.wait_penalty,
        validation_guard=a.validation_guard,
        pick=a.pick, seed=a.seed, reservation=a.reservation, pick_limit=a.pick_limit,
        window=a.window,
        observation=a.observation, job_selections=selections,
        minutes=a.minutes, max_steps=a.max_steps, stop_at=a.stop_at, validate_every=max(1, a.validate_every),
        train_jobs=a.train_jobs, validation_starts=starts, train_range=ranges["--train-range"],
        validation_range=ranges["--validation-range"], load_factors=factors,
        validation_load_factors=val_factors, agent_json=agent_json,
        imitate=a.imitate, init_model=a.init_model, imitate_backfill=a.imitate_backfill,
        imitate_episodes=max(1, a.imitate_episodes), imitate_epochs=max(0, a.imitate_epochs),
        traces=a.traces, log_dir=a.log_dir, workers=a.workers, num_envs=a.num_envs,
        address=a.address, command="python benchmarks/train.py " + shlex.join(argv_used),
        fresh=a.fresh,
    )
