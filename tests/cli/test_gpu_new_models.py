"""The GPU models added in session 29 (H200, B200, GH200, MI250X, MI210): listed by
``hdrm platform --list-types``, and a platform of each, its model spelled as cluster tools
print it, replays end to end on the built-in engine with the model's own power and price.

Energy and cost are worked by hand from the figures typed below (from the vendors' data, not
read from the library file); the platform is one node of 4 cores (10 W each at full power, 30%
of it when idle: 12 W idle, 7 W more per busy core) and two GPUs of the model. Tasks:
p0 holds one whole GPU and one core for 0..100 s, p1 half of the other GPU and one core for
0..50 s (it asks the model by another spelling). Power: idle = 2 x idle_w + 12 W;
0..50 s: idle + (busy_w - idle_w) x 1.5 + 2 x 7 W; 50..100 s: idle + (busy_w - idle_w) + 7 W.
Cost: 100 s x 1 GPU + 50 s x 0.5 GPU = 125 GPU-s at the model's price."""

from __future__ import annotations

import json

import pytest

from hdrm.cli.main import main

PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "p1,1000,1024,1,500,{spec},LS,Running,0,50,0\n")

#: key: (spelling in the platform, spelling in the pod list, memory GB, FP32 TFLOP/s,
#: idle W, busy W, USD/h, energy J worked by hand from the power model above)
MODELS = {
    # 152 W idle; 0..50: 152 + 945 + 14 = 1,111 W; 50..100: 152 + 637 = 789 W
    "H200": ("NVIDIA H200", "NVIDIA-H200", 141, 67, 70, 700, 3.5, 55_550 + 39_450),
    # 212 W idle; 0..50: 212 + 1,350 + 14 = 1,576 W; 50..100: 212 + 907 = 1,119 W
    "B200": ("NVIDIA B200", "nvidia.com/gpu.product=NVIDIA-B200", 180, 80, 100, 1000, 5.0,
             78_800 + 55_950),
    "GH200": ("NVIDIA GH200 480GB", "GH200", 96, 67, 100, 1000, 1.5, 78_800 + 55_950),
    # 102 W idle; 0..50: 102 + 352.5 + 14 = 468.5 W; 50..100: 102 + 242 = 344 W
    "MI250X": ("AMD Instinct MI250X", "AMD_Instinct_MI250X", 64, 23.95, 45, 280, 1.2,
               23_425 + 17_200),
    # 72 W idle; 0..50: 72 + 405 + 14 = 491 W; 50..100: 72 + 277 = 349 W
    "MI210": ("amd.com/gpu.product-name=AMD_Instinct_MI210", "MI210", 64, 22.6, 30, 300, 1.0,
              24_550 + 17_450),
}


def _platform(spelling: str) -> dict:
    return {"name": "one", "processor_types": {"cpu4": {
                "cores": 4, "clock_ghz": 1, "flops_per_cycle": 1, "mem_bw_gbps": 10,
                "tdp_w": 40}},
            "node_types": {"box": {"processors": [{"type": "cpu4", "count": 1}],
                                   "memory_gb": 64,
                                   "accelerators": [{"type": spelling, "count": 2}]}},
            "clusters": [{"name": "c", "network": "ethernet_25g",
                          "nodes": [{"type": "box", "count": 1}]}]}


def test_list_types_shows_the_new_models(capsys):
    assert main(["platform", "--list-types"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.startswith("  ")}
    for key, (_, _, memory_gb, tflops, idle_w, busy_w, price, _) in MODELS.items():
        row = rows[key]
        assert row[3:8] == [f"{memory_gb:g}", f"{tflops:.1f}", f"{idle_w:g}",
                            f"{busy_w:,}", f"{price:.2f}"], key


@pytest.mark.parametrize("key", list(MODELS))
def test_a_platform_of_the_model_replays_with_its_power_and_price(key, tmp_path, capsys):
    platform_spelling, pod_spelling, _, _, _, _, price, energy_j = MODELS[key]
    platform, pods = tmp_path / "p.json", tmp_path / "pods.csv"
    platform.write_text(json.dumps(_platform(platform_spelling)))
    pods.write_text(PODS.format(spec=pod_spelling))
    assert main(["platform", str(platform)]) == 0
    assert capsys.readouterr().out.endswith(f"accelerators:\n  2 GPUs (2 {key})\n")
    out = tmp_path / "o"
    assert main(["replay", "--platform", str(platform), "--workload", str(pods), "--policy",
                 "fifo-first_fit", "--outdir", str(out), "--quiet"]) == 0
    summary = json.loads((out / "out_gpu_summary.json").read_text())
    assert (summary["nb_finished"], summary["nb_rejected"]) == (2, 0)
    assert summary["gpus_by_model"] == {key: 2}
    assert summary["energy_j"] == pytest.approx(energy_j)
    assert summary["cost_usd_by_model"] == {key: pytest.approx(125 * price / 3600)}


def test_a_pod_asking_another_model_is_rejected_with_its_reason(tmp_path):
    platform, pods = tmp_path / "p.json", tmp_path / "pods.csv"
    platform.write_text(json.dumps(_platform("MI210")))
    pods.write_text(PODS.format(spec="AMD Instinct MI250X"))
    out = tmp_path / "o"
    assert main(["replay", "--platform", str(platform), "--workload", str(pods), "--policy",
                 "fifo-first_fit", "--outdir", str(out), "--quiet"]) == 0
    summary = json.loads((out / "out_gpu_summary.json").read_text())
    assert summary["nb_rejected"] == 1
    # a model the platform lacks keeps the pod list's spelling in the reason
    assert summary["rejected"] == {
        "asks GPU model(s) AMD Instinct MI250X, the platform has MI210": 1}
