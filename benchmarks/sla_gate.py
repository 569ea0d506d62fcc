"""The SLA comparison's feasibility gate: can any scenario level reach issue 21's target?

Usage::

    python benchmarks/sla_gate.py [--spec FILE] [--burst RATIO:CALM_S:BURST_S]
        [--factors 1.1,1.3] [--seeds 3] [--requests 20000] [--json OUT.json]

Before a learner is trained for a scenario level, this measures what the learner competes with:
the ten heuristics of :data:`~benchmarks.sla_protocol.HEURISTICS` and the reference of
:mod:`benchmarks.compare_sla` (the first request of the ``laxity`` window: least laxity among the
requests that can still meet their target, the lost ones last; a policy the ``job_pick``
learner's action space expresses by always picking the window's first entry), on the seeded test
streams (:data:`~benchmarks.sla_protocol.TEST_SEEDS`) of the spec at each load factor.

A level passes the gate (:func:`gate_passed`) when the reference beats the best heuristic by
more than :data:`GATE_POINTS` points of SLA satisfaction in the mean and by more than the
target's 5 points on every test stream, with energy per request within the target's 5%; only
then is a learner worth training there (the ``job_pick`` learner met 3.8 points less than its
window's first request in the shipped overload level, so a gap of barely 5 leaves it nothing).

``--burst RATIO:CALM_S:BURST_S`` (:func:`bursty_spec`) turns every tenant of the spec into a
two-state Markov-modulated Poisson process with the same mean rate: a calm state of mean dwell
``CALM_S`` and a burst state of mean dwell ``BURST_S`` whose rate is ``RATIO`` x the calm one.
Each row also states the offered load (run times alone over 16 partitions x the arrival span),
the best heuristic's utilisation (what defines a level) and the interarrival-time coefficient of
variation of the busiest tenant (1 for Poisson; the burstiness).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cli_lists, compare_sla  # noqa: E402
from benchmarks import sla_protocol as sp  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.workload.inference import Arrival, InferenceSpec, generate_inference  # noqa: E402
from hdrm.workload.job import Workload  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

#: The reference must beat the best heuristic by more than this (mean SLA points) to pass.
GATE_POINTS = 7.0


@dataclasses.dataclass(frozen=True)
class Burst:
    """A two-state burst process: the burst rate is ``ratio`` x the calm rate; mean dwells."""

    ratio: float
    calm_s: float
    burst_s: float

    def rates(self, mean_per_s: float) -> tuple[float, float]:
        """The calm and burst rates whose time-weighted mean is ``mean_per_s``."""
        calm = mean_per_s * (self.calm_s + self.burst_s) / (self.calm_s
                                                            + self.ratio * self.burst_s)
        return calm, self.ratio * calm


def parse_burst(text: str) -> Burst:
    """``RATIO:CALM_S:BURST_S`` (e.g. ``8:0.4:0.1``) as a :class:`Burst`.

    Raises:
        ConfigError: not three positive numbers, or a ratio below 1.
    """
    parts = text.split(":")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 3 or not all(math.isfinite(v) and v > 0 for v in values) \
            or values[0] < 1:
        raise ConfigError(f"--burst {text!r}: expected RATIO:CALM_S:BURST_S, three positive "
                          "numbers with RATIO >= 1 (e.g. 8:0.4:0.1)")
    return Burst(*values)


def bursty_spec(spec: InferenceSpec, burst: Burst) -> InferenceSpec:
    """``spec`` with every tenant's arrivals a two-state MMPP of ``burst`` at its mean rate."""
    tenants = []
    for t in spec.tenants:
        calm, peak = burst.rates(t.arrival.mean_rate_per_s)
        arrival = Arrival((calm, peak), (burst.calm_s, burst.burst_s))
        tenants.append(dataclasses.replace(t, arrival=arrival))
    return dataclasses.replace(spec, tenants=tuple(tenants))


def interarrival_cv(workload: Workload, tenant: int) -> float:
    """Coefficient of variation of the interarrival times of ``tenant``'s requests."""
    times = np.array([j.submit_s for j in workload.jobs if j.user_id == tenant])
    gaps = np.diff(times)
    return float(np.std(gaps) / np.mean(gaps)) if len(gaps) > 1 else math.nan


def busiest(spec: InferenceSpec) -> int:
    """The index of the tenant with the highest mean arrival rate."""
    return int(np.argmax([t.arrival.mean_rate_per_s for t in spec.tenants]))


def measure(spec: InferenceSpec, factor: float, seed: int, requests: int, work: Path
            ) -> dict[str, Any]:
    """Every heuristic and the reference on the test stream of ``seed`` at ``factor``."""
    scaled = sp.scaled_spec(spec, factor)
    wl = generate_inference(scaled, seed, requests)
    runs: dict[str, Any] = {pair: compare_sla.heuristic_run(pair, scaled, wl)
                            for pair in sp.HEURISTICS}
    runs[compare_sla.REFERENCE] = compare_sla.reference_run(scaled, wl, work / f"{seed}")
    runs["offered"] = sp.offered_load(wl, 16)
    runs["cv"] = interarrival_cv(wl, busiest(spec))
    return runs


def gate_passed(reference: Sequence[float], heuristic: Sequence[float], ref_energy: float,
                heuristic_energy: float) -> bool:
    """The gate on per-seed SLA satisfactions (%) of the reference and the best heuristic."""
    gaps = np.subtract(reference, heuristic)
    return bool(float(np.mean(gaps)) > GATE_POINTS
                and all(g > compare_sla.TARGET_POINTS for g in gaps)
                and ref_energy <= compare_sla.ENERGY_FACTOR * heuristic_energy)


def gate_row(factor: float, cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The gate's row of one factor from its per-seed cells."""
    cols = [*sp.HEURISTICS, compare_sla.REFERENCE]
    sla = {c: [100 * cell[c]["sla_satisfaction"] for cell in cells] for c in cols}
    energy = {c: float(np.mean([cell[c]["energy_per_request_j"] for cell in cells]))
              for c in cols}
    mean = {c: float(np.mean(v)) for c, v in sla.items()}
    h = compare_sla.best(sp.HEURISTICS, mean, energy)
    ref = compare_sla.REFERENCE
    return {"factor": factor,
            "offered load": float(np.mean([cell["offered"] for cell in cells])),
            "busiest tenant interarrival CV": float(np.mean([cell["cv"] for cell in cells])),
            "best heuristic name": h, "best heuristic": mean[h],
            "best heuristic energy (J)": energy[h],
            "best heuristic utilisation": float(np.mean([cell[h]["utilisation"]
                                                         for cell in cells])),
            "reference": mean[ref], "reference energy (J)": energy[ref],
            "reference - best heuristic": mean[ref] - mean[h],
            "gate passed": gate_passed(sla[ref], sla[h], energy[ref], energy[h]),
            "SLA satisfaction (%)": mean}


def run_gate(spec: InferenceSpec, factors: Sequence[float], seeds: Sequence[int],
             requests: int, show: bool = False) -> list[dict[str, Any]]:
    """One gate row per factor (the cells run one at a time, in this process); ``show``:
    print each row's :func:`line` as it is done."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="sla_gate_") as tmp:
        for factor in factors:
            cells = [measure(spec, factor, seed, requests, Path(tmp) / f"{factor:g}")
                     for seed in seeds]
            rows.append(gate_row(factor, cells))
            if show:
                print(line(rows[-1]), flush=True)
    return rows


def line(row: dict[str, Any]) -> str:
    """One line of the gate's table."""
    return (f"factor {row['factor']:g}: offered {row['offered load']:.3f}, CV "
            f"{row['busiest tenant interarrival CV']:.2f}; best heuristic "
            f"{row['best heuristic name']} {row['best heuristic']:.2f} % "
            f"({row['best heuristic energy (J)']:.4f} J, utilisation "
            f"{row['best heuristic utilisation']:.3f}); reference {row['reference']:.2f} % "
            f"({row['reference energy (J)']:.4f} J); gap "
            f"{row['reference - best heuristic']:+.2f}; gate "
            f"{'passed' if row['gate passed'] else 'failed'}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--spec", default=str(sp.SPEC), help="tenant spec (default: the shipped one)")
    p.add_argument("--burst", default="", help="RATIO:CALM_S:BURST_S: every tenant bursty")
    p.add_argument("--factors", default="1.1,1.3", help="load factors on the arrival rates")
    p.add_argument("--seeds", type=cli.count(1), default=len(sp.TEST_SEEDS))
    p.add_argument("--requests", type=cli.count(1), default=sp.TEST_REQUESTS)
    p.add_argument("--json", help="write the rows to this file")
    return p.parse_args(argv)


def factors_of(text: str) -> list[float]:
    """``--factors``: positive numbers separated by commas."""
    return cli_lists.floats(text, "--factors", "1.1,1.3", positive=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    a = parse(argv)
    try:
        factors = factors_of(a.factors)
        if a.seeds < 1 or a.requests < 2:
            raise ConfigError(f"--seeds {a.seeds} / --requests {a.requests}: expected at least "
                              "1 test stream of at least 2 requests")
        spec = sp.load_default_spec(a.spec)
        if a.burst:
            spec = bursty_spec(spec, parse_burst(a.burst))
        seeds = tuple(sp.TEST_SEEDS[0] + i for i in range(a.seeds))
        rows = run_gate(spec, factors, seeds, a.requests, show=True)
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.json:
        Path(a.json).write_text(json.dumps({"spec": a.spec, "burst": a.burst, "rows": rows},
                                           indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
