"""Ape-X DQN on the Lublin-1 job_pick row against the single-process DQN's validation score.

The setting is the single-process DQN's row of the comparison (``models/dqn_lublin_none_event.pt``,
trained by ``benchmarks/train.py --trace lublin --backfill none --learner dqn --decision event
--pick fitting --seed 0 --minutes 15``): the same environment, DQN options (``train.py``'s
``LEARNER_DEFAULTS["dqn"]``), training start indices, validation sequences and score (the greedy
policy's mean average bounded slowdown on the four validation sequences). Ape-X runs it with
``--actors`` actor processes (Ray actors, Ape-X's epsilons) feeding one replay actor, and the
learner in this process, which validates every ``--validate-every`` x 1,024 collected decisions
(the single-process run validates every 10 episodes of 1,024 decisions).

The run stops when the validation score reaches ``--target`` (default: the single-process
model's best validation, read from its checkpoint) or after ``--minutes``. It prints, and writes
to ``--json``, the wall time to the target, the decisions and gradient steps made, the replay's
counters and memory, the machine's load average along the way, and the single-process run's
time to the same score (its checkpoint records its wall time and decisions, and the decisions at
its best validation; its decision rate was constant, so the time at its best is their ratio).
The best model is written to ``--out`` in the single-process DQN's checkpoint format.

Usage::

    python benchmarks/bench_apex.py [--actors 2] [--minutes 15] [--target SCORE]
        [--apex-json '{"weight_sync": 50}'] [--out runs/bench_apex/apex_dqn_lublin.pt]
        [--json runs/bench_apex/summary.json]
"""

from __future__ import annotations

import argparse
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

REFERENCE = protocol.MODELS_DIR / "dqn_lublin_none_event.pt"
OUT_DIR = ROOT / "runs" / "bench_apex"


def reference_figures(path: Path) -> dict[str, Any]:
    """The single-process DQN's figures, from its checkpoint."""
    training = read_checkpoint(path)["options"]["training"]
    rate = training["env_steps"] / training["wall_s"]
    return {"model": str(path.relative_to(ROOT)), "best_validation": training["best_validation"],
            "best_env_steps": training["best_env_steps"], "env_steps": training["env_steps"],
            "wall_s": training["wall_s"], "decisions_per_s": round(rate, 1),
            "wall_s_to_best": round(training["best_env_steps"] / rate, 1),
            "command": training["command"]}


def settings(out: Path, seed: int) -> train.TrainSettings:
    """The single-process DQN row's settings."""
    return train.TrainSettings(out=str(out), trace="lublin", backfill="none", learner="dqn",
                               decision="event", pick="fitting", seed=seed)


def episodes(s: train.TrainSettings, val_starts: tuple[int, ...]) -> EpisodeSpec:
    """The actors' episodes: the row's environment, training starts and fitting picks."""
    env = train.make_env(s, s.train_jobs)
    pool = protocol.training_starts(s.trace, len(env.trace), s.train_jobs, s.mode)
    pool = pool[~np.isin(pool, np.array(val_starts, dtype=np.int64))]
    return EpisodeSpec(env.config, starts=tuple(int(x) for x in pool),
                       mask_filter=functools.partial(protocol.agent_mask, pick=s.pick),
                       action_map=protocol.env_action)


class Monitor:
    """The stop callback: validates every ``every`` decisions, keeps the best model, stops at
    the target or the time budget."""

    def __init__(self, s: train.TrainSettings, config: dict[str, Any], target: float,
                 minutes: float, every: int, echo: Any = print) -> None:
        self.s, self.config, self.target, self.minutes = s, config, target, minutes
        self.every, self.echo = every, echo
        spec = protocol.training_spec(s.trace, s.mode)
        self.validator = train.Validator(s, tuple(spec.validation_starts))
        self.next_at = every
        self.rows: list[dict[str, Any]] = []
        self.reached_s: float | None = None
        self.t0 = time.perf_counter()

    def __call__(self, agent: DQNAgent, p: ApexProgress) -> bool:
        wall = time.perf_counter() - self.t0
        if p.env_steps >= self.next_at:
            self.next_at += self.every
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
    reference = reference_figures(Path(a.reference))
    target = reference["best_validation"] if a.target is None else a.target
    s = settings(Path(a.out), a.seed)
    config = train.agent_config(s)
    apex = parse_apex({"actors": a.actors, **json.loads(a.apex_json)}, where="--apex-json")
    spec = protocol.training_spec(s.trace, s.mode)
    monitor = Monitor(s, config, target, a.minutes, a.validate_every * s.train_jobs)
    load_before = os.getloadavg()
    agent, progress = train_apex(config, episodes(s, tuple(spec.validation_starts)), apex,
                                 monitor, seed=a.seed, num_cpus=a.cpus)
    wall = time.perf_counter() - monitor.t0
    summary = {
        "setting": "Lublin-1, no backfilling, event, job_pick, pick fitting, seed "
                   f"{a.seed}", "actors": a.actors, "apex": apex.__dict__, "target": target,
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
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--target", type=float, help="validation score to reach (default: the "
                   "single-process model's best)")
    p.add_argument("--validate-every", type=int, default=10,
                   help="validate every this many x 1,024 decisions")
    p.add_argument("--apex-json", default="{}", help="Ape-X settings (hdrm.distributed.apex)")
    p.add_argument("--cpus", type=int, help="CPUs of the local Ray (default: the machine's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reference", default=str(REFERENCE))
    p.add_argument("--out", default=str(OUT_DIR / "apex_dqn_lublin.pt"))
    p.add_argument("--json", default=str(OUT_DIR / "summary.json"))
    a = p.parse_args(argv)
    summary = run(a)
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    ref = summary["reference"]
    reached = (f"reached {summary['target']:.2f} in {summary['wall_s_to_target']:.0f} s"
               if summary["reached"] else f"did not reach {summary['target']:.2f} "
               f"(best {summary['best_validation']:.2f}) in {summary['wall_s']:.0f} s")
    print(f"Ape-X DQN, {a.actors} actors: {reached}; {summary['env_steps']} decisions "
          f"({summary['decisions_per_s']}/s), {summary['updates']} gradient steps "
          f"({summary['updates_per_s']}/s)")
    print(f"single-process DQN: {ref['best_validation']:.2f} at {ref['wall_s_to_best']:.0f} s "
          f"({ref['decisions_per_s']} decisions/s, from its checkpoint)")
    print(f"load average (1 min): {summary['load_1min_before']} before, "
          f"{summary['load_1min_during']} at the validations; {summary['cpus']} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
