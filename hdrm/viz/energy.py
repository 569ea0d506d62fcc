"""Power and cumulative energy over time, on two y axes.

The built-in engine's timeline holds the platform's power (idle cores included). For a Batsim run
there is no timeline: the power is estimated as each running job's consumed_energy / execution
time summed over the running jobs, which leaves idle power out; the title says so.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from hdrm.errors import ConfigError
from hdrm.results.run import Run
from hdrm.results.timeline import POWER_FROM_JOBS, POWER_UNKNOWN
from hdrm.viz.common import COLORS, as_run, new_figure, run_title

logger = logging.getLogger(__name__)

_ENERGY_UNITS = ((1e9, "GJ"), (1e6, "MJ"), (1e3, "kJ"), (1.0, "J"))


def energy_scale(max_j: float) -> tuple[float, str]:
    """The divisor and unit that keep ``max_j`` joules readable (``(1e3, "kJ")`` ...)."""
    for factor, unit in _ENERGY_UNITS:
        if abs(max_j) >= factor:
            return factor, unit
    return 1.0, "J"


def plot_energy(run_dir: str | Path | Run) -> Figure:
    """Power (left axis, W) and cumulative energy (right axis) over time.

    Raises:
        ConfigError: the run has no power data (no out_timeline.csv and Batsim ran without
            energy, so every job's consumed_energy is -1).
    """
    run = as_run(run_dir)
    timeline = run.timeline()
    if timeline.power_source == POWER_UNKNOWN:
        raise ConfigError(
            f"{run.path}: no power data: no out_timeline.csv and out_jobs.csv has no job energy "
            f"(run Batsim with --energy, or use the built-in engine)"
        )
    fig, ax = new_figure()
    ax.step(timeline.time_s, timeline.power_w, where="post", color=COLORS["power"], label="power")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("power (W)", color=COLORS["power"])
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    factor, unit = energy_scale(float(np.nanmax(timeline.energy_j)) if len(timeline) else 0.0)
    ax2.plot(timeline.time_s, timeline.energy_j / factor, color=COLORS["energy"],
             label="cumulative energy")
    ax2.set_ylabel(f"cumulative energy ({unit})", color=COLORS["energy"])
    ax2.set_ylim(bottom=0)
    source = "engine timeline"
    if timeline.power_source == POWER_FROM_JOBS:
        source = "estimated from per-job energy / execution time, idle power left out"
    ax.set_title(run_title(run, f"Power and energy ({source})"))
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], loc="upper left", fontsize="small")
    return fig
