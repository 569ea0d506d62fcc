"""The shared protocol of ``benchmarks/train.py`` and ``benchmarks/compare.py``.

Everything both scripts must agree on lives here, so that a model is evaluated on exactly the
setting it was trained for:

* the traces (:data:`TRACES`) and how they are read: RLScheduler's loader conventions,
  homogeneous processors (the trace's MaxProcs), jobs run their trace run time (no walltime kill);
* the test sequences: 1,024 jobs at RLScheduler's 10 start indices, each on an empty cluster
  (SDSC-SP2 within its first 10,000 jobs); the no-leakage rule of each trainable trace (a training
  range and a validation range of jobs, disjoint from each other and from every test window,
  :class:`TraceSpec` and :mod:`benchmarks.protocol_rule`) and the pool of training start indices
  in it (:func:`training_starts`);
* the heterogeneous setting: ``platforms/hetero.json`` (384 cores), the hdeeprm contention model
  and an SDSC-SP2-derived workload (:func:`hetero_workload_file`): requirements attached with a
  fixed seed and submission times divided by :data:`HETERO_LOAD_FACTOR` (the platform has three
  times the trace's 128 processors, so the offered load stays that of the trace);
* how a run is scored (:class:`Score`, :mod:`benchmarks.protocol_score`: average bounded
  slowdown, utilisation, energy and the tail the mean hides) for a fixed
  policy (:func:`run_policy`) and for an agent driving the environment (:func:`run_agent`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np

from benchmarks.choices import named
from benchmarks.protocol_score import Score, score_result  # noqa: F401 (importable from here)
from hdrm.env import EnvConfig, SchedulingEnv
from hdrm.env.objectives import HOUR_S
from hdrm.durable import replacing
from hdrm.errors import ConfigError
from hdrm.platform.loader import load_platform
from hdrm.platform.model import Platform
from hdrm.policies.pairs import ALL_PAIRS, PAIR_CORE_SELECTIONS
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.batsim_json import read_batsim_json, write_batsim_json
from hdrm.workload.job import Workload
from hdrm.workload.load import scale_arrivals
from hdrm.workload.requirements import attach_requirements
from hdrm.workload.select import RLSCHEDULER_START_INDICES, sequence
from hdrm.workload.swf import read_swf

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
MODELS_DIR = ROOT / "models"
#: Derived workloads are written here (``runs/`` is ignored by git).
CACHE_DIR = ROOT / "runs" / "cache"
HETERO_PLATFORM = ROOT / "platforms" / "hetero.json"

SEQUENCE_JOBS = 1024
#: Queued jobs a ``job_pick`` learner sees by default (RLScheduler's MAX_QUEUE_SIZE).
WINDOW = 128
TEST_STARTS = tuple(int(s) for s in RLSCHEDULER_START_INDICES)
BACKFILLS = ("none", "easy")
DECISIONS = ("event", "commit")
#: The queue heuristics of the comparison (``hdrm.policies.job_selection`` names).
HEURISTICS = ("fcfs", "sjf", "wfp3", "unicep", "f1")
#: The same orderings with run times predicted from the users' ended jobs instead of requested
#: (:mod:`hdrm.core.predictor`): event-driven, among the best heuristic's candidates (issue 26).
PREDICTED_HEURISTICS = ("sjf_pred", "wfp3_pred", "unicep_pred")
#: The heterogeneous setting: seed of the bandwidth draw, submission-time divisor.
HETERO_SEED = 0
HETERO_LOAD_FACTOR = 3.0
HETERO_OBJECTIVES = ("avg_bounded_slowdown", "energy_consumption")
#: The predicted-run-time job selections as pairs with each of HDeepRM's core selections:
#: lines of the heterogeneous table (among the best pair's candidates since issue 26), and actions a
#: ``policy_pair`` learner may be given besides the 36 (``train.py --job-selections``).
PREDICTED_PAIRS = tuple(f"{j}-{c}" for j in PREDICTED_HEURISTICS for c in PAIR_CORE_SELECTIONS)


@dataclass(frozen=True)
class TraceSpec:
    """One trace of the benchmark and its no-leakage rule (:mod:`benchmarks.protocol_rule`).

    Attributes:
        key: command-line name (``--trace``).
        label: name in tables (RLScheduler's).
        file: SWF file in the traces folder.
        test_region_jobs: the test sequences lie in the first this many jobs.
        train_range: ``(first, end)`` job indices (end excluded; None: the trace's end) that
            training sequences are drawn from; None: the trace is for evaluation only.
        validation_range: ``(first, end)`` job indices of the validation sequences.
        validation_starts: start indices of the validation sequences (inside ``validation_range``).
        validation_jobs: jobs per validation sequence, at most (a training run with shorter
            episodes validates on sequences as long as its episodes).
    """

    key: str
    label: str
    file: str
    test_region_jobs: int
    train_range: tuple[int, int | None] | None = None
    validation_range: tuple[int, int] | None = None
    validation_starts: tuple[int, ...] = ()
    validation_jobs: int = SEQUENCE_JOBS


TRACES: dict[str, TraceSpec] = {
    spec.key: spec
    for spec in (
        # Lublin-1 has 10,000 jobs and the test sequences cover [1981, 6252) and [7085, 9874):
        # training draws from the jobs before the first test window, validation uses the gap
        # [6252, 7085) (833 jobs: two sequences of 416).
        TraceSpec("lublin", "Lublin-1", "lublin_256.swf.gz", 10_000, (0, 1981), (6252, 7085),
                  (6252, 6668), 416),
        # SDSC-SP2: test sequences in the first 10,000 jobs; validation on nine 1,024-job
        # sequences in [10,000, 20,000) (a few overloaded sequences dominate the trace's mean, so
        # fewer would pick models by luck), training on the rest of the trace. The heterogeneous
        # rows use the same indices of the SDSC-SP2-derived workload, so the same rule.
        TraceSpec("sdsc", "SDSC-SP2", "SDSC-SP2-1998-4.2-cln.swf.gz", 10_000, (20_000, None),
                  (10_000, 20_000), tuple(range(10_000, 18_801, 1_100))),
        # Generalisation traces: evaluation only.
        TraceSpec("ctc", "CTC-SP2", "CTC-SP2-1996-3.1-cln.swf.gz", 10_000),
        TraceSpec("kth", "KTH-SP2", "KTH-SP2-1996-2.1-cln.swf.gz", 10_000),
        TraceSpec("sdsc-par", "SDSC-Par", "SDSC-Par-1996-3.1-cln.swf.gz", 10_000),
        TraceSpec("nasa", "NASA-iPSC", "NASA-iPSC-1993-3.1-cln.swf.gz", 10_000),
        TraceSpec("llnl", "LLNL-Atlas", "LLNL-Atlas-2006-2.1-cln.swf.gz", 10_000),
    )
}
TRAINABLE = ("lublin", "sdsc")

#: RLScheduler's published averages (commit-to-pick semantics; PROVENANCE.md), per (trace, backfill).
PUBLISHED: dict[tuple[str, str], dict[str, float]] = {
    ("lublin", "none"): {"FCFS": 7273.77, "SJF": 277.35, "F1": 258.37, "PPO": 254.67},
    ("sdsc", "none"): {"FCFS": 1727.54, "SJF": 2680.55, "F1": 1232.06, "PPO": 466.44},
    ("lublin", "easy"): {"FCFS": 235.82, "SJF": 73.31, "F1": 75.07, "PPO": 58.64},
    ("sdsc", "easy"): {"FCFS": 1595.12, "SJF": 2167.84, "F1": 1098.22, "PPO": 397.82},
}


def trace_spec(key: str) -> TraceSpec:
    """The :class:`TraceSpec` named ``key``.

    Raises:
        ConfigError: unknown name, with the valid ones.
    """
    return named(TRACES, key, "--trace", "trace")


def trace_path(key: str, traces_dir: str | Path) -> Path:
    """The trace file of ``key`` in ``traces_dir``.

    Raises:
        ConfigError: the file is missing (the message names it and the ``--traces`` option).
    """
    path = Path(traces_dir) / trace_spec(key).file
    if not path.is_file():
        raise ConfigError(f"{path}: trace not found; pass the folder holding it with --traces")
    return path


@lru_cache(maxsize=8)
def load_trace(key: str, traces_dir: str) -> Workload:
    """The whole trace ``key`` as RLScheduler's loader keeps it (cached; do not mutate it)."""
    return read_swf(trace_path(key, traces_dir), conventions="rlscheduler")


@lru_cache(maxsize=8)
def load_trace_file(path: str) -> Workload:
    """A whole SWF trace read as RLScheduler's loader keeps it (cached; do not mutate it)."""
    return read_swf(path, conventions="rlscheduler")


def file_sequences(path: str, starts: Sequence[int], nb_jobs: int = SEQUENCE_JOBS
                   ) -> list[Workload]:
    """Sequences of ``nb_jobs`` jobs at ``starts`` anywhere in the trace file ``path``."""
    trace = load_trace_file(path)
    return [sequence(trace, int(s), nb_jobs) for s in starts]


def eval_sequences(key: str, traces_dir: str, starts: Sequence[int] = TEST_STARTS,
                   nb_jobs: int = SEQUENCE_JOBS) -> list[Workload]:
    """The test sequences of ``key`` (each shifted to start at time 0).

    Raises:
        WorkloadError: a sequence does not fit in the trace's test region.
    """
    trace = load_trace(key, str(traces_dir))
    region = Workload(trace.jobs[: trace_spec(key).test_region_jobs], trace.name, trace.source,
                      trace.header, dict(trace.skipped), trace.nb_res)
    return [sequence(region, int(s), nb_jobs) for s in starts]


def training_spec(key: str, mode: str = "job_pick") -> TraceSpec:
    """Where training of ``key`` samples and validates: the trace's spec, in both modes (the
    heterogeneous workload keeps the indices of the trace it is derived from)."""
    del mode  # one rule for every learner and row
    return trace_spec(key)


def training_starts(key: str, nb_trace_jobs: int, nb_jobs: int = SEQUENCE_JOBS,
                    mode: str = "job_pick") -> np.ndarray:
    """Start indices training may sample: every sequence of ``nb_jobs`` jobs inside the trace's
    training range (:class:`TraceSpec`), so none shares a job with a test or validation sequence.

    Raises:
        ConfigError: the trace is for evaluation only, or its training range is too short.
    """
    from benchmarks.protocol_rule import range_starts, resolve

    spec = training_spec(key, mode)
    if spec.train_range is None:
        raise ConfigError(f"--trace: {key!r} is for evaluation only; train on one of: "
                          f"{', '.join(TRAINABLE)}")
    return range_starts(resolve(spec.train_range, nb_trace_jobs), nb_jobs, "training range")


# ---------------------------------------------------------------------------------- scoring
def sim_config(backfilling: str, decision: str, contention: str = "none") -> SimulationConfig:
    """The engine settings of the protocol (no walltime kill, no timeline)."""
    return SimulationConfig(contention=contention, backfilling=backfilling, decision=decision,
                            kill_on_walltime=False, record_timeline=False)


def run_policy(platform: Platform, workload: Workload, policy: str, config: SimulationConfig) -> Score:
    """Run a fixed policy (heuristic or job-core pair) over ``workload`` and score it."""
    return score_result(Simulation(platform, workload, config).run(policy))


#: How a ``job_pick`` learner's picks map to the environment's actions (see :func:`agent_mask`).
PICK_MODES = ("any", "fitting", "env")


def agent_mask(env: SchedulingEnv, mask: np.ndarray, pick: str) -> np.ndarray:
    """The actions a ``job_pick`` learner may take, from the environment's mask.

    ``pick`` is ``"any"`` (any job of the window; one that cannot start now means waiting for
    the next event, as an event-driven heuristic does when its first job does not fit, see
    :func:`env_action`), ``"fitting"`` (only jobs that can start now: work-conserving, no void)
    or ``"env"`` (the environment's mask as it is). ``policy_pair`` learners always get ``"env"``.
    """
    if pick == "env" or env.config.mode != "job_pick":
        return mask
    out = np.zeros_like(mask)
    if pick == "any":
        out[: len(env.window_jobs())] = True
    else:
        out[:-1] = mask[:-1]
    if not out.any():
        out[-1] = True
    return out


def env_action(mask: np.ndarray, action: int) -> int:
    """The environment's action for a learner's pick: the void action when it is not valid."""
    return action if mask[action] else len(mask) - 1


class Episode(NamedTuple):
    """What one agent episode gave: its score, number of decisions and the agent's statistics."""

    score: Score
    steps: int
    stats: dict[str, float]


def run_agent(agent: Any, env: SchedulingEnv, start: int, seed: int = 0,
              pick: str = "env", load_factor: float = 1.0, wait_penalty: float = 0.0
              ) -> Episode:
    """One episode of ``agent`` (as it is: set ``train_mode`` before) from ``start``.

    Args:
        agent: the agent.
        env: its environment.
        start: start index of the episode's sequence.
        seed: seed of the episode.
        pick: how picks map to actions (:func:`agent_mask`).
        load_factor: the sequence's submission times are divided by it (training variants).
        wait_penalty: training only: the agent's rewards also lose this many times the jobs'
            mean waiting time in hours, each job's share ``wait / (N x 1 h)`` when it ends, so
            an episode's return is minus (objective + ``wait_penalty`` x mean wait in hours);
            the score is the schedule's, unchanged.
    """
    obs, info = env.reset(seed=seed, options={"start_index": int(start), "load_factor": load_factor})
    agent.start_episode()
    done, steps = False, 0
    while not done:
        mask = info["action_mask"]
        action = agent.decide(obs, agent_mask(env, mask, pick))
        waited = env.tracker.sum_wait_s
        obs, reward, terminated, truncated, info = env.step(env_action(mask, action))
        done = terminated or truncated
        if wait_penalty:
            reward -= wait_penalty * (env.tracker.sum_wait_s - waited) / (
                max(env.tracker.nb_jobs, 1) * HOUR_S)
        agent.rewarded(reward, done)
        steps += 1
    stats = agent.end_episode()
    result = env.result()
    if len(result.outcomes) != len(result.workload):
        raise RuntimeError(f"episode from {start} ended with {len(result.outcomes)} of "
                           f"{len(result.workload)} jobs done: its score would be biased")
    return Episode(score_result(result), steps, dict(stats or {}))


# ---------------------------------------------------------------------------------- settings
def protocol_env_config(key: str, traces_dir: str | Path, backfilling: str = "none",
                        decision: str = "event", window: int = WINDOW,
                        nb_jobs: int = SEQUENCE_JOBS, observation: str = "job_window",
                        reservation: str = "fcfs", workload_file: str = "", procs: int = 0,
                        pick_limit: str = "fits") -> EnvConfig:
    """The ``job_pick`` environment of the protocol on trace ``key`` (or on ``workload_file``
    with ``procs`` processors, 0: its MaxProcs); ``pick_limit`` as
    :class:`~hdrm.env.config.EnvConfig`'s."""
    return EnvConfig(
        observation=observation, reservation=reservation, pick_limit=pick_limit,
        workload_file=workload_file or str(trace_path(key, traces_dir)), platform_file=None,
        homogeneous_procs=procs if procs > 0 else -1,
        nb_jobs=nb_jobs, conventions="rlscheduler", objective="avg_bounded_slowdown",
        mode="job_pick", window=window, backfilling=backfilling, contention="none",
        decision=decision, kill_on_walltime=False,
    )


def hetero_pairs(job_selections: Sequence[str] | None = None) -> tuple[str, ...]:
    """The actions of a ``policy_pair`` learner: each job selection with each of HDeepRM's core
    selections (job-major order); None or empty: HDeepRM's 36 pairs."""
    if not job_selections:
        return ALL_PAIRS
    return tuple(f"{j}-{c}" for j in job_selections for c in PAIR_CORE_SELECTIONS)


def hetero_env_config(workload_file: str | Path, objective: str, decision: str = "event",
                      nb_jobs: int = SEQUENCE_JOBS, observation: str = "small",
                      job_selections: Sequence[str] | None = None) -> EnvConfig:
    """The ``policy_pair`` environment of the heterogeneous rows (no void action).

    The actions are the pairs of :func:`hetero_pairs` (HDeepRM's 36 unless ``job_selections``
    names other job selections).
    """
    return EnvConfig(
        workload_file=str(workload_file), platform_file=str(HETERO_PLATFORM), nb_jobs=nb_jobs,
        objective=objective, observation=observation, mode="policy_pair", backfilling="none",
        contention="hdeeprm", decision=decision, kill_on_walltime=False,
        selection=hetero_pairs(job_selections) if job_selections else None,
    )


def hetero_platform() -> Platform:
    """The heterogeneous example platform."""
    return load_platform(HETERO_PLATFORM)


def hetero_workload_file(traces_dir: str | Path, cache_dir: str | Path = CACHE_DIR) -> Path:
    """The SDSC-SP2-derived workload of the heterogeneous rows, as Batsim JSON (built once).

    The whole SDSC-SP2 trace (RLScheduler's conventions) gets its requirements for the platform
    (work at its reference speed, seeded bandwidth draw, seed :data:`HETERO_SEED`), and its
    submission times are divided by :data:`HETERO_LOAD_FACTOR`. Indices are those of the trace,
    so the test, validation and training start indices of SDSC-SP2 apply unchanged.
    """
    source = trace_path("sdsc", traces_dir)
    name = (f"sdsc_sp2_hetero_load{HETERO_LOAD_FACTOR:g}_seed{HETERO_SEED}"
            f"_{_source_tag(source)}.json")
    path = Path(cache_dir) / name
    if path.is_file():
        return path
    platform = hetero_platform()
    trace = read_swf(source, conventions="rlscheduler")
    derived = attach_requirements(trace, platform.reference_gflops,
                                  np.random.default_rng(HETERO_SEED))
    derived = scale_arrivals(derived, HETERO_LOAD_FACTOR)
    derived.nb_res = platform.nb_cores
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:  # removed if stopped; a name of its own per process
        write_batsim_json(derived, tmp, swf_fields=False)
    return path


def _source_tag(source: Path) -> str:
    """A short tag of the source trace (its size in bytes and name), so that a derived workload
    cached from another copy or slice of the trace (a test's 500-job slice) is never taken for
    the whole trace's."""
    stat = source.stat()
    stem = source.name.split(".")[0].replace(" ", "_")
    return f"{stem}_{stat.st_size}"


@lru_cache(maxsize=2)
def load_hetero_trace(workload_file: str) -> Workload:
    """The derived heterogeneous workload (cached; do not mutate it)."""
    return read_batsim_json(workload_file, hetero_platform().reference_gflops)


def hetero_sequences(workload_file: str | Path, starts: Sequence[int] = TEST_STARTS,
                     nb_jobs: int = SEQUENCE_JOBS) -> list[Workload]:
    """The heterogeneous test sequences (the SDSC-SP2 test start indices)."""
    trace = load_hetero_trace(str(workload_file))
    return [sequence(trace, int(s), nb_jobs) for s in starts]
