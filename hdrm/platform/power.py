"""The one power and speed table of a core, shared by the decision core and the SimGrid export.

Every core is in one of four states (HDeepRM's P-states):

====  ==================  ===================================  ================================
 id   name                speed                                power
====  ==================  ===================================  ================================
 0    ``RUNNING``         ``gflops`` (full speed)              ``power_w`` (TDP / cores)
 1    ``CONTENDED``       ``CONTENDED_SPEED_FRACTION * gflops``  ``CONTENDED_POWER_FRACTION * power_w``
 2    ``IDLE``            none (idle in an awake processor)    ``IDLE_POWER_FRACTION * power_w``
 3    ``SLEEPING``        none (idle in a sleeping processor)  ``SLEEP_POWER_FRACTION * power_w``
====  ==================  ===================================  ================================

A core stalled on memory bandwidth keeps drawing its full dynamic power while it does less work, so
contention costs both time and energy. Idle cores in an awake processor draw the static share of
the processor's power; a sleeping processor keeps only a small retention power.
"""

from __future__ import annotations

RUNNING = 0
CONTENDED = 1
IDLE = 2
SLEEPING = 3
NB_STATES = 4

#: Speed of a core whose processor's memory bandwidth is oversubscribed (HDeepRM's 0.75).
CONTENDED_SPEED_FRACTION = 0.75
#: Power drawn by a running core when contended, as a fraction of its full power.
CONTENDED_POWER_FRACTION = 1.0
#: Power drawn by an idle core of an awake processor, as a fraction of its full power.
IDLE_POWER_FRACTION = 0.3
#: Power drawn by an idle core of a sleeping processor, as a fraction of its full power.
SLEEP_POWER_FRACTION = 0.05

_POWER_FRACTIONS = (1.0, CONTENDED_POWER_FRACTION, IDLE_POWER_FRACTION, SLEEP_POWER_FRACTION)


def state_speeds_gflops(gflops: float) -> tuple[float, float, float, float]:
    """Speed of a core of nominal speed ``gflops`` in each of the four states (0 when idle)."""
    return (gflops, CONTENDED_SPEED_FRACTION * gflops, 0.0, 0.0)


def state_power_w(power_w: float) -> tuple[float, float, float, float]:
    """Power of a core of full power ``power_w`` in each of the four states."""
    return tuple(f * power_w for f in _POWER_FRACTIONS)  # type: ignore[return-value]
