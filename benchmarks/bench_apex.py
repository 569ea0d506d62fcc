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

Usage::

    python benchmarks/bench_apex.py [--actors 2] [--minutes 15] [--peer-minutes 15]
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
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import protocol, train  # noqa: E402
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
    training = read_checkpoint(path)["options"].get("training") or {}
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
    return {"model": str(path), "best_validation": training["best_validation"],
            "best_env_steps": training["best_env_steps"], "env_steps": training["env_steps"],
            "wall_s": training["wall_s"], "decisions_per_s": round(rate, 1),
            "wall_s_to_best": to_best, "command": training["command"],
            "source": "checkpoint" + (" and its validation log" if log is not None else "")}


def first_reached(validation_csv: Path, score: float) -> float:
    """Wall seconds of the first validation in ``validation_csv`` scoring ``score`` or less
    (``score`` rounded as the log writes it, to 6 significant digits)."""
    logged = float(f"{score:.6g}")
    with validation_csv.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if float(row["objective"]) <= logged:
                return float(row["wall_s"])
    raise ConfigError(f"{validation_csv}: no validation reached {score:g}")


def peer_figures(out: Path, seed: int, minutes: float, echo: Any = print) -> dict[str, Any]:
    """Train the single-process DQN for ``minutes`` here; returns its figures.

    Its best validation becomes the target; ``wall_s_to_best`` is when it first scored it.
    """
    s = settings(out, seed)
    s.minutes, s.log_dir = minutes, str(out.parent / "peer")
    s.command = f"benchmarks/bench_apex.py peer run: {minutes:g} min, seed {seed}"
    echo(f"single-process DQN (peer), {minutes:g} min:")
    result = train.train(s, echo=lambda line: echo(f"  {line}"))
    return {"model": str(out), "best_validation": result.best_validation,
            "best_env_steps": result.best_env_steps, "env_steps": result.env_steps,
            "wall_s": round(result.wall_s, 1),
            "decisions_per_s": round(result.env_steps / result.wall_s, 1),
            "wall_s_to_best": first_reached(Path(s.log_dir) / "validation.csv",
                                            result.best_validation),
            "command": s.command, "source": "peer run"}


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


def run(a: argparse.Namespace) -> dict[str, Any]:
    """Train with Ape-X as the command line says; returns the summary."""
    import torch

    torch.set_num_threads(1)
    s = settings(Path(a.out), a.seed, a.agent_json)
    config = train.agent_config(s)
    apex = parse_apex({"actors": a.actors, **a.apex_json}, where="--apex-json")
    spec = protocol.training_spec(s.trace, s.mode)
    load_peer = os.getloadavg()
    if a.reference:
        reference = reference_figures(Path(a.reference), tuple(spec.validation_starts),
                                      Path(a.reference_log) if a.reference_log else None)
    else:
        reference = peer_figures(Path(a.out).with_name("dqn_peer.pt"), a.seed,
                                 a.peer_minutes if a.peer_minutes is not None else a.minutes)
    reference["load_1min_before"] = round(load_peer[0], 2)
    target = reference["best_validation"] if a.target is None else a.target
    if a.validate_updates:
        monitor = Monitor(s, config, target, a.minutes, a.validate_updates, by="updates")
    else:
        monitor = Monitor(s, config, target, a.minutes, a.validate_every * s.train_jobs)
    load_before = os.getloadavg()
    agent, progress = train_apex(config, episodes(s, tuple(spec.validation_starts)), apex,
                                 monitor, seed=a.seed, num_cpus=a.cpus)
    wall = time.perf_counter() - monitor.t0
    summary = {
        "setting": "Lublin-1, no backfilling, event, job_pick, pick fitting, seed "
                   f"{a.seed}", "actors": a.actors, "apex": apex.__dict__, "target": target,
        "validate": {"every": monitor.every, "by": monitor.by}, "agent_json": a.agent_json,
        "reached": monitor.reached_s is not None, "wall_s_to_target": monitor.reached_s,
        "wall_s": round(wall, 1), "env_steps": progress.env_steps, "updates": progress.updates,
        "decisions_per_s": round(progress.env_steps / wall, 1),
        "updates_per_s": round(progress.updates / wall, 2),
        "best_validation": monitor.validator.best, "restarts": progress.restarts,
        "replay": progress.stats, "load_1min_before": round(load_before[0], 2),
        "load_1min_during": [r["load_1min"] for r in monitor.rows], "validations": monitor.rows,
        "cpus": os.cpu_count(), "reference": reference,
        "command": "python benchmarks/bench_apex.py " + " ".join(sys.argv[1:]),
    }
    v = monitor.validator
    if v.best_state is not None:  # the best model is the one kept, as train.py does
        agent.load_state_dict(v.best_state[0])
        agent.load_optimizer_state_dict(v.best_state[1])
    save_checkpoint(agent, s.out, apex_metadata(s, agent, config, {
        "wall_s": round(wall, 1), "env_steps": progress.env_steps, "updates": progress.updates,
        "episodes": progress.episodes, "best_env_steps": v.best_env_steps,
        "best_validation": v.best, "validation_starts": list(v.starts),
        "apex": apex.__dict__, "stopped_by": "target" if monitor.reached_s else "minutes",
        "command": summary["command"], "final": True}))
    return summary


def apex_metadata(s: train.TrainSettings, agent: DQNAgent, config: dict[str, Any],
                  figures: dict[str, Any]) -> dict[str, Any]:
    """``train.py``'s checkpoint metadata, labelled ``DQN-kernel Ape-X`` (its own column in
    ``benchmarks/compare.py``)."""
    meta = train.metadata(s, agent, config, figures)
    meta["label"] = f"{meta['label']} Ape-X"
    return meta


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
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reference", help="take the single-process figures from this DQN "
                   "checkpoint (validated on the rule's sequences) instead of a peer run")
    p.add_argument("--reference-log", help="that run's validation.csv, for its time to its best")
    p.add_argument("--out", default=str(OUT_DIR / "apex_dqn_lublin.pt"))
    p.add_argument("--json", default=str(OUT_DIR / "summary.json"))
    a = p.parse_args(argv)
    if a.validate_every < 1 or a.validate_updates < 0:
        p.error(f"--validate-every {a.validate_every} / --validate-updates {a.validate_updates}: "
                "validate every 1 x 1,024 decisions or more, or every 1 gradient step or more")
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
    ref = summary["reference"]
    reached = (f"reached {summary['target']:.2f} in {summary['wall_s_to_target']:.0f} s"
               if summary["reached"] else f"did not reach {summary['target']:.2f} "
               f"(best {summary['best_validation']:.2f}) in {summary['wall_s']:.0f} s")
    print(f"Ape-X DQN, {a.actors} actors: {reached}; {summary['env_steps']} decisions "
          f"({summary['decisions_per_s']}/s), {summary['updates']} gradient steps "
          f"({summary['updates_per_s']}/s)")
    print(f"single-process DQN: {ref['best_validation']:.2f} first at "
          f"{ref['wall_s_to_best']:.0f} s ({ref['decisions_per_s']} decisions/s, {ref['source']})")
    print(f"load average (1 min): {summary['load_1min_before']} before, "
          f"{summary['load_1min_during']} at the validations; {summary['cpus']} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
