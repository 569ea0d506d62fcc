"""What a simulated machine answers: its size, power, energies and running jobs' progress.

:class:`MachineQueries` holds the read-only queries of :class:`~hdrm.sim.machine.Machine`, mixed
into it (they read its attributes); the machine keeps the commands that change it. The one query
that writes is :meth:`MachineQueries.next_time`, which drops the end-heap entries of jobs that
ended or were re-timed (stale versions), so the next look is O(1).
"""

from __future__ import annotations

import array
import heapq
import math

from hdrm.errors import SimulationError
from hdrm.sim.running import RunningJob


class MachineQueries:
    """Read-only queries mixed into :class:`~hdrm.sim.machine.Machine` (its attributes)."""

    state: list[int]
    now: float
    _power: list[tuple[float, ...]]
    _energy_acc: list[float] | array.array | None
    _energy_t: list[float] | array.array | None
    _total_power: float
    _total_energy: float
    _total_t: float
    _jobs: dict[int, RunningJob]
    _heap: list[tuple[float, int, int, int]]

    @property
    def nb_hosts(self) -> int:
        """Number of hosts."""
        return len(self.state)

    @property
    def running(self) -> int:
        """Number of running jobs."""
        return len(self._jobs)

    @property
    def power_w(self) -> float:
        """Current total power of all hosts."""
        return self._total_power

    def energy_j(self) -> float:
        """Energy consumed by all hosts from time 0 to now."""
        return self._total_energy + self._total_power * (self.now - self._total_t)

    def snapshot(self) -> tuple[int, float, float]:
        """``(running, power_w, energy_j())`` in one call (a timeline row's machine part)."""
        return (len(self._jobs), self._total_power,
                self._total_energy + self._total_power * (self.now - self._total_t))

    def host_energy_j(self, host: int) -> float:
        """Energy consumed by one host from time 0 to now.

        Raises:
            SimulationError: the machine keeps no per-host accounts (``host_energy=False``).
        """
        if self._energy_acc is None or self._energy_t is None:
            raise SimulationError("this machine keeps no per-host energy (host_energy=False); "
                                  "energy_j() gives the total")
        return self._energy_acc[host] + self._power[host][self.state[host]] * (
            self.now - self._energy_t[host]
        )

    def is_running(self, key: int) -> bool:
        """True when job ``key`` runs on the machine."""
        return key in self._jobs

    def expected_end_s(self, key: int) -> float:
        """When job ``key`` ends if nothing changes (walltime included)."""
        return self._jobs[key].end_s

    def fraction_left(self, key: int, now: float) -> float:
        """Fraction of job ``key``'s run still ahead, ``(end - now) / (end - start)``, in [0, 1].

        ``end`` is the job's current end estimate at the hosts' current speeds (or its walltime);
        0 for a job that is not running.
        """
        job = self._jobs.get(key)
        if job is None:
            return 0.0
        total = job.end_s - job.start_s
        if total <= 0 or total == math.inf:
            return 1.0 if total == math.inf else 0.0
        return min(1.0, max(0.0, (job.end_s - now) / total))

    def progress(self, key: int) -> float:
        """Fraction of job ``key`` done, in [0, 1]."""
        return self._jobs[key].progress(self.now)

    def running_job(self, key: int) -> RunningJob:
        """The book-keeping of running job ``key``, to read (preemption finds block ends)."""
        return self._jobs[key]

    def next_time(self) -> float:
        """Time of the next job end, or ``math.inf``."""
        heap = self._heap
        jobs = self._jobs
        while heap:
            t, _, key, version = heap[0]
            job = jobs.get(key)
            if job is not None and job.version == version:
                return t
            heapq.heappop(heap)
        return math.inf
