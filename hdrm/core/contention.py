"""Memory-bandwidth contention models.

A model maps a processor's bandwidth demand (sum of the per-core demands of its running cores) and
capacity to the speed fraction of its running cores. The decision core turns the fraction into
power states: 1.0 is state 0 (running), anything lower is state 1 (contended), and a fraction other
than :data:`~hdrm.platform.power.CONTENDED_SPEED_FRACTION` also sets a speed factor on state 1.

Models:

``hdeeprm`` (default)
    HDeepRM's rule: when demand exceeds capacity, every running core of the processor runs at
    ``CONTENDED_SPEED_FRACTION`` (0.75) of its speed; otherwise at full speed.
``none``
    Nominal speeds whatever the demand (homogeneous validation, the scheduling literature).
``smooth``
    Speed degrades continuously with the oversubscription ratio ``rho = demand / capacity``:
    ``fraction = rho ** -beta`` for ``rho > 1`` (1 otherwise), with ``beta = 0.5`` by default and
    floored at 0.25. With ``beta = 1`` this is the bandwidth roofline (cores share the bandwidth
    in proportion to their demand); 0.5 reflects that caches absorb part of the traffic.
"""

from __future__ import annotations

from dataclasses import dataclass

from hdrm.platform.power import CONTENDED_SPEED_FRACTION
from hdrm.registry import Registry


class ContentionModel:
    """Base class: map (demand, capacity) of a processor to a speed fraction in (0, 1]."""

    name = "base"

    def speed_fraction(self, demand_gbps: float, capacity_gbps: float) -> float:
        """Speed fraction of the processor's running cores."""
        raise NotImplementedError


CONTENTION_MODELS: Registry[type[ContentionModel]] = Registry("contention model")


@CONTENTION_MODELS.register("hdeeprm")
class HdeeprmContention(ContentionModel):
    """Binary: full speed, or ``CONTENDED_SPEED_FRACTION`` when demand exceeds capacity."""

    name = "hdeeprm"

    def speed_fraction(self, demand_gbps: float, capacity_gbps: float) -> float:
        return CONTENDED_SPEED_FRACTION if demand_gbps > capacity_gbps else 1.0


@CONTENTION_MODELS.register("none")
class NoContention(ContentionModel):
    """Nominal speeds whatever the demand."""

    name = "none"

    def speed_fraction(self, demand_gbps: float, capacity_gbps: float) -> float:
        return 1.0


@CONTENTION_MODELS.register("smooth")
@dataclass
class SmoothContention(ContentionModel):
    """``fraction = max(floor, (demand / capacity) ** -beta)`` when oversubscribed."""

    beta: float = 0.5
    floor: float = 0.25
    name = "smooth"

    def speed_fraction(self, demand_gbps: float, capacity_gbps: float) -> float:
        if demand_gbps <= capacity_gbps:
            return 1.0
        return max(self.floor, (demand_gbps / capacity_gbps) ** -self.beta)


def make_contention(name: str, where: str = "contention") -> ContentionModel:
    """Instantiate the contention model registered as ``name``."""
    return CONTENTION_MODELS.get(name, where)()
