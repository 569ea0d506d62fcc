"""Schedule length ratio of periodic instances: the critical-path lower bound by hand, SLR in
``out_instances.csv`` and the summary of ``hdrm dag periodic``, and SLR >= 1 by property."""

import csv
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dag.periodic_gpu_case import platform_doc, write_case
from hdrm.cli.main import main
from hdrm.cli.periodic_cmd import finish_times
from hdrm.dag.periodic import PeriodicTask, TaskGraph, TaskSet, expand
from hdrm.dag.periodic_devices import expand_on
from hdrm.dag.periodic_gen import PeriodicSpec, generate
from hdrm.dag.periodic_io import read_taskset
from hdrm.dag.periodic_metrics import critical_path_s, critical_paths_s, instance_rows, summarise
from hdrm.dag.periodic_rules import resolve_periodic_policy
from hdrm.platform.loader import load_platform
from hdrm.sim.engine import Simulation, SimulationConfig

#: x (cpu 1, gpu 3) -> y (cpu 2, CPU only) -> z (cpu 4, gpu 1), transfers 0.5 then 0; period 10 s,
#: deadline 8 s, two instances (horizon 20 s).
CHAIN = {"name": "chain", "horizon_s": 20.0, "graphs": [
    {"name": "q", "period_s": 10.0, "deadline_s": 8.0, "tasks": [
        {"name": "x", "cpu_s": 1.0, "gpu_s": 3.0}, {"name": "y", "cpu_s": 2.0, "gpu_s": None},
        {"name": "z", "cpu_s": 4.0, "gpu_s": 1.0}],
     "edges": [["x", "y", 0.5], ["y", "z", 0.0]]}]}


def test_bound_of_the_gpu_case_by_hand(tmp_path):
    graph = read_taskset(write_case(tmp_path)[0]).graphs[0]
    # with a GPU: a 2, b min(6, 1) = 1, c min(3, 2) = 2, d 1; a-c-d = 2 + 2 + 1 (transfer) + 1
    assert critical_path_s(graph, gpus=True) == 6.0
    # cores only: a 2, b 6, c 3, d 1; a-b-d = 9 beats a-c-d = 2 + 3 + 1 + 1 = 7
    assert critical_path_s(graph, gpus=False) == 9.0


def test_gpu_case_runs_at_its_critical_path(tmp_path, capsys):
    # responses 6 s (GPU) and 9 s (cores only, dag/periodic_gpu_case.py): both SLR 1
    for gpus in (1, 0):
        taskset, platform = write_case(tmp_path, gpus)
        assert main(["dag", "periodic", str(taskset), "--platform", str(platform), "-o",
                     str(tmp_path / f"o{gpus}")]) == 0
        rows = list(csv.DictReader(open(tmp_path / f"o{gpus}" / "out_instances.csv")))
        assert [float(r["slr"]) for r in rows] == [1.0]
        assert "schedule length ratio: mean 1.000, max 1.000" in capsys.readouterr().out


def test_one_core_stretches_the_cpu_case(tmp_path, capsys):
    # one core: a 0-2; b (rank_u 7) 2-8 before c (rank_u 5) 8-11; d released at
    # max(8 + 0, 11 + 1) = 12 runs 12-13: response 13 over the bound 9
    taskset, platform = write_case(tmp_path, gpus=0, cores=1)
    assert main(["dag", "periodic", str(taskset), "--platform", str(platform), "-o",
                 str(tmp_path / "out")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "out" / "out_instances.csv")))
    assert [(float(r["response_s"]), float(r["slr"])) for r in rows] == [(13.0, 13.0 / 9.0)]
    assert "schedule length ratio: mean 1.444, max 1.444" in capsys.readouterr().out


def test_chain_pinned_to_a_slower_gpu_by_hand(tmp_path, capsys):
    # with a GPU, x and z are pinned to it: x 0-3, y released 3.5 runs 3.5-5.5, z 5.5-6.5:
    # response 6.5; the bound takes x's CPU time: 1 + 0.5 + 2 + 1 = 4.5. Both instances alike.
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(CHAIN), encoding="utf-8")
    platform = tmp_path / "g.json"
    platform.write_text(json.dumps(platform_doc(1)), encoding="utf-8")
    assert critical_paths_s(read_taskset(path), gpus=True) == {"q": 4.5}
    assert main(["dag", "periodic", str(path), "--platform", str(platform), "-o",
                 str(tmp_path / "out")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "out" / "out_instances.csv")))
    assert [(r["instance"], float(r["response_s"]), float(r["slr"])) for r in rows] == \
        [("0", 6.5, 6.5 / 4.5), ("1", 6.5, 6.5 / 4.5)]
    assert "schedule length ratio: mean 1.444, max 1.444" in capsys.readouterr().out


def test_summary_slr_over_finished_instances_only():
    g = TaskGraph("G", 10.0, 5.0, (PeriodicTask("a", 1.0), PeriodicTask("b", 1.0)),
                  ((0, 1, 0.0),))
    h = TaskGraph("H", 20.0, 20.0, (PeriodicTask("c", 1.0),))
    taskset = TaskSet((g, h), horizon_s=40.0)
    workload = expand(taskset)
    ends = {("G", 0): 4.0, ("G", 1): 17.0, ("G", 2): 23.0, ("G", 3): float("nan"),
            ("H", 0): 2.0, ("H", 1): 30.0}
    finish = [ends[(j.extra["graph"], j.extra["instance"])] for j in workload.jobs]
    rows = instance_rows(workload.jobs, finish, critical_paths_s(taskset, gpus=False))
    # bounds G 2, H 1; responses G 4, 7, 3, unfinished; H 2, 10
    slr = {(r.graph, r.instance): r.slr for r in rows}
    assert [slr[k] for k in [("G", 0), ("G", 1), ("G", 2), ("H", 0), ("H", 1)]] == \
        [2.0, 3.5, 1.5, 2.0, 10.0]
    assert slr[("G", 3)] != slr[("G", 3)]  # nan
    s = summarise(rows)
    assert (s.slr_mean, s.slr_max) == (pytest.approx(19.0 / 5), 10.0)
    assert all(r.slr != r.slr for r in instance_rows(workload.jobs, finish))  # no bound: nan


specs = st.builds(PeriodicSpec, graphs=st.integers(1, 3), utilisation=st.floats(0.3, 3.0),
                  depth=st.integers(1, 4), width=st.integers(1, 3), ccr=st.floats(0.0, 1.0),
                  gpu_fraction=st.floats(0.0, 1.0), period_min_s=st.just(5.0),
                  period_max_s=st.just(20.0), horizon_periods=st.floats(1.0, 3.0))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=specs, seed=st.integers(0, 10_000), gpus=st.integers(0, 1), cores=st.integers(1, 3),
       policy=st.sampled_from(["heft_edf", "cpop_edf", "peft_edf", "llf"]))
def test_property_no_instance_beats_its_bound(tmp_path, spec, seed, gpus, cores, policy):
    taskset = generate(spec, seed)
    path = tmp_path / f"p{gpus}{cores}.json"
    path.write_text(json.dumps(platform_doc(gpus, cores)), encoding="utf-8")
    platform = load_platform(path)
    workload = expand_on(taskset, platform)
    config = SimulationConfig(kill_on_walltime=False, record_timeline=False)
    result = Simulation(platform, workload, config).run(
        resolve_periodic_policy(policy, platform, "policy"))
    rows = instance_rows(workload.jobs, finish_times(result),
                         critical_paths_s(taskset, gpus=bool(gpus)))
    assert rows and all(r.slr >= 1.0 - 1e-9 for r in rows if r.slr == r.slr)
    assert all(r.slr == r.slr for r in rows if r.response_s == r.response_s)
