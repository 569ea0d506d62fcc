"""Every plot kind renders from real runs of the shipped examples: a replay of the shipped SDSC-SP2
slice on the heterogeneous platform, and a short training run of the shipped REINFORCE example."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hdrm.cli.main import main as hdrm_main
from hdrm.launcher import main as launch_main
from hdrm.results.run import Run
from hdrm.viz import PLOTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("replay")
    status = hdrm_main(["replay", "--platform", str(ROOT / "platforms" / "hetero.json"),
                        "--workload", str(ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"),
                        "--nb-jobs", "200", "--policy", "shortest-high_mem_bw", "--backfill", "easy",
                        "--outdir", str(out), "--quiet"])
    assert status == 0
    return out


@pytest.fixture(scope="module")
def training_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("training")
    example = root / "example"
    shutil.copytree(ROOT / "examples" / "reinforce", example)
    options = json.loads((example / "options.json").read_text())
    for key in ("workload_file_path", "platform_file_path"):
        if options.get(key):
            options[key] = str((ROOT / "examples" / "reinforce" / options[key]).resolve())
    options["nb_jobs"] = 60
    options["pybatsim"]["agent"]["episodes"] = 3
    (example / "options.json").write_text(json.dumps(options))
    out = root / "run"
    status = launch_main([str(ROOT / "agents" / "reinforce.py"), str(example / "options.json"),
                          "--outdir", str(out), "--quiet"])
    assert status == 0
    return out


@pytest.mark.parametrize("kind", ["gantt", "utilisation", "queue", "energy", "contention"])
def test_engine_plots_of_a_real_replay(kind, replay_run, saved_png):
    fig = PLOTS.get(kind)(replay_run)
    saved_png(fig, f"{kind}.png")
    assert fig.axes and all(ax.has_data() for ax in fig.axes[:1])


def test_the_replay_had_contention_to_show(replay_run):
    over = Run(replay_run).overutilizations()
    assert over.bandwidth and all(span.cores for span in over.bandwidth)


@pytest.mark.parametrize("kind", ["learning", "actions", "gantt", "energy"])
def test_plots_of_a_real_training_run(kind, training_run, saved_png):
    fig = PLOTS.get(kind)(training_run)
    saved_png(fig, f"{kind}.png")
    assert fig.axes and fig.axes[0].has_data()
