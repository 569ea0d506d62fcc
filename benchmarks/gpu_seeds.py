"""Training seeds of the GPU comparison's learners: one column per setting, its spread over seeds.

A setting (workload, role, frozen heuristic, warm start) may be trained with several seeds, one
model file each (``learned_place_openb_seed1.pt``); their metadata give the same column
(:func:`benchmarks.gpu_learners.model_column`) and their ``setting["seed"]``. Each file is
evaluated on its own, as the column ``"<column> [seed K]"``; the setting's column is then the mean
over its files of their scores, and its spread the standard deviation over its training seeds
(population), so that the best learner is the setting, never its luckiest seed. A setting with
one file keeps its plain column, and its spread is that over the evaluation seeds.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import fields
from typing import Any

import numpy as np

from benchmarks.gpu_evaluation import Summary
from benchmarks.gpu_learners import GpuModel
from benchmarks.gpu_protocol import GpuScore
from benchmarks.gpu_tables import TARGET_FACTOR
from benchmarks.tables import fmt
from hdrm.errors import ConfigError

SEED_COLUMN = "{column} [seed {seed}]"


def training_seed(model: GpuModel) -> int:
    """The seed a model was trained with (0 when its metadata has none)."""
    return int(model.meta["setting"].get("seed", 0))


def file_columns(models: list[GpuModel]) -> dict[str, str]:
    """Each model file's own column: its setting's column, with ``[seed K]`` when that setting
    has several files on its workload.

    Raises:
        ConfigError: two files of one setting were trained with the same seed.
    """
    counts = Counter((m.workload, m.column) for m in models)
    out: dict[str, str] = {}
    seen: dict[tuple[str, str], str] = {}
    for m in models:
        if counts[(m.workload, m.column)] == 1:
            out[m.path] = m.column
            continue
        column = SEED_COLUMN.format(column=m.column, seed=training_seed(m))
        if (m.workload, column) in seen:
            raise ConfigError(f"{m.path}: seed {training_seed(m)} of {m.column!r} on "
                              f"{m.workload} is also {seen[(m.workload, column)]}; keep one file "
                              "per training seed (name it ..._seedK.pt)")
        seen[(m.workload, column)] = m.path
        out[m.path] = column
    return out


def setting_of(column: str) -> str:
    """The setting's column of a file column (``"MAPPO [seed 1]"`` -> ``"MAPPO"``)."""
    head, sep, tail = column.rpartition(" [seed ")
    return head if sep and tail.endswith("]") and tail[:-1].isdigit() else column


def combine(per_file: dict[str, Summary]) -> dict[str, Summary]:
    """The settings' summaries from the files' (keyed by file column): a setting of one file is
    that file's; of several, the mean of their means and the spread over them."""
    groups: dict[str, list[Summary]] = defaultdict(list)
    for column, summary in per_file.items():
        groups[setting_of(column)].append(summary)
    out = {}
    for column, summaries in groups.items():
        if len(summaries) == 1 and column in per_file:
            out[column] = summaries[0]
            continue
        means = [s.mean for s in summaries]
        spread = GpuScore(*(float(np.std([getattr(m, f.name) for m in means]))
                            for f in fields(GpuScore)))
        out[column] = Summary(GpuScore.mean(means), spread)
    return out


def seeded(per_file: dict[str, Summary]) -> dict[str, Summary]:
    """The file columns that belong to a setting of several seeds."""
    return {c: s for c, s in per_file.items() if setting_of(c) != c}


def seed_grid(table: dict[str, dict[str, Any]], row: str) -> list[list[str]]:
    """One line per training seed of the row's seeded settings: its average JCT and the ratio
    to the best pair, the other metrics, its cost ratio and whether it alone meets the target."""
    cells = table[row]
    best = cells.get("best pair name")
    metric = {key: table.get(f"{row} [{key}]", {}) for key in
              ("p95 JCT (s)", "max wait (s)", "makespan (s)", "GPU cost (USD)")}
    grid = [["learner", "training seed", "avg JCT (s)", "/ best pair", "p95 JCT (s)",
             "max wait (s)", "makespan (s)", "cost / best pair cost", "target met"]]
    for column, value in cells.items():
        if setting_of(column) == column or not isinstance(value, (int, float)):
            continue
        seed = column.rpartition(" [seed ")[2][:-1]
        ratio = value / cells["best pair"] if cells.get("best pair") else None
        cost = metric["GPU cost (USD)"]
        cost_ratio = (cost[column] / cost[best]) if best in cost and cost[best] else None
        met = ratio is not None and ratio <= TARGET_FACTOR and (cost_ratio or 0) <= 1
        grid.append([setting_of(column), seed, fmt(value), fmt(ratio)]
                    + [fmt(metric[k].get(column)) for k in list(metric)[:3]]
                    + [fmt(cost_ratio), "yes" if met else "no"])
    return grid
