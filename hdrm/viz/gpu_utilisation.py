"""GPU utilisation over time of a replay on a GPU platform, by GPU model.

Reads ``out_gpu_timeline.csv`` (the allocated milli-GPU of each model after each decision
instant, columns ``alloc_<MODEL>``) and the GPU count of each model from ``out_gpu_summary.json``
(``gpus_by_model``). One step line per model gives its allocated share of that model's GPUs, in
percent, and a thicker one the share of all GPUs; the legend carries each line's time average
over the makespan as the summary reports it (``gpu_allocation_rate``). ``hdrm plot utilisation``
draws this for a GPU run, since that run's out_jobs.csv names GPUs, not cores.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from hdrm.errors import ConfigError
from hdrm.results.run import Run
from hdrm.viz.common import COLORS, as_run, category_colors, new_figure, run_title

logger = logging.getLogger(__name__)

GPU_TIMELINE_FILE = "out_gpu_timeline.csv"
GPU_SUMMARY_FILE = "out_gpu_summary.json"
_PREFIX = "alloc_"


def is_gpu_run(run: Run) -> bool:
    """Whether a run folder holds a replay on a GPU platform (its GPU timeline or summary)."""
    return (run.path / GPU_TIMELINE_FILE).is_file() or (run.path / GPU_SUMMARY_FILE).is_file()


def read_gpu_allocation(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The instants (s) and the allocated milli-GPU of each model at them.

    Raises:
        ConfigError: the file is missing, has no ``alloc_`` column, or no row.
    """
    if not path.is_file():
        raise ConfigError(f"{path}: no such file; GPU utilisation needs the outputs of a replay "
                          "on a GPU platform")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        models = [c[len(_PREFIX):] for c in reader.fieldnames or [] if c.startswith(_PREFIX)]
        rows = list(reader)
    if not models:
        raise ConfigError(f"{path}: no alloc_<MODEL> column; write it again with hdrm replay")
    if not rows:
        raise ConfigError(f"{path}: no rows: the run kept no per-instant timeline; rerun it with "
                          "the timeline on (hdrm replay keeps one)")
    times = np.array([float(r["time"]) for r in rows])
    return times, {m: np.array([float(r[_PREFIX + m]) for r in rows]) for m in models}


def _summary(run: Run) -> dict:
    path = run.path / GPU_SUMMARY_FILE
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        return {"gpus": dict(summary["gpus_by_model"]), "rates": summary["gpu_allocation_rate"],
                "all": summary["gpu_allocation_rate_all"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: cannot read the GPUs per model ({type(exc).__name__}: {exc}); "
                          "write the run again with hdrm replay") from None


def plot_gpu_utilisation(run_dir: str | Path | Run) -> Figure:
    """Allocated share of each GPU model's GPUs (%) over time, and of all GPUs.

    Raises:
        ConfigError: the folder lacks the GPU timeline or summary (one line naming the file).
    """
    run = as_run(run_dir)
    times, allocated = read_gpu_allocation(run.path / GPU_TIMELINE_FILE)
    summary = _summary(run)
    fig, ax = new_figure()
    total_gpus = sum(int(summary["gpus"].get(m, 0)) for m in allocated)
    models = [m for m in allocated if int(summary["gpus"].get(m, 0)) > 0]
    for model, color in zip(models, category_colors(len(models))):
        gpus = int(summary["gpus"][model])
        mean = 100.0 * float(summary["rates"].get(model, np.nan))
        ax.step(times, allocated[model] / (10.0 * gpus), where="post", color=color, lw=1,
                label=f"{model} ({gpus} GPUs, mean {mean:.1f} %)")
    if total_gpus:
        all_pct = sum(allocated[m] for m in models) / (10.0 * total_gpus)
        ax.step(times, all_pct, where="post", color=COLORS["busy"], lw=2,
                label=f"all {total_gpus} GPUs (mean {100.0 * summary['all']:.1f} %)")
    ax.set_ylim(0, 105)
    ax.set_xlim(left=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("GPUs allocated (% of the model's)")
    ax.set_title(run_title(run, "GPU utilisation by model (from out_gpu_timeline.csv)"))
    ax.legend(loc="upper right", fontsize="small")
    return fig
