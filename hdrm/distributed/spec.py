"""Sweep files: a grid (or a seeded random sample of it) of replays, on CPU or GPU platforms.

A sweep file is a JSON object validated by :mod:`hdrm.typedjson` (errors name the file, the JSON
path, the bad value and the closest valid names)::

    {
      "policies": ["all-pairs", "fcfs"],
      "backfill": ["none", "easy"],
      "decision": ["event"],
      "platforms": ["../platforms/hetero.json"],
      "traces": ["../workloads/SDSC-SP2-1998-4.2-cln_first500.swf"],
      "load_factors": [1.0, 1.5],
      "seeds": [0, 1, 2],
      "nb_jobs": 200,
      "sample": {"size": 10, "seed": 0}
    }

Every list is one axis of the grid; the runs are its cross product, in the order of the axes
above (policies vary slowest, seeds fastest). ``"all-pairs"`` stands for HDeepRM's 36 job-core
pairs. Paths are relative to the sweep file.

GPU platforms (a platform JSON with accelerators, or an openb node list ``.csv``) replay openb
pod lists, or Gavel traces with ``"throughputs": "simulation_throughputs.json"`` (Gavel's
throughput file; then every trace that is not an openb pod list is read as a Gavel trace with it,
as ``hdrm replay --throughputs`` reads its workload, and only those runs carry it in their name
and digest), with GPU policies: queue orders and ``ORDER-PLACEMENT`` pairs (``drf-fgd``;
``"all-gpu-pairs"`` stands for every pair) and backfilling ``none`` or ``greedy``. Each policy and
backfilling mode is checked against the kind of every platform when the file is read, so a
policy of the wrong kind is a one-line error naming both (split CPU and GPU grids into two
files). With ``sample``, ``size`` runs are drawn from the
grid without replacement by a generator seeded with ``sample.seed`` (then kept in grid order), so
the same file always names the same runs. ``"accelerator_types": "types.json"`` (a file shaped like
the library's ``accelerators.json``, as ``hdrm replay --accelerator-types`` takes) adds GPU models
for the openb node lists among the platforms; only runs on a node list carry it in their digest.
:func:`expand` turns the file into :class:`RunSpec` values; nothing here runs anything.

Layer: hdrm.distributed (top, like the launcher); no Ray here.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from hdrm.core.contention import CONTENTION_MODELS
from hdrm.core.gpu_scheduler import GPU_BACKFILLING, gpu_pairs, resolve_gpu_policy
from hdrm.errors import HdrmError
from hdrm.policies.pairs import ALL_PAIRS, resolve_policy
from hdrm.jsonfile import read_json
from hdrm.typedjson import Context, convert_block

#: The name that stands for HDeepRM's 36 job-core pairs in ``policies``.
ALL_PAIRS_NAME = "all-pairs"
#: The name that stands for every GPU order-placement pair in ``policies``.
ALL_GPU_PAIRS_NAME = "all-gpu-pairs"
#: What each platform kind accepts, for the messages.
KIND_POLICIES = {
    False: f"CPU policies (heuristics, job-core pairs, {ALL_PAIRS_NAME!r})",
    True: f"GPU policies (queue orders, ORDER-PLACEMENT pairs, {ALL_GPU_PAIRS_NAME!r})"}

Backfill = Literal["none", "easy", "easy_first", "conservative", "greedy"]
Decision = Literal["event", "commit"]


def policy_error(name: str, gpu: bool) -> str:
    """Why ``name`` is not a policy of a CPU (``gpu`` False) or GPU platform ("" when it is)."""
    if name == (ALL_GPU_PAIRS_NAME if gpu else ALL_PAIRS_NAME):
        return ""
    try:
        (resolve_gpu_policy if gpu else resolve_policy)(name, "policy")
    except HdrmError as exc:
        return str(exc).split(": ", 1)[-1]
    return ""


def _check_policy(name: str) -> str:
    """An error text for a name that is a policy of neither kind (empty when fine)."""
    if not policy_error(name, False) or not policy_error(name, True):
        return ""
    return (f"{policy_error(name, False)}, or {ALL_PAIRS_NAME!r} for the 36 pairs; on GPU "
            f"platforms: {policy_error(name, True)}, or {ALL_GPU_PAIRS_NAME!r} for every pair")


def _check_policies(names: tuple[str, ...]) -> str:
    for index, name in enumerate(names):
        message = _check_policy(name)
        if message:
            return f"[{index}] {json.dumps(name)}: {message}"
    return ""


def _check_contention(name: str) -> str:
    if name in CONTENTION_MODELS:
        return ""
    return f"unknown contention model {name!r}; choose one of {', '.join(CONTENTION_MODELS.names())}"


def _check_files(paths: tuple[str, ...]) -> str:
    for index, path in enumerate(paths):
        if not Path(path).is_file():
            return f"[{index}] {json.dumps(path)}: no such file; paths are relative to the sweep file"
    return ""


def _check_file(path: str | None) -> str:
    if path is None or Path(path).is_file():
        return ""
    return "no such file; paths are relative to the sweep file"


def _distinct(values: tuple) -> str:
    repeated = [v for i, v in enumerate(values) if v in values[:i]]
    return f"{json.dumps(repeated[0])} is listed twice; list each value once" if repeated else ""


def _files_check(paths: tuple[str, ...]) -> str:
    return _distinct(paths) or _check_files(paths)


@dataclass(frozen=True)
class Sample:
    """A random sample of the grid.

    Attributes:
        size: number of runs drawn (at most the grid's size).
        seed: seed of the draw.
    """

    size: int = field(metadata={"gt": 0})
    seed: int = 0


@dataclass(frozen=True)
class SweepSpec:
    """A sweep file, validated.

    Attributes:
        policies: heuristics (``fcfs``, ``sjf`` ...), job-core pairs, or ``all-pairs``; on GPU
            platforms queue orders, ``order-placement`` pairs, or ``all-gpu-pairs``.
        backfill: backfilling modes (``none`` or ``greedy`` on GPU platforms).
        decision: decision semantics (``event``, ``commit``).
        platforms: platform JSON (or SimGrid XML) files, or openb node lists (``.csv``).
        traces: SWF or Batsim JSON workloads, or openb pod lists (``.csv``).
        load_factors: arrival-rate multipliers (:func:`hdrm.workload.load.scale_arrivals`).
        seeds: run seeds (memory-bandwidth draw and the run's generator).
        nb_jobs: jobs taken from each trace (0: all).
        start_index: first job taken (0-based).
        conventions: SWF conventions.
        strict: fail on SWF lines the standard does not allow (else skip and count them).
        contention: contention model.
        walltime_kill: kill jobs at their requested time; None: as the conventions imply.
        sample: draw this many runs from the grid instead of running all of it.
        throughputs: Gavel's throughput file; the traces that are not openb pod lists (``.csv``)
            are Gavel traces read with it (GPU platforms only).
        accelerator_types: extra GPU models for the openb node lists (``.csv``) among the
            platforms (:func:`hdrm.platform.accelerators.load_accelerator_types`).
    """

    policies: tuple[str, ...] = field(metadata={"nonempty": True, "check": _check_policies})
    platforms: tuple[str, ...] = field(
        metadata={"nonempty": True, "path": "file", "check": _files_check})
    traces: tuple[str, ...] = field(
        metadata={"nonempty": True, "path": "file", "check": _files_check})
    backfill: tuple[Backfill, ...] = field(default=("none",), metadata={"nonempty": True,
                                                                        "check": _distinct})
    decision: tuple[Decision, ...] = field(default=("event",), metadata={"nonempty": True,
                                                                         "check": _distinct})
    load_factors: tuple[float, ...] = field(default=(1.0,), metadata={"nonempty": True, "gt": 0,
                                                                      "check": _distinct})
    seeds: tuple[int, ...] = field(default=(0,), metadata={"nonempty": True, "ge": 0,
                                                           "check": _distinct})
    nb_jobs: int = field(default=0, metadata={"ge": 0})
    start_index: int = field(default=0, metadata={"ge": 0})
    conventions: Literal["default", "rlscheduler"] = "default"
    strict: bool = True
    contention: str = field(default="hdeeprm", metadata={"check": _check_contention})
    walltime_kill: bool | None = None
    sample: Sample | None = None
    throughputs: str | None = field(default=None, metadata={"path": "file",
                                                            "check": _check_file})
    accelerator_types: str | None = field(default=None, metadata={"path": "file",
                                                                  "check": _check_file})


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: everything :func:`hdrm.distributed.runner.execute` needs.

    Attributes:
        policy: heuristic or job-core pair.
        backfill: backfilling mode.
        decision: decision semantics.
        platform: platform file (absolute).
        trace: workload file (absolute).
        load_factor: arrival-rate multiplier.
        seed: the run's seed.
        nb_jobs: jobs taken (0: all).
        start_index: first job taken.
        conventions: SWF conventions.
        contention: contention model.
        walltime_kill: kill at the requested time; None: as the conventions imply.
        strict: fail on SWF lines the standard does not allow (else skip them).
        throughputs: Gavel's throughput file (absolute) when the trace is a Gavel trace, else
            None (and then left out of the digest, so runs without it keep their names).
        accelerator_types: the sweep's extra GPU models (absolute) when the platform is an
            openb node list, else None (left out of the digest, as ``throughputs``).
    """

    policy: str
    backfill: str
    decision: str
    platform: str
    trace: str
    load_factor: float
    seed: int
    nb_jobs: int = 0
    start_index: int = 0
    conventions: str = "default"
    contention: str = "hdeeprm"
    walltime_kill: bool | None = None
    strict: bool = True
    throughputs: str | None = None
    accelerator_types: str | None = None

    @property
    def name(self) -> str:
        """The run's folder name: its grid values, readable, plus a digest of all settings (a
        Gavel run's trace reads ``TRACE+THROUGHPUTS``)."""
        trace = _stem(self.trace)
        if self.throughputs is not None:
            trace = trace.removesuffix(".trace") + f"+{_stem(self.throughputs)}"
        readable = (f"{self.policy}_{self.backfill}_{self.decision}_{_stem(self.platform)}_"
                    f"{trace}_x{self.load_factor:g}_s{self.seed}")
        return f"{readable}_{self.digest()[:8]}"

    def digest(self) -> str:
        """SHA-256 of every setting: two runs with the same digest produce the same outputs."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_json(self) -> dict:
        """The settings as a JSON object (for the run's done marker and the sweep's index);
        ``throughputs`` only when set (settings added later stay out of older runs' digests)."""
        values = asdict(self)
        for later in ("throughputs", "accelerator_types"):
            if values[later] is None:
                del values[later]
        return values


def _stem(path: str) -> str:
    """A file's name without its data suffixes (``.swf.gz``, ``.json``, ``.xml``, ``.csv``)."""
    name = Path(path).name
    for suffix in (".gz", ".swf", ".json", ".xml", ".csv"):
        name = name[: -len(suffix)] if name.lower().endswith(suffix) else name
    return name


def load_sweep(path: str | os.PathLike[str]) -> SweepSpec:
    """Read and validate a sweep file; relative paths resolve against its folder.

    Raises:
        ConfigError: ``FILE: JSON.PATH: what is wrong`` (the value, and the fix or the choices).
    """
    source = os.fspath(path)
    data = read_json(source, "sweep file")
    ctx = Context(source, str(Path(source).resolve().parent))
    spec = convert_block(data, SweepSpec, "", ctx)
    _check_kinds(spec, ctx)
    _check_accelerator_types(spec, ctx)
    if spec.sample is not None and spec.sample.size > grid_size(spec):
        raise ctx.fail("sample.size", f"{spec.sample.size} runs asked, but the grid has only "
                       f"{grid_size(spec)}; ask for at most {grid_size(spec)}, or drop 'sample'")
    return spec


def is_gpu_platform(path: str) -> bool:
    """Whether a platform file is a GPU platform (an openb node list, or accelerators)."""
    from hdrm.sim.inputs import load_platform_any

    return path.lower().endswith(".csv") or bool(load_platform_any(path).accelerators)


def is_gavel_trace(spec: SweepSpec, trace: str) -> bool:
    """Whether the sweep reads ``trace`` as a Gavel trace (``throughputs`` given, not ``.csv``)."""
    return spec.throughputs is not None and not trace.lower().endswith(".csv")


def _check_accelerator_types(spec: SweepSpec, ctx: Context) -> None:
    """``accelerator_types`` is read whole now (a bad file fails before any run) and needs an
    openb node list to apply to."""
    if spec.accelerator_types is None:
        return
    from hdrm.platform.accelerators import load_accelerator_types

    load_accelerator_types(spec.accelerator_types)
    if not any(p.lower().endswith(".csv") for p in spec.platforms):
        raise ctx.fail("accelerator_types", "no platform is an openb node list (.csv), so no "
                       "run reads it; a platform JSON file defines its own accelerator_types")


def _check_gavel(spec: SweepSpec, ctx: Context, gpu_platforms: list[bool]) -> None:
    """``throughputs`` needs a trace to read with it, and GPU platforms to run it on."""
    if spec.throughputs is None:
        return
    gavel = [i for i, trace in enumerate(spec.traces) if is_gavel_trace(spec, trace)]
    if not gavel:
        raise ctx.fail("throughputs", "every trace is an openb pod list (.csv), so no Gavel "
                       "trace reads it; remove 'throughputs' or add the Gavel trace")
    for i, gpu in enumerate(gpu_platforms):
        if not gpu:
            name = json.dumps(Path(spec.traces[gavel[0]]).name)
            raise ctx.fail(f"platforms[{i}]", f"{json.dumps(Path(spec.platforms[i]).name)} is a "
                           f"CPU platform, but traces[{gavel[0]}] {name} is read as a Gavel trace "
                           "(throughputs given), which needs GPUs; put the CPU platforms (or the "
                           "SWF traces) in another sweep file")


def _check_kinds(spec: SweepSpec, ctx: Context) -> None:
    """Every policy and backfilling mode must suit every platform of the grid."""
    kinds = [is_gpu_platform(platform) for platform in spec.platforms]
    _check_gavel(spec, ctx, kinds)
    for i, (platform, gpu) in enumerate(zip(spec.platforms, kinds)):
        kind = f"platforms[{i}] {json.dumps(Path(platform).name)} is a {'GPU' if gpu else 'CPU'}" \
            " platform"
        for k, name in enumerate(spec.policies):
            if policy_error(name, gpu):
                raise ctx.fail(f"policies[{k}]", f"{json.dumps(name)} is not a policy there: "
                               f"{kind}, which takes {KIND_POLICIES[gpu]}; put other kinds of "
                               "platform in another sweep file")
        for k, mode in enumerate(spec.backfill):
            if gpu and mode not in GPU_BACKFILLING or not gpu and mode == "greedy":
                allowed = ", ".join(GPU_BACKFILLING) if gpu else "none, easy, easy_first, " \
                    "conservative"
                raise ctx.fail(f"backfill[{k}]", f"{json.dumps(mode)} does not apply: {kind}; "
                               f"choose among {allowed}")


def _policies(spec: SweepSpec) -> list[str]:
    """The policy axis, with ``all-pairs`` (``all-gpu-pairs``) expanded and repeats dropped
    (first one kept)."""
    names: list[str] = []
    every = {ALL_PAIRS_NAME: ALL_PAIRS, ALL_GPU_PAIRS_NAME: tuple(gpu_pairs())}
    for name in spec.policies:
        for expanded in every.get(name, (name,)):
            if expanded not in names:
                names.append(expanded)
    return names


def _axes(spec: SweepSpec) -> list[list]:
    return [_policies(spec), list(spec.backfill), list(spec.decision),
            [os.path.abspath(p) for p in spec.platforms], [os.path.abspath(t) for t in spec.traces],
            list(spec.load_factors), list(spec.seeds)]


def grid_size(spec: SweepSpec) -> int:
    """The number of runs in the full grid."""
    size = 1
    for axis in _axes(spec):
        size *= len(axis)
    return size


def expand(spec: SweepSpec) -> list[RunSpec]:
    """The sweep's runs, in grid order (a sample keeps grid order too)."""
    fixed = dict(nb_jobs=spec.nb_jobs, start_index=spec.start_index, conventions=spec.conventions,
                 contention=spec.contention, walltime_kill=spec.walltime_kill, strict=spec.strict)
    throughputs = os.path.abspath(spec.throughputs) if spec.throughputs is not None else None
    types = (os.path.abspath(spec.accelerator_types) if spec.accelerator_types is not None
             else None)
    runs = [RunSpec(p, b, d, pl, t, float(lf), s, **fixed,
                    throughputs=throughputs if is_gavel_trace(spec, t) else None,
                    accelerator_types=types if pl.lower().endswith(".csv") else None)
            for p, b, d, pl, t, lf, s in itertools.product(*_axes(spec))]
    if spec.sample is not None:
        chosen = sorted(random.Random(spec.sample.seed).sample(range(len(runs)), spec.sample.size))
        runs = [runs[i] for i in chosen]
    return runs
