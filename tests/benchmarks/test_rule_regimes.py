"""benchmarks/rule_regimes.py: the heuristics on every window of each range of the no-leakage
rule (issue 26)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import protocol, rule_regimes
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.workload.select import sequence
from hdrm.workload.swf import read_swf

ROOT = Path(__file__).resolve().parents[2]
TINY = protocol.TraceSpec("tiny", "Tiny", "x.swf", 200, (400, None), (200, 400), (200, 264), 64)


def test_the_ranges_windows():
    windows = rule_regimes.range_windows(TINY, 500, 10, nb_jobs=64, test_starts=(0, 100))
    # training windows lie inside [400, 500): the last start is 500 - 64 = 436
    assert windows == {"test": ([0, 100], 64), "validation": ([200, 264], 64),
                       "training": ([400, 410, 420, 430], 64)}
    capped = protocol.TraceSpec("c", "C", "x.swf", 200, (400, 480), (200, 400), (200,), 32)
    windows = rule_regimes.range_windows(capped, 500, 8, nb_jobs=64)
    assert windows["training"] == ([400, 408, 416], 64)
    assert windows["validation"] == ([200], 32)  # the rule's shorter validation sequences
    lublin = rule_regimes.range_windows(protocol.trace_spec("lublin"), 10_000, 512)
    assert lublin["validation"] == ([6252, 6668], 416) and lublin["training"] == ([0, 512], 1024)


def test_a_trace_without_a_rule_and_a_bad_step_are_refused():
    with pytest.raises(ConfigError, match=r"--trace: 'ctc' is for evaluation only"):
        rule_regimes.range_windows(protocol.trace_spec("ctc"), 10_000, 512)
    with pytest.raises(ConfigError, match=r"--step 0: expected a positive number of jobs"):
        rule_regimes.range_windows(TINY, 500, 0)


def test_the_summary_by_hand():
    scores = np.array([[1.0, 2.0], [3.0, 1.0], [5.0, 5.0]])
    s = rule_regimes.summarise(scores, ["a", "b"])
    # means 3.0 and 2.67: b has the best mean; a wins rows 0 and 2 (the tie goes to the first)
    assert s == {"windows": 3, "mean": {"a": 3.0, "b": 2.67}, "best": "b",
                 "wins": {"a": 2, "b": 1}}


def test_each_range_is_scored_as_the_protocol_scores_a_window():
    trace = read_swf(ROOT / "workloads" / "lublin_256_first500.swf", conventions="rlscheduler")
    figures = rule_regimes.regimes(trace, TINY, ["fcfs", "sjf"], ["none", "easy"], 50,
                                   nb_jobs=64, test_starts=(0, 100))
    assert set(figures) == {"none", "easy"}
    training = figures["none"]["training"]
    assert training["windows"] == 1  # start 400 only: 450 + 64 > 500
    platform = Platform.homogeneous(trace.nb_res)
    by_hand = [protocol.run_policy(platform, sequence(trace, s, 64), "sjf",
                                   protocol.sim_config("none", "event")).bsld for s in (0, 100)]
    assert figures["none"]["test"]["mean"]["sjf"] == round(float(np.mean(by_hand)), 2)
    assert figures["none"]["test"]["starts"] == [0, 100]
    assert [row[1] for row in figures["none"]["test"]["scores"]] == [round(b, 2) for b in by_hand]
    for ranges in figures.values():
        for s in ranges.values():
            assert sum(s["wins"].values()) == s["windows"]
            assert s["mean"][s["best"]] == min(s["mean"].values())
    lines = rule_regimes.report(figures, ["fcfs", "sjf"])
    assert lines[2] == "| range | windows (jobs) | fcfs | sjf | best | wins |"
    assert figures["none"]["validation"]["jobs"] == 64
    assert len([ln for ln in lines if ln.startswith("| test |")]) == 2


@pytest.mark.parametrize("argv, says", [
    (["--trace", "kth"], "error: --trace: 'kth' is for evaluation only (no rule)"),
    (["--backfill", "none,conservative"], "error: --backfill: unknown backfilling "
                                          "'conservative'"),
    (["--heuristics", "fcfs,sjff"], "error: --heuristics: unknown job selection policy 'sjff'"),
    (["--heuristics", ","], "error: --backfill / --heuristics: give at least one name each"),
])
def test_bad_options_are_one_line_errors(capsys, argv, says):
    assert rule_regimes.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(says)
