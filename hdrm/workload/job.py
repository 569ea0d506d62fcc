"""Job specification and workload container.

Units are explicit in names: seconds (``_s``), GFLOP (``_gflop``, an amount of work), MB (``_mb``),
GB/s (``_gbps``). A job asks for ``res`` cores; its work is given per core, so on a core of speed
``g`` GFLOP/s it needs ``ops_gflop / g`` seconds. Trace run times are taken at the platform's
reference speed (mean core GFLOP/s): ``ops_gflop = run_time_s * reference_gflops``.

A job on a GPU platform also asks for accelerators (:class:`AcceleratorDemand`: how many devices,
the share of each in milli-GPU, the models allowed) and may give its CPU demand in milli-cores
(``cpu_milli``); both default to "none", so CPU-only readers and jobs are unchanged.

Runtime state (start, finish, allocation) never lives here: the decision core and engines keep it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: Batsim profile types the built-in engine simulates.
PROFILE_DELAY = "delay"
PROFILE_PARALLEL_HOMOGENEOUS = "parallel_homogeneous"
#: Batsim's sequence of other profiles (repeated ``repeat`` times): :attr:`Job.parts`.
PROFILE_COMPOSED = "composed"
#: Batsim's total amount of FLOP spread evenly over the job's allocated hosts.
PROFILE_PARALLEL_HOMOGENEOUS_TOTAL = "parallel_homogeneous_total"


#: Milli-GPU in one whole accelerator.
MILLI_PER_GPU = 1000


@dataclass(frozen=True, slots=True)
class AcceleratorDemand:
    """What a job asks of accelerators.

    Attributes:
        count: devices wanted (0: none).
        milli: the share of each device in milli-GPU, 1..1000; below 1000 the device may be
            shared with other jobs (only with ``count == 1``).
        models: the accelerator models the job may run on; empty: any model.
    """

    count: int
    milli: int = MILLI_PER_GPU
    models: tuple[str, ...] = ()

    @property
    def total_milli(self) -> int:
        """Milli-GPU asked in all: ``count * milli``."""
        return self.count * self.milli

    @property
    def is_shared(self) -> bool:
        """True for a fraction of one device."""
        return self.count == 1 and self.milli < MILLI_PER_GPU

    def allows(self, model: str) -> bool:
        """True when the job may run on a device of this model."""
        return not self.models or model in self.models


@dataclass(frozen=True, slots=True)
class JobPart:
    """One leaf part of a ``composed`` job, run after the part before it on all the job's hosts.

    Attributes:
        kind: the part's profile type: ``"delay"`` (``amount`` seconds, the hosts idle),
            ``"parallel_homogeneous"`` (``amount`` GFLOP on each host) or
            ``"parallel_homogeneous_total"`` (``amount`` GFLOP spread evenly over the hosts);
            any other type is kept so that engines can refuse it by name.
        amount: seconds or GFLOP as ``kind`` says (NaN for other types).
        profile: the part's profile name.
        trail: from the job's profile down to this part, each sequence's name and the index of
            the task run in it (Batsim's ``current_task_index``: repeat x length + position).
    """

    kind: str
    amount: float
    profile: str
    trail: tuple[tuple[str, int], ...] = ()


@dataclass(slots=True, eq=False)
class Job:
    """One job of a workload.

    Attributes:
        idx: position in the workload, 0-based: the internal key of the job.
        id: the job's id in its source (SWF job number, or Batsim JSON id, an int or a string).
        submit_s: submission time, shifted so that the selection starts at 0.
        res: requested cores (Batsim ``res``).
        walltime_s: requested time in seconds (Batsim ``walltime``); ``math.inf`` when none.
        run_time_s: actual run time in seconds at the reference speed.
        mem_mb: memory per allocated core in MB (0 when unknown).
        mem_bw_gbps: memory bandwidth demand per allocated core in GB/s (0 when none).
        ops_gflop: actual work per core in GFLOP (0 for ``delay`` profiles, whose duration is fixed).
        req_ops_gflop: requested work per core in GFLOP (walltime at the reference speed).
        trace_submit_s: submission time in the trace's own clock (F1 uses it).
        profile: Batsim profile name.
        profile_type: ``"delay"`` (fixed duration ``run_time_s``), ``"parallel_homogeneous"``
            (``ops_gflop`` per core at the speed of each core), ``"composed"`` or
            ``"parallel_homogeneous_total"`` (their ``parts``).
        user_id: SWF user id (-1 unknown).
        extra: other fields from the source (the 18 SWF fields under ``"swf"``, extra Batsim fields).
        cpu_milli: CPU demand in milli-cores when the source gives it so (openb); 0: ``res`` cores.
        accel: the accelerator demand; None for a CPU-only job.
        parts: a ``composed`` job's leaf parts in execution order (its sequence repeated and
            nested sequences flattened, :class:`JobPart`); a ``parallel_homogeneous_total``
            job's one part (its total, spread over the hosts it is given); empty otherwise.
    """

    idx: int
    id: int | str
    submit_s: float
    res: int
    walltime_s: float
    run_time_s: float
    mem_mb: float = 0.0
    mem_bw_gbps: float = 0.0
    ops_gflop: float = 0.0
    req_ops_gflop: float = 0.0
    trace_submit_s: float = 0.0
    profile: str = ""
    profile_type: str = PROFILE_DELAY
    user_id: int = -1
    extra: dict[str, Any] = field(default_factory=dict)
    cpu_milli: int = 0
    accel: AcceleratorDemand | None = None
    parts: tuple["JobPart", ...] = ()

    @property
    def has_walltime(self) -> bool:
        """True when the job has a finite requested time."""
        return 0.0 < self.walltime_s < math.inf  # finite and positive (NaN is neither)


@dataclass
class Workload:
    """An ordered list of jobs (by submission time) and where they came from.

    Attributes:
        jobs: the jobs, ``jobs[i].idx == i``, normally sorted by ``submit_s`` (ties keep source
            order; RLScheduler's conventions sort by id, and engines submit in time order anyway).
        name: a short name (file stem).
        source: the path the jobs were read from.
        header: the parsed SWF header (:class:`hdrm.workload.swf.SwfHeader`), the other top-level
            keys of a Batsim JSON file (a dict), or None.
        skipped: number of source jobs left out, per reason (``{"run time <= 0": 12}``).
        nb_res: the number of resources the source was made for (SWF MaxProcs, Batsim ``nb_res``),
            or None when unknown.
        dependencies: the jobs' preceding jobs and think times
            (:class:`hdrm.workload.dependencies.Dependencies`, side arrays), or None.
    """

    jobs: list[Job]
    name: str = ""
    source: str = ""
    header: Any = None
    skipped: dict[str, int] = field(default_factory=dict)
    nb_res: int | None = None
    dependencies: Any = None

    def __len__(self) -> int:
        return len(self.jobs)
