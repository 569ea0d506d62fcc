"""Batsim 4.2.1's time-series output files, as ``hdrm serve`` writes them.

:class:`SessionTraces` gathers, while a session runs, the rows of

* ``<prefix>_machine_states.csv`` (unless ``--disable-machine-state-tracing``): the number of
  machines in each state, ``time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,
  nb_computing``, a row after each job start, job end, power-state request and completed
  request, time as C's ``%g``;
* with ``-E``, ``<prefix>_consumed_energy.csv``: ``time,energy,event_type,wattmin,epower``, a
  row at each job start (``s``), job end (``e``), power-state request and completed request
  (``p``), with the energy of every compute host since 0, the sum of their epsilon (``wattmin``)
  power in their current power state, and the mean power since the previous row (``NA`` when no
  time passed), all as ``%lf``;
* with ``-E``, ``<prefix>_pstate_changes.csv``: ``time,machine_id,new_pstate``, the initial
  state of every machine at time 0 (one row per power state, machines as an interval set), then
  for each request a row with ``-1`` (to a computation state) or ``-2`` (to a sleep state), and
  the target state once every machine of the request has switched;
* and the ``time_*`` columns of out_schedule.csv: each machine's time in each state, counted up
  to its last change of state (Batsim adds nothing for the time after it).

Every machine is idle at the start, whatever its power state (as Batsim counts them). The rows
come in the order Batsim's actors write them: the caller
(:class:`~hdrm.batsim.actors.ActorSimulation`) calls the methods where Batsim's source does.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from hdrm.batsim import protocol as p
from hdrm.batsim.outputs_energy import TotalAt
from hdrm.batsim.outputs_paje import PajeTrace
from hdrm.batsim.partial_load import power_ranges
from hdrm.platform.simgrid import HostSpec
from hdrm.results._files import write_text

#: Machine states, in the order of out_machine_states.csv's columns (unavailable is not written).
SLEEPING, SWITCHING_ON, SWITCHING_OFF, IDLE, COMPUTING, UNAVAILABLE = range(6)
STATE_NAMES = ("sleeping", "switching_on", "switching_off", "idle", "computing", "unavailable")

MACHINE_STATES_HEADER = "time," + ",".join(f"nb_{n}" for n in STATE_NAMES[:5]) + "\n"
ENERGY_HEADER = "time,energy,event_type,wattmin,epower\n"
PSTATE_HEADER = "time,machine_id,new_pstate\n"


class SessionTraces:
    """The rows of Batsim's machine-state, energy and power-state files, and its Pajé trace.

    Args:
        hosts: compute hosts in resource order (their power states and wattages).
        storage_names: the storage hosts' names (Pajé containers after the compute hosts).
        energy: energy accounting (``-E``): the energy and power-state files.
        machine_states: write out_machine_states.csv.
        schedule_trace: write the Pajé trace.
    """

    def __init__(self, hosts: Sequence[HostSpec], storage_names: Sequence[str] = (),
                 energy: bool = False, machine_states: bool = True,
                 schedule_trace: bool = True) -> None:
        n = len(hosts)
        self.energy, self.machine_states = energy, machine_states
        self.state = [IDLE] * n
        self.counts = [0, 0, 0, n, 0, 0]
        # per state, the bounds of every interval a machine spent in it (+end, -start), and
        # when each machine's current state began
        self._bounds: list[list[float]] = [[] for _ in STATE_NAMES]
        self._since = [0.0] * n
        self._epsilon = [[r[1] for r in power_ranges(h)] for h in hosts]
        self.pstate = [h.pstate for h in hosts]
        self.wattmin_w = sum(eps[s] for eps, s in zip(self._epsilon, self.pstate))
        self.states_rows: list[str] = []
        self._energy_rows: list[str] = []
        self._energy_raw: list[tuple] = []  # (time, energy, kind, wattmin) not written yet
        self.pstate_rows: list[str] = []
        self._last = (np.longdouble(0), np.longdouble(0))  # (time, energy) of the last row
        self.paje = (PajeTrace([h.name for h in hosts] + list(storage_names))
                     if schedule_trace else None)
        if energy:
            by_state: dict[int, list[int]] = {}
            for h, s in enumerate(self.pstate):
                by_state.setdefault(s, []).append(h)
            for s in sorted(by_state):
                self.pstate_rows.append(f"0,{p.format_resources(by_state[s])},{s}\n")

    # ------------------------------------------------------------------ machine states
    def set_state(self, t: float, host: int, state: int) -> None:
        """``host`` enters ``state`` at ``t`` (its time in the state it leaves is counted)."""
        old = self.state[host]
        bounds = self._bounds[old]
        bounds.append(t)
        bounds.append(-self._since[host])
        self._since[host] = t
        self.counts[old] -= 1
        self.counts[state] += 1
        self.state[host] = state

    def states_row(self, t: float) -> None:
        """A row of out_machine_states.csv: the counts now."""
        if self.machine_states:
            c = self.counts
            self.states_rows.append(f"{t:g},{c[0]},{c[1]},{c[2]},{c[3]},{c[4]}\n")

    # ------------------------------------------------------------------ jobs
    def job_started(self, t: float, job_id: str, hosts: Sequence[int],
                    energy_j: float | None) -> None:
        """Job ``job_id``'s executor starts on ``hosts`` (the energy of all hosts now under
        ``-E``): the energy row, its machines computing, the counts row."""
        if self.energy and energy_j is not None:
            self.energy_row(t, energy_j, "s")
        for h in sorted(hosts):
            self.set_state(t, h, COMPUTING)
        if self.paje is not None:
            self.paje.job_started(t, job_id, hosts)
        self.states_row(t)

    def job_ended(self, t: float, job_id: str, hosts: Sequence[int], killed: bool) -> None:
        """Job ``job_id`` ends on ``hosts`` at ``t`` (``killed``: its executor ended at the
        walltime or by a cancelled task, which the Pajé trace marks): its machines idle (unless
        unavailable), the counts row. Its energy row is :meth:`job_energy`'s."""
        if killed and self.paje is not None:
            self.paje.job_killed(t, job_id, hosts)
        idle = []
        for h in sorted(hosts):
            if self.state[h] != UNAVAILABLE:
                self.set_state(t, h, IDLE)
                idle.append(h)
        if self.paje is not None:
            self.paje.machines_waiting(t, idle)
        self.states_row(t)

    def job_energy(self, t: float, energy_j: float | np.longdouble) -> None:
        """The energy row of a job's end (``e``)."""
        if self.energy:
            self.energy_row(t, energy_j, "e")

    # ------------------------------------------------------------------ power states
    def set_pstate(self, host: int, pstate: int) -> None:
        """``host``'s power state is now ``pstate`` (virtual states included): ``wattmin``."""
        eps = self._epsilon[host]
        self.wattmin_w += eps[pstate] - eps[self.pstate[host]]
        self.pstate[host] = pstate

    def switch_requested(self, t: float, hosts: Sequence[int], target: int, to_sleep: bool,
                         energy_j: float | np.longdouble) -> None:
        """SET_RESOURCE_STATE of ``hosts`` to ``target`` (a sleep state if ``to_sleep``): the
        energy row, then the power-state row with -2 (to sleep) or -1."""
        if self.energy:
            self.energy_row(t, energy_j, "p")
            self.pstate_rows.append(f"{t:g},{p.format_resources(hosts)},{-2 if to_sleep else -1}\n")

    def switch_done(self, t: float, hosts: Sequence[int], target: int,
                    energy_j: float | np.longdouble) -> None:
        """Every host of a request has switched to ``target``: the power-state row, then the
        energy row."""
        if self.energy:
            self.pstate_rows.append(f"{t:g},{p.format_resources(hosts)},{target}\n")
            self.energy_row(t, energy_j, "p")

    # ------------------------------------------------------------------ energy
    def energy_row(self, t: float, energy_j: float | np.longdouble | TotalAt, kind: str) -> None:
        """A row of out_consumed_energy.csv (written when asked for: ``energy_j`` may be a sum
        to be worked out, :class:`~hdrm.batsim.outputs_energy.TotalAt`)."""
        self._energy_raw.append((t, energy_j, kind, self.wattmin_w))

    @property
    def energy_rows(self) -> list[str]:
        """The rows of out_consumed_energy.csv so far: energies and mean powers worked out in
        Batsim's long doubles, all rows at once (element by element, the scalar operations)."""
        raw, self._energy_raw = self._energy_raw, []
        if not raw:
            return self._energy_rows
        energy = np.array([e.value() if e.__class__ is TotalAt else e for _, e, _, _ in raw],
                          dtype=np.longdouble)
        time = np.array([t for t, _, _, _ in raw], dtype=np.longdouble)
        dt = time - np.concatenate(([self._last[0]], time[:-1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            power = (energy - np.concatenate(([self._last[1]], energy[:-1]))) / dt
        self._last = (time[-1], energy[-1])
        self._energy_rows += [
            "%f,%f,%s,%f,%f\n" % (t, e, kind, wattmin, w) if later else
            "%f,%f,%s,%f,NA\n" % (t, e, kind, wattmin)
            for (t, _, kind, wattmin), e, w, later in zip(
                raw, energy.astype(np.float64).tolist(), power.astype(np.float64).tolist(),
                (dt > 0).tolist())]
        return self._energy_rows

    # ------------------------------------------------------------------ results
    def state_times(self) -> dict[str, float]:
        """out_schedule.csv's ``time_*`` columns: the machines' time in each state. Batsim adds
        each interval (a long-double difference of two times) in long doubles, whose error is
        far below a double's last bit: here the exact sum of the intervals' bounds, rounded
        once (``math.fsum``)."""
        return {f"time_{name}": math.fsum(self._bounds[i]) for i, name in enumerate(STATE_NAMES)}

    def write(self, prefix: str, end_s: float) -> list[Path]:
        """Write the files Batsim writes at ``prefix``; returns their paths."""
        texts = []
        if self.machine_states:
            texts.append(("_machine_states.csv", MACHINE_STATES_HEADER + "".join(self.states_rows)))
        if self.paje is not None:
            texts.append(("_schedule.trace", self.paje.text(end_s)))
        if self.energy:
            texts.append(("_consumed_energy.csv", ENERGY_HEADER + "".join(self.energy_rows)))
            texts.append(("_pstate_changes.csv", PSTATE_HEADER + "".join(self.pstate_rows)))
        files = []
        for suffix, text in texts:
            files.append(Path(f"{prefix}{suffix}"))
            write_text(files[-1], text)
        return files
