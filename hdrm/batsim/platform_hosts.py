"""The compute hosts of a platform file, read and checked as Batsim 4.2.1 reads and checks them.

Hosts come from a plain SimGrid XML platform (``<host>`` or ``<cluster>`` elements; the master host
left out; Batsim's resource order) or from an hdrm platform JSON file, which is exported to SimGrid
XML in memory and read back, so the server sees exactly what the real Batsim would see with the
file hdrm writes for it (one host per core, four power states, every core starting in the
nominal state 0; hdrm's decision process puts idle cores to sleep itself).

:func:`load_hosts` applies Batsim's rules for a platform: exactly one master host
(:func:`check_master`), valid ``sleep_pstates`` properties (:func:`sleep_states`) and, under energy
accounting, one wattage pair per speed on every host, the master too, the first in file order
named (SimGrid's energy plugin: "Found 1 energetic profiles for 2 pstates"), watts and positive
computing speeds (:func:`check_energy`). The hosts then run on
:class:`~hdrm.batsim.hosts.HostBoard`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from hdrm.batsim.zone_properties import zone_properties
from hdrm.errors import ConfigError, PlatformError
from hdrm.platform.loader import load_platform
from hdrm.platform.simgrid import (
    MASTER_HOST,
    HostSpec,
    check_wattage_count,
    compute_hosts,
    has_role,
    platform_to_xml,
    read_platform_root,
    read_simgrid_all_hosts,
    read_simgrid_hosts,
)
from hdrm.platform.simgrid_config import check_modelled
from hdrm.platform.simgrid_roles import HostRoles, is_master


@dataclass(frozen=True)
class ServedHosts:
    """What hdrm serve reads of a platform's hosts (:func:`load_served_hosts`).

    Attributes:
        compute: the compute hosts, in Batsim's resource order (ids 0, 1, ...).
        master: the master host's name where ``-m``/``-r`` set it, else None (the file's own:
            :func:`hdrm.batsim.latency.master_name`).
        storage: the storage hosts (role=storage), sorted by name as Batsim lists them in
            SIMULATION_BEGINS (ids after the compute hosts'), with their zone_properties.
    """

    compute: list[HostSpec]
    master: str | None = None
    storage: list[HostSpec] = field(default_factory=list)


def load_hosts(path: str | Path, energy: bool = False,
               roles: HostRoles | None = None) -> list[HostSpec]:
    """The compute hosts of a platform file (:func:`load_served_hosts`)."""
    return load_served_hosts(path, energy, roles).compute


def load_served_hosts(path: str | Path, energy: bool = False,
                      roles: HostRoles | None = None) -> ServedHosts:
    """The compute hosts of a platform file, in Batsim's resource order, each with the
    ``zone_properties`` Batsim lists for it (:func:`hdrm.batsim.zone_properties.zone_properties`:
    every session's SIMULATION_BEGINS takes them from here).

    Args:
        path: a SimGrid XML platform (``.xml``) or an hdrm platform JSON file (``.json``).
        energy: energy accounting is on (``-E``): the hosts must satisfy :func:`check_energy`.
        roles: Batsim's ``-m/--master-host`` and ``-r/--add-role-to-hosts``
            (:mod:`hdrm.platform.simgrid_roles`); None or the defaults: the file's roles.


    Raises:
        PlatformError: the file is missing, malformed, has another suffix, or has no compute host.
        ConfigError: ``roles`` given with an hdrm platform JSON file.
    """
    path = Path(path)
    master, storage = None, []
    suffix = path.suffix.lower()
    if suffix == ".xml":
        given = roles is not None and not roles.default
        every = read_simgrid_all_hosts(path, roles if given else None)
        check_modelled(read_platform_root(path), path)  # <config> values L07 reads
        if not given:  # with -m/-r, apply_roles checked the master
            check_master(every, path)
        else:
            master = next(h.name for h in every if is_master(h))
        for host in every if energy else ():  # SimGrid's energy plugin: each host, file order
            check_wattage_count(host, f"{path}: host {host.name!r}")
        hosts = _with_zone_properties(path, compute_hosts(every, given))
        storage = _with_zone_properties(path, sorted(
            (h for h in every if h.properties.get("role") == "storage"), key=lambda h: h.name))
        if storage and energy:
            raise PlatformError(
                f"{path}: storage host {storage[0].name!r} (role=storage) with energy accounting "
                "(-E): Batsim 4 adds the storage hosts' energy to consumed_joules, which hdrm "
                "serve does not model; run without -E, or make it a compute host"
            )
    elif suffix == ".json":
        if roles is not None and not roles.default:
            raise ConfigError(
                f"-m/--master-host, -r/--add-role-to-hosts: {path} is an hdrm platform JSON file, "
                f"whose export has its own master host ({MASTER_HOST!r}); give them with a "
                "SimGrid XML platform only"
            )
        platform = load_platform(path)
        if platform.accelerators:  # the export keeps the CPU part only: no silent drop here
            raise PlatformError(
                f"{path}: {len(platform.accelerators)} GPUs, which a Batsim platform cannot "
                "express (compute hosts only), so hdrm serve cannot serve them; serve the CPU "
                f"part with 'hdrm platform {path} --xml CPU.xml' and -p CPU.xml, or schedule "
                "the GPUs with hdrm replay"
            )
        xml = platform_to_xml(platform)
        with tempfile.TemporaryDirectory(prefix="hdrm-serve-") as folder:
            exported = Path(folder) / "platform.xml"
            exported.write_bytes(xml)  # host props only: the zone properties are empty
            hosts = _with_zone_properties(exported, read_simgrid_hosts(exported))
    else:
        raise PlatformError(
            f"{path}: unknown platform format {suffix or '(no suffix)'!r}; give a SimGrid XML "
            "platform (.xml) or an hdrm platform JSON file (.json)"
        )
    if not hosts:
        raise PlatformError(f"{path}: no compute host (only a master or storage host); add hosts")
    for host in hosts:  # Batsim refuses them with -E; hdrm serve always (HostBoard reads them)
        sleep_states(host, f"{path}: host {host.name!r}")
    if energy:
        check_energy(hosts, path)
    return ServedHosts(hosts, master, storage)


def _with_zone_properties(path: Path, hosts: list[HostSpec]) -> list[HostSpec]:
    return [replace(host, zone_properties=zones)
            for host, zones in zip(hosts, zone_properties(path, hosts))]


def check_energy(hosts: Sequence[HostSpec], path: str | Path) -> None:
    """Batsim 4.2.1's rules for its compute hosts under energy accounting (``-E``), where
    SimGrid's energy plugin reads them: each has the property ``wattage_per_state`` (Batsim aborts
    with "No power range properties specified for host ..."; the old name ``watt_per_state`` is
    not read), and each state that computes (not a sleep state nor a switch state of
    ``sleep_pstates``) has a positive speed ("invalid (non-positive computing speed) computing
    pstate").

    Raises:
        PlatformError: naming the file, the host and the fix.
    """
    for host in hosts:
        where = f"{path}: host {host.name!r}"
        check_wattage_count(host, where)
        if "wattage_per_state" not in host.properties:
            old = " (it has watt_per_state, the name of SimGrid before 3.32: rename it)" \
                if "watt_per_state" in host.properties else ""
            raise PlatformError(
                f"{where}: no wattage_per_state property{old}, which Batsim 4 refuses with energy "
                "accounting (-E); give its 'idle:full' watts per power state, or run without -E"
            )
        switching = {s for pair in sleep_states(host, where).items() for s in (pair[0], *pair[1])}
        for state, speed in enumerate(host.speeds_gflops):
            if state not in switching and not speed > 0:
                raise PlatformError(
                    f"{where}: power state {state} computes at {speed * 1e9:g} flop/s, which "
                    "Batsim 4 refuses with energy accounting (-E); give it a positive speed, or "
                    "declare it a sleep state in sleep_pstates"
                )


def check_master(hosts: Sequence[HostSpec], path: Path) -> None:
    """Batsim 4.2.1's rule for its server's host: exactly one host named ``master_host`` or with
    the property ``role=master`` (it aborts with none, "Cannot find the "master" role", or two,
    "There are two master hosts"; a role on the host named ``master_host`` counts twice).

    Raises:
        PlatformError: naming the file, the master hosts found and the fix.
    """
    named = [h.name for h in hosts if h.name == MASTER_HOST]
    roles = [h.name for h in hosts if has_role(h, "master")]
    if not named and not roles:
        raise PlatformError(
            f"{path}: no master host, which Batsim 4 refuses; add a host named "
            f"{MASTER_HOST!r} (or give one host the property role=master) for Batsim's server: "
            "it runs no job"
        )
    if named and roles == named:
        raise PlatformError(
            f"{path}: host {MASTER_HOST!r} is the master by its name and also has the property "
            "role=master, which Batsim 4 refuses (it reads the role 'master,master'); remove the "
            "property"
        )
    if len(named) + len(roles) > 1:
        raise PlatformError(
            f"{path}: {len(named) + len(roles)} master hosts ({', '.join(named + roles)}: the host "
            f"named {MASTER_HOST!r} and each host with role=master count), which Batsim 4 refuses; "
            "keep exactly one"
        )


def sleep_states(host: HostSpec, where: str) -> dict[int, tuple[int, int]]:
    """Batsim's ``sleep_pstates`` property: ``{sleep state: (switch-off state, switch-on state)}``.

    Raises:
        PlatformError: the property is not ``S:OFF:ON`` triples of valid state ids.
    """
    text = host.properties.get("sleep_pstates", "").strip()
    found: dict[int, tuple[int, int]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            sleep, off, on = (int(v) for v in part.split(":"))
        except ValueError:
            raise PlatformError(
                f"{where}: bad sleep_pstates {text!r}; write 'SLEEP:OFF:ON' state ids, e.g. '1:2:3'"
            ) from None
        if max(sleep, off, on) >= len(host.speeds_gflops) or min(sleep, off, on) < 0:
            raise PlatformError(
                f"{where}: sleep_pstates {part!r} names a state outside "
                f"0..{len(host.speeds_gflops) - 1}"
            )
        found[sleep] = (off, on)
    return found

