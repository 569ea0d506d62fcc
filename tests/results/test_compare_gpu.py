"""``hdrm compare`` on GPU replays: the GPU columns (from out_gpu_summary.json) beside the usual
ones, n/a for a run without them, and a broken summary named in one line."""

from __future__ import annotations

import math

import pytest

from hdrm.cli.main import main
from hdrm.errors import ConfigError
from hdrm.results.compare import compare_rows, format_csv, format_markdown

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn-a,4000,16384,2,T4\n"
# a half GPU 0..100 and a whole one 0..50 on two T4: allocation (500 x 100 + 1000 x 50) / 2000
# / 100 = 50%; cost (0.5 x 100 + 50) GPU-s x 0.35 USD / 3600
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "half,1000,1024,1,500,,LS,Running,0,100,0\nwhole,1000,1024,1,1000,,LS,Running,0,50,0\n")


@pytest.fixture
def gpu_run(tmp_path, capsys):
    (tmp_path / "n.csv").write_text(NODES)
    (tmp_path / "p.csv").write_text(PODS)
    out = tmp_path / "gpu"
    assert main(["replay", "--platform", str(tmp_path / "n.csv"), "--workload",
                 str(tmp_path / "p.csv"), "--policy", "fifo-first_fit", "--outdir", str(out)]) == 0
    capsys.readouterr()
    return out


def test_gpu_runs_add_jct_allocation_fragmentation_and_cost(gpu_run, tmp_path, capsys):
    (row,) = compare_rows([gpu_run])
    assert row["mean_jct_s"] == pytest.approx(75)
    assert row["gpu_allocation"] == pytest.approx(0.5)
    assert row["gpu_cost_usd"] == pytest.approx(100 / 3600 * 0.35)
    assert row["mean_frag_gpus"] >= 0
    assert format_markdown([row]).splitlines()[0].endswith(
        "| mean_jct_s | gpu_allocation | mean_frag_gpus | gpu_cost_usd |")
    assert main(["compare", str(gpu_run), str(gpu_run), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",mean_jct_s,gpu_allocation,mean_frag_gpus,gpu_cost_usd")
    assert lines[1].split(",")[-4:-2] == ["75.000000", "0.500000"]


def test_a_run_without_gpu_columns_shows_them_as_missing(gpu_run):
    cpu_like = {"run": "cpu", "nb_jobs": 2}
    (gpu_row,) = compare_rows([gpu_run])
    cpu_like.update({k: 1.0 for k in gpu_row if k not in ("run", "nb_jobs", "mean_jct_s",
                                                          "gpu_allocation", "mean_frag_gpus",
                                                          "gpu_cost_usd")})
    table = format_csv([gpu_row, cpu_like]).splitlines()
    assert table[2].endswith(",,,,")  # empty cells, not zeros
    assert format_markdown([cpu_like, gpu_row]).splitlines()[2].endswith("| n/a | n/a | n/a |")
    assert not math.isnan(gpu_row["gpu_cost_usd"])


def test_a_broken_gpu_summary_is_one_line(gpu_run):
    (gpu_run / "out_gpu_summary.json").write_text('{"mean_jct_s": 1}')
    with pytest.raises(ConfigError, match=r"out_gpu_summary.json: not a GPU replay summary "
                       r"\(KeyError: 'gpu_allocation_rate_all'\); write it again with "
                       r"hdrm replay$"):
        compare_rows([gpu_run])
