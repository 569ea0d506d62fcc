"""One cell evaluation of the comparison table, as a run of ``hdrm sweep``'s machinery.

An :class:`EvalRun` says "run this heuristic, policy pair or model on this protocol setting over
these test sequences" once; :func:`hdrm.distributed.runner.execute` runs it like a sweep run
(scratch folder, ``done.json`` written last, one rename), so ``benchmarks/compare.py`` gets the
sweep's backends (``serial``, ``processes``, ``ray``), its atomic runs and its resume: a run whose
folder is finished is not run again. The run's table row is its :class:`~benchmarks.protocol.Score`
(``bsld``, ``utilisation``, ``energy_mj``), kept in ``done.json`` and in ``score.json``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks import protocol
from benchmarks.protocol import Score
from benchmarks.protocol_rule import check_evaluation, test_windows
from hdrm.distributed.runner import table_row
from hdrm.distributed.sweep import choose_backend, run_pending
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.sim.outputs import check_outdir

Kind = Literal["heuristic", "pair", "model"]
#: The file a finished evaluation run holds besides ``done.json``.
SCORE_FILE = "score.json"


@dataclass(frozen=True)
class EvalRun:
    """One evaluation: a fixed policy or a model, on one setting, over the test sequences.

    Attributes:
        kind: ``heuristic`` (queue heuristic on a homogeneous trace), ``pair`` (job-core pair on
            the heterogeneous workload) or ``model`` (a model's greedy policy).
        policy: the heuristic or pair name, or the model file (absolute).
        traces: the traces folder.
        cache: the derived workloads folder.
        starts: start indices of the sequences.
        nb_jobs: jobs per sequence.
        trace: trace key (``heuristic``, ``model``).
        backfill: backfilling mode (``heuristic``, ``model``).
        decision: decision semantics (``heuristic``).
        group: the table row's group (``model``: ``hetero`` or not).
        objective: the row's objective (``model`` on the heterogeneous rows).
        model_digest: SHA-256 of the model file (``model``), so a retrained model is run again.
        trace_file: the SWF file of a generalisation row ("" : the trace key's file and its test
            region).
        procs: processors of the homogeneous platform (0: the trace's MaxProcs).
        allow_leaky: evaluate a model even if it saw jobs of these sequences or records no
            no-leakage rule (``--allow-leaky``; the table marks such cells).
        metrics: version of the scored metrics (2: the tail of :class:`Score`), so evaluations
            kept by an older version are run again.
    """

    kind: Kind
    policy: str
    traces: str
    cache: str
    starts: tuple[int, ...]
    nb_jobs: int
    trace: str = ""
    backfill: str = "none"
    decision: str = "event"
    group: str = ""
    objective: str = ""
    model_digest: str = ""
    trace_file: str = ""
    procs: int = 0
    allow_leaky: bool = False
    metrics: int = 2

    @property
    def name(self) -> str:
        """The run's folder name: readable settings, then a digest of all of them."""
        label = Path(self.policy).stem if self.kind == "model" else self.policy
        where = "hetero" if self.kind == "pair" or self.group == "hetero" else self.trace
        readable = f"{self.kind}_{label}_{where}_{self.backfill}_{self.decision}"
        if self.objective:
            readable += f"_{self.objective}"
        return f"{readable}_{self.digest()[:8]}"

    def digest(self) -> str:
        """SHA-256 of every setting."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """The settings as a JSON object (kept in ``done.json``)."""
        values = asdict(self)
        values["starts"] = list(self.starts)
        return values

    def produce(self, folder: Path) -> dict[str, float]:
        """Evaluate, write ``score.json`` into ``folder`` and return the score as the run's row."""
        score = evaluate(self)
        row = asdict(score)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / SCORE_FILE).write_text(json.dumps(row, indent=1) + "\n", encoding="utf-8")
        return row


@dataclass(frozen=True)
class Execution:
    """How the evaluations run: ``hdrm sweep``'s backends, parallelism and resume folder.

    Attributes:
        backend: ``auto`` (:func:`default_backend`), ``ray``, ``processes`` or ``serial``.
        max_parallel: evaluations at a time.
        outdir: the folder of finished evaluations (``runs/`` inside); a rerun with the same
            folder resumes, skipping the finished ones. None: a temporary folder (no resume).
    """

    backend: str = "auto"
    max_parallel: int = 2
    outdir: str | None = None


def default_backend(backend: str, max_parallel: int) -> str:
    """``auto``: local worker processes when more than one evaluation runs at a time, else this
    process (Ray's start costs seconds and brings nothing more on one machine); others as given.

    Raises:
        ConfigError: an unknown backend, or ``ray`` without Ray installed.
    """
    if backend == "auto":
        return "processes" if max_parallel > 1 else "serial"
    return choose_backend(backend, None, max_parallel)


def run_evaluations(runs: list[EvalRun], execution: Execution) -> list[Score]:
    """Run the evaluations through the sweep machinery; returns their scores, in order."""
    return [score_of(row) for row in run_rows(runs, execution, "hdrm_compare_")]


def run_rows(runs: list, execution: Execution, prefix: str) -> list[dict[str, Any]]:
    """Run any sweep runs (``name``, ``produce``) through the sweep machinery, the distinct ones
    once, resuming finished ones under ``execution.outdir``; their table rows, in order.
    Without an outdir they run in a temporary folder named with ``prefix``."""
    if execution.max_parallel < 1:
        raise ConfigError(f"--max-parallel: expected a number >= 1, got {execution.max_parallel}")
    backend = default_backend(execution.backend, execution.max_parallel)
    if backend == "ray":
        _importable_by_ray_workers()
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        runs_dir = Path(execution.outdir or scratch) / "runs"
        check_outdir(runs_dir.parent)
        runs_dir.mkdir(parents=True, exist_ok=True)
        distinct = list({run.name: run for run in runs}.values())
        run_pending(distinct, runs_dir, backend, None, execution.max_parallel, progress=False)
        return [table_row(run, runs_dir) for run in runs]


def _importable_by_ray_workers() -> None:
    """Let the local Ray's worker processes import ``benchmarks`` (they unpickle an
    :class:`EvalRun` by its module): Ray puts the driver's folder and script folder on their path,
    not the repository root, so it goes on ``PYTHONPATH``, which the workers inherit."""
    root = str(protocol.ROOT)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])


def score_of(row: dict[str, float]) -> Score:
    """The :class:`Score` of a finished run's row."""
    return Score(**{f.name: float(row[f.name]) for f in dataclasses.fields(Score)})


def model_run(path: str, traces: str, cache: str, starts: tuple[int, ...], nb_jobs: int,
              trace: str, backfill: str, group: str, objective: str, trace_file: str = "",
              procs: int = 0, allow_leaky: bool = False, decision: str = "event") -> EvalRun:
    """The :class:`EvalRun` of a model file on a row (its content's digest included);
    ``decision`` is the model's own decision semantics (its run's name says it)."""
    content = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return EvalRun("model", str(Path(path).resolve()), traces, cache, starts, nb_jobs, trace,
                   backfill, decision, group, objective if group == "hetero" else "", content,
                   trace_file, procs, allow_leaky)


def model_backfill(setting: dict[str, Any], backfill: str) -> str:
    """The backfilling a model of ``setting`` runs with where ``backfill`` is asked for.

    An ``event``-driven ``job_pick`` learner only starts jobs that fit, so backfilling never
    acts on its schedule (nor on what it observes): it runs without. Any other model runs with
    ``backfill`` (with ``commit`` decisions the environment backfills around each pick).
    """
    if setting["mode"] == "job_pick" and setting["decision"] == "event":
        return "none"
    return backfill


def source_file(run: EvalRun) -> str:
    """The SWF file ``run``'s sequences come from (SDSC-SP2's for the heterogeneous workload)."""
    if run.trace_file:
        return run.trace_file
    return str(protocol.trace_path("sdsc" if run.kind == "pair" or run.group == "hetero"
                                   else run.trace, run.traces))


def sequences_of(run: EvalRun) -> list[Any]:
    """The sequences of a homogeneous-trace run: its test sequences, or its row's windows."""
    if run.trace_file:
        return protocol.file_sequences(run.trace_file, run.starts, run.nb_jobs)
    return protocol.eval_sequences(run.trace, run.traces, run.starts, run.nb_jobs)


def platform_of(run: EvalRun) -> Platform:
    """The homogeneous platform of a run: ``procs`` processors, else the trace's MaxProcs."""
    if run.procs > 0:
        return Platform.homogeneous(run.procs)
    trace = (protocol.load_trace_file(run.trace_file) if run.trace_file
             else protocol.load_trace(run.trace, run.traces))
    return Platform.homogeneous(trace.nb_res)


def evaluate(run: EvalRun) -> Score:
    """The mean score of ``run`` over its sequences."""
    if run.kind == "heuristic":
        return heuristic_score(run)
    if run.kind == "pair":
        return pair_score(run)
    if run.kind == "model":
        return model_score(run)
    raise ConfigError(f"kind: unknown evaluation {run.kind!r}; choose heuristic, pair or model")


def heuristic_score(run: EvalRun) -> Score:
    """Mean score of a queue heuristic over the test sequences of ``run.trace``."""
    seqs = sequences_of(run)
    platform = platform_of(run)
    config = protocol.sim_config(run.backfill, run.decision)
    return Score.mean(protocol.run_policy(platform, w, run.policy, config) for w in seqs)


def pair_score(run: EvalRun) -> Score:
    """Mean score of a fixed policy pair over the heterogeneous test sequences."""
    workload = protocol.hetero_workload_file(run.traces, run.cache)
    seqs = protocol.hetero_sequences(workload, run.starts, run.nb_jobs)
    platform = protocol.hetero_platform()
    config = protocol.sim_config("none", "event", "hdeeprm")
    return Score.mean(protocol.run_policy(platform, w, run.policy, config) for w in seqs)


def model_score(run: EvalRun) -> Score:
    """Mean score of a model's greedy policy over the row's test sequences."""
    import torch

    from hdrm.agents import get_agent_class
    from hdrm.agents.checkpoint import load_checkpoint, read_checkpoint
    from hdrm.env import SchedulingEnv

    torch.set_num_threads(1)
    meta = read_checkpoint(run.policy)["options"]
    windows = test_windows(run.starts, run.nb_jobs)
    check_evaluation(run.policy, meta, source_file(run), windows, run.allow_leaky)
    setting = meta["setting"]
    if run.group == "hetero":
        workload = protocol.hetero_workload_file(run.traces, run.cache)
        config = protocol.hetero_env_config(workload, run.objective, setting["decision"],
                                            run.nb_jobs, setting.get("observation", "normal"),
                                            setting.get("job_selections"))
    else:
        config = protocol.protocol_env_config(
            run.trace, run.traces, run.backfill, setting["decision"], nb_jobs=run.nb_jobs,
            window=setting.get("window") or protocol.WINDOW,
            observation=setting.get("observation", "job_window"),
            reservation=setting.get("reservation", "fcfs"), workload_file=run.trace_file,
            procs=run.procs, pick_limit=setting.get("pick_limit", "fits"))
    env = SchedulingEnv(config=config)
    check_features(run.policy, setting, getattr(env.observer, "features", None))
    agent_config = dict(meta["agent"], run="test")
    cls = get_agent_class(meta["learner"], f"{run.policy}: learner")
    agent = cls(agent_config, env.observation_space, env.action_space,
                action_names=env.action_names, seed=int(setting.get("seed", 0)))
    load_checkpoint(agent, run.policy, optimizer=False)
    agent.train_mode(False)
    pick = setting.get("pick", "env")
    episodes = (protocol.run_agent(agent, env, s, seed=0, pick=pick) for s in run.starts)
    return Score.mean(episode.score for episode in episodes)


def check_features(path: str, setting: dict[str, Any], features: Any) -> None:
    """Refuse a model whose recorded observation features differ from what its observation
    kind gives now (the network would read the wrong columns); models that record none (trained
    before the features were recorded) are evaluated as before.

    Raises:
        ConfigError: one line naming the model file, the first differing column and the fix.
    """
    recorded = setting.get("features")
    if recorded is None:
        return
    now = list(features or ())
    if list(recorded) == now:
        return
    name = setting.get("observation")
    diff = next((i for i, (a, b) in enumerate(zip(recorded, now)) if a != b),
                min(len(recorded), len(now)))
    had = recorded[diff] if diff < len(recorded) else "nothing"
    has = now[diff] if diff < len(now) else "nothing"
    raise ConfigError(f"{path}: options.setting.features: the model was trained on "
                      f"{len(recorded)} features of observation {name!r} but it now gives "
                      f"{len(now)} (column {diff}: {had!r} then, {has!r} now); retrain the model "
                      "with benchmarks/train.py or evaluate it with the code it was trained with")
