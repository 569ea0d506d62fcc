"""``hdrm sweep`` takes the GPU traces ``hdrm replay`` takes: a compressed openb pod list and
Philly's job log (a file without extension) were refused as Gavel traces without throughputs
(the sweep told them apart by a ``.csv`` name)."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from hdrm.distributed.sweep import run_sweep
from hdrm.errors import ConfigError

NODES = "sn,cpu_milli,memory_mib,gpu,model\nonly-gpu,4000,16384,1,T4\n"
# one T4: a holds it 0..100, b waits until 100 and runs 50 s (JCT 100 and 149)
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "a,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "b,1000,1024,1,1000,,LS,Running,1,51,1\n")
# the same two jobs as Philly writes them (one GPU each, one core)
PHILLY = [{"status": "Pass", "vc": "v", "jobid": job, "user": "u",
           "submitted_time": f"2017-10-03 00:00:0{sub}",
           "attempts": [{"start_time": f"2017-10-03 00:00:0{sub}", "end_time": end,
                         "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]}
          for job, sub, end in (("a", 0, "2017-10-03 00:01:40"), ("b", 1, "2017-10-03 00:00:51"))]


@pytest.mark.parametrize("name", ["pods.csv.gz", "cluster_job_log"])
def test_a_sweep_takes_what_replay_takes(tmp_path, name):
    (tmp_path / "nodes.csv").write_text(NODES)
    trace = tmp_path / name
    if name.endswith(".gz"):
        trace.write_bytes(gzip.compress(PODS.encode()))
    else:
        trace.write_text(json.dumps(PHILLY, indent=2))
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"policies": ["fifo-first_fit"], "platforms": ["nodes.csv"],
                                 "traces": [name], "seeds": [0]}))
    report = run_sweep(sweep, tmp_path / "out", backend="serial", progress=False)
    assert (report.nb_runs, report.nb_run) == (1, 1)
    with open(tmp_path / "out" / "results.csv", newline="") as handle:
        row = next(csv.DictReader(handle))
    assert float(row["mean_jct_s"]) == pytest.approx((100 + 149) / 2)


def test_a_gavel_trace_without_throughputs_is_still_refused(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "msr.trace").write_text("LM (batch size 5)\tc\t--steps\t1\t800\t0\t1\n")
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"policies": ["fifo-first_fit"], "platforms": ["nodes.csv"],
                                 "traces": ["msr.trace"], "seeds": [0]}))
    with pytest.raises(ConfigError, match=r"msr\.trace: a Gavel trace needs its throughput "
                       r"file; add \"throughputs\""):
        run_sweep(sweep, tmp_path / "out", backend="serial", progress=False)
