"""Periodic pipelines on CPU cores and GPU devices: pinning by device type, the four priority
rules' ranks, and `hdrm dag periodic` on a CPU+GPU platform, by hand (dag/periodic_gpu_case.py)."""

import csv
import json
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.dag.periodic import expand
from hdrm.dag.periodic_devices import GPU_HOST_MILLI, RULES, expand_on, graph_priorities
from hdrm.dag.periodic_gen import PeriodicSpec, generate
from hdrm.dag.periodic_io import read_taskset
from hdrm.dag.periodic_rules import resolve_periodic_policy
from hdrm.errors import ConfigError
from hdrm.platform.loader import load_platform

from dag.periodic_gpu_case import CPU_SCHEDULE, GPU_SCHEDULE, write_case

TINY4 = Path(__file__).resolve().parents[2] / "platforms" / "tiny4.json"


def _run(tmp_path, gpus: int, policy: str = "heft_edf"):
    taskset, platform = write_case(tmp_path, gpus)
    out = tmp_path / f"out{gpus}{policy}"
    assert main(["dag", "periodic", str(taskset), "--platform", str(platform), "--policy",
                 policy, "-o", str(out)]) == 0
    jobs = {r["job_id"].split("/")[-1]: r for r in csv.DictReader(open(out / "out_jobs.csv"))}
    instances = list(csv.DictReader(open(out / "out_instances.csv")))
    return jobs, instances


def test_hand_ranks_on_cpu_and_gpu(tmp_path):
    taskset, platform = write_case(tmp_path)
    graph = read_taskset(taskset).graphs[0]
    prio = graph_priorities(graph, gpus=True)
    assert prio == {"rank_u": [6.0, 2.0, 4.0, 1.0], "rank_d": [0.0, 2.0, 2.0, 5.0],
                    "rank_oct": [4.0, 1.0, 2.0, 0.0]}
    cpu = graph_priorities(graph, gpus=False)  # costs 2, 6, 3, 1 on cores
    assert cpu["rank_u"] == [2 + max(6 + 1, 3 + 1 + 1), 7.0, 5.0, 1.0]
    assert cpu["rank_oct"] == [max(0 + 1 + 6, 1 + 1 + 3), 1.0, 1.0, 0.0]  # one type: no transfer


def test_gpu_tasks_run_on_the_gpu_by_hand(tmp_path):
    jobs, instances = _run(tmp_path, gpus=1)
    for task, (start, finish) in GPU_SCHEDULE.items():
        row = jobs[task]
        assert (float(row["starting_time"]), float(row["finish_time"])) == (start, finish), task
        assert row["gpu_model"] == ("T4" if task in "bc" else "")
        assert int(row["cpu_milli"]) == (GPU_HOST_MILLI if task in "bc" else 1000)
    assert [(float(r["response_s"]), r["deadline_met"]) for r in instances] == [(6.0, "1")]


def test_without_gpus_every_task_runs_on_a_core_by_hand(tmp_path):
    jobs, instances = _run(tmp_path, gpus=0)
    for task, (start, finish) in CPU_SCHEDULE.items():
        row = jobs[task]
        assert (float(row["starting_time"]), float(row["finish_time"])) == (start, finish), task
    assert [(float(r["response_s"]), r["deadline_met"]) for r in instances] == [(9.0, "0")]


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_runs_cpu_tasks_beside_a_busy_gpu(tmp_path, rule):
    """On the GPU platform b waits for the GPU while nothing else is ready; all four rules put
    c (larger rank_u, rank_u + rank_d, rank_oct; smaller deadline - rank_u) first."""
    jobs, _ = _run(tmp_path, gpus=1, policy=rule)
    assert {t: (float(r["starting_time"]), float(r["finish_time"])) for t, r in jobs.items()} \
        == GPU_SCHEDULE


def test_expand_on_a_cpu_platform_keeps_expand_orders(tmp_path):
    _, platform = write_case(tmp_path, gpus=0)
    taskset = generate(PeriodicSpec(graphs=3, utilisation=2.0), seed=4)
    old, new = expand(taskset), expand_on(taskset, load_platform(platform))
    for a, b in zip(old.jobs, new.jobs):
        assert (a.extra["dag_edf"], a.extra["dag_llf"], a.run_time_s, a.accel) == \
               (b.extra["dag_edf"], b.extra["dag_llf"], b.run_time_s, b.accel)
    for field in ("job", "pred", "think_s"):
        assert (getattr(new.dependencies, field) == getattr(old.dependencies, field)).all()


def test_expand_on_a_gpu_platform_pins_tasks_with_a_gpu_time(tmp_path):
    _, platform = write_case(tmp_path, gpus=1)
    taskset = generate(PeriodicSpec(graphs=2, gpu_fraction=0.5), seed=2)
    times = {(g.name, t.name): t for g in taskset.graphs for t in g.tasks}
    jobs = expand_on(taskset, load_platform(platform)).jobs
    assert any(j.accel for j in jobs) and any(j.accel is None for j in jobs)
    for job in jobs:
        task = times[(job.extra["graph"], job.extra["task"])]
        if task.gpu_s is None:
            assert (job.accel, job.run_time_s, job.extra["device"]) == (None, task.cpu_s, "cpu")
        else:
            assert (job.accel.count, job.accel.milli, job.run_time_s, job.extra["device"]) == \
                   (1, 1000, task.gpu_s, "gpu")
    for rule in ("dag_edf", "dag_cpop_edf", "dag_peft_edf", "dag_llf"):
        assert sorted(j.extra[rule] for j in jobs) == list(range(len(jobs)))


def test_unknown_policy_names_the_rules(tmp_path):
    _, platform = write_case(tmp_path, gpus=1)
    with pytest.raises(ConfigError, match=r"--policy: unknown GPU policy 'heft_edd'.*periodic "
                                          r"rule: heft_edf, cpop_edf, peft_edf, llf.*\); "
                                          r"the closest periodic rule: heft_edf or peft_edf$"):
        resolve_periodic_policy("heft_edd", load_platform(platform))
    with pytest.raises(ConfigError, match=r"the closest periodic rule: cpop_edf_defer or cpop_edf$"):
        resolve_periodic_policy("cpop_edf_defr-high_gflops", load_platform(TINY4))
    with pytest.raises(ConfigError, match=r"unknown placement 'fist_fit' in 'llf-fist_fit'"):
        resolve_periodic_policy("llf-fist_fit", load_platform(platform))


def _domino_case(tmp_path, gpus: int):
    """Graph a: one task of 4 s, deadline 3 s (lost from its release); graph b: one task of 2 s,
    deadline 5 s; both released at 0 on one core (and with a GPU, both tasks on the GPU)."""
    gpu = {"gpu_s": None}
    tasks = {"a": ({"name": "x", "cpu_s": 4.0, **gpu}, 3.0), "b": ({"name": "y", "cpu_s": 2.0,
                                                                    **gpu}, 5.0)}
    if gpus:
        tasks["a"][0]["gpu_s"], tasks["b"][0]["gpu_s"] = 4.0, 2.0
    data = {"name": "domino", "horizon_s": 1.0, "graphs": [
        {"name": g, "period_s": 10.0, "deadline_s": d, "tasks": [t]}
        for g, (t, d) in tasks.items()]}
    _, platform = write_case(tmp_path, gpus, cores=1)
    path = tmp_path / "domino.json"
    path.write_text(json.dumps(data))
    return path, platform


@pytest.mark.parametrize("gpus", [0, 1])
@pytest.mark.parametrize("policy, starts, missed", [("heft_edf", {"x": 0.0, "y": 4.0}, "2"),
                                                    ("heft_edf_defer", {"x": 2.0, "y": 0.0}, "1"),
                                                    ("llf_defer", {"x": 2.0, "y": 0.0}, "1")])
def test_deferring_rules_put_lost_instances_last_by_hand(tmp_path, gpus, policy, starts, missed):
    """EDF runs x first (deadline 3 < 5): x 0-4 misses, and so does y, 4-6 past 5. x is lost at
    0 (0 + rank_u 4 > 3): deferred, y runs 0-2 and meets its deadline, x runs 2-6."""
    taskset, platform = _domino_case(tmp_path, gpus)
    out = tmp_path / "out"
    assert main(["dag", "periodic", str(taskset), "--platform", str(platform), "--policy",
                 policy, "-o", str(out)]) == 0
    jobs = {r["job_id"].split("/")[-1]: float(r["starting_time"])
            for r in csv.DictReader(open(out / "out_jobs.csv"))}
    assert jobs == starts
    met = [r["deadline_met"] for r in csv.DictReader(open(out / "out_instances.csv"))]
    assert str(met.count("0")) == missed
