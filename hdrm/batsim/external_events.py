"""External events (Batsim 4.2.1's ``--events`` and ``--forward-unknown-events``) in ``hdrm serve``.

An event file holds one JSON object per line (empty lines are skipped): ``machine_unavailable`` and
``machine_available`` with an interval set of ``resources``, and, only with
``--forward-unknown-events``, events of any other type, forwarded as they are. Each file has its
own submitter (``we0``, ``we1``, ... in command-line order, started after the workloads' job
submitters): it sorts its events as Batsim does (:func:`batsim_sort`: by timestamp, then
available before unavailable before generic, the ties of more than 16 events reordered by
libstdc++'s introsort exactly as the binary's ``std::sort`` does), then sends each timestamp's
events as one batch and sleeps until the next, like a workload's submitter
(:mod:`hdrm.batsim.event_order` orders them among the other events of an instant). Each event
becomes a NOTIFY: ``event_machine_unavailable``/``event_machine_available`` with the resources
as Batsim writes them (``"0-2 5"``), or the generic event's object itself; once every file's
last batch is sent, NOTIFY ``no_more_external_event_to_occur`` follows, and SIMULATION_ENDS
waits for it.

A machine made unavailable runs the jobs it runs on to their end; an EXECUTE_JOB on it stops the
session, as the binary aborts (:meth:`Availability.check`). Making a machine unavailable twice,
or available when it is not unavailable, stops the session with the binary's words; a
power-state switch to or from a sleep state overwrites the unavailable state, as in Batsim
(:class:`Availability`).

Bad files are refused before the session, in one line naming the file, the line, the key and
the value; the binary aborts on the same lines with a message that names none of them (and
aborts only when the event comes, for a resource past the last machine). Where the two differ:
a resource list read by C's ``stoi`` (``"0,1"`` is machine 0, ``"+1"`` machine 1 for the binary)
is refused unless it is digits; a key given twice in one line is refused (the binary keeps both);
an event type that is not a machine event is refused without ``--forward-unknown-events``, naming
the option (the binary: ``Unknown event type: TYPE``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from hdrm.batsim import protocol as p
from hdrm.errors import ConfigError, ProtocolError, SimulationError

__all__ = ["Availability", "EventSubmitter", "ExternalEvent", "batsim_sort", "read_event_files"]

MACHINE_AVAILABLE = "machine_available"
MACHINE_UNAVAILABLE = "machine_unavailable"
NO_MORE_EVENTS = "no_more_external_event_to_occur"
#: Batsim's EventType order, which breaks timestamp ties (generic events last).
_RANK = {MACHINE_AVAILABLE: 0, MACHINE_UNAVAILABLE: 1}
_GENERIC = 2

T = TypeVar("T")


@dataclass(frozen=True)
class ExternalEvent:
    """One line of an event file.

    Attributes:
        timestamp_s: when it occurs.
        type: its ``type`` field.
        resources: the machines of a machine event, sorted, each once (empty for a generic one).
        data: a generic event's object as read (forwarded as the NOTIFY's data).
        where: ``FILE:LINE``, for errors.
    """

    timestamp_s: float
    type: str
    resources: tuple[int, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    where: str = ""

    @property
    def rank(self) -> int:
        """Its place among events of one timestamp (Batsim's EventType order)."""
        return _RANK.get(self.type, _GENERIC)

    def notify(self, ts: float) -> p.Event:
        """The NOTIFY Batsim sends for it at ``ts``."""
        if self.rank == _GENERIC:
            return p.Event(ts, "NOTIFY", self.data)
        return p.Event(ts, "NOTIFY", {"type": f"event_{self.type}",
                                      "resources": p.format_resources(self.resources)})


# ---------------------------------------------------------------------------------- reading
def read_event_files(paths: Sequence[str | Path], forward_unknown: bool,
                     nb_hosts: int) -> list[list[ExternalEvent]]:
    """Each file's events, in the order Batsim's submitter sends them.

    Raises:
        ConfigError: a file that cannot be read, or a line Batsim would refuse (naming the file,
            the line, the key and the value).
    """
    return [batsim_sort(read_event_file(path, forward_unknown, nb_hosts), _less)
            for path in paths]


def read_event_file(path: str | Path, forward_unknown: bool, nb_hosts: int) -> list[ExternalEvent]:
    """The events of one file, in file order (see :func:`read_event_files`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--events {path}: cannot read it ({exc.strerror or exc}); give a "
                          "readable file of JSON events, one per line") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--events {path}: not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start})") from None
    events = []
    for number, line in enumerate(text.split("\n"), 1):
        if line:  # Batsim skips empty lines only: a line of blanks is an error
            events.append(_event(line, f"--events {path}:{number}", forward_unknown, nb_hosts))
    return events


def _event(line: str, where: str, forward_unknown: bool, nb_hosts: int) -> ExternalEvent:
    doc = _json_object(line, where)
    kind = doc.get("type")
    if "type" not in doc or not isinstance(kind, str):
        raise ConfigError(f"{where}: 'type' must be a string, got "
                          f"{_shown(doc, 'type')}; e.g. \"type\": \"machine_unavailable\"")
    ts = doc.get("timestamp")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)):
        raise ConfigError(f"{where}: 'timestamp' must be a number of seconds, got "
                          f"{_shown(doc, 'timestamp')}")
    if not ts >= 0:
        raise ConfigError(f"{where}: 'timestamp' must be >= 0, got {ts!r} (Batsim refuses a "
                          "negative timestamp)")
    if kind not in _RANK:
        if not forward_unknown:
            raise ConfigError(f"{where}: unknown event type {kind!r}; Batsim knows "
                              f"{MACHINE_UNAVAILABLE} and {MACHINE_AVAILABLE}, and forwards "
                              "other types with --forward-unknown-events")
        return ExternalEvent(float(ts), kind, data=doc, where=where)
    text = doc.get("resources")
    if not isinstance(text, str):
        raise ConfigError(f"{where}: 'resources' must be an interval set string like \"0-3 7\", "
                          f"got {_shown(doc, 'resources')}")
    ids = parse_machines(text, f"{where}: 'resources'")
    if ids[-1] >= nb_hosts:
        raise ConfigError(f"{where}: 'resources' {text!r} names machine {ids[-1]}, past the last "
                          f"one ({nb_hosts - 1}); the machines are 0-{nb_hosts - 1}")
    return ExternalEvent(float(ts), kind, tuple(ids), where=where)


def _json_object(line: str, where: str) -> dict[str, Any]:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise ConfigError(f"{where}: key {key!r} is given twice; give it once")
            seen[key] = value
        return seen

    def constant(name: str) -> None:
        raise ConfigError(f"{where}: {name} is not JSON; write a number")
    try:
        doc = json.loads(line, object_pairs_hook=pairs, parse_constant=constant,
                         parse_int=_rapidjson_int)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not a JSON object ({exc.msg} at column {exc.colno}): "
                          f"{line[:80]!r}; write one event object per line") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: an event is a JSON object, got {line[:80]!r}")
    return doc


def _rapidjson_int(text: str) -> int | float:
    """An integer as rapidjson reads it: a 64-bit one stays an integer, a larger one becomes a
    double (and is forwarded as one, ``1e20`` as ``100000000000000000000.000000``)."""
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 64) else float(value)


def _shown(doc: dict[str, Any], key: str) -> str:
    return repr(doc[key]) if key in doc else "nothing (the key is missing)"


def parse_machines(text: str, where: str) -> list[int]:
    """The machine ids of an interval set as Batsim reads it: parts ``N`` or ``A-B`` (A <= B)
    between spaces (several spaces are one), merged: ``"2 0-1 1"`` gives ``[0, 1, 2]``.

    Raises:
        ConfigError: an empty set, a part that is not digits, or a range that goes down.
    """
    ids: set[int] = set()
    for part in text.split(" "):
        if not part:
            continue
        bounds = part.split("-")
        if len(bounds) > 2 or not all(b.isdigit() and b.isascii() for b in bounds):
            raise ConfigError(f"{where}: bad part {part!r} in {text!r}; write machine ids as 'N' "
                              "or 'A-B' separated by spaces, e.g. \"0-3 7\"")
        lo, hi = int(bounds[0]), int(bounds[-1])
        if lo > hi:
            raise ConfigError(f"{where}: range {part!r} goes down; write it {hi}-{lo}")
        ids.update(range(lo, hi + 1))
    if not ids:
        raise ConfigError(f"{where}: {text!r} names no machine (Batsim aborts on it); give at "
                          "least one id")
    return sorted(ids)


# ---------------------------------------------------------------------------------- sorting
def _less(a: ExternalEvent, b: ExternalEvent) -> bool:
    """Batsim's event_comparator_timestamp_number."""
    if a.timestamp_s == b.timestamp_s:
        return a.rank < b.rank
    return a.timestamp_s < b.timestamp_s


_THRESHOLD = 16  # libstdc++'s _S_threshold


def batsim_sort(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    """``items`` in the order libstdc++'s ``std::sort`` leaves them with the comparison ``less``
    (GCC's introsort: median-of-three quicksort down to runs of 16, heapsort past 2 log2 n
    levels, then insertion sort). Elements that compare equal keep their order only in lists of
    at most 16; that is the order the binary sends the events of one timestamp in."""
    out = list(items)
    n = len(out)
    if n > 1:
        _introsort(out, 0, n, 2 * (n.bit_length() - 1), less)
        _final_insertion_sort(out, 0, n, less)
    return out


def _introsort(a: list[T], first: int, last: int, depth: int, less: Callable) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _median_to_first(a, first, first + 1, mid, last - 1, less)
        cut = _partition(a, first + 1, last, first, less)
        _introsort(a, cut, last, depth, less)
        last = cut


def _median_to_first(a: list[T], result: int, i: int, j: int, k: int, less: Callable) -> None:
    if less(a[i], a[j]):
        pick = j if less(a[j], a[k]) else k if less(a[i], a[k]) else i
    else:
        pick = i if less(a[i], a[k]) else k if less(a[j], a[k]) else j
    a[result], a[pick] = a[pick], a[result]


def _partition(a: list[T], first: int, last: int, pivot: int, less: Callable) -> int:
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _final_insertion_sort(a: list[T], first: int, last: int, less: Callable) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a: list[T], first: int, last: int, less: Callable) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            value = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            _linear_insert(a, i, less)


def _linear_insert(a: list[T], i: int, less: Callable) -> None:
    value = a[i]
    while less(value, a[i - 1]):
        a[i] = a[i - 1]
        i -= 1
    a[i] = value


def _heap_sort(a: list[T], first: int, last: int, less: Callable) -> None:
    """std::partial_sort(first, last, last): make_heap, then pop_heap down to one."""
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, n, a[first + parent], less)
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)


def _adjust_heap(a: list[T], base: int, hole: int, length: int, value: T, less: Callable) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[base + child], a[base + child - 1]):
            child -= 1
        a[base + hole] = a[base + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[base + hole] = a[base + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[base + parent], value):
        a[base + hole] = a[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[base + hole] = value


# ---------------------------------------------------------------------------------- running
@dataclass
class EventSubmitter:
    """One event file's submitter: its sorted events, the next one to send, and the wake
    number of its current sleep (as :class:`hdrm.batsim.event_order.Submitter`)."""

    events: list[ExternalEvent]
    wake: int
    next: int = 0

    @property
    def next_s(self) -> float:
        """When its next batch is due (inf once all are sent)."""
        return self.events[self.next].timestamp_s if self.next < len(self.events) else math.inf

    @property
    def last_s(self) -> float:
        """When its last batch is due (0 for an empty file: it says goodbye at once)."""
        return self.events[-1].timestamp_s if self.events else 0.0

    def take_batch(self) -> list[ExternalEvent]:
        """The events of its next batch (one timestamp), taken."""
        start, batch_s = self.next, self.next_s
        while self.next < len(self.events) and self.events[self.next].timestamp_s == batch_s:
            self.next += 1
        return self.events[start:self.next]


class Availability:
    """Which machines are unavailable, as Batsim 4.2.1 keeps one state per machine.

    A machine made unavailable stays so until it is made available, unless a power-state switch
    to or from a sleep state overwrites its state: Batsim sets the switch's state
    (``switching_off``, ``switching_on``) when the switch begins and ``sleeping`` or ``idle``
    when it ends, whether or not the machine was unavailable (checked with the binary: a machine
    made unavailable, sent to sleep and then made available stops the session, its state
    ``sleeping``; a job may then run on it once it is switched on again). A switch between
    computation states leaves the state as it is.

    Args:
        names: the compute hosts' names, by resource id (for the binary's messages).
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        #: machines made unavailable and not made available since (a switch may have
        #: overwritten their state: :meth:`is_down`)
        self.down: set[int] = set()
        self._since: dict[int, tuple[float, int]] = {}  # host -> (time, order) it went down
        self._switches: dict[int, list[tuple[int, float]]] = {}  # host -> (order, end time)
        self._up: dict[int, tuple[float, int]] = {}  # host -> (time, order) it was made available
        self._order = 0

    def switched(self, hosts: Sequence[int], end_s: float) -> None:
        """A switch of ``hosts`` to or from a sleep state begins now and ends at ``end_s``."""
        self._order += 1
        for h in hosts:
            self._switches.setdefault(h, []).append((self._order, end_s))

    def is_down(self, host: int, t: float) -> bool:
        """Whether Batsim's state of ``host`` is ``unavailable`` at ``t`` (times only grow):
        made unavailable, and no switch begun since nor ended between then and ``t`` (a switch
        ending at the very instant it went down counts as ended before)."""
        if host not in self.down:
            return False
        since_s, since = self._since[host]
        if any(order > since or since_s < end_s <= t
               for order, end_s in self._switches.get(host, ())):
            self.down.discard(host)
            return False
        return True

    def made_idle(self, host: int, t: float) -> bool:
        """Whether Batsim's state of ``host`` at ``t`` is the ``idle`` that a
        ``machine_available`` wrote, whatever its power state: no switch begun since nor ended
        between then and ``t`` (a switch ending at that very instant counts as ended before).
        Checked with the binary: a machine made available while asleep or during a switch is
        ``idle`` (until the switch ends), so an EXECUTE_JOB on it fails on its power state."""
        up = self._up.get(host)
        if up is None:
            return False
        up_s, up_order = up
        return not any(order > up_order or up_s < end_s <= t
                       for order, end_s in self._switches.get(host, ()))

    def apply(self, event: ExternalEvent, t: float, state_of: Callable[[int], str]) -> None:
        """Make the event's machines unavailable or available at ``t`` (``state_of(host)``:
        Batsim's name of its state when it is not unavailable, for the binary's wording:
        ``computing``, ``idle``, ``sleeping``, ``switching_on`` or ``switching_off``).

        Raises:
            SimulationError: a machine made unavailable twice, or available while it is not
                unavailable (its state overwritten by a switch included).
        """
        self._order += 1
        if event.type == MACHINE_UNAVAILABLE:
            for h in event.resources:
                if self.is_down(h, t):
                    raise SimulationError(
                        f"{event.where}: at t={t:.6f} the making of machine {h} "
                        f"('{self.names[h]}') unavailable was requested but this machine was "
                        "already in UNAVAILABLE state (the binary aborts)")
                self.down.add(h)
                self._since[h] = (t, self._order)
        elif event.type == MACHINE_AVAILABLE:
            for h in event.resources:
                if not self.is_down(h, t):
                    state = state_of(h)
                    if state != "computing" and self.made_idle(h, t):
                        state = "idle"
                    raise SimulationError(
                        f"{event.where}: at t={t:.6f} the making of machine {h} "
                        f"('{self.names[h]}') available was requested but this machine was not "
                        f"in UNAVAILABLE state (current state: {state}; the binary aborts)")
                self.down.discard(h)
                self._up[h] = (t, self._order)

    def check(self, alloc: str, hosts: Sequence[int], where: str, t: float) -> None:
        """Refuse an allocation at ``t`` on an unavailable machine, as Batsim 4.2.1 aborts on it.

        Raises:
            ProtocolError: naming the allocation and its first unavailable machine.
        """
        for h in hosts:
            if self.is_down(h, t):
                raise ProtocolError(
                    f"{where}: invalid job allocation ('{alloc}'): machine {h} "
                    f"(hostname='{self.names[h]}') cannot compute jobs now (the machine is not "
                    "computing nor idle, its state is 'unavailable'); the binary aborts here: "
                    "allocate machines that are not unavailable")
