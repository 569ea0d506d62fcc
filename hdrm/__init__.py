"""hdrm: learn and evaluate workload-management policies on heterogeneous clusters.

A decision core (cluster state mirror with memory and memory-bandwidth contention, job queue,
policies and the agent hook) driven either by the built-in discrete-event simulator or by the real
Batsim simulator through PyBatsim. Importing :mod:`hdrm` is light: it never imports torch or zmq.
"""

import sys as _sys

__version__ = "0.1.0"

__all__ = ["__version__"]

#: Gymnasium id of the scheduling environment (see :mod:`hdrm.env`).
ENV_ID = "hdrm/Scheduling-v0"
_gymnasium = _sys.modules.get("gymnasium")
if _gymnasium is not None and ENV_ID not in _gymnasium.registry:
    # gymnasium.make("hdrm:hdrm/Scheduling-v0") imports this package with gymnasium already loaded:
    # register the environment by its entry point, importing nothing (the simulator loads when the
    # environment is made). Without gymnasium loaded, importing hdrm stays stdlib-only.
    _gymnasium.register(id=ENV_ID, entry_point="hdrm.env.scheduling_env:SchedulingEnv")
