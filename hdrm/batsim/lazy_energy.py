"""SimGrid's lazy host energy accounts, where a ``composed`` job sleeps before it computes.

SimGrid 3.32's energy plugin brings a host's account up to date only when something reads it or
an execution starts or ends on it, at the power the host has *then*. Batsim 4.2.1 (with ``-E``)
reads every host's energy at each job start and end and each power-state change (its energy
trace), and a computation starts and ends on its hosts. So when a ``composed`` job's computing
part follows a sleep (a ``delay`` part), its hosts' accounts were last read at the previous
part's end or at the last job start or end anywhere, and the computation's start charges that
stretch at the computing power, on every host of the job but the first, where the job's actor
runs (its account is read as the sleep ends). Measured with the binary: a 1.125 s sleep then
2.07 s of work on 2 hosts of 95:200 and 96:207 W costs 1182.24 J, the second host at 207 W
during the sleep (1057.365 J at idle power); the same before work on one host, or after it,
at idle power. :class:`LazyCharges` keeps these extra joules, in all and per job.
"""

from __future__ import annotations

from typing import Sequence


class LazyCharges:
    """The extra joules of sleeps charged at a computation's power.

    Args:
        powers: per host, its machine power row (state ``2k`` P-state k idle, ``2k + 1``
            computing).
        pstate: each host's current P-state (the board's list, read, never written).
    """

    def __init__(self, powers: Sequence[Sequence[float]], pstate: list[int]) -> None:
        self._powers = powers
        self._pstate = pstate
        self._read_s = [0.0] * len(powers)  # when each host's account was last brought up to date
        self._all_read_s = 0.0  # when every host's was
        self.total_j = 0.0
        self._job_j: dict[int, float] = {}

    def read_all(self, now: float) -> None:
        """Batsim reads every host's energy now (a job starts or ends, a power state changes)."""
        self._all_read_s = now

    def part_begins(self, key: int, hosts: Sequence[int], computing: bool, was_computing: bool,
                    now: float) -> None:
        """Job ``key``'s next part begins now on ``hosts``: a computation after a sleep charges
        the sleep at its power on all hosts but the first; a computation's start or end reads
        the accounts of its hosts."""
        if computing and not was_computing:
            first, extra = min(hosts), 0.0
            for h in hosts:
                if h != first:
                    row, state = self._powers[h], 2 * self._pstate[h]
                    extra += (row[state + 1] - row[state]) * (now - max(self._read_s[h],
                                                                        self._all_read_s))
            if extra:
                self.total_j += extra
                self._job_j[key] = self._job_j.get(key, 0.0) + extra
        if computing or was_computing:
            for h in hosts:
                self._read_s[h] = now

    def job_j(self, key: int) -> float:
        """The extra joules of job ``key`` (forgotten: call once, at its end)."""
        return self._job_j.pop(key, 0.0)
