"""A DAG schedule: per task its processor, start and finish; metrics and the validity check.

* makespan: the latest finish;
* schedule length ratio (SLR): makespan over the critical path in least costs without transfers
  (:func:`~hdrm.dag.ranks.longest_min_path_s`), so never below 1 for a valid schedule;
* speedup: the least total cost of running every task on one processor, over the makespan.

:meth:`Schedule.violations` lists every broken rule (a task that starts before a predecessor's
finish plus the transfer, a task that does not last its cost, two tasks overlapping on one
processor); :meth:`Schedule.validate` raises on the first.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from hdrm.dag.model import Dag
from hdrm.dag.ranks import longest_min_path_s
from hdrm.durable import replacing
from hdrm.errors import SimulationError

#: Slack allowed in the validity check, relative to the makespan (rounding of sums only).
REL_TOL = 1e-9

#: Columns of the schedule CSV.
CSV_COLUMNS = ("task", "processor", "start_s", "finish_s", "cost_s")


@dataclass(frozen=True, eq=False)
class Schedule:
    """Where and when each task of a DAG runs.

    Attributes:
        dag: the scheduled DAG.
        policy: the scheduler's name (``heft``, ``cpop``, ``peft`` ...).
        processor: per task, the processor index.
        start_s: per task, the start time in seconds.
        finish_s: per task, the finish time in seconds.
    """

    dag: Dag
    policy: str
    processor: tuple[int, ...]
    start_s: tuple[float, ...]
    finish_s: tuple[float, ...]

    @property
    def makespan_s(self) -> float:
        """The latest finish time (0 for an empty DAG)."""
        return max(self.finish_s, default=0.0)

    @property
    def slr(self) -> float:
        """Schedule length ratio: makespan / least-cost critical path (1.0 when both are 0)."""
        bound = longest_min_path_s(self.dag)
        return self.makespan_s / bound if bound > 0 else 1.0

    @property
    def speedup(self) -> float:
        """Best single-processor total cost / makespan (1.0 when both are 0)."""
        columns = zip(*self.dag.costs_s)
        sequential = min((math.fsum(col) for col in columns), default=0.0)
        return sequential / self.makespan_s if self.makespan_s > 0 else 1.0

    def violations(self) -> list[str]:
        """Every broken rule, one line each, naming the tasks; empty for a valid schedule."""
        tol = REL_TOL * max(1.0, self.makespan_s)
        return self._timing_violations(tol) + self._overlap_violations(tol)

    def validate(self) -> None:
        """Raise :class:`~hdrm.errors.SimulationError` naming the first broken rule, if any."""
        problems = self.violations()
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise SimulationError(f"{self.policy} schedule of {self.dag.name}: {problems[0]}{more}")

    def _timing_violations(self, tol: float) -> list[str]:
        dag, names, procs = self.dag, self.dag.tasks, self.dag.network.processors
        found = []
        for task in range(dag.size):
            proc, start, finish = self.processor[task], self.start_s[task], self.finish_s[task]
            cost = dag.costs_s[task][proc]
            if start < -tol or abs(finish - start - cost) > tol:
                found.append(f"task {names[task]!r} runs {start!r}-{finish!r} s on {procs[proc]!r} "
                             f"but costs {cost!r} s there")
            for prev, data in dag.pred[task]:
                ready = self.finish_s[prev] + dag.network.comm_s(data, self.processor[prev], proc)
                if start < ready - tol:
                    found.append(f"task {names[task]!r} starts at {start!r} s, before its input "
                                 f"from {names[prev]!r} arrives at {ready!r} s")
        return found

    def _overlap_violations(self, tol: float) -> list[str]:
        names, procs = self.dag.tasks, self.dag.network.processors
        by_proc: dict[int, list[int]] = {}
        for task, proc in enumerate(self.processor):
            by_proc.setdefault(proc, []).append(task)
        found = []
        for proc, tasks in sorted(by_proc.items()):
            tasks.sort(key=lambda t: (self.start_s[t], self.finish_s[t]))
            for before, after in zip(tasks, tasks[1:]):
                if self.start_s[after] < self.finish_s[before] - tol:
                    found.append(f"tasks {names[before]!r} and {names[after]!r} overlap on "
                                 f"processor {procs[proc]!r}")
        return found

    def rows(self) -> list[tuple[str, str, float, float, float]]:
        """(task, processor, start_s, finish_s, cost_s) per task, by start time then task order."""
        dag, procs = self.dag, self.dag.network.processors
        order = sorted(range(dag.size), key=lambda t: (self.start_s[t], t))
        return [(dag.tasks[t], procs[self.processor[t]], self.start_s[t], self.finish_s[t],
                 dag.costs_s[t][self.processor[t]]) for t in order]

    def write_csv(self, path: str | Path) -> Path:
        """Write :meth:`rows` with a header (:data:`CSV_COLUMNS`) to ``path``; returns the path."""
        path = Path(path)
        with replacing(path) as scratch, scratch.open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)  # whole or not at all (hdrm.durable.replacing)
            writer.writerow(CSV_COLUMNS)
            writer.writerows((t, p, repr(s), repr(f), repr(c)) for t, p, s, f, c in self.rows())
        return path
