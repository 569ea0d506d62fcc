"""``hdeeprm-launch``: train or evaluate an agent.py on the experiment of an options.json.

Usage::

    hdeeprm-launch AGENT_PY OPTIONS_JSON [--inmodel PATH] [--outmodel PATH] [--nbruns N]
                   [--outdir DIR] [--overwrite] [--episodes N] [--save-every-episodes N]
                   [--save-every-minutes M] [--allow-other-class] [--tensorboard] [--quiet]
                   [--workers N [--address ADDR]] [--num-envs K] [--traceback]

The agent plays ``pybatsim.agent.episodes`` episodes (or ``--episodes``), ``--nbruns`` times, with
the same model throughout; ``pybatsim.agent.run`` says whether it learns (``train``) or is only
evaluated (``test``). The output folder (locked for the run) receives episodes.csv, actions.csv and
the engine outputs of the last episode; a training launch saves its model periodically, at the end
and when stopped (Ctrl-C, SIGTERM) to ``--outmodel`` (default ``<outdir>/model.pt``), and
``--inmodel`` resumes an unfinished one. See docs/launcher.rst.

This module is the only part of the launcher that prints or exits: bad input (a missing file,
invalid JSON, a bad option, a broken agent.py, a checkpoint of another network, an invalid action)
is one line on stderr and exit status 2; an exception of the agent's code one line naming its file
and line, and exit status 1 (``--traceback``: the full trace first); a run stopped by SIGINT or
SIGTERM exits with 130 or 143 after saving.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

from hdrm import __version__
from hdrm.cli.script import guarded, traceback_wanted
from hdrm.distributed.learners import WorkerPlan
from hdrm.errors import ConfigError, HdrmError
from hdrm.launch.experiment import Experiment, build_experiment
from hdrm.launch.logs import RunLog, TensorBoardHook, check_tensorboard, tensorboard_writer
from hdrm.launch.agent_failed import AgentFailed
from hdrm.launch.loop import (
    EpisodeActions,
    EpisodeRecord,
    EpisodeStopped,
    HookList,
    InvalidAction,
    run_experiment,
)
from hdrm.launch.outdir import DEFAULT_MODEL, Claim, claim_outdir, remove_stale_temps
from hdrm.launch.progress import BarProgress, progress_hook
from hdrm.launch.saving import SavePolicy, Saver, resume
from hdrm.launch.signals import StopSignals
from hdrm.launch.trained_setting import setting_differences
from hdrm.launch.summary import (  # noqa: F401 (TABLE_ROWS: still importable from here)
    TABLE_ROWS,
    invalid_action_message,
    rejected_note,
    saved_line,
    summary_lines,
)
from hdrm.launch import workers
from hdrm.options import load_options
from hdrm.workload.swf import SkippableLineError

PROG = "hdeeprm-launch"


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
    parser.add_argument("--inmodel", metavar="PATH",
                        help="checkpoint to start from (an unfinished training run resumes)")
    parser.add_argument("--outmodel", metavar="PATH",
                        help=f"where to save the model (training default: OUTDIR/{DEFAULT_MODEL})")
    parser.add_argument("--nbruns", type=int, default=1, metavar="N",
                        help="repeat the episodes N times with the same model (default 1)")
    parser.add_argument("--episodes", type=int, metavar="N",
                        help="episodes per run (default: pybatsim.agent.episodes)")
    parser.add_argument("--outdir", metavar="DIR",
                        help="output folder (default: runs/<timestamp> next to the options file)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a previous run's outputs in --outdir (other files are kept)")
    parser.add_argument("--save-every-episodes", type=int, metavar="N",
                        help="when training, save every N episodes; 0: not by count "
                        "(default: pybatsim.agent.save_every_episodes, 10)")
    parser.add_argument("--save-every-minutes", type=float, metavar="M",
                        help="when training, save after the first episode ending M minutes after "
                        "the last save; 0: not by time (default: pybatsim.agent.save_every_minutes, 10)")
    parser.add_argument("--allow-other-class", action="store_true",
                        help="load --inmodel's weights even when another agent class saved it")
    parser.add_argument("--tensorboard", action="store_true",
                        help="write TensorBoard logs to OUTDIR/tensorboard (needs the tensorboard "
                        "extra); without it, they are written when the extra is installed")
    workers.add_options(parser)
    parser.add_argument("--traceback", action="store_true",
                        help="print the full trace of an error (the agent's code, bad input) "
                        "before its one line (also HDRM_TRACEBACK=1)")
    parser.add_argument("--quiet", action="store_true", help="no progress and no summary table")
    parser.add_argument("--version", action="version", version=f"{PROG} (hdrm {__version__})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hdeeprm-launch``; returns the exit status (0 done, 2 bad input, 130/143 stopped:
    :func:`hdrm.cli.script.guarded`, SIGTERM before and after the episodes too; during them
    :class:`~hdrm.launch.signals.StopSignals` saves and stops)."""
    args = build_parser().parse_args(argv)
    return guarded(lambda: _launch_in_one_line(args), PROG, trace=args.traceback)


def _launch_in_one_line(args: argparse.Namespace) -> int:
    """:func:`launch`, its bad-input errors in one line (a trace line's in options.json's terms,
    not read_swf's argument)."""
    try:
        return launch(args)
    except SkippableLineError as exc:
        relaxed = exc.relaxed_by('set "strict": false under "workload" in the options file')
        raise HdrmError(_one_line(str(relaxed))) from None
    except HdrmError as exc:
        raise HdrmError(_one_line(str(exc))) from None


def launch(args: argparse.Namespace) -> int:
    """Build the experiment of ``args``, run it, write its outputs and print the summary."""
    _check_counts(args)
    options = load_options(args.options)
    logging.basicConfig(level=options.pybatsim.log_level, format="%(levelname)s %(name)s: %(message)s")
    if args.tensorboard:
        check_tensorboard("--tensorboard")
    exp = build_experiment(options, args.agent, args.episodes)
    _check_models(exp, args)
    workers.apply_num_envs(exp, args.num_envs)
    if workers.uses_workers(exp, args.workers, args.num_envs):
        workers.check_workers(exp, args.workers, workers.num_envs(exp, args.num_envs))
    planned = exp.episodes * args.nbruns
    start = _load_model(exp, args, planned)
    claim = claim_outdir(_outdir(args), overwrite=args.overwrite,
                         keep=(Path(args.inmodel),) if args.inmodel else ())
    try:
        _report_claim(claim)
        return _run(exp, args, claim.path, planned, start)
    finally:
        claim.release()


def _check_counts(args: argparse.Namespace) -> None:
    if args.nbruns < 1:
        raise ConfigError(f"--nbruns: expected a positive number of runs, got {args.nbruns}")
    for flag in ("save_every_episodes", "save_every_minutes"):
        value = getattr(args, flag)
        if value is not None and not value >= 0:
            raise ConfigError(f"--{flag.replace('_', '-')}: expected 0 (off) or a positive number, "
                              f"got {value:g}")
    WorkerPlan(args.workers, 1 if args.num_envs is None else args.num_envs, args.address)


def _load_model(exp: Experiment, args: argparse.Namespace, planned: int) -> int:
    """Load ``--inmodel``; returns the first episode to play (> 0 when training resumes)."""
    if not args.inmodel:
        if not exp.classic and not exp.training:
            print(f"{PROG}: note: evaluating an untrained model (no --inmodel)", file=sys.stderr)
        return 0
    from hdrm.agents.checkpoint import load_checkpoint  # torch: only with a model

    checkpoint = load_checkpoint(exp.agent, args.inmodel, optimizer=exp.training,
                                 allow_other_class=args.allow_other_class)
    differences = setting_differences(checkpoint.get("options"), getattr(exp.env, "config", None))
    if differences:
        print(f"{PROG}: warning: {args.inmodel} was trained with {'; '.join(differences)}: its "
              "policy acts here in an environment it did not learn in; set those in the options "
              "file to match", file=sys.stderr)
    if not checkpoint.get("checked", True):
        print(f"{PROG}: note: checkpoint {args.inmodel} has no checksum (written before hdrm "
              "checkpoint format 2); it was loaded unverified", file=sys.stderr)
    if not exp.training:
        return 0
    start = resume(exp, checkpoint, args.inmodel, planned)
    if start:
        print(f"{PROG}: resuming the training of {args.inmodel} at episode {start} of {planned}",
              file=sys.stderr)
    return start


def _report_claim(claim: Claim) -> None:
    if claim.stale_pid is not None:
        print(f"{PROG}: warning: {claim.path}: took over the lock of pid {claim.stale_pid}, which "
              "is no longer running", file=sys.stderr)
    if claim.removed_outputs:
        names = ", ".join(p.name for p in claim.removed_outputs)
        print(f"{PROG}: note: --overwrite: removed a previous run's outputs from {claim.path}: "
              f"{names} (other files kept)", file=sys.stderr)
    _report_temps(claim.removed_temps)


def _report_temps(removed: list[tuple[Path, int]]) -> None:
    if removed:
        size_mb = sum(size for _, size in removed) / 1e6
        print(f"{PROG}: note: removed {len(removed)} temporary file(s) left by an interrupted save "
              f"({size_mb:.1f} MB): {', '.join(str(p) for p, _ in removed)}", file=sys.stderr)


def _run(exp: Experiment, args: argparse.Namespace, outdir: Path, planned: int, start: int) -> int:
    """Play the launch into the claimed ``outdir``; save, write the outputs and print the summary."""
    log = RunLog(outdir, exp.env.action_names)
    writer = tensorboard_writer(outdir / "tensorboard", required=args.tensorboard)
    board = TensorBoardHook(writer) if writer is not None else None
    progress = progress_hook(planned, PROG, args.quiet, initial=start)
    t0 = time.perf_counter()
    with StopSignals() as signals:
        saver = _saver(exp, args, outdir, planned, start, signals)
        try:
            try:
                records, stopped, status = _play(exp, args, HookList(log, board, saver, progress),
                                                 signals, log, start)
            except Exception:
                if saver is not None:  # a failure keeps the last completed episode's model
                    saver.write("error")
                raise
            finally:
                _close(progress, board)
            if saver is not None:
                saver.write(_stop_reason(signals, stopped), finished=stopped is None)
            paths = _outputs(exp, log, outdir, stopped, saver)
        finally:
            exp.env.close()  # engine batsim: ends any Batsim run still going
    if isinstance(stopped, (InvalidAction, AgentFailed)):
        trace = traceback_wanted(args.traceback)
        if trace and isinstance(stopped, AgentFailed):
            if stopped.error is not None:  # the agent's, then the loop's
                traceback.print_exception(stopped, file=sys.stderr)
            else:  # raised in a rollout worker: its trace there
                print(stopped.trace, end="", file=sys.stderr)
        print(f"{PROG}: error: "
              f"{invalid_action_message(exp, stopped, outdir, paths, saver, trace)}",
              file=sys.stderr)
        return status
    if stopped is None and "jobs" in paths and (note := rejected_note(exp.final_env or exp.env)):
        print(f"{PROG}: note: {note}", file=sys.stderr)
    saved = saved_line(saver, stopped, signals.during_save, planned)
    if args.quiet:
        print(f"{PROG}: {len(records)} episodes, outputs in {outdir}")
        if stopped is not None and saved:
            print(saved)
    else:
        print("\n".join(summary_lines(PROG, exp, records, time.perf_counter() - t0, outdir, paths,
                                       saved)))
    if stopped is not None:
        print(f"{PROG}: stopped by {signals.received.name if signals.received else 'a signal'} "
              f"after {len(records)} episodes of this launch", file=sys.stderr)
    return status


def _play(exp: Experiment, args: argparse.Namespace, hooks: HookList, signals: StopSignals,
          log: RunLog, start: int) -> tuple[list[EpisodeRecord], Exception | None, int]:
    """Run the episodes: (records, the stop or invalid action that ended them early, status)."""
    try:
        if workers.uses_workers(exp, args.workers, args.num_envs):
            played = workers.play_with_workers(exp, args.workers, workers.num_envs(
                exp, args.num_envs), args.address, args.nbruns, hooks, signals.requested, start)
            exp.final_env = played.final
            if played.stopped is not None:
                raise played.stopped
            return played.records, None, 0
        return run_experiment(exp, args.nbruns, hooks, stop=signals.requested, start=start), None, 0
    except (EpisodeStopped, InvalidAction, AgentFailed) as exc:
        log.keep_partial(exc.partial)
        status = (signals.exit_status if isinstance(exc, EpisodeStopped)
                  else 1 if isinstance(exc, AgentFailed) else 2)
        return list(log.records), exc, status
    except HdrmError as exc:
        if not signals.requested():
            raise
        # a terminal's Ctrl-C reaches the whole process group: Batsim (engine batsim) dies of it
        logging.getLogger(__name__).info("after %s: %s", signals.received, exc)
        stopped = EpisodeStopped(EpisodeActions(start + len(log.records), [], []), mid_episode=True)
        return list(log.records), stopped, signals.exit_status


def _outputs(exp: Experiment, log: RunLog, outdir: Path, stopped: Exception | None,
             saver: Saver | None) -> dict[str, Path]:
    """Write the outputs, as one set; Batsim's own files only when the last episode finished."""
    finished = stopped is None or (isinstance(stopped, EpisodeStopped) and not stopped.mid_episode)
    paths = log.finish(exp.final_env or exp.env,
                       copies=exp.env.unwrapped.batsim_outputs() if finished else None)
    if saver is not None and saver.path.parent.resolve() == outdir.resolve():
        paths["model"] = saver.path
    return paths


def _saver(exp: Experiment, args: argparse.Namespace, outdir: Path, planned: int, start: int,
           signals: StopSignals) -> Saver | None:
    """The model saver: with ``--outmodel``, or when a learning agent trains (default file)."""
    if exp.classic or not (args.outmodel or exp.training):
        return None
    path = Path(args.outmodel) if args.outmodel else outdir / DEFAULT_MODEL
    _report_temps(remove_stale_temps(path.parent))
    agent_opts = exp.options.pybatsim.agent
    every = args.save_every_episodes
    minutes = args.save_every_minutes
    policy = SavePolicy(
        every_episodes=agent_opts.save_every_episodes if every is None else every,
        every_minutes=agent_opts.save_every_minutes if minutes is None else minutes,
    ) if exp.training else SavePolicy(0, 0.0)
    return Saver(exp, path, policy, planned, start, shield=signals.shielded)


def _stop_reason(signals: StopSignals, stopped: BaseException | None) -> str:
    if isinstance(stopped, EpisodeStopped) and signals.received is not None:
        return signals.received.name
    if isinstance(stopped, InvalidAction):
        return "invalid action"
    if isinstance(stopped, AgentFailed):
        return "agent error"
    return "end of the launch"


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
        return Path(args.outdir)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(args.options).resolve().parent / "runs" / stamp
    path, k = base, 1
    while path.exists():
        k += 1
        path = base.with_name(f"{stamp}-{k}")
    return path


def _close(progress: Any, board: TensorBoardHook | None) -> None:
    if isinstance(progress, BarProgress):
        progress.close()
    if board is not None:
        board.close()


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
