"""What a Batsim platform cannot hold: accelerators, and more hosts than SimGrid's route table can
hold in this machine's memory. Checked before anything of Batsim is loaded."""

from __future__ import annotations

import os

from hdrm.errors import ConfigError
from hdrm.platform.model import Platform

#: Bytes of SimGrid 3.32's route table per pair of hosts of a Full-routing zone: it sizes the
#: table hosts x hosts (FullZone::do_seal), one pointer a cell. hdrm's export puts every core's
#: host and master_host in one such zone: Batsim 4.2.1 peaked at 0.77 GB for 9,217 hosts and
#: 3.39 GB for 20,001 (hdrm replay --engine batsim, /usr/bin/time).
ROUTE_TABLE_BYTES_PER_PAIR = 8


def refuse_accelerators(platform: Platform) -> None:
    """Refuse a platform with GPUs: a Batsim platform (SimGrid hosts) has no way to express them.

    Raises:
        ConfigError: one line naming the platform file and its GPUs by model.
    """
    if not platform.accelerators:
        return
    models: dict[str, int] = {}
    for accel in platform.accelerators:
        models[accel.type.name] = models.get(accel.type.name, 0) + 1
    listed = ", ".join(f"{n} {m}" for m, n in sorted(models.items(), key=lambda kv: -kv[1]))
    raise ConfigError(f"{platform.source or platform.name}: {len(platform.accelerators)} GPUs "
                      f"({listed}); Batsim cannot express GPUs (its platforms have compute hosts "
                      "only), so engine 'batsim' cannot run this platform: use engine 'builtin', "
                      "or 'hdrm fragmentation' to place GPU tasks")


def physical_memory_bytes() -> int | None:
    """This machine's physical memory (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def refuse_oversized(platform: Platform, memory_bytes: int | None = None) -> None:
    """Refuse a platform whose SimGrid route table needs more than the machine's memory.

    A Curie-sized machine (93,312 cores, a CEA-Curie trace's MaxProcs) needs 70 GB: Batsim
    loaded it for the whole timeout and was reported as having stopped answering.

    Args:
        platform: the platform the batsim engine would export.
        memory_bytes: the memory to compare with (None: :func:`physical_memory_bytes`).

    Raises:
        ConfigError: one line with the cores, the table's size, the memory and the fixes.
    """
    memory = physical_memory_bytes() if memory_bytes is None else memory_bytes
    hosts = platform.nb_cores + 1  # and master_host
    table = ROUTE_TABLE_BYTES_PER_PAIR * hosts * hosts
    if memory is None or table <= memory:
        return
    raise ConfigError(f"{platform.source or platform.name}: {platform.nb_cores} cores; engine "
                      "'batsim' makes one SimGrid host of each in one Full-routing zone, whose "
                      f"route table SimGrid allocates hosts x hosts ({hosts}^2 x "
                      f"{ROUTE_TABLE_BYTES_PER_PAIR} bytes = {table / 1e9:.1f} GB), more than "
                      f"this machine's {memory / 1e9:.1f} GB of memory: use engine 'builtin' "
                      "(the same decisions) or fewer processors")
