"""The SLA comparison's feasibility gate (benchmarks/sla_gate.py): the burst process keeps each
tenant's mean rate, the shipped bursty spec is the gate's 6:0.4:0.1 candidate, the gate's rule on
constructed figures, burstiness measured on streams, and one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import compare_sla, sla_gate, sla_protocol
from hdrm.errors import ConfigError
from hdrm.workload.inference import generate_inference


def test_burst_rates_keep_the_mean_rate():
    # mean 2000/s, 20 % of the time in bursts 6x the calm rate: calm 1000, burst 6000
    # (1000 x 0.4 + 6000 x 0.1) / 0.5 = 2000
    calm, peak = sla_gate.Burst(6.0, 0.4, 0.1).rates(2000.0)
    assert (calm, peak) == pytest.approx((1000.0, 6000.0))
    calm, peak = sla_gate.Burst(8.0, 0.4, 0.1).rates(120.0)  # 120 x 0.5 / 1.2 = 50
    assert (calm, peak) == pytest.approx((50.0, 400.0))


def test_bursty_spec_makes_every_tenant_an_mmpp_of_its_mean_rate():
    spec = sla_protocol.load_default_spec()
    bursty = sla_gate.bursty_spec(spec, sla_gate.Burst(6.0, 0.4, 0.1))
    for old, new in zip(spec.tenants, bursty.tenants):
        assert new.arrival.mean_dwell_s == (0.4, 0.1)
        assert new.arrival.rates_per_s[1] == pytest.approx(6 * new.arrival.rates_per_s[0])
        assert new.arrival.mean_rate_per_s == pytest.approx(old.arrival.mean_rate_per_s)
        assert (new.name, new.model, new.batch, new.share) == (old.name, old.model, old.batch,
                                                               old.share)


def test_the_shipped_bursty_spec_is_the_gates_candidate():
    shipped = sla_protocol.scenario("bursty").spec()
    made = sla_gate.bursty_spec(sla_protocol.load_default_spec(), sla_gate.Burst(6.0, 0.4, 0.1))
    assert [t.name for t in shipped.tenants] == [t.name for t in made.tenants]
    for a, b in zip(shipped.tenants, made.tenants):
        assert a.arrival.rates_per_s == pytest.approx(b.arrival.rates_per_s)
        assert a.arrival.mean_dwell_s == b.arrival.mean_dwell_s
        assert (a.model, a.batch, a.share, a.sla_ms) == (b.model, b.batch, b.share, b.sla_ms)


def test_bursts_raise_the_interarrival_cv_above_poissons():
    spec = sla_protocol.load_default_spec()
    busiest = sla_gate.busiest(spec)
    assert spec.tenants[busiest].name == "vision"  # 2000/s, as ads's mean; the first wins
    poisson = generate_inference(spec, 101, 20_000)
    bursty = generate_inference(sla_protocol.scenario("bursty").spec(), 101, 20_000)
    assert sla_gate.interarrival_cv(poisson, busiest) == pytest.approx(1.0, abs=0.05)
    assert sla_gate.interarrival_cv(bursty, busiest) > 1.25


@pytest.mark.parametrize("reference, heuristic, energy, passed", [
    ((90.0, 91.0, 92.0), (80.0, 84.0, 82.0), 0.21, True),    # +8, +7, +10; 0.21 = 1.05 x 0.20
    ((90.0, 91.0, 92.0), (80.0, 84.0, 82.0), 0.2101, False),  # energy above 1.05 x
    ((88.0, 88.0, 88.0), (81.0, 81.0, 81.1), 0.20, False),    # mean gap 6.97 <= 7
    ((99.0, 90.0, 99.0), (80.0, 85.5, 80.0), 0.20, False),    # mean +14.2, one seed +4.5
])
def test_gate_needs_a_clear_mean_gap_a_five_point_gap_per_seed_and_the_energy_cap(
        reference, heuristic, energy, passed):
    assert sla_gate.gate_passed(reference, heuristic, energy, 0.20) is passed


def _cell(best: float, ref: float, seed_offset: float) -> dict:
    figures = {"energy_per_request_j": 0.2, "utilisation": 0.93}
    cell = {pair: {**figures, "sla_satisfaction": 0.5} for pair in sla_protocol.HEURISTICS}
    cell["sla_class-high_gflops"] = {**figures, "sla_satisfaction": best + seed_offset}
    cell[compare_sla.REFERENCE] = {**figures, "sla_satisfaction": ref + seed_offset}
    return {**cell, "offered": 0.94, "cv": 1.4}


def test_gate_row_names_the_best_heuristic_and_the_gap():
    row = sla_gate.gate_row(1.2, [_cell(0.76, 0.91, 0.0), _cell(0.76, 0.91, 0.02)])
    assert row["best heuristic name"] == "sla_class-high_gflops"
    assert row["best heuristic"] == pytest.approx(77.0)
    assert row["reference"] == pytest.approx(92.0)
    assert row["reference - best heuristic"] == pytest.approx(15.0)
    assert row["gate passed"] is True
    assert row["best heuristic utilisation"] == pytest.approx(0.93)
    assert "gap +15.00; gate passed" in sla_gate.line(row)
    json.dumps(row)


@pytest.mark.parametrize("text", ["6:0.4", "6:0.4:0", "0.5:0.4:0.1", "a:b:c", "6:inf:0.1"])
def test_a_bad_burst_is_a_one_line_error(text):
    with pytest.raises(ConfigError, match=r"--burst .*: expected RATIO:CALM_S:BURST_S, three "
                                          r"positive numbers with RATIO >= 1 \(e.g. 8:0.4:0.1\)"):
        sla_gate.parse_burst(text)


def test_bad_factors_are_a_one_line_error(capsys):
    assert sla_gate.factors_of("1.2, 1.6") == [1.2, 1.6]
    assert sla_gate.main(["--factors", "1.2,x"]) == 2
    assert "--factors '1.2,x': expected positive numbers separated by commas" in \
        capsys.readouterr().err
    assert sla_gate.main(["--burst", "6"]) == 2


def test_a_short_gate_run_measures_every_heuristic_and_the_reference(tmp_path, capsys):
    out = tmp_path / "gate.json"
    assert sla_gate.main(["--burst", "6:0.4:0.1", "--factors", "1.2", "--seeds", "1",
                          "--requests", "400", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 1 and rows[0]["factor"] == 1.2
    sla = rows[0]["SLA satisfaction (%)"]
    assert set(sla) == {*sla_protocol.HEURISTICS, compare_sla.REFERENCE}
    assert all(0 <= v <= 100 for v in sla.values())
    assert rows[0]["best heuristic"] == max(sla[h] for h in sla_protocol.HEURISTICS)
    assert np.isfinite(rows[0]["offered load"])
    assert "factor 1.2: offered" in capsys.readouterr().out
