"""Ape-X DQN on the Lublin-1 job_pick row against the single-process DQN, in one command.

The setting is the single-process DQN's row of the comparison (``benchmarks/train.py --trace
lublin --backfill none --learner dqn --decision event --pick fitting --seed 0``): the same
environment, DQN options (``train.py``'s ``LEARNER_DEFAULTS["dqn"]``), training start indices
and validation sequences of the no-leakage rule, and the same score (the greedy policy's mean
average bounded slowdown on the validation sequences).

By default the command first trains the single-process DQN itself for ``--peer-minutes`` (its
*peer* run, ``train.py``'s own loop, in this process), so both learners are timed on the same
machine in the same conditions; the peer's best validation is the target and the wall time at
which the peer first reached it is the time to beat. ``--reference MODEL`` takes the peer's
figures from a checkpoint instead, which must have been validated on the same sequences (a
model trained before the rule was validated elsewhere, and is refused), and
``--reference-log`` its run's ``validation.csv``: so a peer run (written to
``dqn_peer.pt`` beside ``--out``, its log to ``peer/``) is kept if the command stops after it.

Ape-X then runs with ``--actors`` actor processes (Ray actors, Ape-X's epsilons) feeding one
replay actor, and the learner in this process, which validates every ``--validate-every`` x
1,024 collected decisions (the single-process run validates every 10 episodes of 1,024
decisions), or with ``--validate-updates N`` every N gradient steps (the single-process run
makes 2,560 between its validations: one per 4 decisions). With a low replay ratio the actors
collect many decisions per gradient step, so spacing validations by decisions would spend much
of the learner's time validating; spacing them by gradient steps spends the share the
single-process run spends. It stops when its validation score reaches the target or after
``--minutes``. The command prints, and writes to ``--json``, both runs' times to the target, the
decisions and gradient steps made, the replay's counters and memory, and the machine's load
average along the way. The best Ape-X model is written to ``--out`` in the single-process DQN's
checkpoint format. ``--agent-json`` changes Ape-X's DQN options (learner and actors) only; the
peer keeps the row's.

Seeds: one run of each learner says little (a DQN's time to a score varies several-fold with its
seed, and Ape-X's actors and learner interleave as the machine schedules them), so
``--peer-seeds 0,1,2`` runs the single-process DQN once per seed (the first sets the target,
the others stop at it: ``train.py --stop-at``) and ``--apex-seeds 0,1,2,3,4`` runs Ape-X once
per seed, one after the other. The verdict compares the medians of the times to the target, a
run that did not reach it counting as infinite. ``none`` runs no seed on that side (``--peer-seeds
none`` then needs ``--target``): ``benchmarks/bench_apex_cores.py`` runs each seed so, in its own
process on cores of its own, all at once on a many-core machine.

Usage::

    python benchmarks/bench_apex.py [--actors 2] [--minutes 15] [--peer-minutes 15]
        [--peer-seeds 0,1,2|none] [--apex-seeds 0,1,2|none]
        [--reference MODEL [--reference-log validation.csv]] [--target SCORE]
        [--validate-every K | --validate-updates N] [--apex-json '{"weight_sync": 50}']
        [--agent-json '{"params": {"batch_size": 32}}']
        [--out runs/bench_apex/apex_dqn_lublin.pt] [--json runs/bench_apex/summary.json]
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import cli_lists, protocol, train  # noqa: E402
from hdrm.agents.checkpoint import read_checkpoint, save_checkpoint  # noqa: E402
from hdrm.agents.dqn import DQNAgent  # noqa: E402
from hdrm.distributed.apex import ApexProgress, parse_apex, train_apex  # noqa: E402
from hdrm.distributed.apex_actor import EpisodeSpec  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402

OUT_DIR = ROOT / "runs" / "bench_apex"


def reference_figures(path: Path, validation_starts: tuple[int, ...],
                      log: Path | None = None) -> dict[str, Any]:
    """The single-process DQN's figures, from a checkpoint validated on ``validation_starts``;
    with its run's ``validation.csv`` (``log``), the time to its best is read from it, else
    estimated from its mean decision rate.

    Raises:
        ConfigError: the checkpoint was validated on other sequences (its score would not be
            comparable), or is not a finished ``train.py`` run.
    """
    options = read_checkpoint(path)["options"]
    training = options.get("training") or {}
    if not training.get("final") or "best_validation" not in training:
        raise ConfigError(f"--reference {path}: not a finished benchmarks/train.py run (no final "
                          "training figures); leave --reference out to train the peer here")
    starts = tuple(training.get("validation_starts") or ())
    if starts != tuple(validation_starts):
        raise ConfigError(f"--reference {path}: validated on sequences {list(starts)}, not on the "
                          f"no-leakage rule's {list(validation_starts)}, so its score is not "
                          "comparable; leave --reference out to train the peer here")
    rate = training["env_steps"] / training["wall_s"]
    to_best = (first_reached(log, training["best_validation"]) if log is not None
               else round(training["best_env_steps"] / rate, 1))
    return {"model": str(path), "seed": (options.get("setting") or {}).get("seed", "?"),
            "best_validation": training["best_validation"],
            "best_env_steps": training["best_env_steps"], "env_steps": training["env_steps"],
            "wall_s": training["wall_s"], "decisions_per_s": round(rate, 1),
            "wall_s_to_best": to_best, "command": training["command"],
            "source": "checkpoint" + (" and its validation log" if log is not None else "")}


def first_reached(validation_csv: Path, score: float, missing_ok: bool = False
                  ) -> float | None:
    """Wall seconds of the first validation in ``validation_csv`` scoring ``score`` or less
    (``score`` rounded as the log writes it, to 6 significant digits); with ``missing_ok``,
    None when none did."""
    logged = float(f"{score:.6g}")
    with validation_csv.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if float(row["objective"]) <= logged:
                return float(row["wall_s"])
    if missing_ok:
        return None
    raise ConfigError(f"{validation_csv}: no validation reached {score:g}")


def peer_figures(out: Path, seed: int, minutes: float, echo: Any = print,
                 stop_at: float | None = None, log_dir: Path | None = None) -> dict[str, Any]:
    """Train the single-process DQN for ``minutes`` here (or until a validation scores
    ``stop_at`` or less); returns its figures.

    Its best validation is the target when no ``stop_at`` is given; ``wall_s_to_best`` is when
    it first scored its best, ``wall_s_to_target`` when it first scored ``stop_at`` (None if
    it did not).
    """
    s = settings(out, seed)
    s.minutes, s.stop_at = minutes, stop_at
    s.log_dir = str(log_dir or out.parent / "peer")
    s.command = (f"benchmarks/bench_apex.py peer run: {minutes:g} min, seed {seed}"
                 + ("" if stop_at is None else f", stop at {stop_at:g}"))
    echo(f"single-process DQN (peer), seed {seed}, {minutes:g} min"
         + ("" if stop_at is None else f" or until {stop_at:.2f}") + ":")
    result = train.train(s, echo=lambda line: echo(f"  {line}"))
    log = Path(s.log_dir) / "validation.csv"
    figures = {"seed": seed, "model": str(out), "best_validation": result.best_validation,
               "best_env_steps": result.best_env_steps, "env_steps": result.env_steps,
               "wall_s": round(result.wall_s, 1),
               "decisions_per_s": round(result.env_steps / result.wall_s, 1),
               "wall_s_to_best": first_reached(log, result.best_validation),
               "stopped_by": result.stopped_by, "log": str(log),
               "command": s.command, "source": "peer run"}
    if stop_at is not None:
        figures["wall_s_to_target"] = first_reached(log, stop_at, missing_ok=True)
    return figures


def median_time(times: list[float | None]) -> float | None:
    """The median of times to the target, a run that did not reach it counting as infinite;
    None for no run."""
    if not times:
        return None
    return float(np.median([math.inf if t is None else t for t in times]))


def settings(out: Path, seed: int,
             agent_json: dict[str, Any] | None = None) -> train.TrainSettings:
    """The single-process DQN row's settings; ``agent_json`` is merged into its DQN options
    (Ape-X's ``--agent-json``: the peer keeps the row's own)."""
    return train.TrainSettings(out=str(out), trace="lublin", backfill="none", learner="dqn",
                               decision="event", pick="fitting", seed=seed,
                               agent_json=dict(agent_json or {}))


def episodes(s: train.TrainSettings, val_starts: tuple[int, ...]) -> EpisodeSpec:
    """The actors' episodes: the row's environment, training starts and fitting picks."""
    env = train.make_env(s, s.train_jobs)
    pool = protocol.training_starts(s.trace, len(env.trace), s.train_jobs, s.mode)
    pool = pool[~np.isin(pool, np.array(val_starts, dtype=np.int64))]
    return EpisodeSpec(env.config, starts=tuple(int(x) for x in pool),
                       mask_filter=functools.partial(protocol.agent_mask, pick=s.pick),
                       action_map=protocol.env_action)


class Monitor:
    """The stop callback: validates every ``every`` decisions (or, with ``by="updates"``, every
    ``every`` gradient steps), keeps the best model, stops at the target or the time budget."""

    def __init__(self, s: train.TrainSettings, config: dict[str, Any], target: float,
                 minutes: float, every: int, echo: Any = print, by: str = "decisions") -> None:
        if by not in ("decisions", "updates"):
            raise ValueError(f"by={by!r}: 'decisions' or 'updates'")
        self.s, self.config, self.target, self.minutes = s, config, target, minutes
        self.every, self.echo, self.by = every, echo, by
        spec = protocol.training_spec(s.trace, s.mode)
        self.validator = train.Validator(s, tuple(spec.validation_starts))
        self.next_at = every
        self.rows: list[dict[str, Any]] = []
        self.reached_s: float | None = None
        self.t0 = time.perf_counter()

    def __call__(self, agent: DQNAgent, p: ApexProgress) -> bool:
        wall = time.perf_counter() - self.t0
        done = p.updates if self.by == "updates" else p.env_steps
        if done >= self.next_at:  # the next one after what is done (no catch-up validations)
            self.next_at = (done // self.every + 1) * self.every
            self.validate(agent, p)
            wall = time.perf_counter() - self.t0
        return self.reached_s is not None or wall >= self.minutes * 60

    def validate(self, agent: DQNAgent, p: ApexProgress) -> None:
        """Score the greedy policy; save it when best; note when the target is reached."""
        score, improved = self.validator(agent, p.env_steps)
        wall = time.perf_counter() - self.t0
        row = {"wall_s": round(wall, 1), "env_steps": p.env_steps, "updates": p.updates,
               "validation": round(score, 3), "load_1min": round(os.getloadavg()[0], 2),
               "restarts": p.restarts}
        self.rows.append(row)
        self.echo(f"{wall / 60:6.1f} min  decisions {p.env_steps:8d}  gradient steps "
                  f"{p.updates:7d}  validation {score:8.2f}{'  *' if improved else ''}  "
                  f"load {row['load_1min']:.1f}")
        if improved:
            save_checkpoint(agent, self.s.out, apex_metadata(self.s, agent, self.config, {
                "wall_s": wall, "env_steps": p.env_steps, "updates": p.updates, "final": False}))
        if score <= self.target and self.reached_s is None:
            self.reached_s = wall


def single_process(a: argparse.Namespace, validation_starts: tuple[int, ...]
                   ) -> list[dict[str, Any]]:
    """The single-process DQN's figures: from ``--reference``, or peer runs of the
    ``--peer-seeds`` (the first runs its whole budget and sets the target unless ``--target``
    does; the others stop when they reach it)."""
    out = Path(a.out).with_name("dqn_peer.pt")
    if a.reference:
        figures = reference_figures(Path(a.reference), validation_starts,
                                    Path(a.reference_log) if a.reference_log else None)
        target = figures["best_validation"] if a.target is None else a.target
        if a.target is not None and a.reference_log:
            figures["wall_s_to_target"] = first_reached(Path(a.reference_log), target,
                                                        missing_ok=True)
        else:
            figures["wall_s_to_target"] = figures["wall_s_to_best"] \
                if target == figures["best_validation"] else None
        return [figures]
    minutes = a.peer_minutes if a.peer_minutes is not None else a.minutes
    peers: list[dict[str, Any]] = []
    for k, seed in enumerate(a.peer_seeds):
        target = a.target if a.target is not None or not peers else peers[0]["best_validation"]
        name = out if k == 0 else out.with_name(f"{out.stem}_seed{seed}.pt")
        log_dir = out.parent / ("peer" if k == 0 else f"peer_seed{seed}")
        figures = peer_figures(name, seed, minutes, stop_at=target, log_dir=log_dir)
        if target is None:  # the first seed's best is the target
            figures["wall_s_to_target"] = figures["wall_s_to_best"]
        peers.append(figures)
    return peers


def apex_run(a: argparse.Namespace, seed: int, target: float, out: Path) -> dict[str, Any]:
    """One Ape-X run of seed ``seed`` until it validates at ``target`` or less or ``--minutes``
    pass; writes its best model to ``out`` and returns its figures."""
    s = settings(out, seed, a.agent_json)
    config = train.agent_config(s)
    apex = parse_apex({"actors": a.actors, **a.apex_json}, where="--apex-json")
    spec = protocol.training_spec(s.trace, s.mode)
    if a.validate_updates:
        monitor = Monitor(s, config, target, a.minutes, a.validate_updates, by="updates")
    else:
        monitor = Monitor(s, config, target, a.minutes, a.validate_every * s.train_jobs)
    print(f"Ape-X DQN, {a.actors} actors, seed {seed}, until {target:.2f} or {a.minutes:g} min:")
    load_before = os.getloadavg()
    agent, progress = train_apex(config, episodes(s, tuple(spec.validation_starts)), apex,
                                 monitor, seed=seed, num_cpus=a.cpus)
    wall = time.perf_counter() - monitor.t0
    command = "python benchmarks/bench_apex.py " + " ".join(sys.argv[1:])
    v = monitor.validator
    if v.best_state is not None:  # the best model is the one kept, as train.py does
        agent.load_state_dict(v.best_state[0])
        agent.load_optimizer_state_dict(v.best_state[1])
    save_checkpoint(agent, s.out, apex_metadata(s, agent, config, {
        "wall_s": round(wall, 1), "env_steps": progress.env_steps, "updates": progress.updates,
        "episodes": progress.episodes, "best_env_steps": v.best_env_steps,
        "best_validation": v.best, "validation_starts": list(v.starts),
        "apex": apex.__dict__, "stopped_by": "target" if monitor.reached_s else "minutes",
        "command": command, "final": True}))
    return {
        "seed": seed, "model": str(out), "apex": apex.__dict__,
        "validate": {"every": monitor.every, "by": monitor.by},
        "reached": monitor.reached_s is not None, "wall_s_to_target": monitor.reached_s,
        "wall_s": round(wall, 1), "env_steps": progress.env_steps, "updates": progress.updates,
        "decisions_per_s": round(progress.env_steps / wall, 1),
        "updates_per_s": round(progress.updates / wall, 2),
        "best_validation": v.best, "restarts": progress.restarts,
        "replay": progress.stats, "load_1min_before": round(load_before[0], 2),
        "load_1min_during": [r["load_1min"] for r in monitor.rows], "validations": monitor.rows,
    }


def run(a: argparse.Namespace) -> dict[str, Any]:
    """Time the single-process DQN's seeds and Ape-X's runs to the same score; returns the
    summary."""
    import torch

    torch.set_num_threads(1)
    spec = protocol.training_spec("lublin", "job_pick")
    peers = (single_process(a, tuple(spec.validation_starts))
             if a.peer_seeds or a.reference else [])
    target = peers[0]["best_validation"] if a.target is None else a.target
    out = Path(a.out)
    runs = [apex_run(a, seed, target, out if k == 0 else out.with_name(f"{out.stem}_seed{seed}"
                                                                       f"{out.suffix}"))
            for k, seed in enumerate(a.apex_seeds)]
    return summarise(a, target, peers, runs, os.cpu_count())


def summarise(a: argparse.Namespace, target: float, peers: list[dict[str, Any]],
              runs: list[dict[str, Any]], cpus: int | None) -> dict[str, Any]:
    """The summary of ``peers`` (single-process figures) and Ape-X ``runs`` timed to ``target``;
    a median and the verdict are None where a side has no run."""
    single_median = median_time([p.get("wall_s_to_target") for p in peers])
    apex_median = median_time([r["wall_s_to_target"] for r in runs])
    return {
        "setting": "Lublin-1, no backfilling, event, job_pick, pick fitting",
        "actors": a.actors, "target": target, "agent_json": a.agent_json,
        "single_process": peers, "apex": runs,
        "median_s": {"single_process": single_median, "apex": apex_median},
        "met": None if single_median is None or apex_median is None
        else apex_median < single_median,
        "cpus": cpus,
        "command": "python benchmarks/bench_apex.py " + " ".join(sys.argv[1:]),
    }


def apex_metadata(s: train.TrainSettings, agent: DQNAgent, config: dict[str, Any],
                  figures: dict[str, Any]) -> dict[str, Any]:
    """``train.py``'s checkpoint metadata, labelled ``DQN-kernel Ape-X`` (its own column in
    ``benchmarks/compare.py``)."""
    meta = train.metadata(s, agent, config, figures)
    meta["label"] = f"{meta['label']} Ape-X"
    return meta


def report(summary: dict[str, Any], echo: Any = print) -> None:
    """Print each run's time to the target and the two medians."""
    target = summary["target"]

    def line(name: str, seconds: float | None, extra: str) -> None:
        when = "not reached" if seconds is None else f"{seconds:6.0f} s"
        echo(f"  {name:<34} {when:>12}  {extra}")

    echo(f"time to a validation of {target:.2f} or less (Lublin-1 job_pick row):")
    for peer in summary["single_process"]:
        line(f"single-process DQN, seed {peer.get('seed', '?')}", peer.get("wall_s_to_target"),
             f"best {peer['best_validation']:.2f}, {peer['decisions_per_s']} decisions/s "
             f"({peer['source']})")
    for run in summary["apex"]:
        line(f"Ape-X, {summary['actors']} actors, seed {run['seed']}", run["wall_s_to_target"],
             f"best {run['best_validation']:.2f}, {run['updates']} gradient steps "
             f"({run['updates_per_s']}/s), {run['env_steps']} decisions, load "
             f"{run['load_1min_before']} before")
    medians = summary["median_s"]
    if summary["met"] is None:
        return
    echo(f"median: single-process {medians['single_process']:.0f} s, Ape-X "
         f"{medians['apex']:.0f} s: Ape-X {'sooner' if summary['met'] else 'not sooner'} "
         f"({summary['cpus']} CPUs)")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run, print the summary, write it to ``--json``."""
    p = argparse.ArgumentParser(prog="bench_apex.py", description=__doc__.split("\n")[0])
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--target", type=float, help="validation score to reach (default: the "
                   "single-process run's best)")
    p.add_argument("--peer-minutes", type=float, help="minutes of the single-process DQN's run "
                   "made first (default: --minutes)")
    p.add_argument("--validate-every", type=int, default=10,
                   help="validate every this many x 1,024 decisions")
    p.add_argument("--validate-updates", type=int, default=0, metavar="N",
                   help="validate every N gradient steps instead (the single-process run: "
                   "2,560)")
    p.add_argument("--apex-json", default="{}", help="Ape-X settings (hdrm.distributed.apex)")
    p.add_argument("--agent-json", default="{}", help="JSON merged into Ape-X's DQN options "
                   "(learner and actors; e.g. '{\"params\": {\"batch_size\": 32}}'); the peer "
                   "keeps the row's")
    p.add_argument("--cpus", type=int, help="CPUs of the local Ray (default: the machine's)")
    p.add_argument("--seed", type=int, default=0,
                   help="the seed of both learners unless --peer-seeds / --apex-seeds say")
    p.add_argument("--peer-seeds", metavar="S1,S2,...", help="single-process DQN runs, one per "
                   "seed: the first sets the target (its best) unless --target does, the others "
                   "stop when they reach it (default: --seed; none: no peer run)")
    p.add_argument("--apex-seeds", metavar="S1,S2,...", help="Ape-X runs, one per seed, one "
                   "after the other (default: --seed; none: no Ape-X run)")
    p.add_argument("--reference", help="take the single-process figures from this DQN "
                   "checkpoint (validated on the rule's sequences) instead of a peer run")
    p.add_argument("--reference-log", help="that run's validation.csv, for its time to its best")
    p.add_argument("--out", default=str(OUT_DIR / "apex_dqn_lublin.pt"))
    p.add_argument("--json", default=str(OUT_DIR / "summary.json"))
    a = p.parse_args(argv)
    for option, value, ok, expected in (
            ("--actors", a.actors, a.actors >= 1, "1 actor or more"),
            ("--minutes", a.minutes, a.minutes > 0, "a budget above 0 minutes"),
            ("--peer-minutes", a.peer_minutes, a.peer_minutes is None or a.peer_minutes > 0,
             "a budget above 0 minutes"),
            ("--cpus", a.cpus, a.cpus is None or a.cpus >= 1, "1 CPU or more"),
            ("--seed", a.seed, a.seed >= 0, "a non-negative seed"),
            ("--target", a.target, a.target is None or a.target > 0,
             "a positive score (average bounded slowdowns are 1 or more)")):
        if not ok:
            p.error(f"{option} {value:g}: expected {expected}")
    if a.validate_every < 1 or a.validate_updates < 0:
        p.error(f"--validate-every {a.validate_every} / --validate-updates {a.validate_updates}: "
                "validate every 1 x 1,024 decisions or more, or every 1 gradient step or more")
    for flag in ("peer_seeds", "apex_seeds"):
        text = getattr(a, flag)
        try:
            seeds = ([a.seed] if text is None else [] if text.strip().lower() == "none"
                     else cli_lists.ints(text, "--" + flag.replace("_", "-"), distinct=True,
                                         minimum=0))
        except ConfigError as exc:
            p.error(str(exc))
        setattr(a, flag, seeds)
    if not a.peer_seeds and not a.reference and a.target is None:
        p.error("--peer-seeds none: give --target SCORE (the score the Ape-X runs must reach)")
    if not a.apex_seeds and not a.peer_seeds:
        p.error("--peer-seeds none --apex-seeds none: nothing to run; give seeds to one of them")
    for flag, example in (("apex_json", '{"min_replay_ratio": 0.05}'),
                          ("agent_json", '{"params": {"batch_size": 32}}')):
        text = getattr(a, flag)
        option = "--" + flag.replace("_", "-")
        try:
            setattr(a, flag, json.loads(text))
        except json.JSONDecodeError as exc:
            p.error(f"{option} {text!r}: not JSON ({exc.msg} at character {exc.pos})")
        if not isinstance(getattr(a, flag), dict):
            p.error(f"{option} {text}: give a JSON object, e.g. '{example}'")
    try:
        summary = run(a)
    except HdrmError as exc:
        print(f"bench_apex.py: error: {exc}", file=sys.stderr)
        return 2
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    report(summary, echo=print)
    return 0


if __name__ == "__main__":
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
