"""The built-in engine's machine on a SimGrid XML platform: energy as SimGrid's energy plugin.

hdrm's own platforms (JSON) use hdrm's power table (:mod:`hdrm.platform.power`: an idle core
draws 30 % of its full power, a sleeping one 5 %). A SimGrid XML platform gives its own watts per
power state (``wattage_per_state`` ``idle:full`` or ``idle:epsilon:full``), and the real Batsim
4.2.1 with ``-E`` charges them as SimGrid 3.32's energy plugin does; so does this machine:

* a host with no job, or running a ``delay`` job (Batsim sleeps: it computes nothing), draws the
  *idle* watts of its power state (the ``pstate`` it starts in; the built-in engine never changes
  it);
* a host computing a ``parallel_homogeneous`` job at load ``L`` draws ``epsilon + L * (full -
  epsilon)``: full power when the job's other hosts are not slower and the host has one core,
  less on a host of ``core="N"`` or one that waits for a slower host of the job.

The rule is :class:`hdrm.batsim.partial_load.PartialLoad`'s, the one ``hdrm serve`` uses: the
machine's power table holds the full watts for a running host and the idle watts otherwise, and
the partial load's slack is subtracted from the total and from each job's energy. What the
plugin has and this machine does not model (a non-zero ``wattage_off``, ``sleep_pstates``: the
engine never switches hosts off or to another power state) is logged once per file (a warning).
"""

from __future__ import annotations

import logging
import math
import os
from functools import lru_cache
from typing import Sequence

from hdrm.batsim.partial_load import PartialLoad, power_ranges
from hdrm.errors import SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.power import SLEEPING, state_speeds_gflops
from hdrm.platform.simgrid import HostSpec, read_simgrid_hosts
from hdrm.sim.machine import JobEnd, Machine
from hdrm.workload.job import Workload

logger = logging.getLogger(__name__)


def simgrid_machine_for(platform: Platform, kill_on_walltime: bool = True,
                        workload: Workload | None = None) -> "SimgridMachine | None":
    """The built-in engine's machine for a platform read from SimGrid XML
    (:func:`hdrm.platform.simgrid.platform_from_simgrid`); None for any other platform (the
    engine then uses :func:`~hdrm.sim.machine.machine_for`, hdrm's power table).
    Energy is counted from the ``workload``'s first submission, as Batsim's consumed_joules.

    Raises:
        SimulationError: the file changed since the platform was read from it.
    """
    if not platform.source.lower().endswith(".xml") or platform.accelerators:
        return None
    hosts = _hosts_of(platform)
    if not hosts:
        return None
    first_s = min((j.submit_s for j in workload.jobs), default=0.0) if workload else 0.0
    return SimgridMachine(hosts, kill_on_walltime, first_s)


def _hosts_of(platform: Platform) -> list[HostSpec] | None:
    """The compute hosts of the platform's SimGrid file (same host names and speeds as the
    platform), or None when the file is gone (then said in a warning)."""
    path = platform.source
    try:
        stat = os.stat(path)
    except OSError as exc:
        logger.warning("%s: cannot read the SimGrid file again (%s); the built-in engine charges "
                       "hdrm's power table, not the file's watts", path, exc.strerror)
        return None
    hosts = _read_hosts(path, stat.st_mtime_ns, stat.st_size)
    if [h.name for h in hosts] != [n.name for n in platform.nodes] or any(
            h.speeds_gflops[h.pstate] != g for h, g in zip(hosts, platform.core_gflops)):
        raise SimulationError(f"{path}: the SimGrid file no longer describes the platform read "
                              "from it (hosts or speeds changed); read it again")
    return hosts


@lru_cache(maxsize=8)
def _read_hosts(path: str, mtime_ns: int, size: int) -> list[HostSpec]:
    """The file's compute hosts, read once per version of the file (episodes re-make machines);
    what of their energy is not modelled is logged then, once."""
    hosts = read_simgrid_hosts(path)
    for what in _unmodelled(hosts):
        logger.warning("%s: the built-in engine does not model %s", path, what)
    return hosts


def _unmodelled(hosts: Sequence[HostSpec]) -> list[str]:
    """The energy features of the hosts this machine does not model, one phrase each."""
    found = []
    if any(h.wattage_off_w for h in hosts):  # 0 W (hdrm's exports) is what "off" draws anyway
        found.append("wattage_off (no host is ever switched off)")
    if any("sleep_pstates" in h.properties for h in hosts):
        found.append("sleep_pstates (every host stays in its starting power state, as under a "
                     "Batsim scheduler that never sets resource states)")
    return found


class SimgridMachine(Machine):
    """One host per compute host of a SimGrid file, charged as SimGrid's energy plugin.

    Power states are the engine's (running, contended, idle, sleeping); each host's speed and
    watts are those of its SimGrid power state ``pstate``: full watts running (contention never
    happens on these platforms: their memory bandwidth is unbounded), idle watts idle or
    sleeping. Job starts, ends and kills keep :class:`~hdrm.batsim.partial_load.PartialLoad`'s
    account; :meth:`energy_j`, :attr:`~hdrm.sim.simgrid_machine.SimgridMachine.power_w`,
    :meth:`snapshot` and each job's ``energy_j``
    have its slack taken off. Energy is counted from the first submission, as Batsim's
    consumed_joules (every host idles before it: no job has come).

    Args:
        hosts: the compute hosts, in resource order.
        kill_on_walltime: kill jobs that reach their walltime (Batsim's behaviour).
        first_submit_s: the workload's first submission time.
    """

    def __init__(self, hosts: Sequence[HostSpec], kill_on_walltime: bool = True,
                 first_submit_s: float = 0.0) -> None:
        speeds, powers = [], []
        for host in hosts:
            idle, _, full = power_ranges(host)[host.pstate]
            speeds.append(state_speeds_gflops(host.speeds_gflops[host.pstate]))
            powers.append((full, full, idle, idle))
        super().__init__(speeds, powers, SLEEPING, kill_on_walltime, host_energy=False,
                         compact=True)
        self.partial = PartialLoad(hosts, [h.pstate for h in hosts])
        self._idle_w = math.fsum(p[SLEEPING] for p in powers)
        self._first_s = max(first_submit_s, 0.0)
        self._last_end_j: float | None = None  # energy at the last job end so far

    def start(self, key: int, cores: Sequence[int], *, delay_s: float | None = None,
              ops_gflop: float | None = None, walltime_s: float = math.inf,
              runs: list[tuple[int, int]] | None = None,
              parts: tuple[tuple[float | None, float | None], ...] | None = None) -> None:
        """:meth:`Machine.start <hdrm.sim.machine.Machine.start>`, and the job's partial load.

        Raises:
            SimulationError: as :meth:`Machine.start <hdrm.sim.machine.Machine.start>`, or
                ``parts`` mixes delay and computing parts (a ``composed`` job), whose energy
                per part this machine does not model.
        """
        computing = ops_gflop is not None
        if parts:
            kinds = {ops is not None for _, ops in parts}
            if len(kinds) > 1:
                raise SimulationError(
                    f"job {key}: a composed job mixing delay and computing parts on a SimGrid "
                    "XML platform, whose hosts' energy per part the built-in engine does not "
                    "model; run it with hdrm serve -E, or split the job")
            computing = kinds == {True}
        super().start(key, cores, delay_s=delay_s, ops_gflop=ops_gflop, walltime_s=walltime_s,
                      runs=runs, parts=parts)
        self.partial.advance(self.now)
        self.partial.start(key, tuple(cores), computing=computing)

    def kill(self, key: int) -> JobEnd:
        """:meth:`Machine.kill <hdrm.sim.machine.Machine.kill>`, the job's slack taken off."""
        end = super().kill(key)
        self.partial.advance(self.now)
        end.energy_j -= self.partial.end(key)
        self._last_end_j = self.energy_j()
        return end

    def advance(self, t: float) -> list[JobEnd]:
        """:meth:`Machine.advance <hdrm.sim.machine.Machine.advance>`; each ending job's slack
        is taken off at its end."""
        partial = self.partial
        ends = super().advance(t)
        for end in ends:  # in end order
            partial.advance(end.finish_s)
            end.energy_j -= partial.end(end.key)
        if ends:  # the power is constant from the last of them to t (nothing starts here)
            self._last_end_j = self.energy_j() - self.power_w * (t - ends[-1].finish_s)
        partial.advance(t)
        return ends

    @property
    def power_w(self) -> float:
        """Current total power of all hosts."""
        return self._total_power - self.partial.power_w

    def energy_j(self) -> float:
        """Energy consumed by all hosts from the first submission to now."""
        now = self.now
        return (super().energy_j() - self.partial.energy_j(now)
                - self._idle_w * min(now, self._first_s))

    def consumed_j(self) -> float:
        """Batsim's consumed_joules: the energy from the first submission to the last job end
        (0 when no job ended), what the engine reports at the end of a run; while jobs run (a
        run stopped early), the energy so far."""
        if self._jobs:
            return self.energy_j()
        return 0.0 if self._last_end_j is None else self._last_end_j

    def snapshot(self) -> tuple[int, float, float]:
        """``(running, power_w, energy_j())`` in one call."""
        return len(self._jobs), self.power_w, self.energy_j()
