"""Multi-tenant DNN inference workloads: a tenant spec in, requests and a tenants table out.

A spec (JSON) lists tenants; each serves one model (:data:`~hdrm.workload.inference_models.MODELS`)
with an arrival process and a batch size::

    {"requests": 100000, "seed": 1,
     "tenants": {
       "vision": {"model": "resnet50", "arrival": {"process": "poisson", "rate_per_s": 1500}},
       "ads":    {"model": "dlrm", "batch": 256, "share": 2,
                  "arrival": {"process": "mmpp", "rates_per_s": [1000, 8000],
                              "mean_dwell_s": [1.0, 0.25]}}}}

``requests`` (the total, across tenants) or ``duration_s`` bounds the workload. Arrival
processes: ``poisson`` (``rate_per_s``); ``mmpp``, a Markov-modulated Poisson process for
bursts (``rates_per_s`` per state, ``mean_dwell_s`` per state; states visited in turn, each for
an exponential time of that mean); ``trace``, a Poisson process whose rate follows a rate trace
file (``file``, relative to the spec; :mod:`hdrm.workload.rate_trace`). A tenant may set
``sla_ms`` (default: its model's MLPerf target) and ``share`` (its weight in fair sharing,
default 1).

Each request is a one-core ``parallel_homogeneous`` job (work and bandwidth from the model
table), its user id the tenant's index; :func:`tenants_document` is the tenants JSON that
``hdrm replay --tenants`` reads (one SLA class per model and target, most urgent first). The same
spec and seed give the same requests.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hdrm.errors import ConfigError
from hdrm.workload.inference_models import MODELS, REFERENCE_CORE_GFLOPS, DnnModel
from hdrm.workload.job import PROFILE_PARALLEL_HOMOGENEOUS, Job, Workload
from hdrm.workload.rate_trace import RateTrace, read_rate_trace
from hdrm.workload.tenants import Sla, Tenant, TenantSpec, parse_sla

logger = logging.getLogger(__name__)

#: Keys of a spec, of a tenant and of each arrival process.
SPEC_KEYS = ("requests", "duration_s", "seed", "tenants")
TENANT_KEYS = ("model", "arrival", "batch", "share", "sla_ms")
ARRIVAL_KEYS = {"poisson": ("process", "rate_per_s"),
                "mmpp": ("process", "rates_per_s", "mean_dwell_s"),
                "trace": ("process", "file")}


@dataclass(frozen=True)
class Arrival:
    """An arrival process: ``rates_per_s`` per state and ``mean_dwell_s`` per state (one state
    with an infinite dwell: Poisson)."""

    rates_per_s: tuple[float, ...]
    mean_dwell_s: tuple[float, ...] = (math.inf,)

    @property
    def mean_rate_per_s(self) -> float:
        """The long-run arrival rate: the rates weighted by the time spent in each state."""
        if len(self.rates_per_s) == 1:
            return self.rates_per_s[0]
        return float(np.dot(self.rates_per_s, self.mean_dwell_s) / sum(self.mean_dwell_s))

    def times(self, duration_s: float, rng: np.random.Generator) -> np.ndarray:
        """Sorted arrival times in ``[0, duration_s)``."""
        if len(self.rates_per_s) == 1:
            return _poisson(self.rates_per_s[0], 0.0, duration_s, rng)
        parts, t, state = [], 0.0, 0
        while t < duration_s:
            end = min(duration_s, t + rng.exponential(self.mean_dwell_s[state]))
            parts.append(_poisson(self.rates_per_s[state], t, end, rng))
            t, state = end, (state + 1) % len(self.rates_per_s)
        return np.concatenate(parts)


def _poisson(rate: float, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """A Poisson process of ``rate`` on ``[start, end)``: a Poisson count, uniform sorted times."""
    count = rng.poisson(rate * (end - start))
    return np.sort(rng.uniform(start, end, count))


@dataclass(frozen=True)
class InferenceTenant:
    """One tenant of a spec: its model, batch, arrivals, SLA target and share."""

    name: str
    model: DnnModel
    batch: int
    arrival: Arrival | RateTrace
    sla_ms: float
    share: float = 1.0


@dataclass(frozen=True)
class InferenceSpec:
    """A parsed spec: tenants, and the bound (``requests`` or ``duration_s``), and the seed."""

    tenants: tuple[InferenceTenant, ...]
    requests: int = 0
    duration_s: float = 0.0
    seed: int = 0
    where: str = "<spec>"


def load_spec(path: str | Path) -> InferenceSpec:
    """Read a tenant spec JSON file.

    Raises:
        ConfigError: a missing or malformed file; one line naming the file, the key, the value
            and the fix.
    """
    import json

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such tenant spec; give a JSON file such as "
                          "hdrm/data/inference_tenants.json") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file ({exc})") from None
    return parse_spec(data, str(path), Path(path).parent)


def parse_spec(data: Any, where: str = "<spec>", base: Path = Path(".")) -> InferenceSpec:
    """An :class:`InferenceSpec` from a parsed JSON object (see the module docstring); rate
    trace files are relative to ``base``."""
    _check_keys(data, SPEC_KEYS, where, "", "a JSON object")
    if ("requests" in data) == ("duration_s" in data):
        raise ConfigError(f"{where}: give exactly one of 'requests' (a total) or 'duration_s'")
    tenants = data.get("tenants")
    if not isinstance(tenants, dict) or not tenants:
        raise ConfigError(f"{where}, key 'tenants': expected a non-empty object name -> tenant, "
                          f"got {tenants!r}")
    parsed = tuple(_tenant(name, entry, where, base) for name, entry in tenants.items())
    requests = _int(data.get("requests", 0), f"{where}, key 'requests'", 0)
    duration = _positive(data["duration_s"], f"{where}, key 'duration_s'") \
        if "duration_s" in data else 0.0
    seed = _int(data.get("seed", 0), f"{where}, key 'seed'", 0)
    return InferenceSpec(parsed, requests, duration, seed, where)


def _tenant(name: str, entry: Any, where: str, base: Path) -> InferenceTenant:
    key = f"tenants.{name}"
    _check_keys(entry, TENANT_KEYS, where, key, 'an object such as {"model": "bert", ...}')
    model_name = entry.get("model")
    if model_name not in MODELS:
        raise ConfigError(f"{where}, key '{key}.model': unknown model {model_name!r}; choose "
                          f"one of {', '.join(MODELS)}")
    model = MODELS[model_name]
    batch = _int(entry.get("batch", model.default_batch), f"{where}, key '{key}.batch'", 1)
    sla_ms = _positive(entry.get("sla_ms", model.sla_ms), f"{where}, key '{key}.sla_ms'")
    share = _positive(entry.get("share", 1.0), f"{where}, key '{key}.share'")
    if "arrival" not in entry:
        raise ConfigError(f"{where}, key '{key}': no 'arrival'; add e.g. "
                          '{"process": "poisson", "rate_per_s": 100}')
    arrival = _arrival(entry["arrival"], where, f"{key}.arrival", base)
    return InferenceTenant(name, model, batch, arrival, sla_ms, share)


def _arrival(entry: Any, where: str, key: str, base: Path) -> Arrival | RateTrace:
    process = entry.get("process") if isinstance(entry, dict) else None
    if process not in ARRIVAL_KEYS:
        raise ConfigError(f"{where}, key '{key}.process': unknown process {process!r}; choose "
                          f"one of {', '.join(ARRIVAL_KEYS)}")
    _check_keys(entry, ARRIVAL_KEYS[process], where, key, "an object")
    if process == "poisson":
        return Arrival((_positive(entry.get("rate_per_s"), f"{where}, key '{key}.rate_per_s'"),))
    if process == "trace":
        file = entry.get("file")
        if not isinstance(file, str) or not file:
            raise ConfigError(f"{where}, key '{key}.file': expected the path of a rate trace "
                              f"CSV (time_s,rate_per_s), got {file!r}")
        return read_rate_trace(base / file, f"{where}, key '{key}.file'")
    rates = _list(entry.get("rates_per_s"), f"{where}, key '{key}.rates_per_s'")
    dwell = _list(entry.get("mean_dwell_s"), f"{where}, key '{key}.mean_dwell_s'")
    if len(rates) != len(dwell) or len(rates) < 2:
        raise ConfigError(f"{where}, key '{key}': rates_per_s and mean_dwell_s need one value "
                          f"per state, at least 2 states (got {len(rates)} and {len(dwell)})")
    return Arrival(tuple(rates), tuple(dwell))


def _check_keys(entry: Any, allowed: tuple[str, ...], where: str, key: str, what: str) -> None:
    place = f"{where}, key '{key}'" if key else where
    if not isinstance(entry, dict):
        raise ConfigError(f"{place}: expected {what}, got {entry!r}")
    for name in entry:
        if name not in allowed:
            full = f"{key}.{name}" if key else name
            raise ConfigError(f"{where}, key '{full}': unknown key; choose among "
                              f"{', '.join(allowed)}")


def _positive(value: Any, where: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (ok and math.isfinite(value) and value > 0):
        raise ConfigError(f"{where}: expected a positive number, got {value!r}")
    return float(value)


def _int(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


def _list(value: Any, where: str) -> list[float]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of positive numbers, got {value!r}")
    return [_positive(v, where) for v in value]


def arrivals(spec: InferenceSpec, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times (sorted) and tenant indices of the spec's requests.

    With ``requests``, the processes run long enough for that many requests (the expected time
    plus 10%, doubled until enough arrived) and the first ``requests`` arrivals are kept.
    """
    seed = spec.seed if seed is None else seed
    if spec.duration_s:
        return _merged(spec, spec.duration_s, seed)
    total_rate = sum(t.arrival.mean_rate_per_s for t in spec.tenants)
    duration = 1.1 * spec.requests / total_rate
    while True:
        times, owners = _merged(spec, duration, seed)
        if len(times) >= spec.requests:
            return times[:spec.requests], owners[:spec.requests]
        duration *= 2


def _merged(spec: InferenceSpec, duration_s: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    streams = [t.arrival.times(duration_s, rng) for t in spec.tenants]
    times = np.concatenate(streams)
    owners = np.concatenate([np.full(len(s), i, dtype=np.int32) for i, s in enumerate(streams)])
    order = np.argsort(times, kind="stable")
    return times[order], owners[order]


def generate_inference(spec: InferenceSpec, seed: int | None = None,
                       requests: int | None = None) -> Workload:
    """The requests of ``spec`` as a workload of one-core jobs (ids 0, 1, ... in arrival order).

    Args:
        spec: the tenants and the bound.
        seed: overrides the spec's seed.
        requests: overrides the spec's bound with a number of requests.
    """
    if requests is not None:
        spec = InferenceSpec(spec.tenants, requests, 0.0, spec.seed, spec.where)
    times, owners = arrivals(spec, seed)
    return requests_workload(spec, times, owners)


def requests_workload(spec: InferenceSpec, times: np.ndarray, owners: np.ndarray) -> Workload:
    """The workload of requests arriving at ``times`` (sorted, s) from tenants ``owners``
    (indices into ``spec.tenants``): request ``i`` is job ``i``, user ``owners[i]``."""
    kinds = [(f"{t.model.name}_b{t.batch}", t.model.ops_gflop(t.batch),
              t.model.mem_bw_gbps(t.batch)) for t in spec.tenants]
    jobs = []
    phomo = PROFILE_PARALLEL_HOMOGENEOUS
    for i, (submit, owner) in enumerate(zip(np.asarray(times, dtype=np.float64).tolist(),
                                            np.asarray(owners).tolist())):
        profile, ops, bw = kinds[owner]
        run_time = ops / REFERENCE_CORE_GFLOPS
        jobs.append(Job(i, i, submit, 1, math.inf, run_time, 0.0, bw, ops, ops, submit,
                        profile, phomo, owner))
    logger.info("%d requests of %d tenants over %.3f s", len(jobs), len(spec.tenants),
                jobs[-1].submit_s if jobs else 0.0)
    return Workload(jobs, "inference", spec.where, {"generator": "hdrm inference"}, {}, 1)


def tenants_document(spec: InferenceSpec) -> dict[str, Any]:
    """The tenants JSON (:mod:`hdrm.workload.tenant_files`) of a generated workload: tenant
    ``i`` is user ``i``; one SLA class per (model, target), the shortest target first."""
    classes = sorted({(t.sla_ms, t.model.name) for t in spec.tenants})
    names = {key: f"{key[1]}_{key[0]:g}ms" for key in classes}
    return {
        "by": "user",
        "map": {f"user:{i}": t.name for i, t in enumerate(spec.tenants)},
        "sla": "none",
        "classes": {names[key]: f"latency:{key[0] / 1000:g}" for key in classes},
        "tenants": {t.name: {"share": t.share, "class": names[(t.sla_ms, t.model.name)]}
                    for t in spec.tenants},
    }


def tenant_spec(spec: InferenceSpec) -> TenantSpec:
    """The :class:`~hdrm.workload.tenants.TenantSpec` of :func:`tenants_document` (what
    ``hdrm replay --tenants DIR/tenants.json`` reads), without a file."""
    doc = tenants_document(spec)
    classes = {name: parse_sla(text, f"{spec.where}, class {name}")
               for name, text in doc["classes"].items()}
    tenants = {name: Tenant(name, entry["share"], None, entry["class"])
               for name, entry in doc["tenants"].items()}
    return TenantSpec("user", doc["map"], {}, tenants, Sla("none"), classes, spec.where)
