"""Batsim 4.x's JSON-over-ZeroMQ protocol: messages, events, validation and Batsim's number format.

Every message, both ways, is ``{"now": t, "events": [{"timestamp": t, "type": T, "data": {...}},
...]}``. This module turns the text into :class:`Message` / :class:`Event` objects and back, and
checks each event's fields against the schema of its type (:data:`BATSIM_EVENTS` for what Batsim
sends, :data:`SCHEDULER_EVENTS` for what a decision process sends). Every defect raises
:class:`~hdrm.errors.ProtocolError` naming the event type, its position and the bad field.

Numbers are written as Batsim 4.2.1 writes them: integers as integers, every other number with six
decimals (``"now":0.000045``, ``"cpu":100000000000.000000``), no spaces. Resource sets are interval
sets in procset's text form (``"0-3 7"``; ``str(ProcSet(...))``).

The builders of each event type are in :mod:`hdrm.batsim.events`.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii as _quote
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from procset import ProcSet

from hdrm.errors import ProtocolError
from hdrm.results.records import format_interval_set
from hdrm.registry import suggest

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

    Written with :func:`hdrm.results.records.format_interval_set`, which is several times faster
    than building a ProcSet id by id for large allocations.
    """
    return format_interval_set(resource_ids)


# --------------------------------------------------------------------------- schemas

Check = Callable[[Any], bool]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, str) for x in v)


_INTERVALS = re.compile(r"\d+(?:-\d+)?(?: \d+(?:-\d+)?)*")


def _is_interval(v: Any) -> bool:
    """An interval-set text (``"0-3 7"``) with every range in order (a regex: ProcSet.from_str
    cost the Batsim adapter a fifth of its time)."""
    if not isinstance(v, str) or not _INTERVALS.fullmatch(v):
        return False
    return all(int(lo) <= int(hi) for lo, _, hi in (p.partition("-") for p in v.split(" ")) if hi)


def _is_pstate(v: Any) -> bool:
    return isinstance(v, str) and v.isdigit()


#: Field kinds: (check, what the field must be).
KINDS: dict[str, tuple[Check, str]] = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "int": (_is_int, "an integer"),
    "number": (_is_number, "a finite number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "object": (lambda v: isinstance(v, dict), "an object"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "str_list": (_is_str_list, "a non-empty list of job id strings"),
    "interval": (_is_interval, "an interval set string like '0-3 7'"),
    "pstate": (_is_pstate, "a power-state id as a string, like '1'"),
    "job_state": (lambda v: v in JOB_STATES, "one of " + ", ".join(JOB_STATES)),
}


@dataclass(frozen=True)
class Schema:
    """Fields of one event type: required and optional, each with its kind (a key of KINDS)."""

    required: Mapping[str, str] = field(default_factory=dict)
    optional: Mapping[str, str] = field(default_factory=dict)


#: What Batsim sends to a decision process.
BATSIM_EVENTS: dict[str, Schema] = {
    "SIMULATION_BEGINS": Schema({
        "nb_resources": "int", "nb_compute_resources": "int", "nb_storage_resources": "int",
        "allow_compute_sharing": "bool", "allow_storage_sharing": "bool", "config": "object",
        "compute_resources": "list", "storage_resources": "list", "workloads": "object",
        "profiles": "object",
    }),
    "JOB_SUBMITTED": Schema({"job_id": "str", "job": "object"}, {"profile": "object"}),
    "JOB_COMPLETED": Schema(
        {"job_id": "str", "job_state": "job_state", "return_code": "int", "alloc": "interval"}),
    "JOB_KILLED": Schema({"job_ids": "str_list", "job_progress": "object"}),
    "REQUESTED_CALL": Schema(),
    "RESOURCE_STATE_CHANGED": Schema({"resources": "interval", "state": "pstate"}),
    "NOTIFY": Schema({"type": "str"}, {"resources": "interval"}),
    "ANSWER": Schema(optional={"consumed_energy": "number"}),
    "QUERY": Schema({"requests": "object"}),
    "SIMULATION_ENDS": Schema(),
}

#: What a decision process sends to Batsim.
SCHEDULER_EVENTS: dict[str, Schema] = {
    "EXECUTE_JOB": Schema({"job_id": "str", "alloc": "interval"},
                          {"mapping": "object", "storage_mapping": "object",
                           "additional_io_job": "object"}),
    "REJECT_JOB": Schema({"job_id": "str"}),
    "CALL_ME_LATER": Schema({"timestamp": "number"}),
    "KILL_JOB": Schema({"job_ids": "str_list"}),
    "SET_RESOURCE_STATE": Schema({"resources": "interval", "state": "pstate"}),
    "SET_JOB_METADATA": Schema({"job_id": "str", "metadata": "str"}),
    "CHANGE_JOB_STATE": Schema({"job_id": "str", "job_state": "str"}, {"kill_reason": "str"}),
    "REGISTER_JOB": Schema({"job_id": "str", "job": "object"}),
    "REGISTER_PROFILE": Schema({"workload_name": "str", "profile_name": "str", "profile": "object"}),
    "QUERY": Schema({"requests": "object"}),
    "NOTIFY": Schema({"type": "str"}),
    "TO_JOB_MSG": Schema({"job_id": "str", "msg": "str"}),
}

SENDERS = {"batsim": ("Batsim", BATSIM_EVENTS), "scheduler": ("the scheduler", SCHEDULER_EVENTS)}


def check_event(event: Event, sender: str, index: int = 0) -> None:
    """Check the fields of one event against its type's schema.

    Args:
        event: the event.
        sender: ``"batsim"`` or ``"scheduler"``.
        index: the event's position in its message, for the error message.

    Raises:
        ProtocolError: unknown type (with suggestions), or a missing or mistyped field.
    """
    who, schemas = SENDERS[sender]
    where = f"event {index} ({event.type})"
    schema = schemas.get(event.type)
    if schema is None:
        raise ProtocolError(
            f"{who} sent event {index} of unknown type {event.type!r}; "
            f"{suggest(event.type, list(schemas))}known types: {', '.join(schemas)}"
        )
    data = event.data
    for name, kind in schema.required.items():
        if name not in data:
            raise ProtocolError(f"{where}: missing field {name!r} ({KINDS[kind][1]})")
        _check_field(where, name, data[name], kind)
    for name, kind in schema.optional.items():
        if name in data:
            _check_field(where, name, data[name], kind)


def _check_field(where: str, name: str, value: Any, kind: str) -> None:
    check, text = KINDS[kind]
    if not check(value):
        raise ProtocolError(f"{where}: field {name!r} must be {text}, got {value!r}")


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
