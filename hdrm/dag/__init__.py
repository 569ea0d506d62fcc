"""DAG list scheduling: task graphs on heterogeneous processors (HEFT, CPOP, PEFT).

* :mod:`hdrm.dag.model`: :class:`~hdrm.dag.model.Dag` (tasks, edges with data sizes, a task x
  processor cost matrix) and :class:`~hdrm.dag.model.Network` (bandwidth and latency between
  processors);
* :mod:`hdrm.dag.generator`: seeded random layered DAGs (width, depth, density, CCR,
  heterogeneity);
* :mod:`hdrm.dag.ranks`: upward and downward ranks, PEFT's optimistic cost table;
* :mod:`hdrm.dag.listsched`: the insertion-based list schedulers, by name in ``DAG_POLICIES``;
* :mod:`hdrm.dag.schedule`: the schedule (makespan, SLR, speedup, validity check, CSV);
* :mod:`hdrm.dag.wfformat` and :mod:`hdrm.dag.machines`: WfCommons instances and processors
  taken from an hdrm platform.

A layer 2 package, a peer of :mod:`hdrm.core`: it uses only the errors, the registry and the
platform model below it.
"""
