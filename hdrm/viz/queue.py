"""Queue size over time: jobs submitted and not started, next to the jobs running."""

from __future__ import annotations

import logging
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from hdrm.results.run import Run
from hdrm.viz.common import COLORS, as_run, new_figure, run_title
from hdrm.viz.utilisation import source_note

logger = logging.getLogger(__name__)


def plot_queue(run_dir: str | Path | Run) -> Figure:
    """Waiting and running jobs over time (two step lines).

    Raises:
        ConfigError: the folder lacks out_jobs.csv (and out_timeline.csv).
    """
    run = as_run(run_dir)
    timeline = run.timeline()
    fig, ax = new_figure()
    ax.step(timeline.time_s, timeline.queue_size, where="post", color=COLORS["queue"],
            label="waiting (queue size)")
    ax.step(timeline.time_s, timeline.running_jobs, where="post", color=COLORS["running"],
            label="running")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("jobs")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole jobs: no 2.5 on the axis
    ax.set_title(run_title(run, f"Queue size ({source_note(timeline.derived)})"))
    ax.legend(loc="upper right", fontsize="small")
    return fig
