"""The built-in engine's run to the end with a fixed policy, as one loop.

:meth:`~hdrm.sim.engine.Simulation.run` is ``while next_decision(): decide(pair)``. At a few
million decisions the calls between those layers (a decision, its application, two flushes of
the mirror's power-state changes, the next end time) cost as much as the decisions themselves,
so a plain :class:`~hdrm.sim.engine.Simulation` (no subclass changing any of those steps) runs
:func:`run_decisions`: the same steps, in the same order, with the same calls into the decision
core and the machine, written out in one loop with its lookups made once. Environments, which
step the engine one decision at a time, keep the methods.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Callable

from hdrm.results.timeline import BLOCK_ROWS
from hdrm.sim.job_end import start_job

if TYPE_CHECKING:  # the engine imports this module
    from hdrm.policies.pairs import PolicyPair
    from hdrm.sim.engine import Simulation

__all__ = ["run_decisions"]

#: The steps a subclass must leave alone for :func:`run_decisions` to stand for them.
STEPS = ("next_decision", "decide", "_apply", "_flush_changes", "_record", "_submit_released")


def run_decisions(sim: "Simulation", pair: "PolicyPair",
                  progress: Callable[[int, int], None] | None) -> None:
    """Decide with ``pair`` at every decision point of ``sim`` until nothing is left:
    ``while sim.next_decision(): sim.decide(pair)`` (and ``progress`` every 4,096 decisions),
    one loop (see the module's docstring)."""
    from hdrm.sim.engine import REJECTED, Outcome  # the engine imports this module

    machine, core = sim.machine, sim.core
    arrivals, jobs, outcomes = sim._arrivals, sim._jobs, sim.outcomes
    n_arrivals, n_jobs = len(arrivals), len(jobs)
    next_time, advance, start = machine.next_time, machine.advance, machine.start
    note_event = machine.note_event
    complete, submit, schedule = core.complete, core.submit, core.schedule
    record = sim._record
    take_runs, take_pending = core.state.take_pending_runs, core.state.take_pending
    apply_runs, apply_states = machine.apply_runs, machine.apply_states
    plain_record = sim._gate is None and sim.on_outcome is None
    timeline = sim.timeline.adder() if sim.config.record_timeline else None
    settle, unsettled = sim.timeline.settle, 0
    snapshot = machine.snapshot
    state = core.state
    releases, released = sim._releases, sim._released
    clock = time.perf_counter
    inf = math.inf
    nxt = sim._next
    follows = sim._follows  # the machine makes the changes itself: none are queued
    held = state.held_runs if follows else None  # narrow jobs' runs, made by their placement
    while True:
        # ---- next_decision
        t = arrivals[nxt].submit_s if nxt < n_arrivals else inf
        if releases and releases[0][0] < t:
            t = releases[0][0]
        t_end = next_time()
        if t_end < t:
            t = t_end
        if t == inf:
            break
        sim.now = t
        if t_end <= t:
            if nxt < n_arrivals and arrivals[nxt].submit_s <= t:
                note_event(t)  # a submission is due before the job ends of its instant
            ends = advance(t)
        else:  # no end is due (next_time dropped the stale entries): advance(t), in short
            machine.now = t
            ends = ()
        for end in ends:
            job = released.pop(end.key, None) if released else None
            if job is None:
                job = jobs[end.key]
            complete(job, t)
            outcome = Outcome(job, end.state, end.start_s, end.finish_s, end.cores, end.energy_j)
            if plain_record:
                outcomes[job.idx] = outcome
            else:
                record(job, outcome)
        while nxt < n_arrivals and arrivals[nxt].submit_s <= t:
            job = arrivals[nxt]
            nxt += 1
            reason = submit(job, t)
            if reason is not None:
                sim._next = nxt
                record(job, Outcome(job, REJECTED, reason=reason))
        sim._next = nxt
        if releases:
            sim._submit_released(t)
        if core.changed and not follows:  # Simulation._flush_changes, inline
            core.changed = False
            runs = take_runs()
            if runs:
                apply_runs(runs)
            else:
                pending = take_pending()
                if pending:
                    apply_states(pending)
        # ---- decide
        if core.queue:
            t0 = clock()
            starts = schedule(t, pair)
            sim.decision_s += clock() - t0
        else:
            starts = ()
        sim.decisions += 1
        if core.changed and not follows:  # Simulation._flush_changes, inline
            core.changed = False
            runs = take_runs()
            if runs:
                apply_runs(runs)
            else:
                pending = take_pending()
                if pending:
                    apply_states(pending)
        if held is None:
            for job, cores in starts:
                start_job(start, job, cores)
        else:
            for job, cores in starts:
                start_job(start, job, cores, held.get(job.idx))
        if timeline is not None:  # Simulation._apply's row, made in fewer calls
            running, power_w, energy_j = snapshot()
            timeline((t, len(core.queue), running, state.nb_cores - state.free_cores,  # busy
                      state.contended, power_w, energy_j))
            unsettled += 1
            if unsettled == BLOCK_ROWS:
                settle()
                unsettled = 0
        if progress is not None and sim.decisions % 4096 == 0:
            progress(len(outcomes), n_jobs)
