"""The GPU comparison's table: the targets per row, and its Markdown and RST renderings.

The table is ``{row: {column: value}}``: a main row per workload (average JCT of every pair and
learner, the best pair, the best learner, the target and whether it is met, the flags) and one
row per other metric (``"<row> [p95 JCT (s)]"`` ...), as the CPU table keeps utilisation.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from benchmarks.gpu_evaluation import Summary
from benchmarks.gpu_protocol import GpuScore
from benchmarks.tables import fmt

#: The best learner's average JCT must be at most this times the best pair's.
TARGET_FACTOR = 0.95
#: A learner's max wait or makespan above this times the best pair's is flagged.
FLAG_FACTOR = 1.5
#: The metric rows: score field -> row suffix.
METRICS = {"p95_jct": "p95 JCT (s)", "max_wait": "max wait (s)", "makespan": "makespan (s)",
           "gpu_allocation_rate": "GPU allocation rate", "gpu_cost": "GPU cost (USD)",
           "mean_wait": "mean wait (s)"}
NO_MODEL = "n/a: no model for this workload under models/gpu/"
TARGET_COLUMN = f"target ({TARGET_FACTOR} x best pair)"
#: The best learner's spread: over its training seeds when it has several, else over the
#: evaluation seeds (:mod:`benchmarks.gpu_seeds`).
SPREAD_COLUMN = "best learner spread"


def judge(pairs: dict[str, GpuScore], learners: dict[str, GpuScore]) -> dict[str, Any]:
    """The summary cells of a row: best pair, best learner, target, whether met, flags.

    The best pair and the best learner have the least average JCT. The target is met when the
    best learner's average JCT is at most :data:`TARGET_FACTOR` times the best pair's and its
    GPU cost is no more than that pair's. A flag names each of max wait and makespan where the
    best learner exceeds :data:`FLAG_FACTOR` times the best pair's (``none``: neither; empty
    without learners).
    """
    best = min(pairs, key=lambda p: pairs[p].avg_jct)
    ref = pairs[best]
    cells: dict[str, Any] = {"best pair": ref.avg_jct, "best pair name": best,
                             TARGET_COLUMN: TARGET_FACTOR * ref.avg_jct}
    if not learners:
        cells.update({"best learner": None, "best learner name": NO_MODEL,
                      "target met": NO_MODEL, "flag": ""})
        return cells
    name = min(learners, key=lambda c: learners[c].avg_jct)
    own = learners[name]
    met = own.avg_jct <= TARGET_FACTOR * ref.avg_jct and own.gpu_cost <= ref.gpu_cost
    flags = [f"{label} {getattr(own, key) / getattr(ref, key):.2f} x best pair"
             for key, label in (("max_wait", "max wait"), ("makespan", "makespan"))
             if getattr(own, key) > FLAG_FACTOR * getattr(ref, key)]
    cells.update({"best learner": own.avg_jct, "best learner name": name,
                  "best learner / best pair": own.avg_jct / ref.avg_jct if ref.avg_jct else None,
                  "best learner cost / best pair cost":
                      own.gpu_cost / ref.gpu_cost if ref.gpu_cost else None,
                  "target met": bool(met), "flag": "; ".join(flags) or "none"})
    return cells


def row_cells(row: str, pairs: dict[str, Summary], learners: dict[str, Summary],
              shown: dict[str, Summary] | None = None) -> dict[str, dict[str, Any]]:
    """The table's rows for one workload: the main row and the metric rows.

    ``learners`` are judged (one column per training setting); ``shown`` are columns given but
    not judged (each training seed of a setting of several, :mod:`benchmarks.gpu_seeds`).
    """
    out: dict[str, dict[str, Any]] = {row: {}}
    every = {**pairs, **learners, **(shown or {})}
    for name, summary in every.items():
        out[row][name] = summary.mean.avg_jct
        if name in learners:
            out[row][f"{name} (spread)"] = summary.spread.avg_jct
    out[row].update(judge({k: v.mean for k, v in pairs.items()},
                          {k: v.mean for k, v in learners.items()}))
    best = out[row]["best learner name"]
    out[row][SPREAD_COLUMN] = learners[best].spread.avg_jct if best in learners else None
    for key, label in METRICS.items():
        metric = out.setdefault(f"{row} [{label}]", {})
        for name, summary in every.items():
            metric[name] = getattr(summary.mean, key)
    return out


def policy_grid(table: dict[str, dict[str, Any]], row: str, policies: list[str]
                ) -> list[list[str]]:
    """One line per policy of ``row``: average JCT, then the metric rows (text cells)."""
    labels = ["avg JCT (s)"] + list(METRICS.values())
    sources = [row] + [f"{row} [{label}]" for label in METRICS.values()]
    grid = [["policy"] + labels]
    for policy in policies:
        grid.append([policy] + [fmt(table[src].get(policy)) for src in sources])
    return grid


def summary_grid(table: dict[str, dict[str, Any]], rows: list[str]) -> list[list[str]]:
    """One line per workload: the judge's cells."""
    cols = ["best pair name", "best pair", "best learner name", "best learner", SPREAD_COLUMN,
            TARGET_COLUMN,
            "best learner / best pair", "best learner cost / best pair cost", "target met", "flag"]
    return [["workload"] + cols] + [[r] + [fmt(table[r].get(c)) for c in cols] for r in rows]


def markdown(title: str, grid: list[list[str]]) -> str:
    """A Markdown table with a heading."""
    lines = [f"### {title}", "", "| " + " | ".join(grid[0]) + " |", "|" + "---|" * len(grid[0])]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in grid[1:]]) + "\n"


def rst_table(title: str, grid: list[list[str]]) -> list[str]:
    """A titled RST list-table (cells escaped for Sphinx's ``-W``)."""
    out = [title, "-" * len(title), "", f".. list-table:: {title}", "   :header-rows: 1", ""]
    for line in grid:
        out.append("   * - " + _cell(line[0]))
        out += ["     - " + _cell(c) for c in line[1:]]
    return out + [""]


def _cell(text: str) -> str:
    text = text.replace("*", "\\*").replace("`", "'").replace("|", "\\|")
    return text if text else "\\ "


def score_fields() -> list[str]:
    """The fields of a score, in order (for the JSON's documentation)."""
    return [f.name for f in fields(GpuScore)]
