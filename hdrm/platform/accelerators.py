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

GPU model names in traces: a node list may name a model as its cluster's tools print it
(``"NVIDIA A100-SXM4-80GB"`` from nvidia-smi, ``"NVIDIA-A100-SXM4-80GB"`` from the Kubernetes
label ``nvidia.com/gpu.product``). :data:`ALIASES` is the one table of such names: a name that is
not a type's key is compared after :func:`alias_key` (lower case, blanks and ``_`` as ``-``) with
the keys written the same way (``a100`` is ``A100``), then looked up in the table; nothing else is
guessed, so an unlisted name (``"V100"``: which memory, which board?) stays unknown. A plain
``A100`` is the 40 GB SXM4 board (the first A100), a plain ``H100`` the 80 GB SXM5 board, a plain
``H200`` the SXM board; an ``MI250X`` is one of its module's two dies (64 GB), as schedulers see
it. A Kubernetes label written whole (``nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB``,
:data:`PRODUCT_LABELS`) names its value. Every reader of a model name goes through
:func:`resolve_model` (platform JSON node types, node lists, pod lists and traces through the
platform, price tables), and an unknown name is one line from :func:`unknown_model`.

Extra types: a file of the shape of ``accelerators.json`` (``{"accelerator_types": {...}}``)
given where a node list is read (``--accelerator-types FILE.json``;
:func:`load_accelerator_types`) adds models to the library or replaces a library model of that
name, with the same fields and checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
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


def _spellings(key: str, *names: str) -> dict[str, str]:
    return {name: key for name in names}


#: Names of library models as traces and cluster tools write them, by :func:`alias_key`.
ALIASES: Mapping[str, str] = {
    **_spellings("A100", "nvidia-a100", "a100-40gb", "a100-sxm4-40gb", "nvidia-a100-sxm4-40gb"),
    **_spellings("A100M80", "a100-80gb", "a100-sxm4-80gb", "nvidia-a100-sxm4-80gb",
                 "nvidia-a100-80gb"),
    **_spellings("H100", "nvidia-h100", "h100-sxm", "h100-sxm5-80gb", "h100-80gb-hbm3",
                 "nvidia-h100-80gb-hbm3", "nvidia-h100-sxm5-80gb"),
    **_spellings("H100PCIe", "h100-pcie", "nvidia-h100-pcie", "h100-pcie-80gb"),
    **_spellings("L4", "nvidia-l4"),
    **_spellings("L40S", "nvidia-l40s"),
    **_spellings("A30", "nvidia-a30"),
    **_spellings("A40", "nvidia-a40"),
    **_spellings("A10", "nvidia-a10"),
    **_spellings("T4", "tesla-t4", "nvidia-tesla-t4"),
    **_spellings("K80", "tesla-k80", "nvidia-tesla-k80"),
    **_spellings("P100", "tesla-p100-pcie-16gb", "nvidia-tesla-p100"),
    **_spellings("V100M16", "v100-sxm2-16gb", "tesla-v100-sxm2-16gb"),
    **_spellings("V100M32", "v100-sxm2-32gb", "tesla-v100-sxm2-32gb"),
    **_spellings("V100PCIe", "v100-pcie-16gb", "tesla-v100-pcie-16gb"),
    **_spellings("MI300X", "amd-instinct-mi300x", "instinct-mi300x"),
    **_spellings("H200", "nvidia-h200", "h200-sxm", "h200-sxm-141gb", "nvidia-h200-sxm-141gb"),
    **_spellings("B200", "nvidia-b200"),
    **_spellings("GH200", "nvidia-gh200-480gb", "gh200-480gb"),
    **_spellings("MI250X", "amd-instinct-mi250x", "instinct-mi250x"),
    **_spellings("MI210", "amd-instinct-mi210", "instinct-mi210"),
}


#: Kubernetes node labels whose value names a node's GPU model (NVIDIA's GPU feature discovery,
#: AMD's node labeller): ``nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB`` names its value.
PRODUCT_LABELS = ("nvidia.com/gpu.product", "amd.com/gpu.product-name",
                  "beta.amd.com/gpu.product-name")


def alias_key(name: str) -> str:
    """``name`` as :data:`ALIASES` keys it: stripped, lower case, runs of blanks and ``_`` as
    one ``-`` (``"NVIDIA A100_SXM4-80GB"`` -> ``"nvidia-a100-sxm4-80gb"``), and a node label of
    :data:`PRODUCT_LABELS` written whole (``label=value``) read as its value."""
    key = name.strip().casefold()
    label, equals, value = key.partition("=")
    if equals and label.strip() in PRODUCT_LABELS:
        key = value.strip()
    return re.sub(r"[\s_]+", "-", key)


def resolve_model(name: str, types: Mapping[str, AcceleratorType]) -> str | None:
    """The key in ``types`` of a GPU model name: the name itself when it is a key, else the key
    written the same way (:func:`alias_key`: ``a100`` is ``A100``; a user type named as a
    cluster's tool spells a model wins over the table), else its :data:`ALIASES` entry when
    that is a key of ``types``, else None (unknown)."""
    if name in types:
        return name
    wanted = alias_key(name)
    key = next((k for k in types if alias_key(k) == wanted), None)
    if key is None:
        key = ALIASES.get(wanted)
    return key if key in types else None


def _spellings_of(types: Mapping[str, AcceleratorType]) -> dict[str, str]:
    """Every name :func:`resolve_model` takes for ``types``, in :func:`alias_key` form, with
    the key it names."""
    known = {spelling: key for spelling, key in ALIASES.items() if key in types}
    known.update({alias_key(key): key for key in types})
    return known


def unknown_model(name: str, types: Mapping[str, AcceleratorType],
                  what: str = "GPU model", column: str = "") -> str:
    """Why ``name`` is no GPU model of ``types``, in one line: the closest keys or spellings
    (``did you mean 'A100M80' (nvidia-a100-sxm4-80gb)?``) and the known models.

    A message part, without the file and the key (the caller names them); ``what`` names the
    kind of name (``"accelerator type"`` in a platform file), ``column`` where a table holds it
    (``" (column model)"``, after the name)."""
    import difflib  # only when a name is wrong

    spellings = _spellings_of(types)
    wanted = alias_key(name)
    close = [s for s in spellings if wanted and wanted in s]  # "v100": the V100 boards first
    close += difflib.get_close_matches(wanted, list(spellings), n=6, cutoff=0.6)
    hints: dict[str, str] = {}
    for spelling in close:  # one hint per model, its closest spelling
        key = spellings[spelling]
        hints.setdefault(key, repr(key) if alias_key(key) == spelling
                         else f"{key!r} ({spelling})")
    hint = f"did you mean {' or '.join(list(hints.values())[:3])}? " if hints else ""
    return (f"unknown {what} {name!r}{column}; {hint}known: {', '.join(sorted(types))}, and the "
            "spellings of hdrm.platform.accelerators.ALIASES")


def load_accelerator_types(path: str | Path) -> dict[str, AcceleratorType]:
    """The accelerator types of a user file shaped like ``accelerators.json``.

    Raises:
        PlatformError: the file is missing or not JSON, or a type is malformed; one line naming
            the file, the JSON path, the value and what was expected.
    """
    from hdrm.errors import PlatformError  # the library module imports this one
    from hdrm.platform.library import AcceleratorsFile, build_types, read_json_file
    from hdrm.typedjson import Context, convert_block

    data = read_json_file(path, what="accelerator types")
    ctx = Context(str(path), error=PlatformError)
    return build_types(convert_block(data, AcceleratorsFile, "", ctx).accelerator_types)
