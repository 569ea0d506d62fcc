"""Error hierarchy of hdrm.

Every error a user can cause carries a message that names the bad file, line or JSON path, the bad
value and, where possible, the fix. Only the command-line layer turns them into one line on stderr and
a non-zero exit status.
"""

from __future__ import annotations


class HdrmError(Exception):
    """Base class of every error hdrm raises on purpose."""


class ConfigError(HdrmError):
    """A bad options.json, command-line option or keyword argument."""


class PlatformError(HdrmError):
    """A platform description that is malformed or does not add up."""


class WorkloadError(HdrmError):
    """A workload (SWF trace or Batsim JSON) that cannot be read or simulated."""


#: How a Python caller relaxes a strict read; the CLI and options.json say it in their terms.
PYTHON_RELAX = "read with strict=False"


class SkippableLineError(WorkloadError):
    """A job line (an SWF trace's, an openb or Gavel list's) that a strict read refuses and
    ``strict=False`` would skip (and count). (Re-exported by :mod:`hdrm.workload.swf`.)

    The message ends with how to skip such lines in the caller's terms: ``strict=False`` for
    Python; a command-line tool re-raises :meth:`relaxed_by` naming its own flag.

    Attributes:
        problem: ``file:line: what is wrong``.
        fix: how to mend the line.
        skipped: what a non-strict read skips (``"malformed lines"``).
    """

    def __init__(self, problem: str, fix: str, skipped: str, relax: str = PYTHON_RELAX) -> None:
        self.problem, self.fix, self.skipped, self.relax = problem, fix, skipped, relax
        super().__init__(f"{problem}; {fix}, or {relax} to skip {skipped} (counted)")

    def __reduce__(self):
        """Pickled with its parts (a process pool sends it back whole)."""
        return SkippableLineError, (self.problem, self.fix, self.skipped, self.relax)

    def relaxed_by(self, relax: str) -> SkippableLineError:
        """The same error, naming ``relax`` (``"rerun with --no-strict"``) as the way out."""
        return SkippableLineError(self.problem, self.fix, self.skipped, relax)

    def unskippable(self) -> WorkloadError:
        """The same one-line error without a way to skip (``FILE:LINE: problem; fix``), for a
        reader whose caller keeps every line (a platform's nodes, a list read whole)."""
        return WorkloadError(f"{self.problem}; {self.fix}")


class AgentLoadError(HdrmError):
    """An agent.py or a model checkpoint that cannot be loaded."""


class ProtocolError(HdrmError):
    """A Batsim protocol message that is malformed, unexpected or invalid."""


class SessionDeadlock(ProtocolError):
    """Nothing can happen any more in a Batsim-protocol session that is not over (SimGrid's
    "Deadlock detected", after which Batsim writes its output files as at a normal end)."""


class SimulationError(HdrmError):
    """A decision that breaks the simulated system's rules (busy core, unknown job, ...)."""
