"""Error hierarchy of hdrm.

Every error a user can cause carries a message that names the bad file, line or JSON path, the bad
value and, where possible, the fix. Only the command-line layer turns them into one line on stderr and
a non-zero exit status.
"""


class HdrmError(Exception):
    """Base class of every error hdrm raises on purpose."""


class ConfigError(HdrmError):
    """A bad options.json, command-line option or keyword argument."""


class PlatformError(HdrmError):
    """A platform description that is malformed or does not add up."""


class WorkloadError(HdrmError):
    """A workload (SWF trace or Batsim JSON) that cannot be read or simulated."""


class AgentLoadError(HdrmError):
    """An agent.py or a model checkpoint that cannot be loaded."""


class ProtocolError(HdrmError):
    """A Batsim protocol message that is malformed, unexpected or invalid."""


class SimulationError(HdrmError):
    """A decision that breaks the simulated system's rules (busy core, unknown job, ...)."""
