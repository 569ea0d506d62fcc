"""``hdeeprm-launch``: train or evaluate an agent.py on the experiment of an options.json.

Usage::

    hdeeprm-launch AGENT_PY OPTIONS_JSON [--inmodel PATH] [--outmodel PATH] [--nbruns N]
                   [--outdir DIR] [--episodes N] [--quiet]

The agent plays ``pybatsim.agent.episodes`` episodes (or ``--episodes``), ``--nbruns`` times, with
the same model throughout; ``pybatsim.agent.run`` says whether it learns (``train``) or is only
evaluated (``test``). The output folder receives episodes.csv, actions.csv, the engine outputs of
the last episode and, with ``--outmodel``, a checkpoint saved after every run. See
docs/launcher.rst.

This module is the only part of the launcher that prints or exits: bad input (a missing file,
invalid JSON, a bad option, a broken agent.py, a checkpoint of another network) is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from hdrm import __version__
from hdrm.errors import ConfigError, HdrmError
from hdrm.launch.experiment import Experiment, build_experiment
from hdrm.launch.logs import RunLog, TensorBoardHook, tensorboard_writer
from hdrm.launch.loop import EpisodeActions, EpisodeRecord, HookList, Hooks, run_experiment
from hdrm.options import load_options
from hdrm.sim.outputs import make_outdir

PROG = "hdeeprm-launch"
#: Rows of the final table before it shows only the last ones.
TABLE_ROWS = 20


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser of ``hdeeprm-launch``."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train or evaluate a scheduling agent (agent.py) on the experiment of an "
        "options.json, and write Batsim-style outputs and learning logs.",
        epilog="example: hdeeprm-launch agents/ppo.py examples/ppo/options.json --outmodel ppo.pt",
    )
    parser.add_argument("agent", metavar="AGENT_PY", help="the agent file (one Agent subclass)")
    parser.add_argument("options", metavar="OPTIONS_JSON", help="the experiment's options file")
    parser.add_argument("--inmodel", metavar="PATH", help="checkpoint to start from")
    parser.add_argument("--outmodel", metavar="PATH", help="where to save the model (after each run)")
    parser.add_argument("--nbruns", type=int, default=1, metavar="N",
                        help="repeat the episodes N times with the same model (default 1)")
    parser.add_argument("--episodes", type=int, metavar="N",
                        help="episodes per run (default: pybatsim.agent.episodes)")
    parser.add_argument("--outdir", metavar="DIR",
                        help="output folder (default: runs/<timestamp> next to the options file)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary table")
    parser.add_argument("--version", action="version", version=f"{PROG} (hdrm {__version__})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hdeeprm-launch``; returns the exit status (0 done, 2 bad input, 130 interrupted)."""
    args = build_parser().parse_args(argv)
    try:
        return launch(args)
    except HdrmError as exc:
        print(f"{PROG}: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def launch(args: argparse.Namespace) -> int:
    """Build the experiment of ``args``, run it, write its outputs and print the summary."""
    if args.nbruns < 1:
        raise ConfigError(f"--nbruns: expected a positive number of runs, got {args.nbruns}")
    options = load_options(args.options)
    logging.basicConfig(level=options.pybatsim.log_level, format="%(levelname)s %(name)s: %(message)s")
    exp = build_experiment(options, args.agent, args.episodes)
    _check_models(exp, args)
    if args.inmodel:
        from hdrm.agents.checkpoint import load_checkpoint  # torch: only with a model

        load_checkpoint(exp.agent, args.inmodel, optimizer=exp.training)
    elif not exp.classic and not exp.training:
        print(f"{PROG}: note: evaluating an untrained model (no --inmodel)", file=sys.stderr)
    outdir = _outdir(args)
    log = RunLog(outdir, exp.env.action_names)
    writer = tensorboard_writer(outdir / "tensorboard")
    board = TensorBoardHook(writer) if writer is not None else None
    hooks = HookList(log, board, _Saver(exp, args.outmodel) if args.outmodel else None,
                     _progress(exp, args))
    t0 = time.perf_counter()
    try:
        try:
            records = run_experiment(exp, args.nbruns, hooks)
        finally:
            _close(hooks, board)
        paths = log.finish(exp.env)
        paths.update(_batsim_outputs(exp, outdir))
    finally:
        exp.env.close()  # engine batsim: ends any Batsim run still going
    if args.quiet:
        print(f"{PROG}: {len(records)} episodes, outputs in {outdir}")
    else:
        _print_summary(exp, args, records, time.perf_counter() - t0, outdir, paths)
    return 0


def _check_models(exp: Experiment, args: argparse.Namespace) -> None:
    for flag in ("inmodel", "outmodel"):
        if getattr(args, flag) and exp.classic:
            raise ConfigError(
                f"--{flag} {getattr(args, flag)}: {exp.agent_path} is a classic agent, which has "
                f"no model; drop --{flag} or give a learning agent.py"
            )


def _outdir(args: argparse.Namespace) -> Path:
    """``--outdir``, or a new ``runs/<timestamp>`` folder next to the options file."""
    if args.outdir:
        path = Path(args.outdir)
    else:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        base = Path(args.options).resolve().parent / "runs" / stamp
        path, k = base, 1
        while path.exists():
            k += 1
            path = base.with_name(f"{stamp}-{k}")
    return make_outdir(path)


class _Saver(Hooks):
    """Saves a checkpoint (atomically) at the end of every run."""

    def __init__(self, exp: Experiment, path: str) -> None:
        from hdrm.agents.checkpoint import save_checkpoint  # torch: only with a model

        self.save = save_checkpoint
        self.exp = exp
        self.path = path

    def run_ended(self, run: int, records: list[EpisodeRecord]) -> None:
        self.save(self.exp.agent, self.path, self.exp.options.to_dict())


class _Progress(Hooks):
    """tqdm bars over the episodes and over the jobs and decisions of the current episode."""

    step_every = 64

    def __init__(self, total: int) -> None:
        from tqdm import tqdm

        self.tqdm = tqdm
        self.episodes = tqdm(total=total, unit="episode", file=sys.stderr, position=0)
        self.steps: Any = None

    def episode_started(self, episode: int, nb_jobs: int) -> None:
        self.steps = self.tqdm(total=nb_jobs, unit="job", desc=f"episode {episode}",
                               file=sys.stderr, position=1, leave=False)

    def stepped(self, steps: int, info: dict[str, Any]) -> None:
        self.steps.set_postfix_str(f"{steps} decisions", refresh=False)
        self.steps.update(info["jobs_done"] - self.steps.n)

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        self.steps.close()
        self.episodes.set_postfix_str(f"return {record.return_:.4g}", refresh=False)
        self.episodes.update(1)

    def close(self) -> None:
        if self.steps is not None:
            self.steps.close()
        self.episodes.close()


def _progress(exp: Experiment, args: argparse.Namespace) -> _Progress | None:
    if args.quiet or not sys.stderr.isatty():
        return None
    return _Progress(exp.episodes * args.nbruns)


def _close(hooks: HookList, board: TensorBoardHook | None) -> None:
    for hook in hooks.hooks:
        if isinstance(hook, _Progress):
            hook.close()
    if board is not None:
        board.close()


def _batsim_outputs(exp: Experiment, outdir: Path) -> dict[str, Path]:
    """Engine batsim: Batsim's own out_jobs.csv, out_schedule.csv and log of the last episode,
    copied into ``outdir`` (replacing the files written from the environment's records)."""
    copied = {}
    for kind, path in exp.env.unwrapped.batsim_outputs().items():
        copied[kind] = Path(shutil.copyfile(path, outdir / path.name))
    return copied


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _print_summary(exp: Experiment, args: argparse.Namespace, records: list[EpisodeRecord],
                   wall_s: float, outdir: Path, paths: dict[str, Path]) -> None:
    env_opts = exp.options.pybatsim.env
    mode = "train" if exp.training else "test"
    print(f"{PROG}: {type(exp.agent).__name__} from {exp.agent_path} ({mode}), "
          f"{len(records)} episodes on {exp.env.platform.name} ({exp.env.platform.nb_cores} cores), "
          f"{env_opts.actions.mode} with {exp.env.action_space.n} actions, "
          f"objective {env_opts.objective}")
    _print_table(records)
    steps = sum(r.steps for r in records)
    best = min(records, key=lambda r: r.objective)
    print(f"  objective {env_opts.objective}: last {records[-1].objective:.6g}, "
          f"best {best.objective:.6g} (episode {best.episode})")
    print(f"  wall time {wall_s:.2f} s, {steps} decisions ({steps / max(wall_s, 1e-9):,.0f} per s)")
    if args.outmodel:
        print(f"  model saved to {args.outmodel}")
    print(f"  outputs in {outdir}: {', '.join(sorted(p.name for p in paths.values()))}")


def _print_table(records: list[EpisodeRecord]) -> None:
    header = ("episode", "steps", "return", "loss", "makespan_h", "mean_wait_s", "mean_bsld",
              "energy_MJ", "wall_s")
    shown = records[-TABLE_ROWS:]
    if len(records) > len(shown):
        print(f"  ({len(records) - len(shown)} earlier episodes in episodes.csv)")
    rows = [header] + [
        (str(r.episode), str(r.steps), f"{r.return_:.6g}", _num(r.loss), f"{r.makespan_s / 3600:.3f}",
         f"{r.mean_waiting_s:.1f}", f"{r.mean_bounded_slowdown:.3f}", f"{r.energy_j / 1e6:.3f}",
         f"{r.wall_s:.2f}")
        for r in shown
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths)))


def _num(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.4g}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
