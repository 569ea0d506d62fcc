"""The SLA comparison's protocol: load levels, seeded request streams, scenarios and metrics.

The scenario is the multi-tenant DNN inference one of ``hdrm workload inference``
(``hdrm/data/inference_tenants.json`` on ``hdrm/data/inference_platform.json``: 16 accelerator
partitions, 4 per accelerator sharing its HBM bandwidth, ``hdeeprm`` contention). A load level
multiplies every tenant's arrival rates by a factor; the factors were calibrated once on the
test streams by the utilisation the best heuristic measures (core-seconds over 16 cores x the
makespan), and each level states the band that utilisation must fall in (checked on every
comparison run, :func:`in_band`):

``low``
    factor 0.6: utilisation 0.40-0.60; every heuristic meets nearly every target.
``near saturation``
    factor 1.1: utilisation 0.88-0.97; the offered load (run times alone) is just under the
    16 partitions' capacity, contention makes up the rest.
``overload``
    factor 1.3: utilisation >= 0.97 and an offered load above capacity (the run times alone of
    the requests exceed 16 x their arrival span): the backlog grows for the whole stream.

That is the ``poisson`` scenario (every tenant Poisson but ``ads``, an MMPP). The ``bursty``
scenario (:data:`SCENARIOS`, ``hdrm/data/inference_tenants_bursty.json``) gives every tenant
the burst shape of the shipped ``ads`` tenant (a two-state MMPP whose burst rate is 6 x its calm
rate, 20 % of the time in bursts) at the tenant's shipped mean rate, with dwells 5 x shorter
(0.4 s calm, 0.1 s burst, so a test stream sees several bursts per tenant): a ResNet-50 burst
(6,000 requests/s at factor 1, 15.6 partitions of work) overloads the platform for a moment even
when the mean load does not. Its levels (:data:`BURSTY_LEVELS`), measured by
``benchmarks/sla_gate.py`` with the same bands: ``low`` 0.6, ``near saturation`` 1.2 (the
offered load of the Poisson level, 0.94), ``overload`` 1.3 (the smallest factor, in steps of
0.1, whose best heuristic is in the overload band).

Streams are seeded: the test streams use :data:`TEST_SEEDS` (one per repetition), training
uses :data:`TRAIN_SEED`; the two sets are disjoint (:func:`check_disjoint`), so no request
stream is seen in training and in testing. A test stream has :data:`TEST_REQUESTS` requests
(long enough for the overload's backlog to build up: at 1.3 it grows for ~3 s); the
training stream :data:`TRAIN_REQUESTS`, from which episodes of :data:`TRAIN_EPISODE_JOBS`
requests start at random.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hdrm.errors import ConfigError  # noqa: E402
from hdrm.results.sla import SlaReport, report_from_outcomes  # noqa: E402
from hdrm.workload.batsim_json import write_batsim_json  # noqa: E402
from hdrm.workload.inference import (Arrival, InferenceSpec, generate_inference,  # noqa: E402
                                     load_spec, tenant_spec, tenants_document)
from hdrm.workload.job import Workload  # noqa: E402
from hdrm.workload.rate_trace import RateTrace  # noqa: E402
from hdrm.workload.tenants import build_tenants  # noqa: E402

DATA = ROOT / "hdrm" / "data"
SPEC = DATA / "inference_tenants.json"
PLATFORM = DATA / "inference_platform.json"
MODELS_DIR = ROOT / "models" / "sla"
CONTENTION = "hdeeprm"
#: Test stream seeds (one repetition each) and the training stream's seed: disjoint.
TEST_SEEDS: tuple[int, ...] = (101, 102, 103)
TRAIN_SEED = 7
TEST_REQUESTS = 20_000
TRAIN_REQUESTS = 60_000
TRAIN_EPISODE_JOBS = 4_096
#: ``--quick``: short streams (an end-to-end check, not a result).
QUICK_REQUESTS = 600
QUICK_TRAIN_REQUESTS = 1_500
QUICK_EPISODE_JOBS = 300
#: The request orders (the issue's five heuristics) and the accelerator choices the platform
#: supports: ``high_gflops`` packs requests on the first free partitions (all partitions are
#: equally fast, so it is also ``low_power``'s choice), ``high_mem_bw`` puts a request on the
#: accelerator with the most free memory bandwidth.
ORDERS = ("fcfs", "edf", "least_laxity", "fair_share", "sla_class")
ACCELERATOR_CHOICES = ("high_gflops", "high_mem_bw")
HEURISTICS = tuple(f"{o}-{c}" for o in ORDERS for c in ACCELERATOR_CHOICES)
#: Weight of the energy per request in ``sla_energy`` (per J): about 1 / the scenario's energy
#: per request (0.19-0.25 J), so 1% more energy per request costs about as much as 1 point of
#: SLA satisfaction, the exchange rate of the targets (5 points for at most 5% more energy).
SLA_ENERGY_WEIGHT_PER_J = 5.0


@dataclass(frozen=True)
class LoadLevel:
    """A load level: the factor on the arrival rates and the band of the best heuristic's
    utilisation that defines it (``offered_above``: the offered load alone must exceed it)."""

    name: str
    factor: float
    utilisation: tuple[float, float]
    offered_above: float = 0.0


LOAD_LEVELS: tuple[LoadLevel, ...] = (
    LoadLevel("low", 0.6, (0.40, 0.60)),
    LoadLevel("near saturation", 1.1, (0.88, 0.97)),
    LoadLevel("overload", 1.3, (0.97, 1.0), offered_above=1.0),
)


def level(name: str, levels: Sequence[LoadLevel] = LOAD_LEVELS) -> LoadLevel:
    """The load level called ``name`` among ``levels`` (default: the Poisson scenario's)."""
    for lv in levels:
        if lv.name == name:
            return lv
    names = ", ".join(lv.name for lv in levels)
    raise ConfigError(f"load level {name!r}: choose one of {names}")


@dataclass(frozen=True)
class Scenario:
    """A scenario of the comparison: its tenant spec, its load levels and its models' folder."""

    name: str
    spec_file: Path
    levels: tuple[LoadLevel, ...]
    models_dir: Path

    def spec(self) -> InferenceSpec:
        """The tenant spec."""
        return load_spec(self.spec_file)

    def level(self, name: str) -> LoadLevel:
        """The load level called ``name``."""
        return level(name, self.levels)


#: The bursty scenario (``--scenario bursty``): every tenant of the shipped spec a two-state
#: MMPP with the same mean rate (``hdrm/data/inference_tenants_bursty.json``); its levels'
#: factors calibrated, as the Poisson ones, by the best heuristic's utilisation (see
#: ``docs/results_sla_bursty.rst``).
BURSTY_LEVELS: tuple[LoadLevel, ...] = (
    LoadLevel("low", 0.6, (0.40, 0.60)),
    LoadLevel("near saturation", 1.2, (0.88, 0.97)),
    LoadLevel("overload", 1.3, (0.97, 1.0), offered_above=1.0),
)
SCENARIOS: dict[str, Scenario] = {
    "poisson": Scenario("poisson", SPEC, LOAD_LEVELS, MODELS_DIR),
    "bursty": Scenario("bursty", DATA / "inference_tenants_bursty.json", BURSTY_LEVELS,
                       ROOT / "models" / "sla_bursty"),
}


def scenario(name: str) -> Scenario:
    """The scenario called ``name`` (:data:`SCENARIOS`)."""
    if name not in SCENARIOS:
        raise ConfigError(f"scenario {name!r}: choose one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


def check_disjoint(train_seeds: Sequence[int], test_seeds: Sequence[int]) -> None:
    """Refuse a training seed that is also a test seed (the streams would overlap)."""
    common = sorted(set(train_seeds) & set(test_seeds))
    if common:
        raise ConfigError(f"seed {common[0]} is both a training and a test stream seed; "
                          "choose disjoint seeds")


def scaled_spec(spec: InferenceSpec, factor: float) -> InferenceSpec:
    """``spec`` with every tenant's arrival rates multiplied by ``factor``."""
    tenants = []
    for t in spec.tenants:
        rates = tuple(r * factor for r in t.arrival.rates_per_s)
        if isinstance(t.arrival, RateTrace):
            arrival: Arrival | RateTrace = dataclasses.replace(t.arrival, rates_per_s=rates)
        else:
            arrival = Arrival(rates, t.arrival.mean_dwell_s)
        tenants.append(dataclasses.replace(t, arrival=arrival))
    return dataclasses.replace(spec, tenants=tuple(tenants))


def stream(spec: InferenceSpec, lv: LoadLevel, seed: int, requests: int) -> Workload:
    """The seeded request stream of ``spec`` at load level ``lv``."""
    return generate_inference(scaled_spec(spec, lv.factor), seed, requests)


def write_scenario(folder: Path, spec: InferenceSpec, workload: Workload) -> tuple[Path, Path]:
    """Write ``workload.json`` and ``tenants.json`` (as ``hdrm workload inference`` does)."""
    folder.mkdir(parents=True, exist_ok=True)
    workload_file, tenants_file = folder / "workload.json", folder / "tenants.json"
    write_batsim_json(workload, workload_file)
    tenants_file.write_text(json.dumps(tenants_document(spec), indent=1) + "\n", encoding="utf-8")
    return workload_file, tenants_file


def offered_load(workload: Workload, nb_cores: int) -> float:
    """The requests' run times alone over ``nb_cores`` x their arrival span."""
    jobs = workload.jobs
    span = jobs[-1].submit_s - jobs[0].submit_s
    return math.fsum(j.run_time_s * j.res for j in jobs) / (nb_cores * span) if span > 0 else 0.0


def metrics(workload: Workload, outcomes: Sequence[Any], energy_j: float, nb_cores: int,
            spec: InferenceSpec) -> dict[str, float]:
    """The row figures of one run: SLA satisfaction, energy per request, Jain's index,
    tardiness, p99 latency and utilisation."""
    table = build_tenants(workload.jobs, tenant_spec(spec))
    report: SlaReport = report_from_outcomes(table, workload.jobs, outcomes)
    ran = [o for o in outcomes if o.start_s >= 0]
    latency = np.sort([o.finish_s - o.job.submit_s for o in ran])
    p99 = float(latency[math.ceil(0.99 * len(latency)) - 1]) if len(latency) else math.nan
    span = max(o.finish_s for o in ran) if ran else 0.0
    busy = math.fsum((o.finish_s - o.start_s) * o.job.res for o in ran)
    return {"sla_satisfaction": report.overall.sla_satisfaction,
            "energy_per_request_j": energy_j / len(workload),
            "jain_fairness": report.jain_fairness,
            "tardiness_mean_ms": 1000 * report.overall.tardiness_mean_s,
            "latency_p99_ms": 1000 * p99,
            "utilisation": busy / (nb_cores * span) if span > 0 else 0.0}


def in_band(lv: LoadLevel, utilisation: float, offered: float) -> bool:
    """Whether a measured utilisation (and offered load) is the one that defines ``lv``."""
    low, high = lv.utilisation
    return low <= utilisation <= high and offered > lv.offered_above


def load_default_spec(path: str | Path = SPEC) -> InferenceSpec:
    """The tenant spec of the scenario."""
    return load_spec(path)
