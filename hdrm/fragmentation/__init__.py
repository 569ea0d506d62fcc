"""The placement-only protocol of the FGD paper: arrivals, allocation curves, unallocated GPUs."""
