"""What a Batsim platform cannot hold: accelerators, and more hosts than this machine's memory
holds (checked before anything of Batsim is loaded); and how long Batsim takes to start on it."""

from __future__ import annotations

import os

from hdrm.errors import ConfigError
from hdrm.platform.model import Platform

#: Peak memory of one batsim-engine run per core, Batsim 4.2.1 and the decision process
#: together, on hdrm's star export (:mod:`hdrm.platform.simgrid_export`: its memory grows with the
#: hosts; the Full zone of sessions before 29 needed 8 bytes per pair of hosts, 70 GB for a
#: Curie-sized machine). Measured (peak RSS of both, ``benchmarks/batsim_large_platform.py``, one
#: job): 0.25 GB for 11,664 cores, 0.41 GB for 23,328, 0.74 GB for 46,656, 1.35 GB for 93,312,
#: so 13.5 kB a core beyond 0.09 GB; 93,312 cores after 13.6 minutes of 300 jobs: 1.61 GB.
BYTES_PER_CORE = 16_000
#: What a run needs whatever the platform (both processes' code and libraries).
BASE_BYTES = 400_000_000


#: Seconds per pair of hosts Batsim 4.2.1 may take to start: it gives every machine its zone's
#: properties by looking each host up in its list of machines, one name comparison after
#: another (``Machines::attach_zone_properties_to_machines``, ``machine_by_name_or_null``),
#: hosts^2 / 2 comparisons. Measured: Batsim's CPU seconds for a run of one job (nearly all of
#: them its start) were 0.5 for 11,664 hosts, 1.3 for 23,328, 4.2 for 46,656 and 13.9 for
#: 93,312 (1.6e-9 s a pair) and 93.6 for 186,624 (2.7e-9 s a pair, 148 s of wall time on a
#: loaded machine: without this allowance the 60 s timeout stopped it).
START_S_PER_HOST_PAIR = 1e-8


def startup_allowance_s(nb_cores: int) -> float:
    """Seconds to wait for Batsim's first message beyond the usual timeout: its start grows
    with the square of the hosts (:data:`START_S_PER_HOST_PAIR`, several times this machine's
    rate), 0.06 s for 2,512 cores, 87 s for 93,312."""
    return START_S_PER_HOST_PAIR * (nb_cores + 1) ** 2


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
    """Refuse a platform whose batsim-engine run needs more than the machine's memory.

    Args:
        platform: the platform the batsim engine would export.
        memory_bytes: the memory to compare with (None: :func:`physical_memory_bytes`).

    Raises:
        ConfigError: one line with the cores, the memory needed, the machine's and the fixes.
    """
    memory = physical_memory_bytes() if memory_bytes is None else memory_bytes
    need = BASE_BYTES + BYTES_PER_CORE * platform.nb_cores
    if memory is None or need <= memory:
        return
    raise ConfigError(f"{platform.source or platform.name}: {platform.nb_cores} cores; engine "
                      "'batsim' makes one SimGrid host of each, and Batsim with the decision "
                      f"process needs about {need / 1e9:.1f} GB for them ("
                      f"{BASE_BYTES / 1e9:.1f} GB + {BYTES_PER_CORE / 1e3:.0f} kB a core), more "
                      f"than this machine's {memory / 1e9:.1f} GB of memory: use engine "
                      "'builtin' (the same decisions) or fewer processors")
