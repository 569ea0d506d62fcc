"""Batsim 4.x's JSON-over-ZeroMQ protocol: messages, events, validation and Batsim's number format.

Every message, both ways, is ``{"now": t, "events": [{"timestamp": t, "type": T, "data": {...}},
...]}``. This module turns the text into :class:`Message` / :class:`Event` objects and back, and
checks each event's ``data`` with :mod:`hdrm.typedjson` against the dataclass of its type, a tagged
union on ``type`` (:data:`BATSIM_EVENTS` for what Batsim sends, :data:`SCHEDULER_EVENTS` for what a
decision process sends); keys a type does not name are allowed, and the data stays the dict as
sent. Every defect raises :class:`~hdrm.errors.ProtocolError` naming the sender, the event's
position, type and time, its job, the bad key and value, and what is expected.

Numbers are written as Batsim 4.2.1 writes them: integers as integers, every other number with six
decimals (``"now":0.000045``, ``"cpu":100000000000.000000``), no spaces. Resource sets are interval
sets in procset's text form (``"0-3 7"``; ``str(ProcSet(...))``).

The builders of each event type are in :mod:`hdrm.batsim.events`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from json.encoder import encode_basestring as _quote_utf8
from typing import Any, Iterable, Literal, Mapping, NamedTuple

from procset import ProcSet

from hdrm.errors import ProtocolError
from hdrm.results.core_sets import format_interval_set
from hdrm.typedjson import Context, convert_tagged, show

#: Final job states of JOB_COMPLETED.
JOB_STATES = (
    "COMPLETED_SUCCESSFULLY",
    "COMPLETED_FAILED",
    "COMPLETED_WALLTIME_REACHED",
    "COMPLETED_KILLED",
)
#: Batsim's default socket endpoint (``-s``); decision processes bind it (``tcp://127.0.0.1:28000``).
DEFAULT_ENDPOINT = "tcp://localhost:28000"
#: NOTIFY types Batsim sends.
NO_MORE_STATIC_JOBS = "no_more_static_job_to_submit"

# --------------------------------------------------------------------------- messages


@dataclass(slots=True)
class Event:
    """One event of a message.

    Attributes:
        timestamp: simulated time of the event, in seconds.
        type: the event type (``"EXECUTE_JOB"``).
        data: the event's payload (field name -> JSON value).
    """

    timestamp: float
    type: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The event as a JSON object, keys in Batsim's order."""
        return {"timestamp": self.timestamp, "type": self.type, "data": self.data}


@dataclass(slots=True)
class Message:
    """One protocol message: the sender's current time and its events."""

    now: float
    events: list[Event] = field(default_factory=list)

    @property
    def types(self) -> list[str]:
        """The types of the events, in order."""
        return [e.type for e in self.events]

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {"now": self.now, "events": [e.to_json() for e in self.events]}


# --------------------------------------------------------------------------- number format


def _quote(text: str) -> str:
    """A JSON string as Batsim's rapidjson writes it: UTF-8 as it is (``"é"``, not ``"\\u00e9"``),
    ``"`` and ``\\`` escaped, the control characters as ``\\b \\f \\n \\r \\t`` or ``\\u001F``
    (upper-case hex; checked on the binary with a forwarded event)."""
    quoted = _quote_utf8(text)
    if "\\u00" not in quoted:  # (the common case: one C call)
        return quoted
    return '"' + "".join(f"\\u{ord(c):04X}" if c < " " and c not in "\b\f\n\r\t"
                         else _quote_utf8(c)[1:-1] for c in text) + '"'


def batsim_dumps(value: Any) -> str:
    """JSON text of ``value`` as Batsim writes it: floats with 6 decimals, ints as ints, no spaces.

    Raises:
        ProtocolError: a value JSON cannot hold (NaN, infinity, an unknown type).
    """
    kind = type(value)  # the common exact types first: this runs for every value of every message
    if kind is str:
        return _quote(value)
    if kind is float and math.isfinite(value):
        return f"{value:.6f}"
    if kind is int:
        return str(value)
    if kind is dict:
        return "{" + ",".join([_quote(str(k)) + ":" + batsim_dumps(v) for k, v in value.items()]) + "}"
    if kind is list:
        return "[" + ",".join([batsim_dumps(v) for v in value]) + "]"
    return _dumps_other(value)


def _dumps_other(value: Any) -> str:
    """:func:`batsim_dumps` of booleans, None, subclasses and other containers."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ProtocolError(f"cannot send the number {value!r}: JSON has no NaN or infinity")
        return f"{value:.6f}"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_quote(str(k))}:{batsim_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(batsim_dumps(v) for v in value) + "]"
    raise ProtocolError(f"cannot send a value of type {type(value).__name__}: {value!r}")


def encode_message(message: Message) -> str:
    """The text of ``message`` in Batsim's format (see :func:`batsim_dumps`)."""
    events = ",".join([
        f'{{"timestamp":{batsim_dumps(e.timestamp)},"type":{_quote(e.type)},"data":{batsim_dumps(e.data)}}}'
        for e in message.events
    ])
    return f'{{"now":{batsim_dumps(message.now)},"events":[{events}]}}'


# --------------------------------------------------------------------------- interval sets


def parse_resources(text: Any, where: str) -> ProcSet:
    """Read an interval set (``"0-3 7"``) into a ProcSet.

    Raises:
        ProtocolError: ``text`` is not a string of ``N`` / ``LO-HI`` parts (``where`` names the event
            and field).
    """
    if not isinstance(text, str):
        raise ProtocolError(f"{where}: expected an interval set string like '0-3 7', got {text!r}")
    try:
        return ProcSet.from_str(text)
    except ValueError:
        raise ProtocolError(
            f"{where}: bad interval set {text!r}; write resource ids as 'N' or 'LO-HI' parts "
            "separated by one space, e.g. '0-3 7'"
        ) from None


def parse_resource_ids(text: Any, where: str) -> list[int]:
    """The resource ids of an interval set (``"0-3 7"`` gives ``[0, 1, 2, 3, 7]``), sorted, each once:
    what ``list(parse_resources(text, where))`` gives, without building a ProcSet.

    Raises:
        ProtocolError: as :func:`parse_resources`.
    """
    if not _is_interval(text):
        parse_resources(text, where)  # raises the error that names the defect
    ids: list[int] = []
    ordered, last = True, -1
    for part in text.split(" "):
        lo, _, hi = part.partition("-")
        first = int(lo)
        end = int(hi) if hi else first
        ordered = ordered and first > last
        ids.extend(range(first, end + 1))
        last = end
    return ids if ordered else sorted(set(ids))


def format_resources(resource_ids: Iterable[int]) -> str:
    """The interval-set text of resource ids, exactly ``str(ProcSet(*ids))`` (``"0-3 7"``).

    Written with :func:`hdrm.results.core_sets.format_interval_set`, which is several times faster
    than building a ProcSet id by id for large allocations.
    """
    return format_interval_set(resource_ids)


# --------------------------------------------------------------------------- event schemas


_INTERVALS = re.compile(r"\d+(?:-\d+)?(?: \d+(?:-\d+)?)*")


def _is_interval(v: Any) -> bool:
    """An interval-set text (``"0-3 7"``) with every range in order (a regex: ProcSet.from_str
    cost the Batsim adapter a fifth of its time)."""
    if not isinstance(v, str) or not _INTERVALS.fullmatch(v):
        return False
    return all(int(lo) <= int(hi) for lo, _, hi in (p.partition("-") for p in v.split(" ")) if hi)


def _is_number(v: Any) -> bool:
    """A finite JSON number (not a boolean)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _f(kind: Any, default: Any = dataclasses.MISSING, **meta: Any) -> tuple[Any, Any, dict]:
    """A field spec for :func:`_data`: type, default (none: required) and typedjson metadata."""
    return kind, default, meta


_INTERVAL_TEXT = ('an interval set string like "0-3 7": ids as N or LO-HI parts, LO <= HI, '
                  "one space apart")
_PSTATE_TEXT = 'a power-state id as a string of digits, like "1"'
_INTERVAL = _f(str, describe=_INTERVAL_TEXT, check=lambda v: (
    "" if _is_interval(v) else f"expected {_INTERVAL_TEXT}, got {show(v)}"))
_PSTATE = _f(str, describe=_PSTATE_TEXT, check=lambda v: (
    "" if v.isdigit() else f"expected {_PSTATE_TEXT}, got {show(v)}"))
_JOB_IDS = _f(tuple[str, ...], nonempty=True)
_OBJECT = _f(dict, None)  # an optional object


def _data(name: str, **fields: Any) -> type:
    """A dataclass for the ``data`` of one event type; each keyword is a field: a type (required)
    or a spec of :func:`_f`. Not frozen: its instances only validate, and a frozen ``__init__`` is
    slower (this runs for every event)."""
    specs = []
    for key, spec in fields.items():
        kind, default, meta = spec if isinstance(spec, tuple) else _f(spec)
        specs.append((key, kind, dataclasses.field(default=default, metadata=meta)))
    return dataclasses.make_dataclass(name, specs, slots=True)


_QUERY = _data("Query", requests=dict)
_NO_DATA = _data("NoData")

#: The ``data`` of each event type Batsim sends to a decision process (extra keys are ignored).
BATSIM_EVENTS: dict[str, type] = {
    "SIMULATION_BEGINS": _data(
        "SimulationBegins", nb_resources=int, nb_compute_resources=int, nb_storage_resources=int,
        allow_compute_sharing=bool, allow_storage_sharing=bool, config=dict,
        compute_resources=list, storage_resources=list, workloads=dict, profiles=dict),
    "JOB_SUBMITTED": _data("JobSubmitted", job_id=str, job=dict, profile=_OBJECT),
    "JOB_COMPLETED": _data("JobCompleted", job_id=str, job_state=Literal[JOB_STATES],
                           return_code=int, alloc=_INTERVAL),
    "JOB_KILLED": _data("JobKilled", job_ids=_JOB_IDS, job_progress=dict),
    "REQUESTED_CALL": _NO_DATA,
    "RESOURCE_STATE_CHANGED": _data("ResourceStateChanged", resources=_INTERVAL, state=_PSTATE),
    "NOTIFY": _data("Notify", type=str, resources=_f(str, None, **_INTERVAL[2])),
    "ANSWER": _data("Answer", consumed_energy=_f(float, None)),
    "QUERY": _QUERY,
    "SIMULATION_ENDS": _NO_DATA,
}

#: The ``data`` of each event type a decision process sends to Batsim (extra keys are ignored).
SCHEDULER_EVENTS: dict[str, type] = {
    "EXECUTE_JOB": _data("ExecuteJob", job_id=str, alloc=_INTERVAL, mapping=_OBJECT,
                         storage_mapping=_OBJECT, additional_io_job=_OBJECT),
    "REJECT_JOB": _data("RejectJob", job_id=str),
    "CALL_ME_LATER": _data("CallMeLater", timestamp=float),
    "KILL_JOB": _data("KillJob", job_ids=_JOB_IDS),
    "SET_RESOURCE_STATE": _data("SetResourceState", resources=_INTERVAL, state=_PSTATE),
    "SET_JOB_METADATA": _data("SetJobMetadata", job_id=str, metadata=str),
    "CHANGE_JOB_STATE": _data("ChangeJobState", job_id=str, job_state=str,
                              kill_reason=_f(str, None)),
    "REGISTER_JOB": _data("RegisterJob", job_id=str, job=dict),
    "REGISTER_PROFILE": _data("RegisterProfile", workload_name=str, profile_name=str, profile=dict),
    "QUERY": _QUERY,
    "NOTIFY": _data("SchedulerNotify", type=str),
    "TO_JOB_MSG": _data("ToJobMsg", job_id=str, msg=str),
}

SENDERS = {"batsim": ("Batsim", BATSIM_EVENTS), "scheduler": ("the scheduler", SCHEDULER_EVENTS)}


def check_event(event: Event, sender: str, index: int = 0) -> None:
    """Check the ``data`` of one event against the dataclass of its type (extra keys are allowed).

    Args:
        event: the event.
        sender: ``"batsim"`` or ``"scheduler"``.
        index: the event's position in its message, for the error message.

    Raises:
        ProtocolError: ``SENDER's event I (TYPE) at t=T[, job J]: data.KEY: what is wrong``,
            for an unknown type (with the closest known ones) or a missing or mistyped field.
    """
    ctx = Context(_Where(sender, index, event), error=ProtocolError, extra_keys=True)
    convert_tagged(event.data, event.type, SENDERS[sender][1], "data", ctx, "type")


class _Where(NamedTuple):
    """Names an event in error messages; made into text only when there is an error."""

    sender: str
    index: int
    event: Event

    def __str__(self) -> str:
        event, job = self.event, self.event.data.get("job_id")
        where = f"{SENDERS[self.sender][0]}'s event {self.index} ({event.type}) at t={event.timestamp!r}"
        return where + (f", job {job!r}" if isinstance(job, str) else "")


def decode_message(text: str | bytes, sender: str) -> Message:
    """Parse and check one message sent by ``sender`` (``"batsim"`` or ``"scheduler"``).

    Checks the envelope (``now`` a number, ``events`` a list of objects with a numeric
    ``timestamp``, a ``type`` and an object ``data``), that timestamps are non-decreasing and not
    after ``now``, and every event's fields (:func:`check_event`).

    Raises:
        ProtocolError: naming the defect, the event index and type, and the field.
    """
    who = SENDERS[sender][0]
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"{who} sent a message that is not JSON ({exc}): {str(text)[:200]!r}") from None
    if not isinstance(doc, dict) or "now" not in doc or "events" not in doc:
        raise ProtocolError(
            f"{who} sent a message without 'now' and 'events': {str(text)[:200]!r}; "
            'expected {"now": t, "events": [...]}'
        )
    now = doc["now"]
    if not _is_number(now):
        raise ProtocolError(f"{who} sent 'now' = {now!r}; it must be a finite number of seconds")
    if not isinstance(doc["events"], list):
        raise ProtocolError(f"{who} sent 'events' = {doc['events']!r}; it must be a list")
    events = [_decode_event(raw, i, who) for i, raw in enumerate(doc["events"])]
    last = -math.inf
    for i, event in enumerate(events):
        if event.timestamp > now:
            raise ProtocolError(
                f"event {i} ({event.type}): timestamp {event.timestamp!r} is after the message's "
                f"now {now!r}; timestamps must be <= now"
            )
        if event.timestamp < last:
            raise ProtocolError(
                f"event {i} ({event.type}): timestamp {event.timestamp!r} is before the previous "
                f"event's {last!r}; timestamps must not decrease within a message"
            )
        last = event.timestamp
        check_event(event, sender, i)
    return Message(float(now), events)


def _decode_event(raw: Any, index: int, who: str) -> Event:
    if not isinstance(raw, dict):
        raise ProtocolError(f"{who} sent event {index} = {raw!r}; each event must be an object")
    kind = raw.get("type")
    if not isinstance(kind, str):
        raise ProtocolError(f"{who} sent event {index} without a string 'type': {raw!r}")
    ts = raw.get("timestamp")
    if not _is_number(ts):
        raise ProtocolError(f"event {index} ({kind}): 'timestamp' must be a finite number, got {ts!r}")
    data = raw.get("data", {})
    if not isinstance(data, dict):
        raise ProtocolError(f"event {index} ({kind}): 'data' must be an object, got {data!r}")
    return Event(float(ts), kind, data)
