"""The Batsim adapter's options: their keys, the contention models it refuses, and its platform.

:class:`~hdrm.batsim.adapter.HdrmScheduler` takes pybatsim's options dict (``-o``) merged with
keyword arguments. :func:`check_options` refuses unknown keys and the contention models whose
continuous speed factors Batsim's four power states cannot express; :func:`adapter_platform` reads
the platform the adapter is given (an hdrm platform JSON file, a SimGrid XML file hdrm exported, or
a :class:`~hdrm.platform.model.Platform`) with the power state each Batsim host starts in.
"""

from __future__ import annotations

from typing import Any

from hdrm.errors import ConfigError
from hdrm.platform.loader import load_platform
from hdrm.platform.model import Platform
from hdrm.platform.power import CONTENDED, IDLE, NB_STATES, RUNNING, SLEEPING
from hdrm.platform.simgrid import platform_from_simgrid
from hdrm.registry import suggest

#: Batsim P-state id of each core state of :mod:`hdrm.platform.power`.
PSTATE_OF_STATE = {RUNNING: "0", CONTENDED: "1", IDLE: "2", SLEEPING: "3"}
#: Contention models whose speeds four P-states cannot express.
CONTINUOUS_MODELS = ("smooth",)
#: Keys of the options dict (pybatsim's ``-o``).
OPTION_KEYS = ("platform", "policy", "contention", "backfilling", "decision", "seed")


def check_options(merged: dict[str, Any]) -> str:
    """Check the adapter's merged options and return its contention model's name.

    Args:
        merged: pybatsim's options with the keyword arguments over them.

    Returns:
        The contention model (default ``hdeeprm``).

    Raises:
        ConfigError: an unknown key (with the closest valid one), or a continuous contention model.
    """
    unknown = sorted(set(merged) - set(OPTION_KEYS))
    if unknown:
        raise ConfigError(f"HdrmScheduler: unknown option {unknown[0]!r}; "
                          f"{suggest(unknown[0], OPTION_KEYS)}valid options: {', '.join(OPTION_KEYS)}")
    contention = str(merged.get("contention", "hdeeprm"))
    if contention in CONTINUOUS_MODELS:
        raise ConfigError(
            f"contention: model {contention!r} slows cores by continuous factors, which Batsim's "
            "four power states cannot express; use 'hdeeprm' or 'none' with engine 'batsim'"
        )
    return contention


def adapter_platform(value: Platform | str | None) -> tuple[Platform, list[int]]:
    """The platform, and the P-state each Batsim host starts in (hdrm exports: 0, nominal).

    Args:
        value: a platform, or the path of a platform JSON or SimGrid XML file.

    Returns:
        The platform and the starting P-state of each core's host.

    Raises:
        ConfigError: no platform, or a SimGrid host with fewer than four power states.
    """
    if isinstance(value, Platform):
        return value, [RUNNING] * value.nb_cores
    if value is None:
        raise ConfigError("HdrmScheduler: no platform; pass platform=<platform JSON path> "
                          "(the file Batsim's platform.xml was exported from)")
    path = str(value)
    if not path.lower().endswith(".xml"):
        platform = load_platform(path)
        return platform, [RUNNING] * platform.nb_cores
    platform, hosts = platform_from_simgrid(path)
    short = [h.name for h in hosts if len(h.speeds_gflops) < NB_STATES]
    if short:
        raise ConfigError(
            f"{path}: host {short[0]!r} has fewer than {NB_STATES} power states; the adapter switches "
            "cores between running, contended, idle and sleeping states (export the platform with "
            "hdrm platform --xml)"
        )
    return platform, [h.pstate for h in hosts]
