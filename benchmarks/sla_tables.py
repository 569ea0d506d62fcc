"""Rendering the SLA comparison (:mod:`benchmarks.compare_sla`): Markdown and an RST page.

Per load level one table: a line per policy (heuristics, the reference, the learners), a column
per metric as ``mean ± spread`` over the seeds; under it the best heuristic, the best learner
and whether the target is met. Then the training table (one line per shipped model).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

#: (row label, column title, decimals) of each metric column.
COLUMNS = (("SLA satisfaction (%)", "SLA met %", 2), ("energy per request (J)", "J/request", 4),
           ("Jain's fairness", "Jain", 3), ("tardiness mean (ms)", "tardiness ms", 2),
           ("p99 latency (ms)", "p99 latency ms", 1), ("utilisation", "utilisation", 3))
TRAINING = ("learner", "load", "episodes", "episode_requests", "train_seed", "wall_s")


def _cell(table: dict[str, dict[str, Any]], load: str, label: str, col: str, digits: int) -> str:
    mean = table[f"{load}: {label}"].get(col)
    spread = table[f"{load}: {label} [spread]"].get(col)
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    return f"{mean:.{digits}f} ± {spread:.{digits}f}"


def load_grid(table: dict[str, dict[str, Any]], load: str) -> list[list[str]]:
    """Header and one line per policy of ``load``."""
    sla = table[f"{load}: SLA satisfaction (%) [spread]"]
    grid = [["policy"] + [title for _, title, _ in COLUMNS]]
    for col in sla:
        grid.append([col] + [_cell(table, load, label, col, d) for label, _, d in COLUMNS])
    return grid


def verdict(table: dict[str, dict[str, Any]], load: str) -> str:
    """One sentence: the best heuristic, the best learner and the target."""
    sla = table[f"{load}: SLA satisfaction (%)"]
    util = table[f"{load}: utilisation"]
    text = (f"Load factor {util['load factor']:g}, offered load alone "
            f"{util['offered load (alone)']:.3f}; best heuristic {sla['best heuristic name']} "
            f"({sla['best heuristic']:.2f} %, {sla['best heuristic energy (J)']:.4f} J/request, "
            f"utilisation {util[sla['best heuristic name']]:.3f}, band "
            f"{util['utilisation band']}: {'in' if util['best heuristic in band'] else 'OUT OF'}"
            " band)")
    if "best learner name" in sla:
        text += (f"; best learner {sla['best learner name']} ({sla['best learner']:.2f} %, "
                 f"{sla['best learner energy (J)']:.4f} J/request)")
    met = sla["target met"]
    text += f"; target: {sla['target']}"
    if sla.get("target reachable") is False:
        text += " (unreachable: the best heuristic is within 5 points of 100 %)"
    text += f"; target met: {'n/a' if met is None else met}."
    return text


def _markdown_grid(grid: list[list[str]]) -> str:
    lines = ["| " + " | ".join(grid[0]) + " |", "|" + "---|" * len(grid[0])]
    lines += ["| " + " | ".join(row) + " |" for row in grid[1:]]
    return "\n".join(lines)


def training_grid(table: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Header and one line per trained model."""
    names = [n for n in table if n.startswith("training: ")]
    grid = [["model", *TRAINING]]
    for name in names:
        grid.append([name[len("training: "):], *(str(table[name][k]) for k in TRAINING)])
    return grid


def markdown(table: dict[str, dict[str, Any]], loads: Sequence[str]) -> str:
    """The tables for the terminal."""
    parts = []
    for load in loads:
        parts += [f"\n### {load}\n", _markdown_grid(load_grid(table, load)), "",
                  verdict(table, load)]
    grid = training_grid(table)
    if len(grid) > 1:
        parts += ["\n### training\n", _markdown_grid(grid)]
    return "\n".join(parts)


def _esc(text: str) -> str:
    return text.replace("*", "\\*").replace("|", "\\|")


def _list_table(grid: list[list[str]], widths: str = "") -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1"]
    if widths:
        lines.append(f"   :widths: {widths}")
    lines.append("")
    for row in grid:
        lines.append(f"   * - {_esc(row[0])}")
        lines += [f"     - {_esc(cell)}" for cell in row[1:]]
    return lines + [""]


def _pooled(train_seeds: Sequence[int]) -> str:
    """The sentence on a learner's lines when it has models of several training seeds."""
    if len(train_seeds) < 2:
        return ""
    return (f" A learner's line pools its models of the {len(train_seeds)} training seeds "
            f"({', '.join(map(str, train_seeds))}) over the test streams (mean and spread over "
            "the pairs); a line per training seed follows it.")


def rst(table: dict[str, dict[str, Any]], loads: Sequence[str], seeds: Sequence[int],
        requests: int, scenario: str = "poisson", page: str = "docs/results_sla.rst",
        max_parallel: int = 2, train_seeds: Sequence[int] = ()) -> str:
    """The results page (``docs/results_sla.rst``; ``docs/results_sla_bursty.rst`` for the
    bursty scenario), written by ``compare_sla.py [--scenario S] --rst PAGE``; ``train_seeds``:
    the training seeds when there are several."""
    title = "Results: SLA scheduling of DNN inference"
    option = ""
    if scenario != "poisson":
        title += f" ({scenario} arrivals)"
        option = f"--scenario {scenario} "
    if len(train_seeds) > 1:
        option += f"--train-seeds {','.join(map(str, train_seeds))} "
    option += "--evaluate-only " + (f"--max-parallel {max_parallel} " if max_parallel > 1 else "")
    # another scenario's page is linked from docs/tenants.rst's text, not its toctree
    lines = [":orphan:", ""] if scenario != "poisson" else []
    lines += [title, "=" * len(title), "",
              f"Written by ``python benchmarks/compare_sla.py {option}--rst {page}`` "
              "(:doc:`tenants` explains the scenario, the load "
              "levels, the learners and how to read this page). Mean ± sample standard "
              f"deviation over {len(seeds)} test streams (seeds {', '.join(map(str, seeds))}) "
              f"of {requests:,} requests each." + _pooled(train_seeds), ""]
    for load in loads:
        lines += [load.capitalize(), "-" * len(load), ""]
        lines += _list_table(load_grid(table, load))
        lines += [_esc(verdict(table, load)), ""]
    grid = training_grid(table)
    if len(grid) > 1:
        lines += ["Training", "--------", ""] + _list_table(grid)
        for name in (n for n in table if n.startswith("training: ")):
            lines += [f"``{name[len('training: '):]}``: ``{table[name]['command']}``", ""]
    return "\n".join(lines)
