"""benchmarks/bench_gpu.py runs and checks its target, on a tiny copy of the openb file names."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_gpu  # noqa: E402

NODES = "sn,cpu_milli,memory_mib,gpu,model\na,4000,16384,2,T4\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,500,,LS,Running,0,100,0\np1,1000,1024,2,1000,,LS,Running,5,20,5\n")


def test_the_benchmark_replays_each_policy_and_fails_over_its_target(tmp_path, capsys):
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(NODES)
    (tmp_path / "openb_pod_list_default.csv").write_text(PODS)
    args = ["--traces", str(tmp_path), "--policies", "fifo-fgd,drf-best_fit", "--repeat", "1"]
    assert bench_gpu.main(args) == 0
    out = capsys.readouterr().out
    assert "inputs: 1 nodes, 2 GPUs, 2 tasks" in out
    # p1 (both GPUs, submitted at 5) waits for p0 (ends 100), ends at 115: JCTs 100 and 110
    assert out.count("finished 2, mean JCT 105.0 s") == 2
    assert bench_gpu.main(args + ["--target", "0"]) == 1
    assert "OVER <= 0" in capsys.readouterr().out
