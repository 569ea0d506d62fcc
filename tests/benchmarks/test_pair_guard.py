"""Issue 26, heterogeneous rows: ``train.py --validation-guard F`` in ``policy_pair`` mode.

The guard's reference there is the best fixed pair of the heterogeneous table (HDeepRM's 36 and
the 18 predicted-run-time pairs) on the heterogeneous workload's validation sequences, scored as
the table scores a pair; a learner warm started from one of its pairs gets its own column.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from benchmarks import compare, evaluation, protocol, train
from benchmarks.train_guard import REFERENCE_PAIRS, build_guard
from hdrm.agents.checkpoint import read_checkpoint
from hdrm.workload.load import scale_arrivals

from .test_compare import NB_JOBS, SLICES, TINY_PPO, pair_settings

ROOT = Path(__file__).resolve().parents[2]

PRED_54 = ("random", "first", "shortest", "smallest", "low_mem", "low_mem_bw", "sjf_pred",
           "wfp3_pred", "unicep_pred")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    """test_compare's tiny traces: the 500-job slices under the full traces' names."""
    folder = tmp_path_factory.mktemp("traces")
    for target, source in SLICES.items():
        (folder / target).write_bytes(gzip.compress((ROOT / "workloads" / source).read_bytes()))
    return folder


def test_the_reference_pairs_are_the_hetero_table_s_54():
    assert len(REFERENCE_PAIRS) == len(set(REFERENCE_PAIRS)) == 54
    assert REFERENCE_PAIRS == protocol.hetero_pairs(PRED_54)
    assert "unicep_pred-high_gflops" in REFERENCE_PAIRS and "random-random" in REFERENCE_PAIRS


def test_a_pair_guard_s_reference_is_the_best_pair_on_the_validation_sequences(traces,
                                                                              tmp_path):
    s = pair_settings(traces, tmp_path / "g.pt", validation_guard=1.25)
    train.check_settings(s)  # accepted in policy_pair mode
    guard = build_guard(s, (200, 300), NB_JOBS)
    # the table's own path for a pair's cell, on the same two sequences
    scores = {p: evaluation.evaluate(evaluation.EvalRun(
        "pair", p, str(traces), str(protocol.CACHE_DIR), (200, 300), NB_JOBS, "sdsc", "none",
        "event")) for p in REFERENCE_PAIRS}
    best = min(scores, key=lambda p: scores[p].bsld)
    assert (guard.factor, guard.reference) == (1.25, best)
    assert (guard.max_wait_s, guard.makespan_s) == (scores[best].max_wait_s,
                                                    scores[best].makespan_s)
    # the 64-job slices at the trace's x3 load hardly queue: every pair scores about 1
    assert max(sc.bsld for sc in scores.values()) < 1.01


def test_a_pair_guard_follows_the_validation_load_factors(traces, tmp_path):
    """At 5x the load the same sequences queue, the pairs differ (bsld 1.46 to 3.88 by hand)
    and the reference is the best of the sequences as the validation runs them."""
    s = pair_settings(traces, tmp_path / "g.pt", validation_guard=1.25,
                      validation_load_factors=(5.0,))
    guard = build_guard(s, (200, 300), NB_JOBS)
    workload = protocol.hetero_workload_file(str(traces))
    loaded = [scale_arrivals(w, 5.0) for w in protocol.hetero_sequences(workload, (200, 300),
                                                                        NB_JOBS)]
    config = protocol.sim_config("none", "event", "hdeeprm")
    scores = {p: protocol.Score.mean(protocol.run_policy(protocol.hetero_platform(), w, p, config)
                                     for w in loaded) for p in REFERENCE_PAIRS}
    best = min(scores, key=lambda p: scores[p].bsld)
    assert max(sc.bsld for sc in scores.values()) > 2 * scores[best].bsld
    assert (guard.reference, guard.max_wait_s, guard.makespan_s) == \
        (best, scores[best].max_wait_s, scores[best].makespan_s)
    at_load_1 = build_guard(pair_settings(traces, tmp_path / "g.pt", validation_guard=1.25),
                            (200, 300), NB_JOBS)
    assert guard.makespan_s < at_load_1.makespan_s  # the loaded sequences end sooner


def test_a_guarded_pair_learner_warm_started_from_a_pair_is_recorded_in_its_column(
        traces, tmp_path):
    out = tmp_path / "pair_bc.pt"
    lines: list[str] = []
    s = pair_settings(traces, out, job_selections=PRED_54, network="mlp", agent_json=TINY_PPO,
                      imitate="smallest-high_gflops", imitate_backfill="none",
                      imitate_episodes=1, imitate_epochs=2, validation_guard=1.25, max_steps=64)
    train.train(s, echo=lines.append)
    assert any(line.startswith("imitation: ") and "of smallest-high_gflops on 1 training "
               "sequences" in line for line in lines)
    meta = read_checkpoint(out)["options"]
    figures = meta["training"]
    assert figures["imitation"]["teacher"] == "smallest-high_gflops"
    assert figures["validation_guard"]["factor"] == 1.25
    assert figures["validation_guard"]["reference"] in REFERENCE_PAIRS
    assert compare.learner_column(meta) == ("PPO-mlp, 54 pairs, warm start smallest-high_gflops, "
                                            "guard 1.25 (event)")
    unguided = dict(meta, setting=dict(meta["setting"], imitate=None, validation_guard=0.0))
    assert compare.learner_column(unguided) == "PPO-mlp, 54 pairs (event)"


def test_a_pair_guard_still_refuses_a_factor_below_one(traces, tmp_path):
    with pytest.raises(Exception, match=r"^--validation-guard: expected a factor >= 1 "
                                        r"\(e\.g\. 1\.25; 0: none\), got 0\.9$"):
        train.check_settings(pair_settings(traces, Path(tmp_path / "x.pt"),
                                           validation_guard=0.9))


def test_a_warm_started_pair_learner_validated_at_heavier_loads_has_its_own_column(
        traces, tmp_path):
    """Session 29's second warm start (teacher chosen at validation loads 1, 1.5 and 2) is never
    averaged with the load-1 one: the loads show in its column, and the guard follows them."""
    out = tmp_path / "pair_vload.pt"
    s = pair_settings(traces, out, job_selections=PRED_54, network="mlp", agent_json=TINY_PPO,
                      imitate="unicep_pred-high_mem_bw", imitate_backfill="none",
                      imitate_episodes=1, imitate_epochs=1, validation_guard=1.25,
                      validation_load_factors=(1.0, 1.5, 2.0), max_steps=64)
    train.train(s, echo=lambda line: None)
    meta = read_checkpoint(out)["options"]
    assert [float(f) for f in meta["setting"]["validation_load_factors"]] == [1.0, 1.5, 2.0]
    assert meta["training"]["imitation"]["teacher"] == "unicep_pred-high_mem_bw"
    column = compare.learner_column(meta)
    assert column == ("PPO-mlp, 54 pairs, warm start unicep_pred-high_mem_bw, guard 1.25, "
                      "validated at loads 1,1.5,2 (event)")
    at_load_1 = dict(meta, setting=dict(meta["setting"], validation_load_factors=[1.0]))
    assert compare.learner_column(at_load_1) == ("PPO-mlp, 54 pairs, warm start "
                                                 "unicep_pred-high_mem_bw, guard 1.25 (event)")
