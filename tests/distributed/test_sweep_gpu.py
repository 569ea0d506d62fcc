"""``hdrm sweep`` on GPU platforms: GPU policies x seeds, each run equal to ``hdrm replay``, the
table with its GPU columns (by hand), and policies or backfilling of the wrong platform kind
refused in one line when the sweep file is read."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.core.gpu_scheduler import gpu_pairs
from hdrm.distributed.spec import expand, load_sweep
from hdrm.distributed.sweep import run_sweep
from hdrm.errors import ConfigError

from .helpers import HETERO, SDSC

GPU_TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gpu"
NODES = "sn,cpu_milli,memory_mib,gpu,model\nonly-gpu,4000,16384,1,T4\n"
# one T4: a holds it 0..100; b (50 s, t=1) and c (10 s, t=2) wait. FIFO: b 100..150, c 150..160
# (JCT 100, 149, 158); SJF: c 100..110, b 110..160 (JCT 100, 159, 108).
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "a,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "b,1000,1024,1,1000,,LS,Running,1,51,1\n"
        "c,1000,1024,1,1000,,LS,Running,2,12,2\n")


def _sweep(folder: Path, **settings) -> Path:
    nodes, pods = folder / "nodes.csv", folder / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    data = {"policies": ["fifo-first_fit", "sjf-best_fit"], "backfill": ["none", "greedy"],
            "platforms": ["nodes.csv"], "traces": ["pods.csv"], "seeds": [0, 1]}
    data.update(settings)
    path = folder / "sweep.json"
    path.write_text(json.dumps(data))
    return path


def _table(outdir: Path) -> list[dict[str, str]]:
    with open(outdir / "results.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_gpu_sweep_runs_gpu_policies_and_tabulates_jct_allocation_and_cost(tmp_path, capsys):
    path = _sweep(tmp_path)
    report = run_sweep(path, tmp_path / "out", backend="serial", progress=False)
    assert (report.nb_runs, report.nb_run) == (8, 8)
    rows = _table(tmp_path / "out")
    assert [r["run"].split("_")[0] for r in rows] == ["fifo-first"] * 4 + ["sjf-best"] * 4
    cost = 160 / 3600 * 0.35  # the T4 busy 160 s in all
    for row in rows:
        fifo = row["run"].startswith("fifo")
        assert float(row["mean_jct_s"]) == pytest.approx((100 + 149 + 158) / 3 if fifo
                                                         else (100 + 159 + 108) / 3, abs=1e-6)
        assert float(row["gpu_allocation"]) == pytest.approx(1.0)  # busy from 0 to 160
        assert float(row["mean_frag_gpus"]) == 0  # whole-GPU tasks only: no fragment
        assert float(row["gpu_cost_usd"]) == pytest.approx(cost, abs=1e-6)
        assert float(row["makespan_s"]) == 160
    # a run equals hdrm replay with the same settings, GPU outputs included
    run = expand(load_sweep(path))[-1]
    assert (run.policy, run.backfill, run.seed) == ("sjf-best_fit", "greedy", 1)
    assert main(["replay", "--platform", run.platform, "--workload", run.trace, "--policy",
                 "sjf-best_fit", "--backfill", "greedy", "--seed", "1", "--outdir",
                 str(tmp_path / "replay")]) == 0
    capsys.readouterr()
    folder = tmp_path / "out" / "runs" / run.name
    for name in ("out_jobs.csv", "out_gpu_timeline.csv", "out_timeline.csv"):
        assert (folder / name).read_bytes() == (tmp_path / "replay" / name).read_bytes(), name
    summary = json.loads((folder / "out_gpu_summary.json").read_text())
    assert summary["policy"] == "sjf-best_fit" and summary["nb_finished"] == 3


def test_all_gpu_pairs_stands_for_the_45_pairs(tmp_path):
    runs = expand(load_sweep(_sweep(tmp_path, policies=["all-gpu-pairs", "drf-fgd"],
                                    backfill=["none"], seeds=[0])))
    assert [r.policy for r in runs] == gpu_pairs() and len(runs) == 45


@pytest.mark.parametrize("settings, message", [
    ({"policies": ["wfp3"]}, r'policies\[0\]: "wfp3" is not a policy there: platforms\[0\] '
     r'"nodes.csv" is a GPU platform, which takes GPU policies \(queue orders, ORDER-PLACEMENT '
     r"pairs, 'all-gpu-pairs'\); put other kinds of platform in another sweep file$"),
    ({"policies": ["all-pairs"]}, r'policies\[0\]: "all-pairs" is not a policy there'),
    ({"backfill": ["easy"]}, r'backfill\[0\]: "easy" does not apply: platforms\[0\] "nodes.csv" '
     r"is a GPU platform; choose among none, greedy$"),
    ({"policies": ["drf-fgx"]}, r"policies: \[0\] \"drf-fgx\": unknown policy "
     r"'drf-fgx'.*'all-pairs' for the 36 pairs; on GPU platforms: unknown GPU policy 'drf-fgx'; "
     r"did you mean 'drf-fgd'.*or 'all-gpu-pairs' for every pair$"),
])
def test_a_policy_or_backfilling_of_the_other_kind_is_one_line(tmp_path, settings, message):
    path = _sweep(tmp_path, **settings)
    with pytest.raises(ConfigError, match=r"^" + str(path).replace("\\", "\\\\") + ": " + message):
        load_sweep(path)


def test_gpu_names_on_a_cpu_platform_are_refused_too(tmp_path):
    path = tmp_path / "sweep.json"
    for settings, message in ((dict(policies=["drf-fgd"]), r'"drf-fgd" is not a policy there: '
                               r'platforms\[0\] "hetero.json" is a CPU platform, which takes CPU '
                               r"policies"),
                              (dict(policies=["fcfs"], backfill=["greedy"]),
                               r'backfill\[0\]: "greedy" does not apply: platforms\[0\] '
                               r'"hetero.json" is a CPU platform; choose among none, easy')):
        data = {"platforms": [str(HETERO)], "traces": [str(SDSC)], **settings}
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError, match=message):
            load_sweep(path)


@pytest.mark.skipif(not GPU_TRACES.is_dir(), reason="needs ../shared/traces/gpu")
def test_a_sweep_over_gpu_policies_and_seeds_on_an_openb_slice(tmp_path):
    data = {"policies": ["drf-fgd", "fifo-random"],
            "platforms": [str(GPU_TRACES / "openb_node_list_gpu_node.csv")],
            "traces": [str(GPU_TRACES / "openb_pod_list_gpushare40.csv")],
            "seeds": [1, 2], "nb_jobs": 150}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    run_sweep(path, tmp_path / "out", backend="serial", progress=False)
    rows = _table(tmp_path / "out")
    assert len(rows) == 4
    for row in rows:
        summary = json.loads((tmp_path / "out" / "runs" / row["run"] / "out_gpu_summary.json")
                             .read_text())
        assert float(row["gpu_cost_usd"]) == pytest.approx(summary["cost_usd"], rel=1e-6)
        assert float(row["mean_frag_gpus"]) == pytest.approx(summary["mean_frag_milli"] / 1000,
                                                              rel=1e-6)
        assert int(row["nb_jobs"]) == 150 and summary["nb_finished"] > 100
    by_seed = {row["run"].split("_")[0] + row["run"].split("_")[-2]: row for row in rows}
    assert by_seed["fifo-randoms1"]["gpu_cost_usd"] != by_seed["fifo-randoms2"]["gpu_cost_usd"]


GAVEL_JOB = "ResNet-18 (batch size 64)"
#: 1,000 steps at 2 steps/s on a K80 (500 s) or 8 on a V100 (125 s), two jobs arriving at 0
GAVEL_TRACE = f"{GAVEL_JOB}\tcmd\t\t-s\t1\t1000\t0\t1\n" * 2
GAVEL_SPEEDS = {"k80": {f"('{GAVEL_JOB}', 1)": {"null": 2.0}},
                "v100": {f"('{GAVEL_JOB}', 1)": {"null": 8.0}}}


def _gavel_sweep(folder: Path, **settings) -> Path:
    (folder / "kv.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nk,4000,16384,1,K80\n"
                                   "v,4000,16384,1,V100M16\n")
    (folder / "t.trace").write_text(GAVEL_TRACE)
    (folder / "tp.json").write_text(json.dumps(GAVEL_SPEEDS))
    return _sweep(folder, **{"policies": ["fifo-price_aware"], "backfill": ["none"],
                             "platforms": ["kv.csv"], "traces": ["pods.csv", "t.trace"],
                             "seeds": [0], "throughputs": "tp.json", **settings})


def test_a_sweep_runs_a_gavel_trace_with_its_throughputs(tmp_path):
    """price_aware gives the first job the K80 (0.25 of the speed for 0.45 USD/h beats 1 for
    2.48), the second the V100: JCT 500 and 125 s, cost 500 s x 0.45 + 125 s x 2.48 per hour.
    The openb trace of the same sweep does not read the throughputs: its run keeps its name."""
    path = _gavel_sweep(tmp_path)
    pods_run, gavel_run = expand(load_sweep(path))
    assert pods_run.throughputs is None and gavel_run.throughputs == str(tmp_path / "tp.json")
    assert gavel_run.name.startswith("fifo-price_aware_none_event_kv_t+tp_x1_s0_")
    data = json.loads(path.read_text())
    del data["throughputs"]
    data["traces"] = ["pods.csv"]
    path.with_name("plain.json").write_text(json.dumps(data))
    assert expand(load_sweep(path.with_name("plain.json"))) == [pods_run]
    run_sweep(path, tmp_path / "out", backend="serial", progress=False)
    rows = {row["run"]: row for row in _table(tmp_path / "out")}
    gavel = rows[gavel_run.name]
    assert float(gavel["mean_jct_s"]) == pytest.approx((500 + 125) / 2)
    assert float(gavel["gpu_cost_usd"]) == pytest.approx((500 * 0.45 + 125 * 2.48) / 3600,
                                                         abs=1e-6)
    jobs = list(csv.DictReader((tmp_path / "out" / "runs" / gavel_run.name / "out_jobs.csv")
                               .open()))
    assert [(r["execution_time"], r["gpu_model"]) for r in jobs] == [
        ("500.000000", "K80"), ("125.000000", "V100M16")]


def test_runs_without_throughputs_keep_their_names():
    """The name and digest of a run without the field are the ones of the code before it
    (pinned), so finished sweeps are found done again."""
    from hdrm.distributed.spec import RunSpec

    run = RunSpec("fifo-fgd", "none", "event", "/data/nodes.csv", "/data/pods.csv", 1.0, 3)
    assert run.name == "fifo-fgd_none_event_nodes_pods_x1_s3_0d064192"
    assert "throughputs" not in run.to_json()
    gavel = RunSpec("fifo-fgd", "none", "event", "/data/nodes.csv", "/data/t.trace", 1.0, 3,
                    throughputs="/data/tp.json")
    assert gavel.to_json()["throughputs"] == "/data/tp.json" and gavel.digest() != run.digest()


@pytest.mark.parametrize("settings, message", [
    ({"traces": ["pods.csv"]}, r"throughputs: every trace is an openb pod list \(.csv\), so no "
     r"Gavel trace reads it; remove 'throughputs' or add the Gavel trace$"),
    ({"throughputs": "nope.json"}, r"throughputs: no such file; paths are relative to the sweep "
     r"file"),
])
def test_throughputs_errors_are_one_line(tmp_path, settings, message):
    path = _gavel_sweep(tmp_path, **settings)
    with pytest.raises(ConfigError, match=r"^" + str(path).replace("\\", "\\\\") + ": " + message):
        load_sweep(path)


def test_a_gavel_trace_on_a_cpu_platform_or_without_throughputs_is_one_line(tmp_path):
    path = _gavel_sweep(tmp_path, platforms=[str(HETERO)], policies=["fcfs"])
    with pytest.raises(ConfigError, match=r'platforms\[0\]: "hetero.json" is a CPU platform, but '
                                          r'traces\[1\] "t.trace" is read as a Gavel trace'):
        load_sweep(path)
    from hdrm.distributed.runner import simulate

    path = _gavel_sweep(tmp_path, throughputs=None, traces=["t.trace"])
    (run,) = expand(load_sweep(path))
    with pytest.raises(ConfigError, match=r't.trace: a Gavel trace needs its throughput file; '
                                          r'add "throughputs": "simulation_throughputs.json" to '
                                          r"the sweep file"):
        simulate(run)
