"""The FGD paper's figure: unallocated GPUs (or fragmentation) against the arrived workload.

Input: the output folders of ``hdrm fragmentation`` (one per policy: ``summary.json`` and
``curve_<seed>.csv``). For each folder and each seed, the curve is read at every whole arrived
workload percentage ``k`` as the protocol reads it at 100%
(:func:`hdrm.fragmentation.protocol.allocation_at`: the mean over the arrivals whose arrived %
rounds to ``k``, else within 1 of it, else the state after the last arrival below ``k``: a
large task can jump over several percent), recomputed from the exact milli-GPU columns, so that
the point drawn at 100% is the median of ``summary.json``. One line per folder: the median over its
seeds where every seed reaches ``k``, with a band from the 25th to the 75th percentile (the
paper's figure draws the same), and, for unallocated GPUs, the ideal ``100 - k`` up to 100%.

Metrics: ``unallocated`` (100 - GPU allocation %, the paper's Fig. 9a; drawn from 75% arrived
on), ``frag_ratio`` (fragmented share of the free GPU share, %, Fig. 7b) and ``frag_amount``
(fragmented milli-GPU as % of the cluster's GPUs, Fig. 7a).
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from hdrm.errors import ConfigError
from hdrm.fragmentation.protocol import allocation_at, percent_of
from hdrm.viz.common import category_colors, new_figure

logger = logging.getLogger(__name__)

#: metric -> y-axis label
METRICS = {
    "unallocated": "Unallocated GPUs (% of the cluster's)",
    "frag_ratio": "Fragmentation ratio (% of the free GPU share)",
    "frag_amount": "Fragmented GPUs (% of the cluster's)",
}
#: Where the unallocated-GPU figure starts (arrived %): below it every policy is on the ideal.
UNALLOCATED_FROM_PCT = 75


@dataclass
class PolicyCurve:
    """One folder's curve at whole arrived percentages.

    Attributes:
        label: the legend entry (the policy; the folder too when two folders share a policy).
        folder: the ``hdrm fragmentation`` output folder.
        seeds: the seeds, in ``summary.json``'s order.
        arrived_pct: the whole percentages ``k`` (0, 1, 2, ...).
        per_seed: ``[seed, k]`` values (nan where a seed's curve does not reach ``k``).
    """

    label: str
    folder: Path
    seeds: list[str]
    arrived_pct: np.ndarray
    per_seed: np.ndarray = field(repr=False)

    def _complete(self) -> np.ndarray:
        return ~np.isnan(self.per_seed).any(axis=0)

    def quantile(self, q: float) -> np.ndarray:
        """The ``q`` quantile over seeds at each ``k`` (nan where a seed lacks ``k``)."""
        out = np.full(len(self.arrived_pct), np.nan)
        ok = self._complete()
        if ok.any():
            out[ok] = np.quantile(self.per_seed[:, ok], q, axis=0)
        return out

    @property
    def median(self) -> np.ndarray:
        """Median over seeds (the line drawn)."""
        return self.quantile(0.5)


def _summary(folder: Path) -> dict:
    path = folder / "summary.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{folder}: no summary.json; give folders written by 'hdrm "
                          "fragmentation ... --outdir FOLDER'") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); run hdrm fragmentation again") from None


def _read_curve(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrived, allocated and fragmented milli-GPU per arrival of one ``curve_SEED.csv``."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        cols = [np.array([float(r[c]) for r in rows]) for c in
                ("arrived_gpu_milli", "allocated_gpu_milli", "frag_gpu_milli")]
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing; the folder's summary.json lists this seed") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a curve of hdrm fragmentation ({exc!r} in a row); "
                          "run hdrm fragmentation again") from None
    if not rows:
        raise ConfigError(f"{path}: no arrival in the curve")
    return cols[0], cols[1], cols[2]


def _total_milli(summary: dict, arrived: np.ndarray, path: Path) -> float:
    """The cluster's milli-GPU: from summary.json, else from the curve's arrived % column."""
    if "total_gpu_milli" in summary:
        return float(summary["total_gpu_milli"])
    with path.open(newline="", encoding="utf-8") as handle:
        last = list(csv.DictReader(handle))[-1]
    return round(float(last["arrived_gpu_milli"]) * 100 / float(last["arrived_pct"]))


def seed_values(arrived: np.ndarray, allocated: np.ndarray, frag: np.ndarray, total: float,
                metric: str, grid: np.ndarray) -> np.ndarray:
    """One seed's ``metric`` at each whole arrived % of ``grid`` (nan where never near it)."""
    arrived_pct = percent_of(arrived, total)
    if metric == "unallocated":
        values, flip = percent_of(allocated, total), True
    elif metric == "frag_amount":
        values, flip = 100.0 * frag / total, False
    else:
        idle = total - allocated
        values = np.divide(100.0 * frag, idle, out=np.zeros(len(idle)), where=idle > 0)
        flip = False
    # where no arrival comes within 1 of k: the state after the last arrival below k (never
    # past the seed's own last arrival)
    last = np.searchsorted(arrived_pct, grid, side="right") - 1
    inside = (last >= 0) & (grid <= np.round(arrived_pct[-1]))
    out = np.where(inside, values[np.maximum(last, 0)], np.nan)
    for i, k in enumerate(grid):
        try:
            out[i] = allocation_at(arrived_pct, values, float(k))
        except ValueError:
            continue
    return 100.0 - out if flip else out


def read_folder(folder: str | Path, metric: str = "unallocated") -> PolicyCurve:
    """One folder's :class:`PolicyCurve` (its label is the policy).

    Raises:
        ConfigError: the folder, its summary.json or a curve is missing or malformed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder}: no such folder; give hdrm fragmentation output folders")
    summary = _summary(folder)
    try:
        seeds = list(summary["unallocated_gpus_pct"]["per_seed"])
        policy = str(summary["policy"])
    except (KeyError, TypeError):
        raise ConfigError(f"{folder / 'summary.json'}: no policy or unallocated_gpus_pct.per_seed;"
                          " run hdrm fragmentation again") from None
    curves = []
    for seed in seeds:
        path = folder / f"curve_{seed}.csv"
        arrived, allocated, frag = _read_curve(path)
        curves.append((arrived, allocated, frag, _total_milli(summary, arrived, path)))
    top = max(int(np.floor(100.0 * c[0][-1] / c[3] + 0.5)) for c in curves)
    grid = np.arange(top + 1)
    per_seed = np.array([seed_values(*c, metric, grid) for c in curves])
    return PolicyCurve(policy, folder, seeds, grid, per_seed)


def read_folders(folders: Sequence[str | Path], metric: str = "unallocated") -> list[PolicyCurve]:
    """Every folder's curve; two folders of one policy are told apart by folder name."""
    if metric not in METRICS:
        raise ConfigError(f"--metric: unknown metric {metric!r}; choose one of: "
                          f"{', '.join(METRICS)}")
    if not folders:
        raise ConfigError("give at least one hdrm fragmentation output folder")
    curves = [read_folder(f, metric) for f in folders]
    policies = [c.label for c in curves]
    for policy in set(policies):
        same = [c for c in curves if c.label == policy]
        if len(same) > 1:
            for curve, place in zip(same, _short_paths([c.folder for c in same])):
                curve.label = f"{policy} ({place})"
    return curves


def _short_paths(folders: list[Path]) -> list[str]:
    """The fewest trailing path parts that tell the folders apart."""
    parts = [f.resolve().parts for f in folders]
    for depth in range(1, max(len(p) for p in parts) + 1):
        tails = ["/".join(p[-depth:]) for p in parts]
        if len(set(tails)) == len(tails):
            return tails
    return [str(f) for f in folders]


def plot_fragmentation(folders: Sequence[str | Path], metric: str = "unallocated") -> Figure:
    """The paper's figure for the folders: one line per folder (see the module docstring).

    Raises:
        ConfigError: unknown metric, or a folder is not an hdrm fragmentation output.
    """
    curves = read_folders(folders, metric)
    fig, ax = new_figure(size_in=(9.0, 4.8))
    low_x = UNALLOCATED_FROM_PCT if metric == "unallocated" else 0
    high_x = max(int(c.arrived_pct[-1]) for c in curves)
    top = 0.0
    for curve, color in zip(curves, category_colors(len(curves))):
        x, median = curve.arrived_pct, curve.median
        ax.plot(x, median, color=color, label=f"{curve.label} ({len(curve.seeds)} seeds)")
        ax.fill_between(x, curve.quantile(0.25), curve.quantile(0.75), color=color, alpha=0.2,
                        linewidth=0)
        window = (x >= low_x) & ~np.isnan(median)
        top = max(top, float(np.max(curve.quantile(0.75)[window], initial=0.0)))
    if metric == "unallocated":
        ideal = np.arange(low_x, 101)
        ax.plot(ideal, 100 - ideal, linestyle=":", color="grey", label="ideal")
        top = max(top, 100.0 - low_x)
    ax.set_xlim(low_x, max(high_x, 100))
    ax.set_ylim(0, top * 1.05 or 1.0)
    ax.set_xlabel("Arrived workload (% of the cluster's GPU capacity)")
    ax.set_ylabel(METRICS[metric])
    ax.grid(linestyle="-.", alpha=0.6)
    ax.legend(fontsize="small")
    ax.set_title("Median over seeds, band: 25th to 75th percentile")
    return fig
