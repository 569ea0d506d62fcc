"""hdrm: learn and evaluate workload-management policies on heterogeneous clusters.

A decision core (cluster state mirror with memory and memory-bandwidth contention, job queue,
policies and the agent hook) driven either by the built-in discrete-event simulator or by the real
Batsim simulator through PyBatsim. Importing :mod:`hdrm` is light: it never imports torch or zmq.
"""

import sys as _sys

__version__ = "0.1.0"

__all__ = ["__version__"]

if "gymnasium" in _sys.modules:
    # gymnasium.make("hdrm:hdrm/Scheduling-v0") imports this package: register the environment
    # without importing the simulator until the environment is made.
    from hdrm.env.registration import register_envs as _register

    _register()
