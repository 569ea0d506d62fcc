"""What the Batsim adapter's ``decide`` hook may answer, and the signal that stops the adapter.

:class:`~hdrm.batsim.adapter.HdrmScheduler` calls its hook at every decision point with a
non-empty queue; the hook returns an :data:`Action`: a policy pair to run for this decision, a
queued job (or a :class:`Pick` of one) to start, or None to do nothing. :class:`DecisionStopped`
is raised inside the adapter when whoever drives it (the simulator's supervisor, a cancelled run)
asks it to stop waiting for Batsim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from hdrm.errors import HdrmError
from hdrm.policies.core_selection import CorePolicy
from hdrm.policies.pairs import PolicyPair
from hdrm.workload.job import Job


@dataclass(frozen=True)
class Pick:
    """A ``job_pick`` action: start ``job`` now if it fits, else (``hold``) keep it first in line.

    Attributes:
        job: the queued job to start.
        core: the placement; None uses the adapter's policy pair's core selection.
        hold: when the job does not fit, commit to it and backfill around it.
    """

    job: Job
    core: CorePolicy | None = None
    hold: bool = False


#: What a decide hook returns: a policy pair, a job (or Pick) to start, or None to do nothing.
Action = Union[PolicyPair, Job, Pick, None]
#: The agent hook: called with the current time at every decision point with a non-empty queue.
DecideHook = Callable[[float], Action]


class DecisionStopped(HdrmError):
    """The decision process was asked to stop (the simulator died or the run was cancelled)."""
