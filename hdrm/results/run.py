"""A run folder and the result files in it, read on demand and cached.

A run folder is what one run of either engine leaves behind:

=================================  ========================================================
``out_jobs.csv``                   one row per job (Batsim's; any ``<prefix>_jobs.csv`` too)
``out_schedule.csv``               the schedule summary (Batsim's columns, then hdrm's)
``out_timeline.csv``               the built-in engine's timeline (optional)
``overutilizations.json``          contention and shortage events (optional)
``episodes.csv``, ``actions.csv``  a learning run's logs (optional)
=================================  ========================================================

A missing folder or a missing file that a caller needs is a :class:`~hdrm.errors.ConfigError`
naming the folder, the file, what needed it and the files that are there.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from hdrm.errors import ConfigError
from hdrm.results._files import (  # noqa: F401  (the names of a run's files, re-exported)
    ACTIONS_FILE,
    EPISODES_FILE,
    JOBS_FILE,
    OVERUTILIZATIONS_FILE,
    SCHEDULE_FILE,
    TIMELINE_FILE,
)
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv
from hdrm.results.learning import Actions, Episodes, read_actions_csv, read_episodes_csv
from hdrm.results.metrics import summarize
from hdrm.results.overutil import Overutilizations, read_overutilizations
from hdrm.results.records import JobResult
from hdrm.results.timeline import Timeline, derive_timeline, read_timeline_csv

logger = logging.getLogger(__name__)


class Run:
    """One run folder.

    Args:
        run_dir: the folder.
        label: a short name for plots and tables (default: the folder's name).

    Raises:
        ConfigError: the folder does not exist or is not a folder.
    """

    def __init__(self, run_dir: str | Path, label: str | None = None) -> None:
        self.path = Path(run_dir)
        if not self.path.is_dir():
            what = "is not a folder" if self.path.exists() else "does not exist"
            raise ConfigError(f"run folder {self.path} {what}; give the folder a run wrote")
        self.label = label or self.path.resolve().name
        self._cache: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    def file(self, name: str) -> Path | None:
        """The path of result file ``name`` in the folder, or None when absent.

        ``out_jobs.csv`` and ``out_schedule.csv`` also match Batsim's other export prefixes
        (``<prefix>_jobs.csv``) when exactly one such file is there.
        """
        path = self.path / name
        if path.is_file():
            return path
        if name in (JOBS_FILE, SCHEDULE_FILE):
            suffix = name[len("out"):]
            matches = sorted(self.path.glob(f"*{suffix}"))
            if len(matches) == 1:
                return matches[0]
        return None

    def require(self, name: str, needed_for: str) -> Path:
        """The path of result file ``name``; a ConfigError when it is absent.

        Args:
            name: the file name (``out_timeline.csv``).
            needed_for: what needs it, for the message (``"the energy plot"``).
        """
        path = self.file(name)
        if path is None:
            present = sorted(p.name for p in self.path.iterdir() if p.is_file())
            raise ConfigError(
                f"run folder {self.path} has no {name} (needed for {needed_for}); "
                f"files there: {', '.join(present) or 'none'}"
            )
        return path

    def _cached(self, key: str, load: Any) -> Any:
        """``load()``'s value, computed once per key."""
        if key not in self._cache:
            self._cache[key] = load()
        return self._cache[key]

    def jobs(self) -> list[JobResult]:
        """The job results of out_jobs.csv (required)."""
        return self._cached("jobs", lambda: read_jobs_csv(self.require(JOBS_FILE, "job results")))

    def schedule(self) -> dict[str, Any] | None:
        """The out_schedule.csv summary, or None when the folder has none."""
        path = self.file(SCHEDULE_FILE)
        return None if path is None else self._cached("schedule", lambda: read_schedule_csv(path))

    def timeline(self) -> Timeline:
        """out_timeline.csv when present, else a timeline derived from out_jobs.csv."""
        path = self.file(TIMELINE_FILE)
        if path is not None:
            return self._cached("timeline", lambda: read_timeline_csv(path))
        return self._cached("timeline", lambda: derive_timeline(self.jobs()))

    def overutilizations(self, needed_for: str = "contention events") -> Overutilizations:
        """The events of overutilizations.json (required)."""
        path = self.require(OVERUTILIZATIONS_FILE, needed_for)
        return self._cached("over", lambda: read_overutilizations(path))

    def overutilizations_or_none(self) -> Overutilizations | None:
        """The events of overutilizations.json, or None when the folder has none."""
        return None if self.file(OVERUTILIZATIONS_FILE) is None else self.overutilizations()

    def episodes(self) -> Episodes:
        """The per-episode log of a learning run (required)."""
        path = self.require(EPISODES_FILE, "per-episode learning results")
        return self._cached("episodes", lambda: read_episodes_csv(path))

    def actions(self) -> Actions:
        """The per-decision action log of a learning run (required)."""
        path = self.require(ACTIONS_FILE, "the chosen actions")
        return self._cached("actions", lambda: read_actions_csv(path))

    def nb_resources(self) -> int:
        """Cores of the platform: out_schedule.csv's nb_computing_machines, else the highest
        allocated core id + 1."""
        schedule = self.schedule()
        if schedule and int(schedule.get("nb_computing_machines", 0)) > 0:
            return int(schedule["nb_computing_machines"])
        highest = max((max(r.core_ids(), default=-1) for r in self.jobs()), default=-1)
        return highest + 1

    def energy_j(self) -> float:
        """Energy the run consumed, in joules; nan when the run did not simulate energy.

        Taken from the timeline's last energy, else out_schedule.csv's consumed_joules (unless
        Batsim ran without energy: 0 J with every job at -1 J), else the sum of job energies.
        """
        if self.file(TIMELINE_FILE) is not None:
            timeline = self.timeline()
            if len(timeline) and not math.isnan(timeline.energy_j[-1]):
                return float(timeline.energy_j[-1])
        jobs = self.jobs()
        no_job_energy = all((r.consumed_energy or 0) < 0 for r in jobs if r.finished)
        schedule = self.schedule()
        if schedule and not (schedule.get("consumed_joules", 0) == 0 and no_job_energy):
            return float(schedule["consumed_joules"])
        if no_job_energy:
            return math.nan
        return sum(float(r.consumed_energy) for r in jobs if r.finished)

    def summary(self) -> dict[str, Any]:
        """Every schedule metric recomputed from out_jobs.csv (see
        :func:`hdrm.results.metrics.summarize`), with ``consumed_joules`` from
        :meth:`energy_j` (nan when unknown)."""

        return self._cached(
            "summary", lambda: summarize(self.jobs(), self.nb_resources(), self.energy_j())
        )
