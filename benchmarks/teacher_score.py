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
seed's file of a setting gives the same figures. A model trained on several traces
(``train.py --trace sdsc,lublin``) is scored on each of them in turn, or on the one ``--trace``
names.
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


def model_traces(setting: dict) -> list[str]:
    """The trace keys a model trained on (one, or several for ``--trace sdsc,lublin``)."""
    return [t.strip() for t in str(setting["trace"]).split(",") if t.strip()]


def teacher_env(setting: dict, traces: str, nb_jobs: int, trace: str | None = None
                ) -> SchedulingEnv:
    """The environment the model was evaluated in, on its training trace's file (``trace``:
    which one, for a model trained on several)."""
    if setting.get("mode") != "job_pick":
        raise ConfigError(f"mode {setting.get('mode')!r}: only job_pick models have a queue "
                          "teacher")
    keys = model_traces(setting)
    if trace is None:
        if len(keys) != 1:
            raise ConfigError(f"the model trained on {', '.join(keys)}: name one with --trace")
        trace = keys[0]
    elif trace not in keys:
        raise ConfigError(f"--trace {trace!r}: the model trained on {', '.join(keys)}; give one "
                          "of them")
    config = protocol.protocol_env_config(
        trace, traces, setting["backfill"], setting["decision"], nb_jobs=nb_jobs,
        window=setting.get("window") or protocol.WINDOW,
        observation=setting.get("observation", "job_window"),
        reservation=setting.get("reservation", "fcfs"),
        pick_limit=setting.get("pick_limit", "fits"))
    return SchedulingEnv(config=config)


def teacher_scores(model: str, traces: str, starts: Sequence[int],
                   nb_jobs: int = protocol.SEQUENCE_JOBS, trace: str | None = None
                   ) -> tuple[str, list[float]]:
    """(teacher, scores per start) of ``model``'s imitation teacher in its environment (on
    ``trace``, for a model trained on several).

    Raises:
        ConfigError: the model was not warm started by a queue heuristic.
    """
    from hdrm.agents.checkpoint import read_checkpoint

    setting = read_checkpoint(model)["options"]["setting"]
    teacher = setting.get("imitate")
    if not teacher:
        raise ConfigError(f"{model}: no imitation teacher recorded (it was not trained with "
                          "--imitate)")
    env = teacher_env(setting, traces, nb_jobs, trace)
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
    p.add_argument("--trace", default=None,
                   help="for a model trained on several traces: score on this one (default: "
                        "each in turn)")
    args = p.parse_args(argv)
    try:
        starts = [int(s) for s in args.starts.split(",") if s.strip()]
    except ValueError:
        p.error(f"--starts: expected comma-separated integers, got {args.starts!r}")
    if not Path(args.model).is_file():
        p.error(f"{args.model}: no such model file")
    from hdrm.agents.checkpoint import read_checkpoint

    keys = [args.trace] if args.trace else model_traces(
        read_checkpoint(args.model)["options"]["setting"])
    for key in keys:
        try:
            teacher, scores = teacher_scores(args.model, args.traces, starts, trace=key)
        except ConfigError as exc:
            print(f"teacher_score: error: {exc}", file=sys.stderr)
            return 2
        if len(keys) > 1 or args.trace:
            print(f"trace {key}")
        for start, score in zip(starts, scores):
            print(f"{start:>8d} {score:12.2f}")
        print(f"teacher {teacher}: mean {sum(scores) / len(scores):.2f} over {len(scores)} "
              "windows")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
