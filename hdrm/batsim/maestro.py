"""SimGrid 3.32's scheduling of actors, as far as Batsim 4.2.1's messages depend on it.

:class:`Maestro` runs *actors* (Python generators) the way SimGrid's maestro does, so that the
order in which Batsim's server receives its messages follows from the same steps:

* an actor runs until its next simcall (a value it yields); SimGrid runs every ready actor once
  (a *round*), then answers their simcalls in the order they ran. An answered simcall
  (``ANSWERED``: ``Mailbox::by_name``, ``Actor::create``, starting a transfer, an energy
  update) makes the actor ready for the next round; a blocking one (``SLEEP``, ``WAIT``)
  makes it wait for an action;
* an action is a sleep, a transfer or a computation (SimGrid's ``ptask_L07`` model holds them
  all, in the order they were created). When no actor is ready, time moves to the earliest end
  of an action; a sleep ends at the first such step where less than :data:`SURF_PRECISION_S` of
  it remains (so up to a nanosecond early), a transfer or a computation when less than
  :data:`REMAINS_PRECISION` of its work remains (on time); the actors waiting on the actions
  that end wake up in the actions' order (for a transfer: in the order they waited);
* a message is a 1-byte transfer into one mailbox (the server's): a send posted while the
  receiver waits starts at once, otherwise it waits in the mailbox, first posted first taken;
  it lasts ``1 / bandwidth`` of its route (0.1 ns on a 10 GBps link); over an empty route it
  ends at the next step, 0 s later, or once its latency is over (a Vivaldi zone's distance:
  nothing to send; measured with the binary); over a route with latency (``ptask_L07``), it
  first waits out the latency (ending, as a sleep, at the first step with less than
  :data:`SURF_PRECISION_S` of it left), then sends its byte at ``min(bandwidth, TCP_GAMMA /
  (2 x latency))`` (SimGrid's ``L07Action::updateBound``), from that step on;
* a parallel task (:class:`Exec`: ``PTASK``, then ``WAIT_FOR`` with a timeout) is one action
  whose work, a fraction 1, drains at its rate; its timeout is a sleep (the rule above), and the
  wait ends :data:`DONE` at the timeout only if the work's action has ended too, else
  :data:`TIMEOUT`.

Times are doubles updated with SimGrid's own arithmetic (``now += delta``; each action's
remaining time decremented by ``delta``), so that ties within a nanosecond fall as they do there.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from hdrm.batsim.ptask import Network, Task

#: SimGrid's ``surf/precision``: a sleep with less than this left has ended.
SURF_PRECISION_S = 1e-9
#: ``maxmin/precision`` x ``surf/precision``: a transfer with fewer bytes left has ended.
REMAINS_PRECISION = 1e-5 * 1e-9
#: SimGrid's ``network/TCP-gamma`` (bytes): bounds the rate of a transfer with latency.
TCP_GAMMA = 4194304.0

ANSWERED, SLEEP, SEND, RECV, WAIT, CREATE, EXCHANGE, EXECUTE, PTASK, WAIT_FOR, READ = range(11)
#: How a parallel task's wait ends: its work done, or its timeout first (work left).
DONE, TIMEOUT = "DONE", "TIMEOUT"

Actor = Generator[tuple, Any, None]


@dataclass(eq=False)
class Transfer:
    """A message between two actors: what it carries, once matched; who waits for its end."""

    payload: Any = None
    bandwidth: float = 0.0
    host: int = -1
    latency: float = 0.0
    waiters: list[Actor] = field(default_factory=list)
    links: tuple = ()


@dataclass(eq=False)
class Exec:
    """A parallel task (``exec_init`` over ``hosts``): its ``ptask_L07`` action, the sleep timing
    out the wait on it, the actor waiting, and how the wait ended (:data:`DONE`,
    :data:`TIMEOUT`; empty while it runs)."""

    hosts: tuple[int, ...]
    task: "Task | None" = None
    action: "_Action | None" = None
    timer: "_Action | None" = None
    waiter: Actor | None = None
    state: str = ""
    #: called once when its action, run on after a timeout, stops (work done or cancelled)
    on_end: Callable[[], None] | None = None
    ended: bool = False  # its action is over (work done, or cancelled): nothing to cancel


class Reading:
    """An energy reading in progress (``READ``, stepped by :attr:`Maestro.reads`,
    :class:`~hdrm.batsim.energy_reads.EnergyReads`): answered, it touches its host and comes
    back as the actor's value."""

    __slots__ = ("hosts", "index", "host", "touch")

    def __call__(self) -> "Reading":
        if self.host >= 0:
            self.touch(self.host)
        return self


@dataclass(eq=False)
class _Action:
    """A sleep (``max_duration``) or a transfer (``remains`` bytes at ``rate``; while
    ``latency`` is left, at rate 0, then at ``bound``)."""

    host: int
    max_duration: float = -1.0
    remains: float = 0.0
    rate: float = 0.0
    latency: float = 0.0
    bound: float = 0.0
    transfer: Transfer | None = None
    sleeper: Actor | None = None
    exec: Exec | None = None
    task: Task | None = None
    computes: bool = False  # an execution on one host (``EXECUTE``), outside the lmm system


class Maestro:
    """Actors, actions and one mailbox, stepped as SimGrid does.

    Args:
        on_action_end: called with the host of each action that ends, at the step's time (the
            energy plugin updates that host's account then).
        network: where jobs communicate, the lmm system that shares hosts and links among the
            parallel tasks (:class:`~hdrm.batsim.ptask.Task` of their :class:`Exec`) and the
            messages (over the links a SEND names): their rates are its solution, solved again
            at each step after a change (:mod:`hdrm.batsim.ptask`).
    """

    def __init__(self, on_action_end: Callable[[int], None] | None = None,
                 network: Network | None = None) -> None:
        self.now = 0.0
        self.on_action_end = on_action_end
        self.network = network
        self._actions: list[_Action] = []
        self._ready: list[tuple[Actor, Any]] = []
        self._round: list[tuple[Actor, Any]] = []
        self._next = 0
        self._calls: list[tuple[Actor, tuple]] = []
        self._posted: deque[Transfer] = deque()
        self._receiving: Transfer | None = None
        self._exchanging: Actor | None = None
        #: steps the energy readings (``READ``) where Batsim reads energy (-E)
        self.reads: Any = None
        #: changes whenever the computations under way or their rates may have changed
        self.version = 0

    def spawn(self, actor: Actor) -> None:
        """Make a new actor ready."""
        self._ready.append((actor, None))

    def alone(self) -> bool:
        """True when the running actor is the only one of its round and none is ready: until it
        blocks, its simcalls interleave with nobody's, so several can be answered at once."""
        return len(self._round) == 1 and not self._ready

    @property
    def mailbox_empty(self) -> bool:
        """No message posted and not yet taken."""
        return not self._posted

    def run(self) -> Any:
        """Run until an actor yields ``(EXCHANGE, message)``: return ``message`` (resume with
        :meth:`resume`); or until nothing can happen any more: return None."""
        while True:
            if self._next < len(self._round):
                actor, value = self._round[self._next]
                self._next += 1
                request = self._step(actor, value)
                if request is not None and request[0] == EXCHANGE:
                    self._exchanging = actor
                    return request[1]
                continue
            if self._round:
                calls, self._round, self._next, self._calls = self._calls, [], 0, []
                for actor, request in calls:
                    self._answer(actor, request)
            elif self._ready:
                self._round, self._ready, self._next = self._ready, [], 0
                if len(self._round) > 1 and self._round[0][1].__class__ is Reading:
                    self.reads.bulk(self._round)
            elif not self._solve():
                return None

    def resume(self, value: Any) -> Any:
        """Give the exchanging actor its answer and run on (as :meth:`run`)."""
        actor, self._exchanging = self._exchanging, None
        self._step(actor, value)
        return self.run()

    def _step(self, actor: Actor, value: Any) -> tuple | None:
        try:
            if value.__class__ is Reading:
                if actor.gi_frame is None:
                    return None  # (killed while it read)
                request = self.reads.next(actor, value)
            else:
                request = actor.send(value)
            while request[0] == READ:
                request = self.reads.next(actor, self.reads.start(request[1]))
        except StopIteration:
            return None
        if request[0] != EXCHANGE:
            self._calls.append((actor, request))
        return request

    def _answer(self, actor: Actor, request: tuple) -> None:
        kind = request[0]
        if kind == ANSWERED:
            value = request[1]() if request[1] is not None else None  # may change _ready
            self._ready.append((actor, value))
        elif kind == CREATE:
            self._ready.append((request[1], None))  # SimGrid starts it before answering
            self._ready.append((actor, None))
        elif kind == SEND:
            transfer = Transfer(request[1], request[2])
            transfer.latency = request[4] if len(request) > 4 else 0.0
            transfer.links = request[5] if len(request) > 5 else ()
            if self._receiving is not None:
                receiving, self._receiving = self._receiving, None
                receiving.payload, receiving.bandwidth = transfer.payload, transfer.bandwidth
                receiving.latency, receiving.links = transfer.latency, transfer.links
                transfer = receiving
                self._start(transfer, request[3])
            else:
                self._posted.append(transfer)
            transfer.host = request[3]
            self._ready.append((actor, transfer))
        elif kind == RECV:
            if self._posted:
                transfer = self._posted.popleft()
                self._start(transfer, transfer.host)
            else:
                transfer = self._receiving = Transfer()
            self._ready.append((actor, transfer))
        elif kind == WAIT:
            request[1].waiters.append(actor)
        elif kind == SLEEP:
            self._actions.append(_Action(request[2], max_duration=request[1], sleeper=actor))
        elif kind == EXECUTE:  # this_actor::execute(flops) at ``rate`` flop/s: start, then wait
            if self.on_action_end is not None:
                self.on_action_end(request[3])  # the energy plugin's Exec::on_start
            self._actions.append(_Action(request[3], remains=request[1], rate=request[2],
                                         sleeper=actor, computes=True))
            self.version += 1
        elif kind == PTASK:  # Exec::start (answered): its action, the whole work at ``rate``
            self._start_exec(request[1], request[2], actor)
            self._ready.append((actor, None))
        elif kind == WAIT_FOR:  # Exec::wait_for(timeout): a sleep on the issuer's host
            exec_ = request[1]
            if exec_.state:
                self._ready.append((actor, exec_.state))
            else:
                exec_.waiter = actor
                if request[2] >= 0:
                    exec_.timer = _Action(request[3], max_duration=request[2], sleeper=actor,
                                          exec=exec_)
                    self._actions.append(exec_.timer)
        else:
            raise ValueError(f"unknown simcall {request!r}")

    def _start_exec(self, exec_: Exec, rate: float, actor: Actor) -> None:
        exec_.action = _Action(exec_.hosts[0], remains=1.0, rate=rate, sleeper=actor, exec=exec_)
        if exec_.task is not None:
            exec_.action.task, exec_.action.latency = exec_.task, exec_.task.latency
            if exec_.task.empty:
                exec_.action.remains = 0.0
        if len(exec_.hosts) == 1 and self.on_action_end is not None:
            # the energy plugin's Exec::on_start (one host), before any solve: no load yet
            self.on_action_end(exec_.hosts[0])
        self._actions.append(exec_.action)
        self.version += 1

    def set_rate(self, exec_: Exec, rate: float) -> None:
        """A host of ``exec_`` changed speed: its action runs at ``rate`` from now on."""
        if exec_.action is not None and (not exec_.state or exec_.on_end is not None):
            exec_.action.rate = rate
            self.version += 1

    def cancel_exec(self, exec_: Exec) -> None:
        """Exec::cancel: its action (and timer) dropped, its hosts' energy updated; nothing
        once its work is done (ExecImpl::post took it off its actor's activities)."""
        if exec_.ended:
            return
        exec_.ended = True
        if self.on_action_end is not None:  # the action failed, its variable still there
            for h in exec_.hosts:
                self.on_action_end(h)
        self._actions = [a for a in self._actions if a.exec is not exec_]
        self.version += 1
        self._free(exec_.action)
        self._ran_on(exec_)

    @staticmethod
    def _ran_on(exec_: Exec) -> None:
        if exec_.on_end is not None:
            on_end, exec_.on_end = exec_.on_end, None
            on_end()

    def _free(self, action: _Action | None) -> None:
        """The action's variable leaves the lmm system (where it has one)."""
        if action is not None and action.task is not None:
            self.network.end(action.task)  # type: ignore[union-attr]

    def _start(self, transfer: Transfer, host: int) -> None:
        if self.network is not None and transfer.links:  # an L07 action over its links
            task = self.network.message(transfer.links, transfer.latency)
            self._actions.append(_Action(host, remains=1.0, latency=transfer.latency,
                                         transfer=transfer, task=task))
            return
        if math.isinf(transfer.bandwidth) and transfer.latency > 0:  # no link, a latency (a
            self._actions.append(_Action(  # Vivaldi zone's distance): done as it is over
                host, remains=0.0, latency=transfer.latency, bound=sys.float_info.max,
                transfer=transfer))
            return
        if math.isinf(transfer.bandwidth):  # an empty route: nothing to send, done at the next
            self._actions.append(_Action(host, remains=0.0, rate=sys.float_info.max,  # step
                                         transfer=transfer))
            return
        if transfer.latency > 0:  # L07Action: penalty 0 until the latency is over
            self._actions.append(_Action(
                host, remains=1.0, latency=transfer.latency, transfer=transfer,
                bound=min(transfer.bandwidth, TCP_GAMMA / (2.0 * transfer.latency))))
            return
        self._actions.append(_Action(host, remains=1.0, rate=transfer.bandwidth, transfer=transfer))

    def _solve(self) -> bool:
        """Move time to the next end of an action and wake its actors; False when none is left."""
        if not self._actions:
            return False
        if self.network is not None:
            self.network.system.solve()
            for a in self._actions:
                if a.task is not None:
                    a.rate = a.task.var.value
        delta = -1.0
        for a in self._actions:
            if a.rate > 0:
                value = a.remains / a.rate if a.remains > 0 else 0.0
                delta = value if delta < 0 or value < delta else delta
            if a.max_duration > -1 and (delta < 0 or a.max_duration < delta):
                delta = a.max_duration
        for a in self._actions:  # HostL07Model::next_occurring_event: then the latencies
            if a.latency > 0 and (delta < 0 or a.latency < delta):
                delta = a.latency
        self.now += delta
        ended, kept = [], []
        for a in self._actions:
            if a.task is not None:
                done = self._update_task(a, delta)
            else:  # update_actions_state, inline (the common case)
                started = False
                if a.latency > 0:  # the rate applies from the next step on
                    a.latency = a.latency - delta if a.latency > delta else 0.0
                    if a.latency < SURF_PRECISION_S:
                        a.latency, started = 0.0, True
                if a.rate > 0:
                    a.remains -= a.rate * delta
                    if a.remains < REMAINS_PRECISION:
                        a.remains = 0.0
                if started:
                    a.rate = a.bound
                if a.max_duration != -1.0:
                    a.max_duration -= delta
                    if a.max_duration < SURF_PRECISION_S:
                        a.max_duration = 0.0
                done = (a.rate > 0 and a.remains <= 0) or a.max_duration == 0.0
            if done:
                ended.append(a)
                if self.on_action_end is not None:  # finished, its variable still there
                    for h in (a.exec.hosts if a.exec is not None and a is a.exec.action
                              else (a.host,)):
                        self.on_action_end(h)
                if a.task is not None:
                    self._free(a)
            else:
                kept.append(a)
        self._actions = kept
        if any(a.exec is not None or a.computes for a in ended):
            self.version += 1
        for a in ended:
            if a.exec is not None:
                self._post(a)
            elif a.transfer is not None:
                self._ready.extend((actor, a.transfer.payload) for actor in a.transfer.waiters)
            else:
                self._ready.append((a.sleeper, None))
        return True

    def _update_task(self, a: _Action, delta: float) -> bool:
        """update_actions_state for an L07 action with a variable: its latency (once over: its
        bound, its variable enabled, its rate still 0 in this step), its work; True when it
        ended (work done and variable enabled)."""
        task = a.task
        if a.latency > 0:
            a.latency = a.latency - delta if a.latency > delta else 0.0
            if a.latency < SURF_PRECISION_S:
                a.latency = 0.0
                self.network.started(task)  # type: ignore[union-attr,arg-type]
        a.rate = task.var.value  # type: ignore[union-attr]
        a.remains -= a.rate * delta
        if a.remains < REMAINS_PRECISION:
            a.remains = 0.0
        return a.remains <= 0 and task.var.penalty > 0  # type: ignore[union-attr]

    def _post(self, action: _Action) -> None:
        """ExecImpl::post of a parallel task whose action or timer ended: at its timer, DONE
        only if no work is left (below :data:`REMAINS_PRECISION`), else TIMEOUT (SimGrid 3.32's
        wait_for times out alone: the work runs on until its actor ends, which cancels it,
        :meth:`cancel_exec`, or until it is done; then :attr:`Exec.on_end`); at its work's end,
        DONE and the timer dropped."""
        exec_ = action.exec
        if action is exec_.action:
            exec_.ended = True
        if exec_.state:
            if action is exec_.action:  # run on after its timeout: its work is done
                self._ran_on(exec_)
            return  # (or its other action ended in the same step, posted first)
        if action is exec_.timer:
            exec_.state = DONE if exec_.action.remains <= 0 else TIMEOUT
        else:
            exec_.state = DONE
            self._actions = [a for a in self._actions if a is not exec_.timer]
        if exec_.state == DONE:
            self._actions = [a for a in self._actions if a is not exec_.action]
            self.version += 1
            self._free(exec_.action)
        if exec_.waiter is not None:
            self._ready.append((exec_.waiter, exec_.state))
            exec_.waiter = None

    def exec_rates(self) -> list[tuple[Exec, float]]:
        """The parallel tasks whose work is under way (a cancelled one until its hosts' energy
        is updated) with their rates (a fraction of the work per second)."""
        return [(a.exec, a.rate) for a in self._actions
                if a.exec is not None and a is a.exec.action]

    def executing_by_host(self) -> dict[int, float]:
        """:meth:`executing` of every host that runs an execution."""
        rates: dict[int, float] = {}
        for a in self._actions:
            if a.computes:
                rates[a.host] = rates.get(a.host, 0.0) + a.rate
        return rates

    def executing(self, host: int) -> float:
        """The flop rate of the executions (``EXECUTE``) running on ``host`` now."""
        return sum(a.rate for a in self._actions if a.computes and a.host == host)

    def cancel(self, actor: Actor) -> None:
        """Kill ``actor`` (Batsim's killer): its sleep is dropped, it never runs again."""
        self._actions = [a for a in self._actions if a.sleeper is not actor]
        self.version += 1
        self._ready = [(a, v) for a, v in self._ready if a is not actor]
        actor.close()
