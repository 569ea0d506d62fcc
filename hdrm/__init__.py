"""hdrm: learn and evaluate workload-management policies on heterogeneous clusters.

A decision core (cluster state mirror with memory and memory-bandwidth contention, job queue,
policies and the agent hook) driven either by the built-in discrete-event simulator or by the real
Batsim simulator through PyBatsim. Importing :mod:`hdrm` is light: it never imports torch or zmq.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
