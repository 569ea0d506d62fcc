"""The per-host state that :class:`~hdrm.sim.machine.Machine` keeps and its mixins read.

:class:`MachineFields` declares those attributes (types only, no behaviour) once, so the mixins
that change hosts (:class:`~hdrm.sim.host_changes.HostChanges`) and power states
(:class:`~hdrm.sim.machine_states.MachineStates`) share one declaration; ``Machine.__init__``
sets them.
"""

from __future__ import annotations

import array


class MachineFields:
    """Attribute declarations of the machine's host arrays and power accounting."""

    state: list[int] | array.array
    """Each host's power state."""
    job_on: list[int] | array.array
    """The job on each host, or -1 when it is free."""
    now: float
    """Simulated time (s)."""
    _power: list[tuple[float, ...]]
    _speeds: list[tuple[float, ...]]
    _factor: list[float] | array.array
    _unit_factors: bool
    _energy_acc: list[float] | array.array | None
    _energy_t: list[float] | array.array | None
