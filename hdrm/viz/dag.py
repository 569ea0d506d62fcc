"""DAG gantt chart: tasks as bars on their processor's row, arrows for dependencies.

``hdrm plot dag RUN --graph FILE`` draws a periodic run folder with its task set JSON (bars
coloured by instance), a replay folder with the workload it replayed when that has job
dependencies (coloured by chain, :mod:`hdrm.viz.dag_jobs`), or a DAG schedule CSV with its
workflow JSON (bars coloured by workflow level); the data comes from :mod:`hdrm.viz.dag_data`.
Up to :data:`MAX_ARROWS` dependencies get an arrow (the earliest by the predecessor's finish) and
up to :data:`LABEL_TASKS` tasks a name; beyond, the title says what was left out.
"""

from __future__ import annotations

import logging
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from hdrm.errors import ConfigError
from hdrm.viz.common import category_colors, new_figure
from hdrm.jsonfile import read_json
from hdrm.viz.dag_data import DagChart, from_periodic, from_schedule, from_workflow_run
from hdrm.viz.dag_jobs import from_dependent_jobs

logger = logging.getLogger(__name__)

#: Dependencies drawn as arrows at most (the earliest, by the predecessor's finish).
MAX_ARROWS = 300
#: Tasks named on their bar at most.
LABEL_TASKS = 40
#: Groups named in the legend at most (in order of first start).
MAX_LEGEND = 16
#: Height of a bar in its row (rows are 1 apart).
BAR_HEIGHT = 0.6


def load_chart(source: str | Path, graph: str | Path | None) -> DagChart:
    """The chart of a periodic run folder or a schedule CSV, with its graph file.

    Raises:
        ConfigError: no graph file given (run files hold no dependencies), or a bad source.
    """
    source = Path(source)
    if graph is None:
        what = "a DAG schedule CSV" if source.suffix == ".csv" else "a run folder"
        need = ("the workflow JSON" if source.suffix == ".csv"
                else "the task set JSON or the replayed workload")
        raise ConfigError(f"{source}: {what} holds no dependency information; give {need} it "
                          f"was made from with --graph FILE")
    if source.is_file():
        return from_schedule(source, graph)
    if Path(graph).suffix.lower() == ".swf":
        return from_dependent_jobs(source, graph)
    doc = read_json(graph)
    if "jobs" in doc:
        return from_dependent_jobs(source, graph)
    if "workflow" in doc:
        return from_workflow_run(source, graph)
    return from_periodic(source, graph)


def group_colors(chart: DagChart) -> dict[str, tuple]:
    """One colour per group, in order of first start (cycling past 20)."""
    groups = chart.groups
    return dict(zip(groups, category_colors(len(groups))))


def plot_dag(source: str | Path | DagChart, *, graph: str | Path | None = None,
             max_arrows: int = MAX_ARROWS) -> Figure:
    """Draw a DAG schedule: one row per processor, a bar per task, arrows for dependencies.

    Args:
        source: a periodic run folder, a DAG schedule CSV, or a chart already loaded.
        graph: the task set JSON (periodic run folder), the replayed SWF or Batsim JSON
            workload (replay folder) or the workflow JSON (schedule CSV, or the folder of
            ``hdrm dag replay``).
        max_arrows: draw the arrows of at most this many dependencies, the earliest first.

    Raises:
        ConfigError: bad ``max_arrows`` or a source without dependency information.
    """
    if max_arrows < 0:
        raise ConfigError(f"max_arrows must be at least 0, got {max_arrows}")
    chart = source if isinstance(source, DagChart) else load_chart(source, graph)
    colors = group_colors(chart)
    fig, ax = new_figure(size_in=(10.0, max(4.8, 1.5 + 0.45 * len(chart.rows))))
    small = len({bar.task for bar in chart.bars}) <= LABEL_TASKS
    for bar in chart.bars:
        ax.barh(bar.row, bar.finish_s - bar.start_s, left=bar.start_s, height=BAR_HEIGHT,
                color=colors[bar.group], edgecolor="black" if small else "white",
                linewidth=0.5 if small else 0.3)
        if small:
            ax.text((bar.start_s + bar.finish_s) / 2, bar.row, bar.task.rsplit("/", 1)[-1],
                    ha="center", va="center", fontsize="x-small", clip_on=True)
    notes = _draw_arrows(ax, chart, max_arrows)
    if not small:
        notes.append(f"names hidden beyond {LABEL_TASKS} tasks")
    ax.set_yticks(range(len(chart.rows)), chart.rows)
    ax.set_ylim(len(chart.rows) - 0.5, -0.5)
    end = max((b.finish_s for b in chart.bars), default=1.0)
    ax.set_xlim(0, end * 1.01 or 1.0)
    ax.set_xlabel("time (s)")
    nb_tasks = len({bar.task for bar in chart.bars})
    title = f"DAG gantt, {nb_tasks} tasks coloured by {chart.group_kind} - {chart.title}"
    ax.set_title(title + (f"\n({'; '.join(notes)})" if notes else ""), fontsize="medium")
    handles = [Patch(color=c, label=g) for g, c in list(colors.items())[:MAX_LEGEND]]
    if len(colors) > MAX_LEGEND:
        handles.append(Patch(color="white", label=f"... {len(colors) - MAX_LEGEND} more"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return fig


def _draw_arrows(ax, chart: DagChart, max_arrows: int) -> list[str]:
    """Arrows for the first ``max_arrows`` dependencies by the predecessor's finish; returns
    notes for the title."""
    arrows = sorted(chart.arrows, key=lambda a: (a.x0_s, a.row0, a.x1_s, a.row1))
    for a in arrows[:max_arrows]:
        ax.annotate("", xy=(a.x1_s, a.row1), xytext=(a.x0_s, a.row0), zorder=4,
                    arrowprops={"arrowstyle": "->", "lw": 0.6, "color": "black"})
    if len(arrows) > max_arrows:
        logger.info("%d dependencies: arrows for the first %d", len(arrows), max_arrows)
        return [f"arrows for the first {max_arrows} of {len(arrows)} dependencies"]
    return []
