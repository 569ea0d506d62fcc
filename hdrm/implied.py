"""What the SWF convention sets imply for the simulation, defined once for every entry point.

A convention set (:mod:`hdrm.workload.conventions`) reads a trace as a scheduler's protocol
does; the protocol also fixes how the jobs are simulated. ``rlscheduler`` (RLScheduler, SC20)
holds a picked job until it fits (``commit`` decisions) and never kills a job at its requested
time; ``default`` decides at every event and kills at the walltime, as Batsim does.

:func:`implied_simulation` turns the conventions and the explicitly given settings into the
settings of a run; an explicit setting always wins. ``hdrm replay``, options.json (and so
``hdeeprm-launch``), :class:`~hdrm.env.config.EnvConfig` (``SchedulingEnv`` and
``gymnasium.make``) all call it, and run summaries print :meth:`ImpliedSimulation.describe`.

Layer L0: standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProtocolSettings:
    """How a convention set's jobs are simulated unless a setting says otherwise.

    Attributes:
        decision: ``"event"`` or ``"commit"``.
        kill_on_walltime: whether a job still running at its requested time is killed.
    """

    decision: str
    kill_on_walltime: bool


#: The settings each convention set implies; a set not listed implies :data:`DEFAULT_PROTOCOL`.
IMPLIED_BY_CONVENTIONS: dict[str, ProtocolSettings] = {
    "default": ProtocolSettings("event", True),
    "rlscheduler": ProtocolSettings("commit", False),
}
DEFAULT_PROTOCOL = IMPLIED_BY_CONVENTIONS["default"]


@dataclass(frozen=True)
class ImpliedSimulation:
    """The decision semantics and walltime rule of a run, and where each came from.

    Attributes:
        decision: ``"event"`` or ``"commit"``.
        kill_on_walltime: whether jobs are killed at their requested time.
        decision_from: ``"given"`` or what implied it (``"conventions 'rlscheduler'"``).
        kill_from: ``"given"`` or what implied it (the conventions, or the engine).
    """

    decision: str
    kill_on_walltime: bool
    decision_from: str
    kill_from: str

    def describe(self) -> str:
        """One line for run summaries: ``decision commit, walltime kills off (conventions
        'rlscheduler')``, or with two sources ``decision event (given), walltime kills off
        (conventions 'rlscheduler')``."""
        kills = f"walltime kills {'on' if self.kill_on_walltime else 'off'}"
        if self.decision_from == self.kill_from:
            return f"decision {self.decision}, {kills} ({self.kill_from})"
        return f"decision {self.decision} ({self.decision_from}), {kills} ({self.kill_from})"


def implied_simulation(conventions: object, decision: str | None = None,
                       kill_on_walltime: bool | None = None,
                       engine: str = "builtin") -> ImpliedSimulation:
    """The simulation settings of a run that reads its jobs with ``conventions``.

    Args:
        conventions: the convention set's name (or an object with a ``name``).
        decision: the decision semantics given explicitly; None for the conventions' own.
        kill_on_walltime: the walltime rule given explicitly; None for the conventions' own.
        engine: with ``"batsim"`` jobs are always killed at their walltime (Batsim does so),
            whatever the conventions imply; an explicit False is left for that engine to refuse.
    """
    name = str(getattr(conventions, "name", conventions)).lower()
    implied = IMPLIED_BY_CONVENTIONS.get(name, DEFAULT_PROTOCOL)
    source = f"conventions {name!r}"
    decision_from = "given" if decision is not None else source
    kill_from = "given" if kill_on_walltime is not None else source
    if kill_on_walltime is None:
        kill_on_walltime = implied.kill_on_walltime
        if engine == "batsim" and not kill_on_walltime:
            kill_on_walltime, kill_from = True, "engine 'batsim' always kills"
    return ImpliedSimulation(decision if decision is not None else implied.decision,
                             kill_on_walltime, decision_from, kill_from)
