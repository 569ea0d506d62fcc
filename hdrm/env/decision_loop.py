"""How the environment's actions become decisions of the built-in engine's simulation.

:class:`DecisionLoop` is a mixin of :class:`~hdrm.env.scheduling_env.SchedulingEnv` (and so of
:class:`~hdrm.env.gpu_env.GpuSchedulingEnv`): it applies one action (a policy pair, or a picked job,
held until it starts with ``decision="commit"``), then moves the simulation on, deciding nothing,
until the agent has a real choice: some queued job fits, or (commit semantics) the next job is to
be picked. A void action with no event left to wait for becomes the first valid action.

The host class provides ``sim`` (the episode's :class:`~hdrm.sim.engine.Simulation`), ``config``
(:class:`~hdrm.env.config.EnvConfig`), ``pairs``, ``action_names``, ``core_policy``, ``_held`` and
the methods ``window_jobs``, ``window_startable`` and ``action_masks``.
"""

from __future__ import annotations

import numpy as np


#: Name of the action that starts nothing and waits for the next event.
VOID = "void"


class DecisionLoop:
    """Applying actions to the simulation and advancing it to the agent's next real choice."""

    def _event_pending(self) -> bool:
        """Whether an event can still come: a running job will end or a job will arrive.

        Without one, the void action would wait forever (and end the episode with jobs queued):
        it is masked then.
        """
        sim = self.sim
        running = sim.machine.running
        seen = len(sim.outcomes) + len(sim.core.queue) + running
        return running > 0 or seen < len(sim.workload)

    def _void_or_first_valid(self, action: int) -> int:
        """``action``, or the first valid action when it is a void with no event to wait for."""
        is_void = self.action_names[action] == VOID or (
            self.config.mode == "job_pick" and action >= len(self.window_jobs()))
        if not is_void or self._event_pending():
            return action
        return int(np.argmax(self.action_masks()))

    def _step_pair(self, action: int) -> bool:
        sim = self.sim
        if action < len(self.pairs):
            sim.decide(self.pairs[action])
        else:
            sim.decide_nothing()
        return sim.next_decision()

    def _step_pick(self, action: int) -> bool:
        sim = self.sim
        window = self.window_jobs()
        if action >= len(window):  # void, or a padding row: wait for the next event
            sim.decide_nothing()
            return sim.next_decision()
        job = window[action]
        hold = self.config.decision == "commit"
        if not hold and not self.window_startable()[action]:
            sim.decide_nothing()  # it does not fit, or EASY would not start it now: wait
            return sim.next_decision()
        started = sim.pick(job, self.core_policy, hold)
        if any(j is job for j, _ in started):
            return True
        if not hold:
            return sim.next_decision()
        self._held = job
        return self._wait_for_held()

    def _wait_for_held(self) -> bool:
        """Commit semantics: advance events, backfilling, until the held job starts."""
        sim = self.sim
        job = self._held
        while sim.next_decision():
            started = sim.pick(job, self.core_policy, hold=True)
            if any(j is job for j, _ in started):
                self._held = None
                return True
        self._held = None
        return False

    def _advance(self, alive: bool) -> bool:
        """Move on until the agent has a real choice; False when the episode is over."""
        sim = self.sim
        while alive:
            queue = sim.core.queue
            if queue and self._has_choice():
                return True
            sim.decide_nothing()
            alive = sim.next_decision()
        return False

    def _has_choice(self) -> bool:
        core = self.sim.core
        if self.config.decision == "commit" and core.committed is None:
            # RLScheduler's semantics: the next job is picked (and held) right away, even when
            # no core is free, so that later arrivals cannot overtake it.
            return True
        state = core.state
        if self.preemption.suspends and self.config.mode == "policy_pair":
            return True  # the chosen job selection ranks the queue against the running jobs
        if state.free_cores == 0:
            return False
        if self.config.mode == "job_pick" and self.config.pick_limit == "easy":
            self._window_fits = self._window = self._marks = None  # the state has moved on
            return bool(self.window_startable().any())
        jobs = self.sim.core.queue if self.config.mode == "policy_pair" else self.window_jobs()
        free = state.free_cores
        if not state.bounded_memory:
            return any(j.res <= free for j in jobs)
        fits = state.fits  # asked only of jobs that need memory: the others need free cores
        return any(j.res <= free and (j.mem_mb <= 0 or fits(j)) for j in jobs)
