"""Inputs of a replay on a GPU platform: the platform and an openb, Philly, Helios, PAI or Gavel
workload.

* The platform is a platform JSON file with accelerators, or an openb node list (``.csv``) turned
  into one on the fly (:func:`hdrm.platform.openb.platform_json_from_openb`, as
  ``hdrm platform from-openb`` does).
* The workload is an openb pod list (``.csv``, put in submission order: the resampled lists are
  shuffled), a Helios ``cluster_log.csv`` or a PAI ``pai_task_table.csv`` (told apart by their
  columns, :mod:`hdrm.workload.gpu_formats`), Philly's ``cluster_job_log`` (a JSON array), or a
  Gavel trace (any other name) read with its throughput file (``throughputs``, Gavel's
  ``simulation_throughputs.json``).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from hdrm.errors import ConfigError, SkippableLineError
from hdrm.platform.model import Platform
from hdrm.sim.inputs import load_platform_any
from hdrm.workload.job import Workload
from hdrm.workload.select import select

logger = logging.getLogger(__name__)


def is_gpu_input(platform_path: str | None, workload_path: str,
                 throughputs: str | None = None) -> bool:
    """True when the inputs name a GPU workload or an openb node list (by file name), or the
    workload is Philly's job log (a JSON array; its file has no extension)."""
    from hdrm.workload.gpu_formats import is_gpu_trace_name, trace_kind

    csv = is_gpu_trace_name(workload_path)
    nodes = str(platform_path or "").lower().endswith(".csv")
    return csv or nodes or throughputs is not None or trace_kind(workload_path) == "philly"


def load_gpu_platform(path: str | Path, accelerator_types: str | Path | None = None) -> Platform:
    """A platform JSON file, or an openb node list (``.csv``) made into a platform.

    Args:
        path: the platform file or node list.
        accelerator_types: a file of extra accelerator types (the shape of the library's
            ``accelerators.json``; ``--accelerator-types``): its models join the library's for
            the node list's GPUs or the platform file's node types.

    Raises:
        PlatformError: a malformed ``accelerator_types`` file, or a GPU model in neither the
            library nor that file (one line).
        ConfigError: the platform has no accelerators.
        WorkloadError: a bad node row, ``FILE:LINE: problem (value ...); fix the row``: a
            platform's nodes are never skipped, so no caller may offer a way to skip it.
    """
    if str(path).lower().endswith(".csv"):
        from hdrm.platform.loader import platform_from_dict  # GPU inputs only: a CPU
        from hdrm.platform.openb import (  # replay asks only
            library_with_accelerator_types, platform_json_from_openb)
        from hdrm.workload.openb import read_openb_nodes  # is_gpu_input

        try:
            nodes, _ = read_openb_nodes(path)
        except SkippableLineError as exc:  # not skippable here: drop the skip offer
            raise exc.unskippable() from None
        library = library_with_accelerator_types(accelerator_types)
        doc = platform_json_from_openb(nodes, Path(path).stem, str(path), library)
        platform = platform_from_dict(doc, source=str(path))  # the doc holds the file's types
    else:
        from hdrm.workload.openb import refuse_yaml
        refuse_yaml(path)  # openb's node_yaml/ would read as broken JSON
        platform = _platform_file(path, accelerator_types)
    if not platform.accelerators:
        raise ConfigError(f"{path}: the platform has no GPU; an openb or Gavel workload needs "
                          "a GPU platform (hdrm platform from-openb NODES.csv -o P.json)")
    return platform


def _platform_file(path: str | Path, accelerator_types: str | Path | None) -> Platform:
    """A platform JSON or SimGrid XML file; a JSON file's node types may name the models of
    ``accelerator_types`` (an XML platform has no GPUs: the file is then only checked)."""
    if accelerator_types is None or str(path).lower().endswith(".xml"):
        if accelerator_types is not None:
            from hdrm.platform.accelerators import load_accelerator_types
            load_accelerator_types(accelerator_types)  # a bad file fails wherever it is given
        return load_platform_any(path)
    from hdrm.platform.loader import load_platform
    from hdrm.platform.openb import library_with_accelerator_types

    return load_platform(path, library_with_accelerator_types(accelerator_types))


def is_gavel_trace(path: str | Path) -> bool:
    """Whether ``path`` is read as a Gavel trace (which needs its throughput file): not a
    ``.csv`` name (plain or compressed: openb, Helios, PAI) nor Philly's job log (a JSON
    array, found by content)."""
    from hdrm.workload.gpu_formats import is_gpu_trace_name, trace_kind

    return not is_gpu_trace_name(path) and trace_kind(path) != "philly"


def load_gpu_workload(path: str | Path, throughputs: str | None = None,
                      strict: bool = True, platform: Platform | None = None) -> Workload:
    """An openb pod list, a Helios log or a PAI task table (``.csv``, told apart by their
    columns), Philly's job log (a JSON array) or a Gavel trace (with ``throughputs``); with
    ``platform``, the tasks' allowed GPU models named as the platform names them
    (:func:`align_models`).

    Raises:
        ConfigError: a Gavel trace without its throughput file.
        WorkloadError: the reader's errors, or an openb pod list none of whose tasks ran (no
            run time to replay).
    """
    from hdrm.workload.gavel import read_gavel  # GPU inputs only (see load_gpu_platform)
    from hdrm.workload.gpu_formats import is_gpu_trace_name, read_gpu_trace

    if is_gpu_trace_name(path) or (throughputs is None and not is_gavel_trace(path)):
        from hdrm.workload.openb import require_run_times
        workload = read_gpu_trace(path, strict)
        require_run_times(workload)
        workload = _by_submission(workload)
    elif throughputs is None:
        raise ConfigError(f"{path}: a Gavel trace needs its throughput file; add --throughputs "
                          "simulation_throughputs.json (or give an openb pod list, .csv)")
    else:
        workload = read_gavel(path, throughputs, strict)
    return align_models(workload, platform) if platform is not None else workload


def align_models(workload: Workload, platform: Platform) -> Workload:
    """Each task's allowed GPU models as the platform names them: a name the platform has under
    its library key (a pod list's ``NVIDIA A100-SXM4-80GB`` where the node list wrote the same
    and the platform says ``A100M80``; :data:`hdrm.platform.accelerators.ALIASES`) becomes that
    key; any other name stays, and a task none of whose models the platform has is rejected
    with that reason."""
    from hdrm.platform.accelerators import resolve_model

    types = {device.type.name: device.type for device in platform.accelerators}
    for job in workload.jobs:
        accel = job.accel
        if accel is not None and any(m not in types for m in accel.models):
            names = (resolve_model(m, types) or m for m in accel.models)
            job.accel = dataclasses.replace(accel, models=tuple(dict.fromkeys(names)))
    return workload


def _by_submission(workload: Workload) -> Workload:
    """The tasks in submission order (stable; the resampled openb lists are shuffled)."""
    jobs = sorted(workload.jobs, key=lambda job: job.submit_s)
    for i, job in enumerate(jobs):
        job.idx = i
    workload.jobs = jobs
    return workload


def load_gpu_inputs(platform_path: str, workload_path: str, throughputs: str | None = None,
                    strict: bool = True, start_index: int = 0, nb_jobs: int = 0,
                    accelerator_types: str | None = None) -> tuple[Platform, Workload]:
    """The GPU platform (with the extra accelerator types of ``accelerator_types``, see
    :func:`load_gpu_platform`) and the selected workload, shifted to start at time 0."""
    platform = load_gpu_platform(platform_path, accelerator_types)
    workload = load_gpu_workload(workload_path, throughputs, strict, platform)
    logger.info("GPU replay inputs: %d nodes and %d GPUs from %s, %d tasks from %s",
                len(platform.nodes), len(platform.accelerators), platform_path, len(workload),
                workload_path)
    return platform, select(workload, start_index, nb_jobs)
