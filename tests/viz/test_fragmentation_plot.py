"""``hdrm plot fragmentation``: the data drawn, computed by hand on three tiny seeds; the command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hdrm.cli.main import main
from hdrm.fragmentation.protocol import CURVE_COLUMNS
from hdrm.viz.fragmentation import plot_fragmentation, read_folders

#: seed -> (arrived, allocated, fragmented milli-GPU) per arrival, on a 1,000 milli-GPU cluster
SEEDS = {
    "1": ([500, 1000, 1300], [500, 500, 1000], [0, 500, 0]),
    "2": ([1000, 1200], [1000, 1000], [0, 0]),
    "3": ([600, 1000, 1250], [600, 800, 1000], [0, 100, 0]),
}


def write_folder(path: Path, policy: str = "fgd", seeds: dict = SEEDS) -> Path:
    """An hdrm fragmentation output folder with the given curves."""
    path.mkdir(parents=True)
    per_seed = {}
    for seed, (arrived, allocated, frag) in seeds.items():
        rows = [",".join(CURVE_COLUMNS)]
        for i, (a, u, f) in enumerate(zip(arrived, allocated, frag)):
            idle = 1000 - u
            rows.append(f"{i},0,0,{a},{u},{a / 10},{u / 10},{f},{100 * f / idle if idle else 0}")
        (path / f"curve_{seed}.csv").write_text("\n".join(rows) + "\n")
        per_seed[seed] = 100 - allocated[int(np.argmin(np.abs(np.array(arrived) - 1000)))] / 10
    summary = {"policy": policy, "total_gpu_milli": 1000,
               "unallocated_gpus_pct": {"median": float(np.median(list(per_seed.values()))),
                                        "per_seed": per_seed}}
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_the_median_and_band_drawn_are_computed_by_hand(tmp_path):
    folder = write_folder(tmp_path / "fgd")
    (curve,) = read_folders([folder])
    assert curve.label == "fgd" and curve.seeds == ["1", "2", "3"]
    k = curve.arrived_pct
    assert k[0] == 0 and k[-1] == 130
    # unallocated at 100%: seeds 50, 0, 20 -> median 20 (summary.json's), quartiles 10 and 35
    at = {int(x): i for i, x in enumerate(k)}
    assert curve.per_seed[:, at[100]] == pytest.approx([50, 0, 20])
    assert curve.median[at[100]] == 20.0
    assert curve.quantile(0.25)[at[100]] == 10.0 and curve.quantile(0.75)[at[100]] == 35.0
    # 110%: no arrival within 1 -> each seed's state after its last arrival below: 50, 0, 20
    assert curve.per_seed[:, at[110]] == pytest.approx([50, 0, 20])
    # 121%: seed 2 ends at 120% (its row counts within 1), seed 3 at 125% (step), seed 1 at 120%
    assert curve.per_seed[:, at[121]] == pytest.approx([50, 0, 20])
    # 122%: seed 2 has ended -> no median; 49%: only seed 1 has arrived (50% within 1)
    assert np.isnan(curve.median[at[122]]) and np.isnan(curve.median[at[49]])
    assert curve.per_seed[0, at[49]] == 50 and np.isnan(curve.per_seed[1:, at[49]]).all()
    figure = plot_fragmentation([folder])
    line = figure.axes[0].lines[0]
    assert np.array_equal(line.get_xdata(), k)
    assert np.allclose(line.get_ydata(), curve.median, equal_nan=True)
    assert line.get_label() == "fgd (3 seeds)"
    assert figure.axes[0].lines[-1].get_label() == "ideal"


def test_fragmentation_ratio_and_amount(tmp_path):
    folder = write_folder(tmp_path / "fgd")
    (ratio,) = read_folders([folder], "frag_ratio")
    (amount,) = read_folders([folder], "frag_amount")
    # at 100%: seed 1 500 of 500 free (100%), seed 2 nothing free (0), seed 3 100 of 200 (50%)
    assert ratio.per_seed[:, 100] == pytest.approx([100, 0, 50])
    assert amount.per_seed[:, 100] == pytest.approx([50, 0, 10])  # % of the 1,000 milli


def test_command_draws_one_line_per_policy(tmp_path, capsys):
    a = write_folder(tmp_path / "runs" / "fgd")
    b = write_folder(tmp_path / "runs" / "bf", "best_fit", {"7": ([1000], [900], [0])})
    c = write_folder(tmp_path / "again" / "fgd")
    assert main(["plot", "fragmentation", str(a), str(b), str(c)]) == 0
    out = tmp_path / "runs" / "fragmentation.png"
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = [c.label for c in read_folders([a, b, c])]
    assert labels == ["fgd (runs/fgd)", "best_fit", "fgd (again/fgd)"]
    assert main(["plot", "fragmentation", str(a), "--metric", "frag_ratio",
                 "-o", str(tmp_path / "r.svg")]) == 0


@pytest.mark.parametrize("argv, message", [
    (["plot", "fragmentation", "{tmp}/nope"], "{tmp}/nope: no such folder; give hdrm "
                                              "fragmentation output folders"),
    (["plot", "fragmentation", "{tmp}", "--metric", "frag"], "--metric: unknown metric 'frag'; "
                                                             "choose one of: unallocated"),
    (["plot", "fragmentation", "{tmp}"], "{tmp}: no summary.json; give folders written by"),
    (["plot", "gantt", "{tmp}", "{tmp}"], "hdrm plot gantt draws one RUN_DIR, got 2; compare "
                                          "runs with 'hdrm compare'"),
    (["plot", "gantt", "{tmp}", "--metric", "frag_ratio"], "option --metric applies to 'hdrm "
                                                           "plot fragmentation' only"),
    (["plot", "fragmentaton", "{tmp}"], "did you mean 'fragmentation'?"),
])
def test_errors_are_one_line(tmp_path, capsys, argv, message):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(tmp=tmp_path) in err
