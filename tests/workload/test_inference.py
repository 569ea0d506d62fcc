"""Multi-tenant inference workloads: contention by hand, generator statistics, SLA metrics of a
small replay by hand, one-line errors for bad specs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hdrm.errors import ConfigError
from hdrm.platform.loader import load_platform
from hdrm.policies.pairs import resolve_policy
from hdrm.policies.sla_orders import bind_tenants
from hdrm.results.sla import report_from_outcomes
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.inference import (
    generate_inference,
    load_spec,
    parse_spec,
    requests_workload,
    tenant_spec,
)
from hdrm.workload.inference_models import MODELS
from hdrm.workload.tenants import build_tenants

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = ROOT / "hdrm" / "data" / "inference_platform.json"
SPEC = ROOT / "hdrm" / "data" / "inference_tenants.json"
RNNT_S = 1600.0 / 78_000.0  # rnnt, batch 8: 1,600 GFLOP on a 78,000 GFLOP/s core


def _spec(**tenants) -> dict:
    return {"duration_s": 1.0, "tenants": tenants}


def _poisson(model: str, rate: float = 10.0, **extra) -> dict:
    return {"model": model, "arrival": {"process": "poisson", "rate_per_s": rate}, **extra}


def _two_core_platform(tmp_path: Path, bw_gbps: float) -> Path:
    """One accelerator of 2 partitions (78,000 GFLOP/s, 62.5 W each) sharing ``bw_gbps``."""
    data = json.loads(PLATFORM.read_text())
    data["processor_types"]["a100_4part"].update(cores=2, mem_bw_gbps=bw_gbps, tdp_w=125)
    data["node_types"]["inference_server"]["processors"][0]["count"] = 1
    data["clusters"][0]["nodes"][0]["count"] = 1
    path = tmp_path / "two.json"
    path.write_text(json.dumps(data))
    return path


def _replay(platform: Path, spec, times, owners, policy="fcfs", contention="hdeeprm"):
    workload = requests_workload(spec, np.array(times), np.array(owners))
    table = build_tenants(workload.jobs, tenant_spec(spec))
    sim = Simulation(load_platform(platform), workload, SimulationConfig(contention=contention))
    result = sim.run(bind_tenants(resolve_policy(policy), table, sim.core))
    return workload, table, result


# --- the model table -------------------------------------------------------------------------

def test_model_table_derives_run_time_and_bandwidth_from_the_documented_figures():
    rnnt = MODELS["rnnt"]
    assert rnnt.ops_gflop(8) == pytest.approx(8 * 20.0 / 0.10)
    assert rnnt.run_time_s(8) == pytest.approx(RNNT_S)
    assert rnnt.mem_bw_gbps(8) == pytest.approx((14_400 + 8 * 10) / 1000 / RNNT_S)
    assert {m: MODELS[m].sla_ms for m in MODELS} == {
        "resnet50": 15, "bert": 130, "dlrm": 60, "rnnt": 1000}  # MLPerf Server targets


# --- contention, by hand ---------------------------------------------------------------------

def test_two_corunning_requests_slow_each_other_as_the_hdeeprm_model_says(tmp_path):
    # 2 x 705.9 GB/s > 1,000 GB/s: both partitions at 0.75 while both run.
    # A alone on [0, 10 ms): 10 ms of work done, 10.513 ms left; with B from 10 ms at 0.75
    # it needs 10.513 / 0.75 = 14.017 ms more: A ends at 24.017 ms; B has then done
    # 10.513 ms of work, has RNNT - 10.513 = 10 ms left alone: B ends at 34.017 ms.
    spec = parse_spec(_spec(s=_poisson("rnnt")))
    _, _, result = _replay(_two_core_platform(tmp_path, 1000), spec, [0.0, 0.010], [0, 0])
    left = RNNT_S - 0.010
    a_end = 0.010 + left / 0.75
    b_end = a_end + (RNNT_S - left)
    assert [o.finish_s for o in result.outcomes] == pytest.approx([a_end, b_end], rel=1e-12)
    assert sorted(c for o in result.outcomes for c in o.cores) == [0, 1]


def test_the_smooth_model_slows_them_by_the_square_root_of_the_oversubscription(tmp_path):
    spec = parse_spec(_spec(s=_poisson("rnnt")))
    _, _, result = _replay(_two_core_platform(tmp_path, 1000), spec, [0.0, 0.0], [0, 0],
                           contention="smooth")
    fraction = (2 * MODELS["rnnt"].mem_bw_gbps(8) / 1000) ** -0.5
    assert [o.finish_s for o in result.outcomes] == pytest.approx([RNNT_S / fraction] * 2,
                                                                   rel=1e-12)


def test_on_the_shipped_platform_two_memory_bound_requests_fit_and_three_contend():
    spec = parse_spec(_spec(s=_poisson("rnnt")))
    _, _, two = _replay(PLATFORM, spec, [0.0, 0.0], [0, 0])  # 1,411.8 <= 1,555 GB/s
    assert [o.finish_s for o in two.outcomes] == pytest.approx([RNNT_S] * 2, rel=1e-12)
    _, _, three = _replay(PLATFORM, spec, [0.0] * 3, [0] * 3)  # 2,117.7 > 1,555 GB/s
    assert {c // 4 for o in three.outcomes for c in o.cores} == {0}  # one accelerator
    assert [o.finish_s for o in three.outcomes] == pytest.approx([RNNT_S / 0.75] * 3, rel=1e-12)


# --- SLA metrics and energy of a small replay, by hand ---------------------------------------

def test_sla_satisfaction_tardiness_and_energy_of_a_small_replay(tmp_path):
    # Two BERT requests at 0 fill both partitions until 32.821 ms; a ResNet-50 request with a
    # 5 ms target arriving at 1 ms waits for them and misses (ends 32.821 + 2.598 ms); a second
    # one at 40 ms runs alone and meets it. No contention (28 + 28 GB/s).
    spec = parse_spec(_spec(a=_poisson("resnet50", sla_ms=5), b=_poisson("bert")))
    bert, resnet = MODELS["bert"].run_time_s(4), MODELS["resnet50"].run_time_s(8)
    workload, table, result = _replay(_two_core_platform(tmp_path, 1000), spec,
                                      [0.0, 0.0, 0.001, 0.040], [1, 1, 0, 0])
    finish = [o.finish_s for o in sorted(result.outcomes, key=lambda o: o.job.idx)]
    assert finish == pytest.approx([bert, bert, bert + resnet, 0.040 + resnet], rel=1e-12)
    report = report_from_outcomes(table, workload.jobs, result.outcomes)
    assert report.overall.sla_satisfaction == 0.75
    assert report.overall.tardiness_mean_s == pytest.approx((bert + resnet - 0.001 - 0.005) / 4)
    by_tenant = {name: m.sla_satisfaction for name, m in report.tenants.items()}
    assert by_tenant == {"a": 0.5, "b": 1.0}
    # 62.5 W running, 18.75 W idle on an awake accelerator, 3.125 W asleep
    energy = (bert * 125 + resnet * (62.5 + 18.75) + (0.040 - bert - resnet) * 6.25
              + resnet * (62.5 + 18.75))
    assert result.energy_j == pytest.approx(energy, rel=1e-9)


def test_edf_meets_more_latency_targets_than_fcfs_on_the_shipped_scenario():
    spec = load_spec(SPEC)
    workload = generate_inference(spec, requests=4000)
    table = build_tenants(workload.jobs, tenant_spec(spec))
    rates = {}
    for policy in ("fcfs", "edf"):
        sim = Simulation(load_platform(PLATFORM), workload, SimulationConfig())
        result = sim.run(bind_tenants(resolve_policy(policy), table, sim.core))
        rates[policy] = report_from_outcomes(table, workload.jobs,
                                             result.outcomes).overall.sla_satisfaction
    assert rates["edf"] > rates["fcfs"]


# --- generator statistics --------------------------------------------------------------------

def test_poisson_rate_over_many_seeds_is_the_rate_and_gaps_are_exponential():
    spec = parse_spec({"duration_s": 10.0, "tenants": {"t": _poisson("resnet50", 1000.0)}})
    counts, cvs = [], []
    for seed in range(40):
        times = [j.submit_s for j in generate_inference(spec, seed).jobs]
        counts.append(len(times))
        gaps = np.diff(times)
        cvs.append(gaps.std() / gaps.mean())
        assert times == sorted(times) and 0 <= times[0] and times[-1] < 10.0
    assert np.mean(counts) == pytest.approx(10_000, rel=0.01)  # sd of the mean: 0.16%
    assert np.std(counts) == pytest.approx(100, rel=0.35)  # Poisson: sd = sqrt(mean)
    assert np.mean(cvs) == pytest.approx(1.0, abs=0.02)


def test_mmpp_has_its_stationary_rate_and_is_burstier_than_poisson():
    arrival = {"process": "mmpp", "rates_per_s": [200.0, 2000.0], "mean_dwell_s": [1.0, 0.25]}
    spec = parse_spec({"duration_s": 50.0, "tenants": {"t": {"model": "dlrm",
                                                             "arrival": arrival}}})
    rate = (200 * 1.0 + 2000 * 0.25) / 1.25  # 560 requests/s
    counts, cvs = [], []
    for seed in range(20):
        times = np.array([j.submit_s for j in generate_inference(spec, seed).jobs])
        counts.append(len(times))
        gaps = np.diff(times)
        cvs.append(gaps.std() / gaps.mean())
    assert np.mean(counts) / 50.0 == pytest.approx(rate, rel=0.05)
    assert np.mean(cvs) > 1.2


def test_same_seed_same_requests_and_the_bound_in_requests_is_exact():
    spec = load_spec(SPEC)
    one, two = generate_inference(spec, requests=3000), generate_inference(spec, requests=3000)
    assert len(one) == 3000
    fields = [(j.submit_s, j.user_id, j.ops_gflop, j.mem_bw_gbps) for j in one.jobs]
    assert fields == [(j.submit_s, j.user_id, j.ops_gflop, j.mem_bw_gbps) for j in two.jobs]
    other = generate_inference(spec, seed=spec.seed + 1, requests=3000)
    assert [j.submit_s for j in other.jobs] != [j.submit_s for j in one.jobs]
    assert [j.id for j in one.jobs] == list(range(3000))
    assert all(a.submit_s <= b.submit_s for a, b in zip(one.jobs, one.jobs[1:]))


def test_tenant_table_gives_each_request_its_model_target():
    spec = parse_spec(_spec(v=_poisson("resnet50"), s=_poisson("rnnt", sla_ms=800)))
    workload = requests_workload(spec, np.array([0.5, 1.0]), np.array([0, 1]))
    table = build_tenants(workload.jobs, tenant_spec(spec))
    assert table.deadline_s.tolist() == pytest.approx([0.515, 1.8])
    assert [t.sla_class for t in table.tenants] == ["resnet50_15ms", "rnnt_800ms"]
    assert [t.rank for t in table.tenants] == [0, 1]


# --- one-line errors -------------------------------------------------------------------------

@pytest.mark.parametrize("data, message", [
    ({"duration_s": 1, "tenants": {"t": _poisson("resnet50")}, "seeds": 1},
     r"spec.json, key 'seeds': unknown key; choose among requests, duration_s, seed, tenants"),
    ({"duration_s": 1, "tenants": {"t": {**_poisson("resnet50"), "rate": 3}}},
     r"key 'tenants.t.rate': unknown key; choose among model, arrival"),
    (_spec(t=_poisson("resnet")),
     r"key 'tenants.t.model': unknown model 'resnet'; choose one of resnet50, bert, dlrm, rnnt"),
    (_spec(t=_poisson("bert", rate=-2)),
     r"key 'tenants.t.arrival.rate_per_s': expected a positive number, got -2"),
    (_spec(t=_poisson("bert", batch=0)), r"key 'tenants.t.batch': expected an integer >= 1, got 0"),
    (_spec(t={"model": "bert", "arrival": {"process": "hawkes"}}),
     r"key 'tenants.t.arrival.process': unknown process 'hawkes'; choose one of poisson, mmpp"),
    (_spec(t={"model": "bert", "arrival": {"process": "mmpp", "rates_per_s": [1, 2],
                                           "mean_dwell_s": [1]}}),
     r"rates_per_s and mean_dwell_s need one value per state"),
    ({"requests": 5, "duration_s": 1, "tenants": {"t": _poisson("bert")}},
     r"give exactly one of 'requests' \(a total\) or 'duration_s'"),
    ({"requests": 5, "tenants": {}}, r"key 'tenants': expected a non-empty object"),
])
def test_bad_specs_are_one_line_errors_naming_file_key_value_and_fix(tmp_path, data, message):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message) as err:
        load_spec(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_a_missing_spec_names_the_shipped_example(tmp_path):
    with pytest.raises(ConfigError, match=r"no such tenant spec; .*inference_tenants.json"):
        load_spec(tmp_path / "nope.json")
    assert math.isfinite(load_spec(SPEC).tenants[0].sla_ms)


# --- trace-driven arrivals -------------------------------------------------------------------

def _trace_spec(tmp_path: Path, text: str, duration_s: float = 20.0) -> Path:
    (tmp_path / "rates.csv").write_text(text)
    arrival = {"process": "trace", "file": "rates.csv"}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"duration_s": duration_s,
                                "tenants": {"t": {"model": "dlrm", "arrival": arrival}}}))
    return path


def test_rate_trace_arrivals_follow_the_rates_and_pause_where_the_rate_is_zero(tmp_path):
    spec = load_spec(_trace_spec(tmp_path, "time_s,rate_per_s\n0,100\n5,0\n10,1000\n"))
    counts = []
    for seed in range(20):
        times = np.array([j.submit_s for j in generate_inference(spec, seed).jobs])
        assert not np.any((times >= 5) & (times < 10)) and times[-1] < 20
        counts.append((np.sum(times < 5), np.sum(times >= 10)))
    first, last = np.mean(counts, axis=0)
    assert first == pytest.approx(500, rel=0.03) and last == pytest.approx(10_000, rel=0.01)
    assert spec.tenants[0].arrival.mean_rate_per_s == pytest.approx(50.0)  # (5 x 100) / 10
    bounded = generate_inference(spec, 1, requests=2000)
    assert len(bounded) == 2000 and bounded.jobs[-1].submit_s > 10


@pytest.mark.parametrize("text, message", [
    ("time,rate\n0,1\n", r"rates.csv, line 1: expected the header 'time_s,rate_per_s'"),
    ("time_s,rate_per_s\n1,5\n", r"rates.csv, line 2: the first time_s is 1; start at 0"),
    ("time_s,rate_per_s\n0,5\n0,6\n", r"line 3: time_s 0 is not after 0; list the changes"),
    ("time_s,rate_per_s\n0,-5\n", r"line 2: '0,-5'; expected a time in seconds and a rate >= 0"),
    ("time_s,rate_per_s\n0,5\n3,0\n", r"rates.csv: the last rate_per_s must be > 0"),
])
def test_bad_rate_traces_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_spec(_trace_spec(tmp_path, text))
    assert "\n" not in str(err.value)


def test_a_missing_rate_trace_names_the_spec_key(tmp_path):
    path = _trace_spec(tmp_path, "time_s,rate_per_s\n0,5\n")
    (tmp_path / "rates.csv").unlink()
    with pytest.raises(ConfigError, match=r"spec.json, key 'tenants.t.arrival.file': cannot "
                                          r"read rate trace .*relative to the spec file"):
        load_spec(path)


def test_byte_order_marks_are_dropped_and_other_encodings_name_the_line(tmp_path):
    # a spreadsheet's "CSV UTF-8" header read as '\ufefftime_s'; latin-1 was a traceback
    path = _trace_spec(tmp_path, "time_s,rate_per_s\n0,100\n")
    (tmp_path / "rates.csv").write_bytes(b"\xef\xbb\xbftime_s,rate_per_s\r\n0,100\r\n")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load_spec(path).tenants[0].arrival.mean_rate_per_s == pytest.approx(100.0)
    (tmp_path / "rates.csv").write_bytes("time_s,rate_per_s\n0,100\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"rates\.csv:3: not UTF-8 text \(byte 0xe9\); save "
                                          r"the file as UTF-8$"):
        load_spec(path)
