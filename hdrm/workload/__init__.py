"""Workload layer (L1): jobs, SWF traces, Batsim JSON workloads, selections and requirements."""
