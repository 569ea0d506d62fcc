"""Power of the hosts a parallel job loads only in part, as SimGrid's energy plugin counts it.

A ``parallel_homogeneous`` job runs as one SimGrid parallel task: its hosts advance in lock-step at
the pace of the slowest one (:mod:`hdrm.sim.machine`), so a faster host of the job computes at
``pace / speed`` of its speed, on one of its cores (a task uses one core of a host of
``core="N"`` cores). SimGrid 3.32's energy plugin gives a host at load ``L > 0`` (the speed used
over the speed of all its cores) the power ``epsilon + L * (full - epsilon)`` of its power state
(``epsilon`` is the middle value of ``idle:epsilon:full``, the idle one of ``idle:full``), its idle
power at load 0, and counts a host of speed 0 as fully loaded. So a job on two clusters, 20 and 5
GFLOP/s, ``95:200`` W on the fast hosts, draws 95 + 0.25 x 105 = 121.25 W on each fast host, not
200 W; with ``core="4"`` on the fast hosts, 95 + 0.0625 x 105 W (measured with the real Batsim
4.2.1).

:class:`~hdrm.batsim.hosts.HostBoard` runs its hosts on :class:`~hdrm.sim.machine.Machine`, which
draws the full power of a computing host; :class:`PartialLoad` keeps the difference (the *slack*
watts of each computing job, 0 when all its hosts are fully loaded or their idle and full powers
are equal, as on hdrm's exported platforms), integrates it over time, and the board subtracts it
from the total and from each job's energy.

The built-in engine's machine on a SimGrid XML platform (:mod:`hdrm.sim.simgrid_machine`) draws
the full power of every host of a running job too, delay jobs included; a ``delay`` job computes
nothing (Batsim sleeps), so its hosts draw their idle power: :meth:`PartialLoad.start` with
``computing=False`` keeps ``full - idle`` watts of slack per host for it.
"""

from __future__ import annotations

from typing import Sequence

from hdrm.platform.simgrid import HostSpec

#: (idle, epsilon, full) watts of one power state.
PowerRange = tuple[float, float, float]


def power_ranges(host: HostSpec) -> list[PowerRange]:
    """Per power state of ``host``, its (idle, epsilon, full) watts (all 0 without wattages).

    The epsilon of ``idle:epsilon:full`` is read from the host's ``wattage_per_state`` property
    (:class:`~hdrm.platform.simgrid.HostSpec` keeps idle and full only); ``idle:full`` has
    epsilon = idle, as in SimGrid.
    """
    pairs = host.wattage_per_state_w
    if not pairs:
        return [(0.0, 0.0, 0.0)] * len(host.speeds_gflops)
    text = host.properties.get("wattage_per_state", host.properties.get("watt_per_state", ""))
    parts = [p.split(":") for p in text.split(",")]
    ranges = []
    for i, (idle, full) in enumerate(pairs):
        three = i < len(parts) and len(parts[i]) == 3
        ranges.append((idle, float(parts[i][1]) if three else idle, full))
    return ranges


class PartialLoad:
    """The slack watts and joules of the computing jobs of a set of hosts.

    Args:
        hosts: the compute hosts, in resource order.
        pstate: each host's current power state (the board's list, read, never written).
    """

    def __init__(self, hosts: Sequence[HostSpec], pstate: list[int]) -> None:
        self._speeds = [h.speeds_gflops for h in hosts]
        self._cores = [h.cores for h in hosts]
        self._ranges = [power_ranges(h) for h in hosts]
        self._pstate = pstate
        self._hosts: dict[int, tuple[int, ...]] = {}  # computing job -> its hosts
        self._delays: set[int] = set()  # jobs that compute nothing (their hosts draw idle)
        self._watts: dict[int, float] = {}  # job with slack -> slack watts now
        self._joules: dict[int, float] = {}  # job -> slack joules so far
        self._total_w = 0.0
        self._total_j = 0.0
        self._t = 0.0

    def advance(self, t: float) -> None:
        """Integrate the slack up to time ``t`` (not before the last time)."""
        dt = t - self._t
        if dt <= 0:
            return
        self._t = t
        if self._watts:
            self._total_j += self._total_w * dt
            for key, watts in self._watts.items():
                self._joules[key] += watts * dt

    @property
    def power_w(self) -> float:
        """Slack watts now (to subtract from the machine's power)."""
        return self._total_w

    def energy_j(self, now: float) -> float:
        """Slack energy of every host from time 0 to ``now`` (to subtract from the machine's)."""
        return self._total_j + self._total_w * max(0.0, now - self._t)

    def start(self, key: int, hosts: Sequence[int], computing: bool = True) -> None:
        """Job ``key`` starts on ``hosts`` (call :meth:`advance` to now first): computing, or
        (``computing=False``, a delay job on hosts drawing full power) not."""
        if not computing:
            self._delays.add(key)
        if not computing or len(hosts) > 1 or self._cores[hosts[0]] > 1:
            self._hosts[key] = tuple(hosts)
            self._joules[key] = 0.0
            self._update(key)

    def restate(self, hosts: Sequence[int], job_on: Sequence[int]) -> None:
        """Some ``hosts`` changed power state: re-time the slack of the jobs computing on them."""
        for key in {job_on[h] for h in hosts} & self._hosts.keys():
            self._update(key)

    def end(self, key: int) -> float:
        """Job ``key`` stops computing; returns its slack joules (call :meth:`advance` first)."""
        if self._hosts.pop(key, None) is None:
            return 0.0
        self._delays.discard(key)
        self._total_w -= self._watts.pop(key, 0.0)
        if not self._watts:
            self._total_w = 0.0  # no drift from additions and subtractions
        return self._joules.pop(key)

    def _update(self, key: int) -> None:
        hosts, pstate = self._hosts[key], self._pstate
        if key in self._delays:  # no computation: every host draws its idle power
            ranges = [self._ranges[h][pstate[h]] for h in hosts]
            self._set_slack(key, sum(full - idle for idle, _, full in ranges))
            return
        speeds = [self._speeds[h][pstate[h]] for h in hosts]
        pace = min(speeds)
        slack = 0.0
        for h, speed in zip(hosts, speeds):
            idle, epsilon, full = self._ranges[h][pstate[h]]
            load = 1.0 if speed <= 0 else min(pace / speed / self._cores[h], 1.0)
            slack += full - (epsilon + load * (full - epsilon) if load > 0 else idle)
        self._set_slack(key, slack)

    def _set_slack(self, key: int, slack: float) -> None:
        self._total_w -= self._watts.pop(key, 0.0)
        if slack > 0:
            self._watts[key] = slack
            self._total_w += slack
        elif not self._watts:
            self._total_w = 0.0
