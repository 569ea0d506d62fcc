"""The compute hosts the Batsim-protocol server simulates: power states, switches, energy.

The hosts come from a platform file (:func:`~hdrm.batsim.platform_hosts.load_hosts`, which
checks them as Batsim does). :class:`HostBoard` runs them on :class:`~hdrm.sim.machine.Machine`
and adds what Batsim does around SimGrid's hosts:

* power as SimGrid's energy plugin computes it for one-core hosts: the *idle* wattage of the
  current power state when the host computes nothing (no job, or a ``delay`` job, which only
  sleeps) and the *full* wattage while it computes (a ``parallel_homogeneous`` job, a switch);
  each power state ``k`` is machine state ``2k`` (idle) or ``2k + 1`` (computing), same speed;
  a host that a parallel job loads only in part (it waits for a slower host of the job) draws
  less (:mod:`hdrm.batsim.partial_load`);
* ``SET_RESOURCE_STATE``: a change between computation states is immediate; with the host
  property ``sleep_pstates = "S:OFF:ON"`` (Batsim's convention), going to sleep state ``S`` first
  computes one flop in the virtual state ``OFF`` and waking up one flop in state ``ON``, which
  takes ``1 / speed`` seconds and draws that state's power. The acknowledgement
  (``RESOURCE_STATE_CHANGED``) comes when the change is done;
* a job's task timed out at its walltime runs on (:meth:`HostBoard.linger`): its hosts stay
  loaded, charged to no job, until Batsim's executor ends or the work is done.

:func:`load_hosts`, :func:`check_energy`, :func:`check_master` and :func:`sleep_states` live in
:mod:`hdrm.batsim.platform_hosts`; they are imported here too, where they were first written.
"""

from __future__ import annotations

import heapq
import logging
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from hdrm.batsim.lazy_energy import LazyCharges
from hdrm.batsim.partial_load import PartialLoad
from hdrm.batsim.platform_hosts import check_energy, check_master, load_hosts, sleep_states
from hdrm.errors import PlatformError, ProtocolError
from hdrm.platform.simgrid import HostSpec
from hdrm.sim.machine import JobEnd, Machine

__all__ = ["HostBoard", "SWITCH_WORK_GFLOP", "check_energy", "check_master", "load_hosts",
           "sleep_states"]

logger = logging.getLogger(__name__)

#: Work of a switch-on or switch-off, in GFLOP (SimGrid executes one flop).
SWITCH_WORK_GFLOP = 1e-9


@dataclass(slots=True)
class _Switch:
    """A pending state change of some hosts (internal)."""

    hosts: tuple[int, ...]
    target: int


def _tables(hosts: Sequence[HostSpec]) -> tuple[list[tuple[float, ...]], list[tuple[float, ...]]]:
    """Machine speed and power tables: state ``2k`` is P-state k idle, ``2k + 1`` computing."""
    speeds, powers = [], []
    for host in hosts:
        n = len(host.speeds_gflops)
        watts = host.wattage_per_state_w
        if watts and len(watts) != n:
            raise PlatformError(
                f"host {host.name!r}: {len(watts)} wattage_per_state entries for {n} speeds; "
                "give one 'idle:full' pair per power state"
            )
        if not watts:
            logger.debug("host %s has no wattage_per_state: it consumes 0 W", host.name)
            watts = ((0.0, 0.0),) * n
        speeds.append(tuple(s for s in host.speeds_gflops for _ in (0, 1)))
        powers.append(tuple(w for pair in watts for w in pair))
    return speeds, powers


class HostBoard:
    """The hosts of a Batsim-protocol run: jobs, power states, switches and energy.

    Args:
        hosts: compute hosts in resource order (see :func:`load_hosts`).
    """

    def __init__(self, hosts: Sequence[HostSpec]) -> None:
        self.hosts = list(hosts)
        speeds, powers = _tables(self.hosts)
        self.pstate: list[int] = [h.pstate for h in self.hosts]
        self.machine = Machine(speeds, powers, [2 * p for p in self.pstate], kill_on_walltime=True)
        self.partial = PartialLoad(self.hosts, self.pstate)
        self.machine.on_part = self._part_begun
        #: slack joules of the computing parts a composed job has ended (subtracted at its end)
        self._part_slack_j: dict[int, float] = {}
        #: SimGrid's lazy energy accounts, modelled under energy accounting (set by the server)
        self.lazy_energy = False
        self.lazy = LazyCharges(powers, self.pstate)
        #: where the energy is kept elsewhere (SimGrid's accounts where jobs communicate)
        self.energy_source: Callable[[], float] | None = None
        self.sleep = [sleep_states(h, f"host {h.name!r}") for h in self.hosts]
        self.virtual = [{s for pair in m.values() for s in pair} for m in self.sleep]
        self.switching: list[bool] = [False] * len(self.hosts)
        #: whether the host's last switch ended in a sleep state (Batsim's ``sleeping``)
        self._slept: list[bool] = [False] * len(self.hosts)
        self._loaded: list[bool] = [False] * len(self.hosts)
        #: ended jobs whose parallel task runs on (:meth:`linger`) -> their hosts; host -> job
        self._lingering: dict[int, tuple[int, ...]] = {}
        self._linger_on: dict[int, int] = {}
        self._switches: list[tuple[float, int, _Switch]] = []
        self._seq = 0
        self.nb_machine_switches = 0
        self.nb_grouped_switches = 0
        #: Batsim's consumed_joules is the energy from the first submission to the last job end:
        #: the energy at :meth:`mark_energy_at`'s time, and at the last job end, once reached.
        self.marked_energy_j: float | None = None
        self.last_end_energy_j: float | None = None
        self._mark_s = math.inf

    # ------------------------------------------------------------------ queries
    @property
    def now(self) -> float:
        """Current simulated time."""
        return self.machine.now

    @property
    def nb_hosts(self) -> int:
        """Number of compute hosts."""
        return len(self.hosts)

    def is_sleeping(self, host: int) -> bool:
        """True when ``host`` is in one of its sleep states."""
        return self.pstate[host] in self.sleep[host]

    def state_name(self, host: int) -> str:
        """Batsim's name of the state of a host that runs no job and is not switching:
        ``sleeping`` once a switch to a sleep state has ended, else ``idle`` (a host whose
        platform power state is a sleep state starts ``idle`` in Batsim 4.2.1: checked with the
        binary, in SIMULATION_BEGINS and in out_machine_states.csv)."""
        return "sleeping" if self._slept[host] else "idle"

    def switch_state_name(self, host: int) -> str:
        """Batsim's name of the state of a host that runs no job: ``switching_off`` or
        ``switching_on`` during a switch (its power state is the one it leaves until the
        switch ends), else ``sleeping`` or ``idle``."""
        if self.switching[host]:
            return "switching_on" if self.is_sleeping(host) else "switching_off"
        return self.state_name(host)

    def next_time(self) -> float:
        """Time of the next job end or switch completion, or infinity."""
        t_switch = self._switches[0][0] if self._switches else math.inf
        return min(self.machine.next_time(), t_switch)

    def energy_j(self) -> float:
        """Energy consumed by every compute host since time 0."""
        if self.energy_source is not None:
            return self.energy_source()
        return self.machine.energy_j() - self.partial.energy_j(self.machine.now) + self.lazy.total_j

    def mark_energy_at(self, t: float) -> None:
        """Keep the energy at time ``t`` (not before now) in :attr:`marked_energy_j` when the
        clock reaches it."""
        self._mark_s = max(t, self.now)

    def window_energy_j(self) -> float:
        """Batsim's consumed_joules: the energy at the last job end minus the energy at the
        marked time (the first static submission), each -1 J while not reached, as Batsim 4.2.1
        starts both (checked with the binary: jobs registered without ``-w`` give the energy at
        their last end + 1 J)."""
        first = -1.0 if self.marked_energy_j is None else self.marked_energy_j
        last = -1.0 if self.last_end_energy_j is None else self.last_end_energy_j
        return last - first

    # ------------------------------------------------------------------ jobs
    def start(self, key: int, hosts: Sequence[int], *, delay_s: float | None = None,
              ops_gflop: float | None = None, walltime_s: float = math.inf,
              parts: tuple[tuple[float | None, float | None], ...] | None = None) -> None:
        """Start job ``key`` now: a delay job (hosts stay idle), a computing job, or a sequence
        of such ``parts`` (its hosts computing during its computing parts only)."""
        self.machine.start(key, hosts, delay_s=delay_s, ops_gflop=ops_gflop, walltime_s=walltime_s,
                           parts=parts)
        self.lazy.read_all(self.machine.now)
        if ops_gflop is not None or parts and parts[0][1] is not None:
            self._set_load(hosts, True)
            self.partial.advance(self.machine.now)
            self.partial.start(key, hosts)

    def kill(self, key: int) -> JobEnd:
        """Kill job ``key`` now; its hosts stop computing."""
        end = self.machine.kill(key)
        self._set_load(end.cores, False)
        self.partial.advance(end.finish_s)
        end.energy_j -= self.partial.end(key) + self._part_slack_j.pop(key, 0.0)
        end.energy_j += self.lazy.job_j(key)
        self.lazy.read_all(end.finish_s)
        self.last_end_energy_j = self.energy_j()
        return end

    def linger(self, key: int, hosts: Sequence[int]) -> None:
        """Job ``key`` has ended (at its walltime), but its parallel task runs on on ``hosts``
        (SimGrid 3.32's ``Exec::wait_for`` leaves a timed-out task running until its actor
        ends or its work is done: :meth:`stop_lingering`): they draw the power of its load, as
        while the job ran, charged to no job."""
        hosts = tuple(sorted(set(hosts)))
        self.partial.advance(self.machine.now)
        self._set_load(hosts, True)
        self.partial.start(key, hosts)
        self._lingering[key] = hosts
        for h in hosts:
            self._linger_on[h] = key

    def stop_lingering(self, key: int) -> None:
        """Job ``key``'s task, run on since its end (:meth:`linger`), stops now (its actor
        cancels it, or its work is done); nothing if it is not running on."""
        hosts = self._lingering.pop(key, None)
        if hosts is None:
            return
        self.partial.advance(self.machine.now)
        self._set_load(hosts, False)
        self.partial.end(key)
        for h in hosts:
            del self._linger_on[h]

    def _job_on(self) -> Sequence[int]:
        """Each host's job, or the ended job whose task runs on on it (:meth:`linger`)."""
        if not self._linger_on:
            return self.machine.job_on
        on = list(self.machine.job_on)
        for h, key in self._linger_on.items():
            on[h] = key
        return on

    def advance(self, t: float) -> list[tuple[float, JobEnd | tuple[tuple[int, ...], int]]]:
        """Move time to ``t``; returns job ends and finished switches ``(hosts, state)`` in time order."""
        done: list[tuple[float, JobEnd | tuple[tuple[int, ...], int]]] = []
        machine = self.machine
        while True:
            t_next = self.next_time()
            if self._mark_s < t_next and self._mark_s <= t:
                self._take_mark()  # nothing ends before t_next
                continue
            if t_next > t:
                break
            self.partial.advance(t_next)
            ends = machine.advance(t_next)
            for end in ends:
                self._set_load(end.cores, False)
                end.energy_j -= self.partial.end(end.key) + self._part_slack_j.pop(end.key, 0.0)
                end.energy_j += self.lazy.job_j(end.key)
                self.lazy.read_all(end.finish_s)
                done.append((end.finish_s, end))
            if ends:
                self.last_end_energy_j = self.energy_j()
            while self._switches and self._switches[0][0] <= t_next:
                _, _, switch = heapq.heappop(self._switches)
                self._finish_switch(switch)
                done.append((t_next, (switch.hosts, switch.target)))
            if self._mark_s <= t_next:
                self._take_mark()
        machine.advance(t)
        self.partial.advance(t)
        return done

    def _part_begun(self, key: int, hosts: Sequence[int], computing: bool) -> None:
        """A composed job's next part begins now (the machine calls it while it advances, the
        slack integrated up to now): its hosts compute during a computing part, idle during a
        sleep, as SimGrid's energy plugin sees them (:mod:`hdrm.batsim.lazy_energy` under
        energy accounting)."""
        if self.lazy_energy:
            self.lazy.part_begins(key, hosts, computing, self._loaded[hosts[0]], self.machine.now)
        if computing:
            self._set_load(hosts, True)
            self.partial.start(key, hosts)
        else:
            self._set_load(hosts, False)
            slack = self.partial.end(key)
            if slack:
                self._part_slack_j[key] = self._part_slack_j.get(key, 0.0) + slack

    def _take_mark(self) -> None:
        if self._mark_s > self.machine.now:
            self.machine.advance(self._mark_s)
        self.partial.advance(self._mark_s)
        self.marked_energy_j = self.energy_j()
        self._mark_s = math.inf

    # ------------------------------------------------------------------ power states
    def request(self, hosts: Sequence[int], state: int, where: str) -> None:
        """SET_RESOURCE_STATE: switch ``hosts`` to power ``state`` (acknowledged by :meth:`advance`).

        Raises:
            ProtocolError: an unknown host or state, a virtual switch state, a host that is
                switching, or a busy host sent to sleep (``where`` names the event).
        """
        self.nb_grouped_switches += 1
        self.nb_machine_switches += len(hosts)
        self.lazy.read_all(self.machine.now)
        groups: dict[float, list[int]] = {}
        for h in hosts:
            duration = self._check_request(h, state, where)
            groups.setdefault(duration, []).append(h)
        now = self.machine.now
        for duration, members in sorted(groups.items()):
            if duration == 0.0:
                self._apply(members, state, computing=False)  # immediate; only the ack waits
            else:
                for h in members:
                    self._apply([h], self._transit_state(h, state) or state, computing=True)
                    self.switching[h] = True
            self._seq += 1
            heapq.heappush(self._switches, (now + duration, self._seq, _Switch(tuple(members), state)))

    @property
    def switch_seq(self) -> int:
        """The number of the last switch requested (see :meth:`switches_after`)."""
        return self._seq

    def switches_after(self, seq: int) -> list[tuple[float, tuple[int, ...], int]]:
        """Pending switches numbered after ``seq``, in request order: ``(end time, hosts,
        target state)``."""
        return [(end_s, sw.hosts, sw.target)
                for end_s, n, sw in sorted(self._switches, key=lambda s: s[1]) if n > seq]

    def _check_request(self, h: int, state: int, where: str) -> float:
        """Validate one host's switch; returns its duration in seconds."""
        if not 0 <= h < self.nb_hosts:
            raise ProtocolError(f"{where}: unknown resource {h}; resources are 0..{self.nb_hosts - 1}")
        name = self.hosts[h].name
        if not 0 <= state < len(self.hosts[h].speeds_gflops):
            raise ProtocolError(
                f"{where}: resource {h} ({name}) has no power state {state}; its states are "
                f"0..{len(self.hosts[h].speeds_gflops) - 1}"
            )
        if state in self.virtual[h]:
            raise ProtocolError(
                f"{where}: state {state} of resource {h} ({name}) is a virtual switch-on/off state "
                "(sleep_pstates); request a computation or sleep state"
            )
        if self.switching[h]:
            raise ProtocolError(f"{where}: resource {h} ({name}) is still switching; wait for its "
                                "RESOURCE_STATE_CHANGED")
        current = self.pstate[h]
        if current in self.sleep[h] and state in self.sleep[h]:  # the same state included
            raise ProtocolError(
                f"{where}: switching from a sleep pstate to a non-computation pstate on machine "
                f"{h} ('{name}'): {current} -> {state}, which is forbidden (the binary aborts); "
                "wake it up first")
        via = self._transit_state(h, state)
        if via is None:
            return 0.0
        if state in self.sleep[h] and self.machine.job_on[h] != -1:
            raise ProtocolError(f"{where}: jobs are running on machine {h} ({name}), which "
                                f"cannot go to sleep state {state} (the binary aborts)")
        speed = self.hosts[h].speeds_gflops[via]
        if speed <= 0:
            raise ProtocolError(f"{where}: resource {h} ({name}) switches through state {via} of "
                                "speed 0, so the switch never ends; fix the platform speeds")
        return SWITCH_WORK_GFLOP / speed

    def _transit_state(self, h: int, target: int) -> int | None:
        """The virtual state a switch of ``h`` to ``target`` goes through, or None if immediate."""
        current = self.pstate[h]
        if current == target:
            return None
        if target in self.sleep[h]:
            return self.sleep[h][target][0]
        if current in self.sleep[h]:
            return self.sleep[h][current][1]
        return None

    def _finish_switch(self, switch: _Switch) -> None:
        self._apply(switch.hosts, switch.target, computing=False)
        for h in switch.hosts:
            self.pstate[h] = switch.target
            self.switching[h] = False
            self._slept[h] = switch.target in self.sleep[h]

    def _apply(self, hosts: Sequence[int], state: int, computing: bool) -> None:
        """Put ``hosts`` in P-state ``state``, computing (switches) or as their jobs make them."""
        self.partial.advance(self.machine.now)
        for load in (False, True):
            members = [h for h in hosts if (computing or self._loaded[h]) == load]
            if members:
                self.machine.set_state(members, 2 * state + int(load))
        if not computing:
            for h in hosts:
                self.pstate[h] = state
            self.partial.restate(hosts, self._job_on())

    def _set_load(self, hosts: Sequence[int], loaded: bool) -> None:
        flags = self._loaded
        hosts = [h for h in hosts if flags[h] != loaded]  # a delay job's hosts never change
        for h in hosts:
            flags[h] = loaded
        by_state: dict[int, list[int]] = {}
        for h in hosts:
            by_state.setdefault(self.pstate[h], []).append(h)
        for state, members in by_state.items():
            self.machine.set_state(members, 2 * state + int(loaded))
