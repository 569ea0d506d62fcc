"""Batsim 4.2.1's host roles from its command line: -m/--master-host and -r/--add-role-to-hosts.

Batsim builds one map from host name to role before it reads the platform: the master host's
name (``-m``, default ``master_host``) maps to ``master``, then each ``-r HOSTS:ROLE`` maps each
comma-separated host to ``ROLE``, a later entry replacing an earlier one (``-r master_host:storage``
takes the default master's role away). Each host of the platform that the map names gets the
role: appended to its own ``role`` property after a comma when it has one (``storage`` and
``master`` give ``storage,master``), else as its ``role`` property. The role must then be exactly
one of ``compute_node``, ``master``, ``storage`` or empty (a compute node): Batsim aborts on any
other ("Cannot create any role from string description"), so a role added to a host that has one
aborts too. Names of the map that are no host are ignored; the platform must then hold exactly one
master ("Cannot find the "master" role", "There are two master hosts"). The roles reach
SIMULATION_BEGINS through the compute hosts' ``properties`` (a ``role`` given by ``-r``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from hdrm.errors import ConfigError, PlatformError
from hdrm.platform.simgrid_export import MASTER_HOST

if TYPE_CHECKING:  # simgrid imports this module
    from hdrm.platform.simgrid import HostSpec

logger = logging.getLogger(__name__)

#: The roles Batsim 4.2.1 knows (src/permissions.cpp); an empty role is a compute node.
ROLES = ("compute_node", "master", "storage")


@dataclass(frozen=True)
class HostRoles:
    """Batsim's ``-m`` and ``-r`` options.

    Attributes:
        master: the master host's name (``-m/--master-host``).
        added: each ``-r HOSTS:ROLE`` as (host, role) pairs, in command-line order.
    """

    master: str = MASTER_HOST
    added: tuple[tuple[str, str], ...] = ()

    @property
    def default(self) -> bool:
        """Whether these are Batsim's defaults (no ``-m``, no ``-r``)."""
        return self.master == MASTER_HOST and not self.added

    def role_map(self) -> dict[str, tuple[str, str]]:
        """Host name -> (role, the option that gave it), as Batsim builds its map."""
        found = {self.master: ("master", f"-m/--master-host {self.master}")}
        for host, role in self.added:
            found[host] = (role, f"-r/--add-role-to-hosts {host}:{role}")
        return found


def parse_role_option(text: str) -> tuple[tuple[str, str], ...]:
    """One ``-r HOSTS:ROLE`` value as (host, role) pairs.

    Raises:
        ConfigError: not exactly one ``:`` (Batsim: "The roles host mapping should only contain
            one ':' character"), no host, or a role Batsim does not know.
    """
    option = f"-r/--add-role-to-hosts {text!r}"
    if text.count(":") != 1:
        raise ConfigError(
            f"{option}: {text.count(':')} ':' characters, which Batsim 4 refuses (it wants exactly "
            "one); write HOSTS:ROLE, e.g. host1,host2:storage"
        )
    hosts, role = text.split(":")
    if role and role not in ROLES:
        raise ConfigError(
            f"{option}: role {role!r}, which Batsim 4 refuses ('Cannot create any role from "
            f"string description'); give one of {', '.join(ROLES)}"
        )
    names = hosts.split(",")
    if not all(names):
        raise ConfigError(
            f"{option}: an empty host name; write HOSTS:ROLE, e.g. host1,host2:{role or 'storage'}"
        )
    return tuple((name, role) for name in names)


def apply_roles(hosts: Sequence[HostSpec], roles: HostRoles, path: str | Path) -> list[HostSpec]:
    """``hosts`` (file order) with the roles of ``roles`` merged into their ``role`` property.

    Raises:
        PlatformError: a host would get a role Batsim refuses (one it already has a role), or the
            platform would have no master host or two; naming the option, the host and the fix.
    """
    wanted = roles.role_map()
    out = []
    for host in hosts:
        if host.name not in wanted:
            out.append(host)
            continue
        role, option = wanted[host.name]
        own = host.properties.get("role")
        merged = role if own is None else f"{own},{role}"
        if merged and merged not in ROLES:
            raise PlatformError(
                f"{path}: {option}: host {host.name!r} already has the property role={own!r}, so "
                f"Batsim 4 reads the role {merged!r} and refuses it ('Cannot create any role from "
                "string description'); remove the property or the option"
            )
        out.append(replace(host, properties={**host.properties, "role": merged}))
    _check_one_master(out, roles, path)
    names = {h.name for h in hosts}
    missing = sorted(name for name in wanted if name not in names  # not the default master's
                     and (name, wanted[name][0]) != (MASTER_HOST, "master"))
    if missing:
        logger.warning("%s: no host named %s; Batsim ignores the role given to it", path,
                       ", ".join(repr(n) for n in missing))
    return out


def is_master(host: HostSpec) -> bool:
    """Whether a host with the roles applied is the master."""
    return host.properties.get("role") == "master"


def _check_one_master(hosts: Sequence[HostSpec], roles: HostRoles, path: str | Path) -> None:
    masters = [h.name for h in hosts if is_master(h)]
    names = {h.name for h in hosts}
    if not masters:
        hint = (f"no host is named {roles.master!r}" if roles.master not in names
                else f"host {roles.master!r} lost its master role to -r")
        raise PlatformError(
            f"{path}: -m/--master-host {roles.master}: no master host ({hint}), which Batsim 4 "
            "refuses ('Cannot find the \"master\" role'); name a host of the platform with -m, "
            "or give one the role master with -r HOST:master"
        )
    if len(masters) > 1:
        raise PlatformError(
            f"{path}: {len(masters)} master hosts ({', '.join(masters)}: -m/--master-host "
            f"{roles.master}, each -r HOST:master and each host with role=master count), which "
            "Batsim 4 refuses ('There are two master hosts'); keep exactly one"
        )

