"""The text ``hdeeprm-launch`` prints when a launch ends.

The summary (agent, platform, actions, objective, the table of the last episodes, wall time and
decision rate, the model and the outputs written), the line on the saved model, and the one-line
message of an invalid action or of an error in the agent's code. The functions return text;
:mod:`hdrm.launcher` prints it (it is the only part of the launcher that prints or exits).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hdrm.launch.experiment import Experiment
from hdrm.cli.script import TRACEBACK_HINT
from hdrm.launch.agent_failed import AgentFailed, describe
from hdrm.launch.loop import EpisodeRecord, InvalidAction
from hdrm.launch.saving import Saver

#: Rows of the final table before it shows only the last ones.
TABLE_ROWS = 20


def saved_line(saver: Saver | None, stopped: BaseException | None, during_save: int,
               planned: int) -> str:
    """The summary's line on the model: where, how often, the last episode saved, and why.

    Args:
        saver: the launch's model saver (None: no model, no line).
        stopped: what ended the launch early (None: it played every episode).
        during_save: signals held back while a save was being written.
        planned: the episodes the launch was to play.

    Returns:
        The line, or ``""`` without a saver.
    """
    if saver is None:
        return ""
    saves = f"{saver.saves} save{'s' if saver.saves != 1 else ''}"
    line = (f"  model saved to {saver.path} ({saves}, {saver.policy.describe()}), the last after "
            f"{saver.saved_episode} of {planned} episodes: weights, optimizer state, episode "
            "counter and random states")
    if stopped is not None:
        line += f"; stopped by {saver.reason}: resume with --inmodel {saver.path}"
        if during_save:
            line += f" ({during_save} signal(s) during the save were held back)"
    return line


def invalid_action_message(exp: Experiment, exc: InvalidAction | AgentFailed, outdir: Path,
                           paths: dict[str, Path], saver: Saver | None, trace: bool = False
                           ) -> str:
    """The one-line message of an invalid action or of an error in the agent's code
    (:func:`agent_failure`; ending with :data:`~hdrm.cli.script.TRACEBACK_HINT` unless the full
    trace was printed: ``trace``), with what was written."""
    model = f"; model saved to {saver.path}" if saver is not None else ""
    what = f"{exp.agent_path}: {exc}"
    if isinstance(exc, AgentFailed):
        what = agent_failure(exc, exp.agent_path)
        model += "" if trace else f" {TRACEBACK_HINT}"
    if not paths:  # the first decision was invalid: nothing to write
        return f"{what}; nothing was written to {outdir}{model}"
    ended = _rows(paths["jobs"]) if "jobs" in paths else 0
    written = ", ".join(sorted(p.name for p in paths.values()))
    return (f"{what}; outputs of what was done so far in {outdir}: "
            f"{written} ({ended} jobs ended, {exc.partial.episode} episodes complete){model}")


def agent_failure(exc: AgentFailed, agent_path: Path) -> str:
    """``"agent.py:42 in decide: ZeroDivisionError: division by zero"``
    (:func:`hdrm.launch.agent_failed.describe`)."""
    return describe(exc, agent_path)


def rejected_note(env: Any) -> str:
    """``"17 of 30 jobs of the last episode were rejected ..."``, or ``""`` when none was.

    Such jobs can never run on the platform (more cores or memory than it has); they are in
    out_jobs.csv as REJECTED and in no metric but the counts, so the launch says so.
    """
    outcomes = getattr(env.unwrapped.result(), "outcomes", None) or ()
    rejected = [o for o in outcomes if o.state == "REJECTED"]
    if not rejected:
        return ""
    first = rejected[0]
    return (f"{len(rejected)} of {len(outcomes)} jobs of the last episode were rejected: they can "
            f"never run on this platform (job {first.job.id}: {first.reason}); out_jobs.csv lists "
            "them as REJECTED")


def summary_lines(prog: str, exp: Experiment, records: list[EpisodeRecord], wall_s: float,
                  outdir: Path, paths: dict[str, Path], saved: str) -> list[str]:
    """The lines of the end-of-launch summary (without ``--quiet``).

    Args:
        prog: the command's name, first on the first line.
        exp: the experiment played.
        records: the episodes of this launch.
        wall_s: the launch's wall time.
        outdir: the output folder.
        paths: the files written there.
        saved: :func:`saved_line` (``""``: none).

    Returns:
        The lines to print, in order.
    """
    env_opts = exp.options.pybatsim.env
    mode = "train" if exp.training else "test"
    lines = [f"{prog}: {type(exp.agent).__name__} from {exp.agent_path} ({mode}), "
             f"{len(records)} episodes on {exp.env.platform.name} ({exp.env.platform.nb_cores} cores), "
             f"{env_opts.actions.mode} with {exp.env.action_space.n} actions, "
             f"objective {env_opts.objective}, {exp.env.unwrapped.config.implied.describe()}"]
    steps = sum(r.steps for r in records)
    if records:
        lines += table_lines(records)
        best = min(records, key=lambda r: r.objective)
        lines.append(f"  objective {env_opts.objective}: last {records[-1].objective:.6g}, "
                     f"best {best.objective:.6g} (episode {best.episode})")
    else:
        lines.append("  no episode completed")
    lines.append(f"  wall time {wall_s:.2f} s, {steps} decisions "
                 f"({steps / max(wall_s, 1e-9):,.0f} per s)")
    if saved:
        lines.append(saved)
    lines.append(f"  outputs in {outdir}: {', '.join(sorted(p.name for p in paths.values()))}")
    return lines


def table_lines(records: list[EpisodeRecord]) -> list[str]:
    """The table of the last :data:`TABLE_ROWS` episodes, after a note on the earlier ones."""
    header = ("episode", "steps", "return", "loss", "makespan_h", "mean_wait_s", "mean_bsld",
              "energy_MJ", "wall_s")
    shown = records[-TABLE_ROWS:]
    lines = []
    if len(records) > len(shown):
        lines.append(f"  ({len(records) - len(shown)} earlier episodes in episodes.csv)")
    rows = [header] + [
        (str(r.episode), str(r.steps), f"{r.return_:.6g}", _num(r.loss), f"{r.makespan_s / 3600:.3f}",
         f"{r.mean_waiting_s:.1f}", f"{r.mean_bounded_slowdown:.3f}", f"{r.energy_j / 1e6:.3f}",
         f"{r.wall_s:.2f}")
        for r in shown
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines += ["  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    return lines


def _rows(csv_path: Path) -> int:
    """Data rows of a CSV file (its lines but the header)."""
    with open(csv_path, encoding="utf-8") as handle:
        return max(sum(1 for _ in handle) - 1, 0)


def _num(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.4g}"
