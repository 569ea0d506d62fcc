"""Batsim's energy readings (``-E``) on the actor model, stepped without an actor's generator.

With ``-E``, Batsim 4.2.1 reads the energy of a job's hosts, then of every host, at each job
start and end, power-state request and completed switch (``sg_host_get_consumed_energy``, one
simcall per host whose account is stale). SimGrid answers the simcalls of a round in order, so an
actor reading 64 stale hosts spends 64 rounds on it, and the rounds decide how its next steps
interleave with the other actors' (which message reaches the server first). Alone in its round
with nothing else ready, an actor's simcalls interleave with nobody's: they are answered at once,
and as nothing else can run before the actor blocks, it runs on in the same step.

An actor yields ``(READ, hosts)`` (:data:`~hdrm.batsim.maestro.READ`) and the maestro steps the
reading with :meth:`EnergyReads.next`, round after round, as the reading's generator did, without
resuming the actor; :meth:`EnergyReads.bulk` runs whole rounds made of readings only in one go:
each reading touches its next stale host, and once they all stand at the same place of the same
hosts, every round left touches the next stale host of all of them, so the rounds left are skipped
and their hosts charged together. Nothing else runs in these rounds, so the load and the power
state of every host stay as they were, and so do the watts each touch charges.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from hdrm.batsim.maestro import ANSWERED, Reading


class EnergyReads:
    """The freshness of the hosts' energy accounts, and the readings that bring them up to date.

    Args:
        nb_hosts: compute hosts.
        now: the maestro's time (``lambda: maestro.now``).
        alone: whether the running actor is alone in its round (``maestro.alone``).
        touch: the energy plugin is called on one host (its account updated now).
        charge: the accounts of several hosts are updated now, the same as :meth:`touch` of each
            (``hosts``, ``first``: from which index of ``hosts``, ``whole``: ``hosts`` is every
            host: the hosts before ``first`` are up to date already).
    """

    def __init__(self, nb_hosts: int, now: Callable[[], float], alone: Callable[[], bool],
                 touch: Callable[[int], None],
                 charge: Callable[[Sequence[int], int, bool], None]) -> None:
        self.fresh = [0.0] * nb_hosts  # when each host's account was last updated
        self.all_fresh_s = 0.0  # ... or every host's, if later
        self._now = now
        self._alone = alone
        self._touch = touch
        self._charge = charge

    def start(self, hosts: Sequence[int]) -> Reading:
        """A reading of ``hosts`` (in this order), not begun."""
        reading = Reading()
        reading.hosts, reading.index, reading.host, reading.touch = hosts, 0, -1, self._touch
        return reading

    def next(self, actor: Any, reading: Reading) -> tuple:
        """The reading's next simcall: the next stale host's (the reading comes back as the
        answer); with no stale host left, or alone (every stale host's simcall answered at
        once), the actor's own next simcall (it runs on)."""
        fresh, hosts, now = self.fresh, reading.hosts, self._now()
        if self.all_fresh_s < now:
            for i in range(reading.index, len(hosts)):
                h = hosts[i]
                if fresh[h] < now:
                    if self._alone():  # (the round this took is not seen: nobody else can run
                        self._collapse(hosts, i, now)  # until the actor blocks)
                        break
                    reading.index, reading.host = i + 1, h
                    return (ANSWERED, reading)
        return actor.send(None)

    def _collapse(self, hosts: Sequence[int], first: int, now: float) -> None:
        whole = len(hosts) == len(self.fresh)
        if whole:
            self.all_fresh_s = now
        else:
            for h in hosts[first:]:
                self.fresh[h] = now
        self._charge(hosts, first, whole)  # (whole: every host is up to date)

    def bulk(self, round_: list[tuple[Any, Any]]) -> None:
        """Run the rounds of ``round_`` (a round about to begin: its actors and the values they
        get) while it holds readings only, each with a stale host left: the readings move on, the
        hosts they touch are charged; the round left is the first one where a reading ends."""
        now = self._now()
        if self.all_fresh_s >= now:
            return
        readings = []
        for actor, value in round_:
            if value.__class__ is not Reading or actor.gi_frame is None:
                return  # (an actor killed while it read: the maestro ends it)
            readings.append(value)
        fresh, touched = self.fresh, []
        while True:
            first = readings[0]
            hosts, index = first.hosts, first.index
            if all(r.index == index and (r.hosts is hosts or r.hosts == hosts)
                   for r in readings):  # in step: each round touches their next stale host
                if len(hosts) == len(fresh):  # every host: all up to date once they end
                    self.all_fresh_s = now
                    for r in readings:
                        r.index = len(hosts)
                    self._charge(hosts, 0, True)
                    return
                left = [i for i in range(index, len(hosts)) if fresh[hosts[i]] < now]
                if left:
                    for i in left:
                        fresh[hosts[i]] = now
                        touched.append(hosts[i])
                    for r in readings:
                        r.index = left[-1] + 1
                break  # (the next round: every reading ends)
            targets = []
            for r in readings:
                hosts = r.hosts
                for i in range(r.index, len(hosts)):
                    if fresh[hosts[i]] < now:
                        targets.append(i)
                        break
                else:
                    break  # this reading ends in this round: the maestro steps it
            if len(targets) < len(readings):
                break
            for r, i in zip(readings, targets):
                r.index = i + 1
                touched.append(r.hosts[i])
            for h in touched[-len(readings):]:
                fresh[h] = now
        if touched:
            self._charge(touched, 0, False)
