"""Load the platform and the workload of an experiment, the same way for every entry point.

``hdrm replay``, ``hdeeprm-launch`` and the Gymnasium environment all build their inputs here:

* the platform is a platform JSON file, a plain SimGrid XML host platform, or ``N`` identical
  one-core resources (``homogeneous_procs``, the classic setting of the scheduling literature);
* the workload is an SWF trace (plain or gzip; read with the chosen conventions) or a Batsim JSON
  workload; a selection (a start index and a number of jobs, or the first N jobs) is shifted to
  start at time 0;
* on a platform file, SWF jobs get their heterogeneity requirements: work at the platform's
  reference speed, memory from the trace and a seeded memory-bandwidth draw. On homogeneous
  resources they stay ``delay`` jobs that last exactly their trace run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.platform.simgrid import platform_from_simgrid
from hdrm.sim.collector import collector_paused
from hdrm.workload.batsim_json import read_batsim_json
from hdrm.workload.job import Workload
from hdrm.workload.requirements import DEFAULT_BW, attach_requirements
from hdrm.workload.select import select


@dataclass(frozen=True)
class InputSpec:
    """Where an experiment's platform and workload come from.

    Attributes:
        workload_path: SWF (``.swf``, ``.swf.gz``) or Batsim JSON (``.json``) workload.
        platform_path: platform JSON or SimGrid XML; None with ``homogeneous_procs``.
        homogeneous_procs: number of identical one-core resources instead of a platform file;
            0 with a platform file, -1 to take the trace's MaxProcs.
        conventions: SWF conventions (``default`` or ``rlscheduler``).
        strict: fail on malformed SWF lines (else skip and count them).
        start_index: first job of the selection (0-based, after the loader's filtering).
        nb_jobs: number of jobs to take (0: all from ``start_index``).
        bandwidth: memory-bandwidth distribution spec for SWF jobs on a platform file.
        seed: seed of the bandwidth draw.
        dependencies: read SWF fields 17-18 (preceding job, think time) into the workload's
            dependencies (:mod:`hdrm.workload.dependencies`); False ignores them.
    """

    workload_path: str
    platform_path: str | None = None
    homogeneous_procs: int = 0
    conventions: str = "default"
    strict: bool = True
    start_index: int = 0
    nb_jobs: int = 0
    bandwidth: str = DEFAULT_BW
    seed: int = 0
    dependencies: bool = True


def load_platform_any(path: str | Path) -> Platform:
    """A platform from a platform JSON file or a SimGrid XML host platform."""
    if str(path).lower().endswith(".xml"):
        return platform_from_simgrid(path)[0]
    from hdrm.platform.loader import load_platform  # JSON platforms only

    return load_platform(path)


def read_workload_any(path: str | Path, conventions: str = "default", strict: bool = True,
                      reference_gflops: float | None = None, dependencies: bool = True
                      ) -> Workload:
    """A workload from an SWF trace or a Batsim JSON file (chosen by the file name); without
    ``dependencies``, the jobs' preceding jobs are left out."""
    if str(path).lower().endswith(".json"):
        workload = read_batsim_json(path, reference_gflops)
        if not dependencies:
            workload.dependencies = None
        return workload
    from hdrm.workload.swf import read_swf  # SWF traces only

    return read_swf(path, conventions, strict, dependencies=dependencies)


def load_inputs(spec: InputSpec) -> tuple[Platform, Workload]:
    """Build the platform and the (selected, shifted, equipped) workload of an experiment.

    The cycle collector is paused meanwhile (:mod:`hdrm.sim.collector`): the readers make tens
    of thousands of dicts and jobs, none in a cycle, and the collections they would set off
    find nothing.

    Raises:
        ConfigError: neither or both of a platform file and homogeneous resources.
        PlatformError, WorkloadError: from the loaders, naming the bad file.
    """
    with collector_paused():
        return _load_inputs(spec)


def _load_inputs(spec: InputSpec) -> tuple[Platform, Workload]:
    """:func:`load_inputs`, the collector left as it is."""
    is_json = spec.workload_path.lower().endswith(".json")
    if spec.platform_path and spec.homogeneous_procs:
        raise ConfigError("give a platform file or a number of homogeneous processors, not both")
    platform = load_platform_any(spec.platform_path) if spec.platform_path else None
    ref = platform.reference_gflops if platform is not None else 1.0
    workload = read_workload_any(spec.workload_path, spec.conventions, spec.strict, ref,
                                 spec.dependencies)
    if platform is None:
        nb = spec.homogeneous_procs
        if nb < 0 or nb == 0:
            nb = workload.nb_res or 0
            if nb <= 0:
                raise ConfigError(
                    f"{spec.workload_path}: the workload states no MaxProcs/nb_res; give a platform "
                    f"file or a number of homogeneous processors"
                )
        platform = Platform.homogeneous(nb)
    workload = select(workload, spec.start_index, spec.nb_jobs, in_place=True)  # just read
    if spec.platform_path and not is_json:
        workload = attach_requirements(
            workload, platform.reference_gflops, np.random.default_rng(spec.seed), spec.bandwidth
        )
    return platform, workload
