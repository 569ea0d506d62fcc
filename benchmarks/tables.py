"""Rendering the comparison table: Markdown for the terminal, list-tables for docs/results.rst.

Tables are grids of text cells (a header line, then one line per row). Floats get 2 decimals,
booleans yes/no, missing values ``n/a``; the RST cells are escaped so that the page builds with
Sphinx's ``-W``.
"""

from __future__ import annotations

import math
from typing import Any

def fmt(value: Any) -> str:
    """A cell as text: 2 decimals for floats, yes/no for booleans."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.2f}"
    return "n/a" if value is None or value == "" else str(value)


#: Summary columns, shown after the policies' columns whatever row introduced them.
_SUMMARY_PREFIXES = ("best ", "target", "flags")


def columns_of(table: dict[str, dict[str, Any]], names: list[str]) -> list[str]:
    """The union of the columns of rows ``names``, in first-seen order, summary columns
    (published values, best ..., flags, targets) last."""
    cols: dict[str, None] = {}
    for name in names:
        cols.update(dict.fromkeys(table[name]))
    return sorted(cols, key=_is_summary)  # stable: first-seen order within each part


def _is_summary(column: str) -> bool:
    return column.startswith(_SUMMARY_PREFIXES) or column.endswith("(RLScheduler, published)")


def sections(table: dict[str, dict[str, Any]], grouped: dict[str, list[str]],
             tail: dict[str, str] | None = None) -> list[tuple[str, list[list[str]]]]:
    """The tables to print: (title, header + body rows of text cells).

    Args:
        table: ``{row: {column: value}}`` (a row's tail lines are ``"<row> [metric]"``,
            training rows ``"training: <model file>"``).
        grouped: the row names of each group (``protocol``, ``generalisation``, ``hetero``).
        tail: ``{metric: label}`` of the tail lines: each row gets a table of its own, one line
            per policy (default: utilisation only).
    """
    tail = tail or {"utilisation": "utilisation"}
    out = []
    titles = {"protocol": "Protocol rows: average bounded slowdown (lower is better)",
              "generalisation": "Generalisation rows: average bounded slowdown",
              "hetero": "Heterogeneous rows (transposed: one line per policy)"}
    for group, names in grouped.items():
        if not names:
            continue
        if group == "hetero":
            out.append((titles[group], _grid(table, columns_of(table, names), names, True)))
        else:
            out.append((titles[group], _grid(table, names, columns_of(table, names), False)))
        out += [(f"What the mean hides: {name}", tail_grid(table, name, tail)) for name in names]
    train = [n for n in table if n.startswith("training: ")]
    if train:
        cols = [c for c in columns_of(table, train) if c != "command"]
        out.append(("Learners: setting and training cost", _grid(table, train, cols, False)))
    return out


def tail_grid(table: dict[str, dict[str, Any]], name: str, tail: dict[str, str]
              ) -> list[list[str]]:
    """One line per policy of row ``name``: its mean, then each tail metric."""
    lines = [m for m in tail if f"{name} [{m}]" in table]
    policies = list(table[f"{name} [{lines[0]}]"]) if lines else []
    grid = [["", "mean"] + [tail[m] for m in lines]]
    for policy in policies:
        grid.append([policy, fmt(table[name].get(policy))]
                    + [fmt(table[f"{name} [{m}]"].get(policy)) for m in lines])
    return grid


def _grid(table: dict[str, dict[str, Any]], lines: list[str], cols: list[str], transposed: bool
          ) -> list[list[str]]:
    get = (lambda line, col: table[col].get(line)) if transposed else \
        (lambda line, col: table[line].get(col))
    return [[""] + cols] + [[line] + [fmt(get(line, col)) for col in cols] for line in lines]


def markdown(title: str, grid: list[list[str]]) -> str:
    """A Markdown table with a heading."""
    lines = [f"### {title}", "", "| " + " | ".join(grid[0]) + " |",
             "|" + "---|" * len(grid[0])]
    lines += ["| " + " | ".join(r) + " |" for r in grid[1:]]
    return "\n".join(lines) + "\n"


def rst(sections_: list[tuple[str, list[list[str]]]], notes: dict[str, str],
        commands: dict[str, str], intro: str) -> str:
    """The results page: one list-table per section, the cell notes and the training commands."""
    out = [":orphan:", "", "Results", "=======", "", intro, ""]
    for title, grid in sections_:
        out += [title, "-" * len(title), "", f".. list-table:: {title}", "   :header-rows: 1", ""]
        for line in grid:
            out.append("   * - " + _rst_cell(line[0]))
            out += ["     - " + _rst_cell(c) for c in line[1:]]
        out.append("")
    if notes:
        out += ["Which model gave each learner cell", "-" * 34, ""]
        out += [f"* {_rst_cell(k)}: {_literal(v)}" for k, v in notes.items()] + [""]
    if commands:
        out += ["Training commands", "-" * 17, ""]
        out += [f"* ``{name}``: {_literal(cmd)}" for name, cmd in commands.items()] + [""]
    return "\n".join(out)


def _literal(text: str) -> str:
    return f"``{text.replace('`', chr(39))}``" if text.strip() else "n/a"


def _rst_cell(text: str) -> str:
    text = text.replace("*", "\\*").replace("`", "'").replace("|", "\\|")
    return text if text else "\\ "


INTRO = ("Written by ``python benchmarks/compare.py --evaluate-only --allow-leaky`` (do not edit "
         "by hand); the protocol and how to read the columns are explained in :doc:`comparison`. "
         "A learner column is the mean over its training seeds, with their min-max beside it. "
         "**[pre-rule]** marks a model trained before the no-leakage rule (it may have trained "
         "on test jobs; its figures are shown for the record and never meet a target), "
         "**[leaky]** a model evaluated on jobs it trained or validated on. *flags* names the "
         "learners with a seed whose longest wait or makespan exceeds 1.5 times the best "
         "heuristic's; *target met by* names the learner that meets a row's target when the "
         "best rule-abiding one cannot (flagged, or fewer than 3 seeds).")
