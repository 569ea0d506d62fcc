"""Which walltime ties of one instant Batsim 4.2.1 kills: SimGrid's steps within the instant.

A parallel job whose work ends exactly at its walltime (a *tie*) is waited for with the walltime
as timeout, a SimGrid sleep that ends at the first step of SimGrid's clock leaving it less than
:data:`~hdrm.sim.running.TIMING_PRECISION` (1 ns) to go; its work ends only on time. So the tie
is killed (``COMPLETED_WALLTIME_REACHED``) exactly when SimGrid makes a step less than 1 ns
before its end, and succeeds otherwise. What falls on one instant of the built-in engine is
spread over a few nanoseconds in the binary (Batsim 4.2.1 and SimGrid 3.32 sources, checked with
the binary):

* each decision Batsim forwards is a one-byte message on the master host's loopback
  (:data:`~hdrm.sim.running.MESSAGE_S`, 0.1 ns), taken one at a time, so the k-th job of a
  decision starts k x 0.1 ns after it, and ends k x 0.1 ns after the instant it is due at: its
  *rank* k (:attr:`~hdrm.sim.running.RunningJob.rank`; 10 ranks are 1 ns);
* a step is made at the rank of the first thing due; at that step every sleep due less than
  10 ranks later ends early (a ``delay`` job, the timer of a job killed at its walltime, a tie's
  timer: the tie is then killed), and a computation due at that rank ends;
* every step at which a job ended makes the server call the decision process, whose answer
  (SCHED_READY) is one more loopback message: a step one rank later, which ends what has come
  within reach, and so on: a run of ``delay`` jobs of consecutive ranks carries the steps along;
* a submission or a requested call due at the instant aims at it exactly: steps at ranks 0, 1
  and 2 (the submitter's or waiter's wake-up, its message, the answer to it).

Jobs of one rank (started at different instants) end in the order they started. Ranks are
Batsim's offsets for the jobs of one decision, up to its messages that start no job; a step
exactly 10 ranks ahead is left to SimGrid's rounding there (not killed here); the answers'
messages are one per step (Batsim's also forward the decisions, and a workload's last
submission adds a goodbye), and decisions of different instants start a rank or two apart in
Batsim where here they share ranks: so across decisions and for submissions the rule is close,
not exact. Against the binary on random instants (one or two decisions of 2 to 40 delay jobs,
ties and others on one-core hosts, with or without a submission): 95 to 98 % of the scenarios
decided alike, where the former rule (any job started earlier, or any submission, kills) gave
85 to 88 %.
"""

from __future__ import annotations

import heapq
from typing import Sequence

from hdrm.sim.running import MESSAGE_S, TIMING_PRECISION, RunningJob

#: How many ranks (messages) a sleep may be ahead of a step that ends it.
WINDOW = round(TIMING_PRECISION / MESSAGE_S)
#: The steps a submission or requested call due at the instant makes (ranks).
NOTED_RANKS = (0, 1, 2)
_SLEEP, _EXEC, _TIE = range(3)


def is_tie(job: RunningJob, end_s: float) -> bool:
    """True when ``job``, due to end at ``end_s`` with its work done, has its walltime's timer
    due less than :data:`~hdrm.sim.running.TIMING_PRECISION` after that (a tie)."""
    return (job.parallel and not job.walltime_hit
            and job.updated_s + job.wall_left_s - end_s < TIMING_PRECISION)


def tie_losers(jobs: Sequence[RunningJob], end_s: float, noted: bool) -> set[int]:
    """The keys of the ties among ``jobs`` (every job due at ``end_s``) that a step before their
    own end kills, ``noted`` when a submission or call is due at ``end_s`` too."""
    items = sorted(jobs, key=lambda j: (j.rank, j.order))
    kinds, lead = [], []  # per item: its kind; a tie's timer, in ranks after its end
    for job in items:
        if is_tie(job, end_s):
            kinds.append(_TIE)
            lead.append((job.updated_s + job.wall_left_s - end_s) / MESSAGE_S)
        else:
            kinds.append(_SLEEP if job.walltime_hit or not job.parallel else _EXEC)
            lead.append(0.0)
    steps = [(r, -1) for r in NOTED_RANKS] if noted else []
    done = [False] * len(items)
    losers: set[int] = set()
    lo = 0
    while lo < len(items):
        own = (items[lo].rank, items[lo].order)
        step = heapq.heappop(steps) if steps and steps[0] < own else own
        ended = False
        for i in range(lo, len(items)):
            job = items[i]
            if job.rank > step[0] + WINDOW:
                break
            if done[i]:
                continue
            place = (job.rank, job.order)
            if kinds[i] == _SLEEP:
                hit = job.rank < step[0] + WINDOW
            elif kinds[i] == _EXEC:
                hit = place <= step
            elif place == step:
                hit = True
            else:
                hit = step < place and job.rank + lead[i] - step[0] < WINDOW
                if hit:
                    losers.add(job.key)
            if hit:
                done[i] = ended = True
        while lo < len(items) and done[lo]:
            lo += 1
        if ended and (step[0] + 1, -1) not in steps:
            heapq.heappush(steps, (step[0] + 1, -1))
    return losers
