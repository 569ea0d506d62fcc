"""Training seeds in the GPU comparison (benchmarks/gpu_seeds.py) and the imitation warm start
of benchmarks/gpu_train.py."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import gpu_seeds
from benchmarks.gpu_evaluation import Summary
from benchmarks.gpu_learners import GpuModel, model_column
from benchmarks.gpu_protocol import GpuScore
from hdrm.errors import ConfigError
from .test_compare_gpu import _quick, traces  # noqa: F401  (the fixture)


def score(jct: float, cost: float = 10.0) -> GpuScore:
    return GpuScore(avg_jct=jct, p95_jct=2 * jct, max_wait=jct / 2, makespan=3 * jct,
                    gpu_allocation_rate=0.5, gpu_cost=cost, mean_wait=jct / 4, mean_run=jct / 2)


def model(path: str, column: str, seed: int, workload: str = "openb") -> GpuModel:
    return GpuModel(path, column, {"setting": {"workload": workload, "seed": seed}})


def test_a_setting_of_several_seeds_gets_one_column_per_seed():
    models = [model("a0.pt", "MAPPO", 0), model("a1.pt", "MAPPO", 1), model("b.pt", "X", 0),
              model("g.pt", "MAPPO", 0, "gavel")]
    with pytest.raises(ConfigError, match=r"a2.pt: seed 1 of 'MAPPO' on openb is also a1.pt"):
        gpu_seeds.file_columns(models + [model("a2.pt", "MAPPO", 1)])
    columns = gpu_seeds.file_columns(models)
    assert columns == {"a0.pt": "MAPPO [seed 0]", "a1.pt": "MAPPO [seed 1]", "b.pt": "X",
                       "g.pt": "MAPPO"}  # one file of its setting on gavel: the plain column
    assert gpu_seeds.setting_of("MAPPO [seed 12]") == "MAPPO"
    assert gpu_seeds.setting_of("sjf-fgd (greedy)") == "sjf-fgd (greedy)"


def test_the_setting_is_the_mean_over_its_seeds_and_its_spread_is_over_them():
    """Seeds scoring 90, 100 and 140 s: the setting scores 110 s, spread std(90, 100, 140) =
    21.6 s (not the evaluation seeds' spread); a lone file keeps its own summary."""
    lone = Summary(score(50.0), score(1.0))
    per_file = {f"M [seed {k}]": Summary(score(v), score(0.0)) for k, v in
                enumerate((90.0, 100.0, 140.0))} | {"L": lone}
    combined = gpu_seeds.combine(per_file)
    assert set(combined) == {"M", "L"} and combined["L"] is lone
    assert combined["M"].mean.avg_jct == pytest.approx(110.0)
    assert combined["M"].mean.p95_jct == pytest.approx(220.0)
    assert combined["M"].spread.avg_jct == pytest.approx(float(np.std([90, 100, 140])))
    assert combined["M"].spread.avg_jct == pytest.approx(21.602, abs=1e-3)
    assert set(gpu_seeds.seeded(per_file)) == {"M [seed 0]", "M [seed 1]", "M [seed 2]"}


def test_a_warm_started_model_names_its_teacher_in_its_column():
    meta = {"setting": {"role": "learned_place", "imitate": "sjf-first_fit"},
            "agent": {"params": {"freeze_order": "sjf"}}}
    assert model_column(meta) == "sjf + learned place, warm start sjf-first_fit"
    assert model_column({"setting": {"role": "mappo", "imitate": ""}}) == "MAPPO"


def test_three_warm_started_seeds_are_judged_on_their_mean(traces, tmp_path):  # noqa: F811
    """Three seeds of one warm-started setting (quick windows): each gets its column, the
    setting's column is their mean and is the one judged; the page lists every seed."""
    pytest.importorskip("torch")
    from benchmarks import gpu_train

    models = tmp_path / "models"
    for seed in (0, 1, 2):
        out = models / f"learned_place_openb_seed{seed}.pt"
        assert gpu_train.main([
            "--workload", "openb", "--role", "learned_place", "--freeze-order", "sjf", "--quick",
            "--episodes", "1", "--window", "4", "--imitate", "sjf-first_fit",
            "--imitate-episodes", "2", "--imitate-epochs", "2", "--seed", str(seed),
            "--traces", str(traces), "--cache", str(tmp_path / "cache"), "--out", str(out)]) == 0
    table = _quick(traces, tmp_path, "--models", str(models), "--seeds", "1")
    row = "openb default, x20 load, 1 test windows of 3 tasks"
    cells = table[row]
    name = "sjf + learned place, warm start sjf-first_fit"
    per_seed = [cells[f"{name} [seed {k}]"] for k in (0, 1, 2)]
    assert cells[name] == pytest.approx(np.mean(per_seed))
    assert cells[f"{name} (spread)"] == pytest.approx(np.std(per_seed))
    assert cells["best learner name"] == name  # never a single seed
    assert cells["best learner spread"] == cells[f"{name} (spread)"]
    # one GPU, tasks of 100, 10 and 50 s at once, SJF order: B, C, A whatever the placement
    assert per_seed == pytest.approx([(10 + 60 + 160) / 3] * 3)
    imitation = table["training: learned_place_openb_seed1.pt"]
    assert imitation["seed"] == 1 and imitation["best at episode"] in (0, 1)
    assert imitation["warm start"].startswith("sjf-first_fit: 2 episodes, 2 epochs, agreement ")
    assert table["training: learned_place_openb_seed1.pt"]["learner"] == name
    page = (tmp_path / "page.rst").read_text()
    assert "each training seed" in page and f"{name} [seed 2]" in page


def test_imitating_a_bare_order_is_a_one_line_error(traces, tmp_path, capsys):  # noqa: F811
    pytest.importorskip("torch")
    from benchmarks import gpu_train

    with pytest.raises(ConfigError, match=r"--imitate: expected a pair 'ORDER-PLACEMENT'.*'sjf'"):
        gpu_train.main(["--workload", "openb", "--quick", "--episodes", "1", "--imitate", "sjf",
                        "--traces", str(traces), "--cache", str(tmp_path / "c"), "--out",
                        str(tmp_path / "m.pt")])
