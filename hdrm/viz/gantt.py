"""Gantt chart: each job as rectangles on the cores it ran on, over time.

Jobs are coloured by job (a cycling categorical palette) or by user (from the job metadata).
Beyond ``max_jobs`` jobs only the largest (cores x run time) are drawn, and the title says so,
which keeps the chart readable and fast for traces of thousands of jobs. Spans of
memory-bandwidth oversubscription from overutilizations.json, when present, are hatched over the
rows of the contended processor's cores (or over the whole time span, for files that do not say
which cores a processor has).
"""

from __future__ import annotations

import logging
from pathlib import Path

from matplotlib.collections import PatchCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from hdrm.errors import ConfigError
from hdrm.results.records import JobResult, parse_interval_ranges
from hdrm.results.run import Run
from hdrm.viz.common import COLORS, as_run, category_colors, new_figure, run_title
from hdrm.viz.gpu_utilisation import is_gpu_run

logger = logging.getLogger(__name__)

#: How jobs can be coloured.
COLOR_BY = ("job", "user")
#: Default number of jobs drawn before the chart keeps only the largest.
MAX_JOBS = 2000
#: Jobs up to this many get their id written on them and an outline.
LABEL_JOBS = 40
#: Users shown in the legend (others share a grey).
MAX_USERS = 19
#: How spans of bandwidth contention are marked over the jobs.
CONTENTION_STYLE = {"facecolor": "none", "edgecolor": COLORS["contended"], "hatch": "///", "lw": 0}


def _drawable(jobs: list[JobResult], max_jobs: int) -> tuple[list[JobResult], int]:
    """The jobs to draw (largest first when over ``max_jobs``), in start order, and how many
    could be drawn."""
    ran = [j for j in jobs if j.finished and j.allocated_resources.strip()]
    if len(ran) > max_jobs:
        ran = sorted(ran, key=lambda j: -j.requested_number_of_resources * j.execution_time)
        kept = ran[:max_jobs]
    else:
        kept = ran
    return sorted(kept, key=lambda j: (j.starting_time, j.job_id)), len(ran)


def _rectangles(job: JobResult) -> list[list[tuple[float, float]]]:
    """One rectangle (four corners) per contiguous core range of the job."""
    t0, t1 = float(job.starting_time), float(job.finish_time)
    return [
        [(t0, lo), (t1, lo), (t1, hi + 1), (t0, hi + 1)]
        for lo, hi in parse_interval_ranges(job.allocated_resources)
    ]


def _user_colors(jobs: list[JobResult]) -> tuple[list, list[Patch]]:
    """Per-job colours by user, and the legend handles.

    The :data:`MAX_USERS` users who used the most core time get their own colour (the legend
    lists them in that order); the others share a grey.
    """
    users = [job.user() for job in jobs]
    if all(u is None for u in users):
        raise ConfigError(
            "cannot colour by user: no job's metadata names a user (write user=NAME or "
            '{"user": NAME} in the metadata; hdrm writes user=ID for traces that give user '
            "ids); use --color job"
        )
    core_time: dict[str, float] = {}
    for user, job in zip(users, jobs):
        if user is not None:
            area = float(job.requested_number_of_resources) * float(job.execution_time)
            core_time[user] = core_time.get(user, 0.0) + area
    names = sorted(core_time, key=lambda u: -core_time[u])
    palette = dict(zip(names[:MAX_USERS], category_colors(MAX_USERS)))
    other = (0.6, 0.6, 0.6, 1.0)
    colors = [palette.get(u, other) for u in users]
    handles = [Patch(color=c, label=f"user {u}") for u, c in palette.items()]
    if len(names) > MAX_USERS or None in users:
        label = "other users" if len(names) > MAX_USERS else "unknown user"
        handles.append(Patch(color=other, label=label))
    return colors, handles


def _shade_contention(ax, run: Run, horizon_s: float) -> int:
    """Hatch merged bandwidth-oversubscription spans (open ones end at ``horizon_s``); returns
    how many were drawn."""
    over = run.overutilizations_or_none()
    if over is None or not over.bandwidth:
        return 0
    if all(s.cores for s in over.bandwidth):
        return _hatch_cores(ax, over.bandwidth, horizon_s)
    spans = sorted((s.start_s, s.end_or(horizon_s)) for s in over.bandwidth)
    merged = [list(spans[0])]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in merged:
        ax.axvspan(start, end, zorder=3, **CONTENTION_STYLE)
    return len(merged)


def _hatch_cores(ax, spans, horizon_s: float) -> int:
    """Hatch each span over the rows of its processor's cores only; returns how many."""
    boxes = []
    for span in spans:
        start, end = span.start_s, span.end_or(horizon_s)
        for low, high in parse_interval_ranges(span.cores):
            boxes.append(Rectangle((start, low), end - start, high - low + 1))
    ax.add_collection(PatchCollection(boxes, zorder=3, match_original=False, **CONTENTION_STYLE))
    return len(spans)


def plot_gantt(
    run_dir: str | Path | Run, *, color_by: str = "job", max_jobs: int = MAX_JOBS
) -> Figure:
    """Draw the jobs of a run on its cores over time.

    Args:
        run_dir: the run folder (needs out_jobs.csv with allocated_resources).
        color_by: ``"job"`` or ``"user"`` (user from the job metadata).
        max_jobs: draw at most this many jobs, the largest by cores x run time.

    Raises:
        ConfigError: bad ``color_by`` or ``max_jobs``, no job with an allocation, no user in
            the metadata when colouring by user, or a GPU run (drawn by
            :func:`~hdrm.viz.gantt_gpu.plot_gantt_gpu`).
    """
    if color_by not in COLOR_BY:
        raise ConfigError(f"unknown colouring {color_by!r}; choose one of: {', '.join(COLOR_BY)}")
    if max_jobs < 1:
        raise ConfigError(f"max_jobs must be at least 1, got {max_jobs}")
    run = as_run(run_dir)
    if is_gpu_run(run):
        raise ConfigError(f"{run.path}: a replay on a GPU platform, whose allocated_resources are "
                          f"GPU ids, not cores; draw its gantt chart by GPU with 'hdrm plot gpus "
                          f"{run.path}'")
    jobs, nb_drawable = _drawable(run.jobs(), max_jobs)
    if not jobs:
        raise ConfigError(f"{run.path}: no job in out_jobs.csv ran on known cores; nothing to draw")
    fig, ax = new_figure(size_in=(10.0, 5.5))
    verts, colors, handles = _job_shapes(jobs, color_by)
    small = len(jobs) <= LABEL_JOBS
    shapes = PolyCollection(verts, facecolors=colors, edgecolors="black" if small else "none",
                            linewidths=0.5 if small else 0.0)
    ax.add_collection(shapes)
    if small:
        _label_jobs(ax, jobs)
    end_s = max(float(j.finish_time) for j in jobs)
    if _shade_contention(ax, run, end_s):
        handles.append(Patch(label="bandwidth contention", **CONTENTION_STYLE))
    nb_cores = max(run.nb_resources(), max(int(v[2][1]) for v in verts))
    ax.set_xlim(0, end_s * 1.01 or 1.0)
    ax.set_ylim(0, nb_cores)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"core id ({nb_cores} cores)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    shown = f"{len(jobs)} jobs"
    if len(jobs) < nb_drawable:
        shown = f"largest {len(jobs)} of {nb_drawable} jobs"
    ax.set_title(run_title(run, f"Gantt chart, {shown}, coloured by {color_by}"))
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return fig


def _job_shapes(jobs: list[JobResult], color_by: str):
    """Rectangles, their colours and legend handles for the jobs."""
    if color_by == "user":
        job_colors, handles = _user_colors(jobs)
    else:
        job_colors, handles = category_colors(len(jobs)), []
    verts, colors = [], []
    for job, color in zip(jobs, job_colors):
        for rect in _rectangles(job):
            verts.append(rect)
            colors.append(color)
    return verts, colors, handles


def _label_jobs(ax, jobs: list[JobResult]) -> None:
    """Write each job's id in the middle of its first rectangle."""
    for job in jobs:
        rect = _rectangles(job)[0]
        x = (rect[0][0] + rect[1][0]) / 2
        y = (rect[0][1] + rect[2][1]) / 2
        ax.text(x, y, job.job_id, ha="center", va="center", fontsize="x-small", clip_on=True)
