"""Score a model's teacher alone on the test windows, in the model's own environment.

A learner warm started by imitation (``train.py --imitate``) should be read beside its teacher:
what the learner adds is its score against the teacher's, played with the same window, the
same pick limit and reservation order, on the same test windows. This script reads those
settings from the model file and plays the teacher through that environment
(:func:`benchmarks.imitation.collect`, the loop that recorded the demonstrations), so a limited
teacher (``--pick-limit easy``: the first job of its order among EASY's picks) is scored exactly
as the learner saw it. Usage::

    python benchmarks/teacher_score.py \
        models/ppo-kernel_sdsc_none_event_easypicks_fcfs_fitting_seed0.pt

It prints each test window's average bounded slowdown and their mean (the protocol's 10 windows
of 1,024 jobs by default; ``--starts`` for others). The teacher does not depend on the seed: any
seed's file of a setting gives the same figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import imitation, protocol  # noqa: E402
from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402


def teacher_env(setting: dict, traces: str, nb_jobs: int) -> SchedulingEnv:
    """The environment the model was evaluated in, on its training trace's file."""
    if setting.get("mode") != "job_pick":
        raise ConfigError(f"mode {setting.get('mode')!r}: only job_pick models have a queue "
                          "teacher")
    config = protocol.protocol_env_config(
        setting["trace"], traces, setting["backfill"], setting["decision"], nb_jobs=nb_jobs,
        window=setting.get("window") or protocol.WINDOW,
        observation=setting.get("observation", "job_window"),
        reservation=setting.get("reservation", "fcfs"),
        pick_limit=setting.get("pick_limit", "fits"))
    return SchedulingEnv(config=config)


def teacher_scores(model: str, traces: str, starts: Sequence[int],
                   nb_jobs: int = protocol.SEQUENCE_JOBS) -> tuple[str, list[float]]:
    """(teacher, scores per start) of ``model``'s imitation teacher in its environment.

    Raises:
        ConfigError: the model was not warm started by a queue heuristic.
    """
    from hdrm.agents.checkpoint import read_checkpoint

    setting = read_checkpoint(model)["options"]["setting"]
    teacher = setting.get("imitate")
    if not teacher:
        raise ConfigError(f"{model}: no imitation teacher recorded (it was not trained with "
                          "--imitate)")
    env = teacher_env(setting, traces, nb_jobs)
    limited = env.config.pick_limit == "easy"
    backfill = "easy" if limited else setting["backfill"]
    demos = imitation.collect(env, list(starts), teacher, backfill, setting.get("pick", "env"),
                              1.0, 1.0, setting.get("objective", "avg_bounded_slowdown"))
    return teacher, list(demos.scores)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a model file trained with --imitate")
    p.add_argument("--traces", default=str(protocol.DEFAULT_TRACES))
    p.add_argument("--starts", default=",".join(map(str, protocol.TEST_STARTS)),
                   help="start indices (default: the protocol's test windows)")
    args = p.parse_args(argv)
    try:
        starts = [int(s) for s in args.starts.split(",") if s.strip()]
    except ValueError:
        p.error(f"--starts: expected comma-separated integers, got {args.starts!r}")
    if not Path(args.model).is_file():
        p.error(f"{args.model}: no such model file")
    try:
        teacher, scores = teacher_scores(args.model, args.traces, starts)
    except ConfigError as exc:
        print(f"teacher_score: error: {exc}", file=sys.stderr)
        return 2
    for start, score in zip(starts, scores):
        print(f"{start:>8d} {score:12.2f}")
    print(f"teacher {teacher}: mean {sum(scores) / len(scores):.2f} over {len(scores)} windows")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
