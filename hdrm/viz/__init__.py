"""Plots of run results (layer L3: matplotlib on top of :mod:`hdrm.results`).

One module per plot; each offers ``plot_<kind>(run_dir, ...) -> matplotlib.figure.Figure``, and
:func:`save` writes a figure as png, svg or pdf. :data:`PLOTS` maps each kind to its function
(``PLOTS.get("gantt")``, with "did you mean" suggestions on a miss). Figures never touch pyplot's
global state and need no display.
"""

from __future__ import annotations

from hdrm.registry import Registry
from hdrm.viz.actions import plot_actions
from hdrm.viz.common import check_output_path, save
from hdrm.viz.compare import plot_compare
from hdrm.viz.contention import plot_contention
from hdrm.viz.energy import plot_energy
from hdrm.viz.gantt import plot_gantt
from hdrm.viz.gantt_gpu import plot_gantt_gpu
from hdrm.viz.learning import plot_learning
from hdrm.viz.queue import plot_queue
from hdrm.viz.utilisation import plot_utilisation

#: Plot kinds for ``hdrm plot KIND RUN_DIR``.
PLOTS: Registry = Registry("plot kind")
PLOTS.add("gantt", plot_gantt)
PLOTS.add("gpus", plot_gantt_gpu)
PLOTS.add("utilisation", plot_utilisation, "utilization")
PLOTS.add("queue", plot_queue)
PLOTS.add("energy", plot_energy)
PLOTS.add("contention", plot_contention)
PLOTS.add("learning", plot_learning)
PLOTS.add("actions", plot_actions)

#: The kinds of any run, in the order docs/plots.rst and ``hdrm plot --help`` list them
#: (``gpus``, the gantt chart by GPU of a replay on a GPU platform, is in docs/gpu.rst).
KINDS = ("gantt", "utilisation", "queue", "energy", "contention", "learning", "actions")

__all__ = [
    "KINDS",
    "PLOTS",
    "check_output_path",
    "plot_actions",
    "plot_compare",
    "plot_contention",
    "plot_energy",
    "plot_gantt",
    "plot_gantt_gpu",
    "plot_learning",
    "plot_queue",
    "plot_utilisation",
    "save",
]
