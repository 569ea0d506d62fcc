"""Gantt chart by GPU: each task as a band on the GPUs it held, as tall as its share.

Reads the GPU columns of a GPU replay's ``out_jobs.csv`` (``node``, ``gpu_indices``,
``gpu_milli``, ``gpu_model``). One row per GPU (``node:index``, model in the label); a task
holding ``m`` milli-GPU fills ``m / 1000`` of its GPU's row, so tasks sharing a GPU stack up. A
share is laid in the free bands of the row from the bottom (split over two bands when no single
one holds it). Beyond ``max_gpus`` GPUs only the busiest (by GPU-seconds) are drawn, and the
title says so.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from hdrm.errors import ConfigError
from hdrm.results.run import Run
from hdrm.viz.common import as_run, category_colors, new_figure, run_title

#: Default number of GPU rows drawn.
MAX_GPUS = 64
_COLUMNS = ("starting_time", "finish_time", "node", "gpu_indices", "gpu_milli", "gpu_model")


@dataclass(frozen=True)
class GpuSpan:
    """A task's share of one GPU over time."""

    job: str
    gpu: tuple[str, int]
    model: str
    share: float
    start_s: float
    end_s: float


def read_gpu_spans(path: Path) -> list[GpuSpan]:
    """One span per (task, GPU) of an out_jobs.csv with GPU columns.

    Raises:
        ConfigError: the file has no GPU columns (not a GPU replay).
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in _COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ConfigError(f"{path}: no column {', '.join(missing)}; the GPU gantt needs the "
                              "out_jobs.csv of a replay on a GPU platform")
        spans = []
        for row in reader:
            if not row["gpu_indices"].strip() or not row["starting_time"]:
                continue
            start, end = float(row["starting_time"]), float(row["finish_time"])
            share = int(row["gpu_milli"]) / 1000
            for index in row["gpu_indices"].split():
                spans.append(GpuSpan(row["job_id"], (row["node"], int(index)), row["gpu_model"],
                                     share, start, end))
    return spans


def _stack(spans: list[GpuSpan]) -> list[tuple[GpuSpan, float, float]]:
    """``(span, bottom, height)`` pieces laying each share in the row's free bands."""
    pieces: list[tuple[GpuSpan, float, float]] = []
    active: list[tuple[float, float, float]] = []  # (end, bottom, height)
    for span in sorted(spans, key=lambda s: (s.start_s, s.job)):
        active = [a for a in active if a[0] > span.start_s]
        taken = sorted((b, b + h) for _, b, h in active)
        left, cursor = span.share, 0.0
        for low, high in taken + [(1.0, 1.0)]:
            gap = min(low - cursor, left)
            if gap > 1e-9:
                pieces.append((span, cursor, gap))
                active.append((span.end_s, cursor, gap))
                left -= gap
            cursor = max(cursor, high)
            if left <= 1e-9:
                break
    return pieces


def plot_gantt_gpu(run_dir: str | Path | Run, *, max_gpus: int = MAX_GPUS) -> Figure:
    """Draw the tasks of a GPU replay on their GPUs over time.

    Raises:
        ConfigError: ``max_gpus`` below 1, or no task ran on a GPU.
    """
    if max_gpus < 1:
        raise ConfigError(f"max_gpus must be at least 1, got {max_gpus}")
    run = as_run(run_dir)
    spans = read_gpu_spans(run.require("out_jobs.csv", "the GPU gantt chart"))
    if not spans:
        raise ConfigError(f"{run.path}: no task in out_jobs.csv ran on a GPU; nothing to draw")
    busy: dict[tuple[str, int], float] = {}
    for s in spans:
        busy[s.gpu] = busy.get(s.gpu, 0.0) + s.share * (s.end_s - s.start_s)
    gpus = sorted(busy, key=lambda g: -busy[g])[:max_gpus]
    rows = {g: i for i, g in enumerate(sorted(gpus))}
    models = {s.gpu: s.model for s in spans}
    jobs = sorted({s.job for s in spans})
    color_of = dict(zip(jobs, category_colors(len(jobs))))
    verts, colors = [], []
    for gpu, row in rows.items():
        for span, bottom, height in _stack([s for s in spans if s.gpu == gpu]):
            y0, y1 = row + bottom, row + bottom + height
            verts.append([(span.start_s, y0), (span.end_s, y0), (span.end_s, y1),
                          (span.start_s, y1)])
            colors.append(color_of[span.job])
    fig, ax = new_figure(size_in=(10.0, max(3.0, 0.25 * len(rows) + 1.5)))
    ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors="black",
                                     linewidths=0.3))
    end_s = max(s.end_s for s in spans)
    ax.set_xlim(0, end_s * 1.01 or 1.0)
    ax.set_ylim(0, len(rows))
    ax.set_yticks([i + 0.5 for i in range(len(rows))])
    ax.set_yticklabels([f"{n}:{i} {models[(n, i)]}" for n, i in rows], fontsize="x-small")
    ax.set_xlabel("time (s)")
    shown = f"{len(rows)} GPUs" if len(rows) == len(busy) else \
        f"busiest {len(rows)} of {len(busy)} GPUs used"
    ax.set_title(run_title(run, f"Gantt chart by GPU, {shown}, height = share"))
    return fig
