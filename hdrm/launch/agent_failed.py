"""An exception of the user's agent code, carried to the launcher's one line.

:class:`AgentFailed` is raised wherever hdrm calls the agent (the episode loop of
:mod:`hdrm.launch.loop`, a rollout worker's collector of :mod:`hdrm.distributed.ppo_rollout`,
an Ape-X actor) when the call raises something other than hdrm's own one-line errors. It keeps
what the message needs as plain values, taken from the exception's trace where it was raised
(the frames, the formatted trace, the exception's type and text), so that it crosses a process
boundary whole: a Ray worker's exception comes back with the user's frame, not Ray's. Its
one-line description is :func:`describe`.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Callable, NamedTuple

from hdrm.errors import HdrmError


class Frame(NamedTuple):
    """One line of a trace: file, line number and function."""

    filename: str
    lineno: int
    name: str


class AgentFailed(Exception):
    """The agent's own code raised (an exception other than hdrm's one-line errors) in
    ``start_episode``, ``decide``, ``rewarded``, ``end_episode`` (or their batched forms in
    rollout workers): a bug of the agent.py.

    Attributes:
        partial: the decisions of the episode before the failure (an
            :class:`~hdrm.launch.loop.EpisodeActions`).
        method: the Agent method hdrm called.
        error: what it raised (also the ``__cause__``, with its trace); None once the exception
            has crossed a process boundary (its type, text and trace are kept below).
        error_type: the exception's class name.
        message: the exception's text.
        frames: the exception's trace, outermost first.
        trace: the exception's full trace, formatted as Python prints it.
        end: the episode under way when it raised (an
            :class:`~hdrm.distributed.learners.EpisodeEnd`, its result so far), given by a rollout
            worker; None in the launcher's own loop.
        ended: the episodes that a rollout worker saw end in the rollout it was playing (not
            yet reported: :class:`~hdrm.distributed.learners.EndedEpisode`), in order.
    """

    def __init__(self, partial: Any, method: str, error: BaseException | None,
                 end: Any = None, ended: list[Any] | None = None) -> None:
        self.partial, self.method, self.error, self.end = partial, method, error, end
        self.ended = list(ended or [])
        if error is not None:
            self.error_type, self.message = type(error).__name__, str(error)
            self.frames = [Frame(f.filename, f.lineno or 0, f.name)
                           for f in traceback.extract_tb(error.__traceback__)]
            self.trace = "".join(traceback.format_exception(error))
        super().__init__(f"{method}: {self.error_type}: {self.message}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its plain values (the exception object and its trace stay behind)."""
        return (_carried, (self.partial, self.method, self.error_type, self.message,
                           [tuple(f) for f in self.frames], self.trace, self.end, self.ended))


def _carried(partial: Any, method: str, error_type: str, message: str, frames: list[tuple],
             trace: str, end: Any, ended: list[Any]) -> AgentFailed:
    """An :class:`AgentFailed` rebuilt from :meth:`AgentFailed.__reduce__`'s values."""
    failed = AgentFailed.__new__(AgentFailed)
    failed.error_type, failed.message = error_type, message
    failed.frames, failed.trace = [Frame(*f) for f in frames], trace
    AgentFailed.__init__(failed, partial, method, None, end, ended)
    return failed


def agent_call(agent: Any, method: str, partial: Callable[[], Any], *args: Any,
               end: Callable[[], tuple[Any, list[Any]]] | None = None) -> Any:
    """``agent.method(*args)``; an exception of the agent's code becomes :class:`AgentFailed`
    (``partial()``: the episode's decisions so far; ``end()``: its result so far and the
    episodes ended before it, unreported: a rollout worker's).
    hdrm's own errors (:class:`~hdrm.errors.HdrmError`) pass unchanged."""
    try:
        return getattr(agent, method)(*args)
    except HdrmError:
        raise
    except Exception as exc:
        result, ended = end() if end is not None else (None, [])
        raise AgentFailed(partial(), method, exc, result, ended) from exc


def describe(exc: AgentFailed, agent_path: str | Path) -> str:
    """``"agent.py:42 in decide: ZeroDivisionError: division by zero"``: where the agent's code
    raised (the deepest line of the trace in ``agent_path``, named as the user gave it; else the
    deepest line of the trace: a module the agent called) and what."""
    target = Path(agent_path).resolve()
    mine = [f for f in exc.frames if Path(f.filename).resolve() == target]
    frames = mine or exc.frames
    if frames:
        last = frames[-1]
        where = f"{agent_path if mine else last.filename}:{last.lineno} in {last.name}"
    else:
        where = f"{agent_path} in {exc.method}"
    text = " ".join(exc.message.split())
    return f"{where}: {exc.error_type}" + (f": {text}" if text else "")


__all__ = ["AgentFailed", "Frame", "agent_call", "describe"]
