"""``hdrm plot utilisation`` and ``hdrm plot gantt`` on a GPU run: GPU allocation by model over
time from out_gpu_timeline.csv (values by hand), and the core gantt refused in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_builders import gpu_platform, replay, task  # noqa: E402

from hdrm.cli.main import main  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402
from hdrm.sim.engine import SimulationConfig  # noqa: E402
from hdrm.sim.gpu_engine import GpuSimulation  # noqa: E402
from hdrm.sim.gpu_outputs import write_gpu_outputs  # noqa: E402
from hdrm.viz import PLOTS  # noqa: E402
from hdrm.viz.gpu_utilisation import plot_gpu_utilisation  # noqa: E402
from hdrm.workload.job import Workload  # noqa: E402


def _jobs():
    # node 0: 2 T4, node 1: 1 V100M16. t=0: a takes a whole T4 (0..10), b half the V100 (0..20);
    # t=5: c takes the other T4 (5..15). T4: 50% over [0, 5), 100% over [5, 10), 50% to 15, then
    # 0; V100: 50% to 20. All 3 GPUs: 1500/3000, 2500/3000, 1500/3000, 500/3000, 0.
    return [task(0, 0, 10, gpus=1, models=("T4",)), task(1, 0, 20, gpus=1, milli=500,
                                                          models=("V100M16",)),
            task(2, 5, 10, gpus=1, models=("T4",))]


@pytest.fixture
def gpu_run(tmp_path):
    platform = gpu_platform([(8, 65536, 2, "T4"), (8, 65536, 1, "V100M16")])
    write_gpu_outputs(replay(platform, _jobs()), tmp_path / "run")
    return tmp_path / "run"


def _lines(fig):
    ax = fig.axes[0]
    return {line.get_label().split()[0]: (list(line.get_xdata()), list(line.get_ydata()))
            for line in ax.lines}


def test_gpu_utilisation_by_model_over_time_by_hand(gpu_run):
    fig = PLOTS.get("utilisation")(gpu_run)  # the usual kind dispatches on a GPU run
    lines = _lines(fig)
    assert set(lines) == {"T4", "V100M16", "all"}
    assert lines["T4"] == ([0, 5, 10, 15, 20], pytest.approx([50, 100, 50, 0, 0]))
    assert lines["V100M16"][1] == pytest.approx([50, 50, 50, 50, 0])
    assert lines["all"][1] == pytest.approx([50, 250 / 3, 50, 50 / 3, 0])
    labels = [line.get_label() for line in fig.axes[0].lines]
    # time averages over the makespan 20: T4 (5 x 50 + 5 x 100 + 5 x 50) / 20 = 50 %
    assert labels[0] == "T4 (2 GPUs, mean 50.0 %)"
    # all: (a 1000 x 10 + c 1000 x 10 + b 500 x 20) milli-s / 3000 milli / 20 s = 50 %
    assert labels[-1] == "all 3 GPUs (mean 50.0 %)"
    assert "GPU utilisation by model" in fig.axes[0].get_title()


def test_the_cli_draws_it_and_refuses_the_core_gantt_pointing_to_plot_gpus(gpu_run, capsys):
    assert main(["plot", "utilisation", str(gpu_run)]) == 0
    assert (gpu_run / "utilisation.png").stat().st_size > 0
    capsys.readouterr()
    assert main(["plot", "gantt", str(gpu_run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{gpu_run}: a replay on a GPU platform, whose allocated_resources are "
                        f"GPU ids, not cores; draw its gantt chart by GPU with 'hdrm plot gpus "
                        f"{gpu_run}'")
    assert "\n" not in err
    assert not (gpu_run / "gantt.png").exists()


def test_a_run_without_timeline_rows_or_gpu_counts_is_one_line(tmp_path, gpu_run):
    platform = gpu_platform([(8, 65536, 2, "T4")])
    jobs = [task(0, 0, 10, gpus=1)]
    result = GpuSimulation(platform, Workload(jobs), SimulationConfig(record_timeline=False),
                           ties="name").run("fifo-first_fit")
    write_gpu_outputs(result, tmp_path / "bare")
    with pytest.raises(ConfigError, match=r"out_gpu_timeline.csv: no rows: the run kept no "
                       r"per-instant timeline; rerun it with the timeline on"):
        plot_gpu_utilisation(tmp_path / "bare")
    summary = gpu_run / "out_gpu_summary.json"
    data = json.loads(summary.read_text())
    del data["gpus_by_model"]
    summary.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"out_gpu_summary.json: cannot read the GPUs per model "
                       r"\(KeyError: 'gpus_by_model'\); write the run again with hdrm replay$"):
        plot_gpu_utilisation(gpu_run)
