"""SimGrid 3.32's ptask_L07 actions over an lmm system (:mod:`hdrm.batsim.lmm`), for the
actors of :class:`~hdrm.batsim.actors.ActorSimulation` when jobs communicate.

A :class:`Network` holds one constraint per compute host (its cores x speed, flop/s) and one per
link (its bandwidth, bytes/s; a FATPIPE link shares nothing; a split-duplex link is one
constraint per direction; a route between two executors on one host crosses its loopback).
:meth:`Network.ptask` builds an action as ``L07Action``'s constructor does:

* its variable (work: a fraction 1) has one element per executor on its host's cpu constraint
  (weight: the executor's flops; one per executor, even on one host), then, for each pair
  ``(i, j)`` with bytes, in row order, one per link of the route from ``i`` to ``j`` (weight:
  the bytes, summed over the pairs that cross the link; a FATPIPE link keeps the largest);
* its latency is the largest route latency over the pairs with bytes; while it lasts the
  variable is disabled (rate 0);
* with no flops and no link to cross (:attr:`Task.empty`), it has no work left: it ends at the
  next step;
* its bound (``L07Action::update_bound``), set once the latency is over and again whenever a
  host's speed changes: the smaller of ``TCP_GAMMA / (2 x max(latency x bytes))`` over the
  pairs with bytes and ``speed / flops`` over its executors with flops.

A message (:meth:`Network.message`, ``NetworkL07Model::communicate``) is such an action with one
byte from its sender's host to the master host (its hosts' cpu elements have weight 0 and are
left out: they change no value).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, Sequence

from hdrm.batsim.lmm import Constraint, System, Variable
from hdrm.platform.simgrid_routes import Link, NoRoute, Route, Unmodelled

#: SimGrid's ``network/TCP-gamma`` (bytes).
TCP_GAMMA = 4194304.0
#: Up to this many compute hosts, :func:`unroutable_pair` checks every pair; beyond, the routes
#: from and to the first host (the others are checked when a job starts on them).
ALL_PAIRS_UP_TO = 256
_POLICIES = ("SHARED", "FATPIPE", "SPLITDUPLEX")
_DBL_MAX = sys.float_info.max


class Unroutable(Exception):
    """A route between two hosts that is not known exactly (or a link not modelled)."""


@dataclass(eq=False)
class Task:
    """An L07 action's variable, what bounds it and its latency (seconds left)."""

    var: Variable
    hosts: tuple[int, ...]
    flops: tuple[float, ...]
    lat_bytes: tuple[float, ...]  # latency x bytes of each pair with bytes
    latency: float
    empty: bool = False  # no flops, no link: no work (done at the next step)


def unroutable_pair(route: Callable[[int, int], Route],
                    nb_hosts: int) -> tuple[int, int, str] | None:
    """The first pair of distinct compute hosts (row order) whose route a communicating job
    could not use, and why: none found, not known exactly (a Floyd tie, a zone not modelled),
    or a link not modelled; None when all are usable. Every pair up to
    :data:`ALL_PAIRS_UP_TO` hosts, else the first host's routes to and from each other one."""
    if nb_hosts <= ALL_PAIRS_UP_TO:
        pairs = ((i, j) for i in range(nb_hosts) for j in range(nb_hosts) if i != j)
    else:
        pairs = (pair for j in range(1, nb_hosts) for pair in ((0, j), (j, 0)))
    for i, j in pairs:
        try:
            found = route(i, j)
        except (NoRoute, Unmodelled) as exc:
            return i, j, f"not modelled ({exc})"
        if not found.exact:
            return i, j, "not known exactly"
        for link in found.links:
            if link.bps is None or link.policy not in _POLICIES:
                return i, j, f"through link {link.name!r} ({link.policy}, bandwidth {link.bps})"
    return None


class Network:
    """Hosts and links as lmm constraints, and the actions on them.

    Args:
        speeds_flops: each compute host's speed (its current power state), flop/s.
        cores: each compute host's core count.
        route: the route from compute host ``i`` to ``j`` (``-1``: the master host).
    """

    def __init__(self, speeds_flops: Sequence[float], cores: Sequence[int],
                 route: Callable[[int, int], Route]) -> None:
        self.system = System()
        self.speeds = list(speeds_flops)
        self.cores = list(cores)
        self.cpus = [Constraint(c * s, name=f"cpu{h}")
                     for h, (s, c) in enumerate(zip(self.speeds, self.cores))]
        self.links: dict[str, Constraint] = {}
        self.route = route
        self.tasks: list[Task] = []

    def _link(self, link: Link) -> Constraint:
        cnst = self.links.get(link.name)
        if cnst is None:
            if link.bps is None or link.policy not in _POLICIES:
                raise Unroutable(f"link {link.name!r} ({link.policy}, bandwidth {link.bps})")
            cnst = self.links[link.name] = Constraint(link.bps, link.policy == "FATPIPE",
                                                      link.name)
        return cnst

    def _routed(self, src: int, dst: int) -> Route:
        found = self.route(src, dst)
        if not found.exact:
            raise Unroutable(f"the route from host {src} to host {dst} is not known exactly")
        return found

    def ptask(self, hosts: Sequence[int], flops: Sequence[float],
              com: Sequence[float] | None) -> Task:
        """A parallel task over ``hosts`` (one per executor), ``flops`` each, ``com[i * n + j]``
        bytes from executor ``i`` to ``j`` (None: no communication).

        Raises:
            Unroutable: a route with bytes is not known exactly, or a link not modelled.
        """
        n = len(hosts)
        pairs = [(k // n, k % n, b) for k, b in enumerate(com or ()) if b > 0]
        routes = [(self._routed(hosts[i], hosts[j]), b) for i, j, b in pairs]
        latency = 0.0
        for found, _ in routes:
            latency = max(latency, found.latency_s)
        links = [(self._link(link), b) for found, b in routes for link in found.links]
        system = self.system
        var = system.variable(1.0, -1.0)
        if latency > 0:
            system.set_penalty(var, 0.0)
        for h, f in zip(hosts, flops):
            system.expand(self.cpus[h], var, f, force=True)
        for cnst, b in links:
            system.expand(cnst, var, b)
        task = Task(var, tuple(hosts), tuple(flops),
                    tuple(found.latency_s * b for found, b in routes), latency,
                    not links and not any(f > 0 for f in flops))
        self.tasks.append(task)
        self.update_bound(task)
        return task

    def message(self, links: Sequence[Link], latency_s: float) -> Task:
        """A 1-byte message over ``links`` (its route to the master host)."""
        system = self.system
        var = system.variable(1.0, -1.0)
        if latency_s > 0:
            system.set_penalty(var, 0.0)
        for link in links:
            system.expand(self._link(link), var, 1.0)
        task = Task(var, (), (), (latency_s,) if latency_s > 0 else (), latency_s)
        self.tasks.append(task)
        self.update_bound(task)
        return task

    def update_bound(self, task: Task) -> None:
        """``L07Action::update_bound``: once its latency is over, the network's and the cpus'
        bound on its rate."""
        lat_current, net = 0.0, _DBL_MAX
        for value in task.lat_bytes:
            lat_current = max(lat_current, value)
        if lat_current > 0:
            net = TCP_GAMMA / (2.0 * lat_current)
        cpu = _DBL_MAX
        for h, f in zip(task.hosts, task.flops):
            if f > 0:
                cpu = min(cpu, self.speeds[h] / f)
        bound = min(net, cpu)
        if bound < _DBL_MAX and task.latency <= 0.0:
            self.system.set_bound(task.var, bound)

    def started(self, task: Task) -> None:
        """Its latency is over: its bound, then its variable enabled."""
        task.latency = 0.0
        self.update_bound(task)
        self.system.set_penalty(task.var, 1.0)

    def set_speed(self, host: int, speed_flops: float) -> None:
        """``CpuL07::on_speed_change``: the host's constraint, then the bound of each action on
        it."""
        self.speeds[host] = speed_flops
        cnst = self.cpus[host]
        self.system.set_constraint_bound(cnst, self.cores[host] * speed_flops)
        for task in self.tasks:
            if host in task.hosts:
                self.update_bound(task)

    def end(self, task: Task) -> None:
        """The action is gone (ended, failed or cancelled): its variable leaves the system."""
        if task in self.tasks:
            self.tasks.remove(task)
            self.system.free(task.var)
