"""Accelerators (GPUs) in the resource hierarchy: their types and the JSON that describes them.

An accelerator is a node-level device of a model from the type library
(``hdrm/platform/data/accelerators.json``, section ``"accelerator_types"``), like processor types.
A node type lists its devices as ``"accelerators": [{"type": "V100M32", "count": 8}]``; a platform
file may define its own ``accelerator_types`` exactly as it defines processor types.

Fields of an accelerator type (units in the names): ``memory_gb`` (device memory),
``milli_capacity`` (the shareable capacity in milli-GPU, 1,000 by default: several tasks share a
device while the sum of their shares fits), ``idle_w`` and ``busy_w`` (power of one device),
``price_usd_per_hour`` (one device for one hour), ``fp32_tflops`` (peak single precision, 0 when
unknown); optional ``vendor``, ``model``, ``year``, ``notes``, ``sources``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

#: Milli-GPU in one whole device: the unit of shared GPU requests.
MILLI_PER_GPU = 1000

_POSITIVE = {"gt": 0}
_NON_NEGATIVE = {"ge": 0}


@dataclass(frozen=True)
class AcceleratorType:
    """An accelerator model.

    Attributes:
        name: library key, e.g. ``"V100M32"``.
        memory_gb: device memory in GB.
        milli_capacity: shareable capacity in milli-GPU (1,000 for one whole device).
        idle_w: power of an idle device in watts.
        busy_w: power of a fully busy device in watts.
        price_usd_per_hour: price of one device for one hour.
        fp32_tflops: peak single-precision TFLOP/s (0: not published).
        vendor: manufacturer.
        model: marketing name.
        year: year of launch (0: unknown).
    """

    name: str
    memory_gb: float
    milli_capacity: int = MILLI_PER_GPU
    idle_w: float = 0.0
    busy_w: float = 0.0
    price_usd_per_hour: float = 0.0
    fp32_tflops: float = 0.0
    vendor: str = ""
    model: str = ""
    year: int = 0


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One device of a node; ids are global, in hierarchy order (node by node)."""

    id: int
    node_id: int
    cluster_id: int
    type: AcceleratorType


@dataclass(frozen=True)
class AcceleratorTypeJson:
    """An accelerator type as written in JSON (its name is its key)."""

    memory_gb: float = field(metadata=_POSITIVE)
    idle_w: float = field(metadata=_NON_NEGATIVE)
    busy_w: float = field(metadata=_POSITIVE)
    price_usd_per_hour: float = field(metadata=_NON_NEGATIVE)
    milli_capacity: int = field(default=MILLI_PER_GPU, metadata=_POSITIVE)
    fp32_tflops: float = field(default=0.0, metadata=_NON_NEGATIVE)
    vendor: str = ""
    model: str = ""
    year: int = field(default=0, metadata={"ge": 0})
    notes: str = ""
    sources: str = ""

    def build(self, name: str) -> AcceleratorType:
        """The model type of this name."""
        return AcceleratorType(name, self.memory_gb, self.milli_capacity, self.idle_w,
                               self.busy_w, self.price_usd_per_hour, self.fp32_tflops,
                               self.vendor, self.model, self.year)


@dataclass(frozen=True)
class AcceleratorCountJson:
    """``{"type": <accelerator type>, "count": n}`` in a node type."""

    type: str
    count: int = field(metadata=_POSITIVE)


def node_devices(
    accelerators: tuple[tuple[str, int], ...], types: Mapping[str, AcceleratorType]
) -> list[AcceleratorType]:
    """The devices of a node type, one type per device, in the order the node type lists them."""
    return [types[name] for name, count in accelerators for _ in range(count)]
