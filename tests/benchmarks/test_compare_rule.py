"""Issue 26: the no-leakage rule (benchmarks/protocol_rule.py, train_rule.py), what the mean hides
(protocol_score.py), seeds and flags (compare_summary.py) and the generalisation rows
(compare_rows.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import compare, compare_rows, compare_summary, evaluation, train, train_rule
from benchmarks.protocol_rule import check_disjoint, check_evaluation, overlap
from benchmarks.protocol_score import Score, tail_scores
from hdrm.errors import ConfigError
from hdrm.results.records import JobResult

from .test_compare import NB_JOBS, SLICES, TINY_RANGES, tiny_settings

ROOT = Path(__file__).resolve().parents[2]


def write_trace(path: Path, nb_jobs: int, procs: int = 16) -> Path:
    """A constructed SWF trace: one 1-core, 100 s job a minute."""
    lines = [f"; MaxProcs: {procs}"]
    lines += [f"{i + 1} {i * 60} 0 100 1 -1 -1 1 200 -1 1 1 1 1 1 1 -1 -1" for i in range(nb_jobs)]
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


@pytest.fixture(scope="module")
def long_traces(tmp_path_factory) -> Path:
    """A 2,100-job constructed trace under Lublin-1's name, long enough to reach a test window."""
    folder = tmp_path_factory.mktemp("long")
    write_trace(folder / "lublin_256.swf.gz", 2100)
    return folder


def settings_on(folder: Path, **kw) -> train.TrainSettings:
    values = dict(out=str(folder / "m.pt"), trace="lublin", train_jobs=64, traces=str(folder),
                  validation_starts=(1000,), train_range=(0, 900), validation_range=(900, 1981))
    values.update(kw)
    return train.TrainSettings(**values)


# ------------------------------------------------------------------------- disjointness
def test_a_training_range_that_touches_a_test_window_is_refused(long_traces):
    s = settings_on(long_traces, train_range=(1900, 1982), validation_range=(900, 1900))
    with pytest.raises(ConfigError) as err:
        train_rule.split_for(s, 2100)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(str(long_traces / "lublin_256.swf.gz"))
    assert ("training jobs [1900, 1982) overlap the test window [1981, 3005) on jobs "
            "[1981, 1982)") in text


def test_training_and_validation_must_be_disjoint_and_inside_their_ranges(long_traces):
    with pytest.raises(ConfigError, match=r"training jobs \[0, 950\) overlap the validation jobs "
                                          r"\[900, 1981\) on jobs \[900, 950\)"):
        train_rule.split_for(settings_on(long_traces, train_range=(0, 950)), 2100)
    with pytest.raises(ConfigError, match=r"--validation-starts: the sequence \[1950, 2014\) "
                                          r"leaves the allowed jobs \[900, 1981\)"):
        train_rule.split_for(settings_on(long_traces, validation_starts=(1950,)), 2100)
    with pytest.raises(ConfigError, match=r"--train-range: jobs \[2200, 2100\) are not a range"):
        train_rule.split_for(settings_on(long_traces, train_range=(2200, 2300)), 2100)


def test_the_split_keeps_every_training_sequence_in_its_range(long_traces):
    split = train_rule.split_for(settings_on(long_traces), 2100)
    assert split.pool.min() == 0 and split.pool.max() == 900 - 64
    assert split.validation_jobs == 64  # no longer than an episode
    rule = split.rule
    assert rule["train_jobs"] == [0, 900] and rule["validation_jobs"] == [900, 1981]
    assert rule["trace_file"] == "lublin_256.swf.gz" and len(rule["trace_sha256"]) == 64
    assert [1981, 3005] in rule["test_windows"] and len(rule["test_windows"]) == 10
    train_rule.assert_training_window(836, 64, split)
    with pytest.raises(RuntimeError, match=r"training episode \[837, 901\) leaves the training "
                                           r"range \[0, 900\)"):
        train_rule.assert_training_window(837, 64, split)


def test_the_documented_rules_are_disjoint_from_the_test_windows():
    from benchmarks import protocol

    windows = train_rule.protocol_windows()
    for key in protocol.TRAINABLE:
        spec = protocol.TRACES[key]
        train_range = (spec.train_range[0], spec.train_range[1] or 59_705)
        check_disjoint(key, {"training": train_range, "validation": spec.validation_range},
                       windows)
        for start in spec.validation_starts:
            assert spec.validation_range[0] <= start
            assert start + spec.validation_jobs <= spec.validation_range[1]
    assert overlap((0, 1981), (1981, 3005)) is None
    assert overlap((0, 1982), (1981, 3005)) == (1981, 1982)


# ------------------------------------------------------------------------- refusal on evaluation
@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny traces of test_compare and a model trained under TINY_RANGES (jobs 200-499)."""
    traces = tmp_path_factory.mktemp("traces")
    for target, source in SLICES.items():
        (traces / target).write_bytes(gzip.compress((ROOT / "workloads" / source).read_bytes()))
    models = tmp_path_factory.mktemp("models")
    train.train(tiny_settings(traces, models / "ppo_lublin.pt", max_steps=100),
                echo=lambda *_: None)
    return traces, models


def compare_args(traces: Path, models: Path, tmp: Path, *extra: str) -> list[str]:
    return ["--evaluate-only", "--groups", "protocol", "--traces", str(traces), "--cache",
            str(tmp / "cache"), "--models", str(models), "--nb-jobs", str(NB_JOBS),
            "--jobs", "1", "--rst", "", "--json", str(tmp / "t.json"), *extra]


def test_evaluating_a_model_on_jobs_it_trained_on_is_refused_in_one_line(tiny, tmp_path, capsys):
    traces, models = tiny
    model = models / "ppo_lublin.pt"
    assert compare.main(compare_args(traces, models, tmp_path, "--starts", "0,420")) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err == (f"error: {model}: its training jobs [400, 500) of lublin_256.swf.gz overlap the "
                   "evaluated window [420, 484) on jobs [420, 484); evaluate it elsewhere, or "
                   "pass --allow-leaky to mark the cell leaky")
    # validation jobs count as seen too
    assert compare.main(compare_args(traces, models, tmp_path, "--starts", "300")) == 2
    assert "its validation jobs [200, 400)" in capsys.readouterr().err
    # the evaluation itself checks again (a run built by hand cannot skip the rule)
    run = evaluation.model_run(str(model), str(traces), str(tmp_path), (420,), NB_JOBS,
                               "lublin", "none", "protocol", "")
    with pytest.raises(ConfigError, match="overlap the evaluated window"):
        evaluation.evaluate(run)


def test_allow_leaky_marks_the_column_and_meets_no_target(tiny, tmp_path):
    traces, models = tiny
    assert compare.main(compare_args(traces, models, tmp_path, "--starts", "0,420",
                                     "--allow-leaky")) == 0
    row = json.loads((tmp_path / "t.json").read_text())["Lublin-1, no backfilling"]
    assert isinstance(row["PPO-kernel (event) [leaky]"], float)
    assert "PPO-kernel (event)" not in row
    assert row["target met"] == "n/a: no model trained under the no-leakage rule"


def test_a_model_without_the_rule_is_refused_then_marked_pre_rule(tiny, tmp_path, capsys):
    traces, _ = tiny
    s = tiny_settings(traces, tmp_path / "m" / "old.pt")
    env = train.make_env(s, NB_JOBS)
    agent = train.build_agent("ppo", train.agent_config(s), env, 0)
    train.save(agent, s, train.agent_config(s), {"wall_s": 1.0, "final": True})  # no rule
    models = tmp_path / "m"
    assert compare.main(compare_args(traces, models, tmp_path, "--starts", "0")) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {models / 'old.pt'}: trained before the no-leakage rule (its metadata has no "
        "'rule'), so it may have trained on test jobs; retrain it with benchmarks/train.py, or "
        "pass --allow-leaky to mark its cells leaky")
    assert compare.main(compare_args(traces, models, tmp_path, "--starts", "0",
                                     "--allow-leaky")) == 0
    table = json.loads((tmp_path / "t.json").read_text())
    assert "PPO-kernel (event) [pre-rule]" in table["Lublin-1, no backfilling"]
    assert table["training: old.pt"]["jobs seen (no-leakage rule)"] == \
        "trained before the no-leakage rule"


def test_a_model_is_evaluated_freely_on_another_trace(tiny, tmp_path):
    traces, models = tiny
    meta = compare.discover_models(models)[0].meta
    other = write_trace(tmp_path / "other.swf.gz", 600)
    assert check_evaluation("m.pt", meta, other, [(400, 464)]) == ""
    # the same content under another name and compression is the same trace
    plain = tmp_path / "copy.swf"
    plain.write_bytes(gzip.decompress((traces / "lublin_256.swf.gz").read_bytes()))
    with pytest.raises(ConfigError, match=r"overlap the evaluated window \[400, 464\)"):
        check_evaluation("m.pt", meta, plain, [(400, 464)])


# ------------------------------------------------------------------------- what the mean hides
def test_tail_metrics_of_a_four_job_schedule_by_hand():
    rows = [JobResult("1", submission_time=0, starting_time=0, execution_time=100,
                      requested_number_of_resources=1),
            JobResult("2", submission_time=0, starting_time=100, execution_time=5,
                      requested_number_of_resources=2),
            JobResult("3", submission_time=10, starting_time=105, execution_time=50,
                      requested_number_of_resources=1),
            JobResult("4", submission_time=20, starting_time=300, execution_time=20,
                      requested_number_of_resources=2)]
    score = tail_scores(rows, nb_cores=2, energy_j=2e6)
    # bounded slowdowns 1, (100 + 5) / 10 = 10.5, 145 / 50 = 2.9, 300 / 20 = 15
    assert score.bsld == pytest.approx((1 + 10.5 + 2.9 + 15) / 4)
    assert score.p95_bsld == pytest.approx(10.5 + 0.85 * (15 - 10.5))  # linear, rank 2.85
    assert score.max_bsld == 15 and score.max_wait_s == 280 and score.makespan_s == 320
    # job 2 waits 100 s = 10 x max(5, 10) s: not more; job 4 waits 280 > 200
    assert score.long_wait_share == 0.25
    assert score.utilisation == pytest.approx((100 + 10 + 50 + 40) / (2 * 320))
    assert score.energy_mj == 2.0


def test_a_row_keeps_the_worst_maxima_and_the_mean_of_the_rest():
    a = Score(10, 0.5, 1, p95_bsld=20, max_bsld=30, max_wait_s=100, makespan_s=1000,
              long_wait_share=0.1)
    b = Score(20, 0.7, 3, p95_bsld=40, max_bsld=90, max_wait_s=50, makespan_s=3000,
              long_wait_share=0.3)
    row = Score.mean([a, b])
    assert (row.bsld, row.p95_bsld, row.makespan_s, row.long_wait_share) == (15, 30, 2000, 0.2)
    assert (row.max_bsld, row.max_wait_s) == (90, 100)
    seeds = compare_summary.seed_mean([a, b])  # over seeds: every field's mean
    assert (seeds.max_bsld, seeds.max_wait_s) == (60, 75)
    assert compare_summary.spread_text([12.5, 10.0, 11.0]) == "10.00-12.50 (3 seeds)"


# ------------------------------------------------------------------------- flags and targets
def test_a_learner_waiting_or_ending_far_beyond_the_best_heuristic_is_flagged():
    tail = {"max_wait_s": {"F1 (event)": 1000.0, "A": 1500.0, "B": 1501.0, "C": 100.0},
            "makespan_s": {"F1 (event)": 100.0, "A": 150.0, "B": 100.0, "C": 151.0}}
    flagged = compare_summary.flags(["A", "B", "C"], "F1 (event)", tail)
    assert flagged == {"B": "max wait 1.50x F1 (event)", "C": "makespan 1.51x F1 (event)"}


def _row(group="protocol"):
    return compare_rows.Row("r", group, "lublin", "lublin", "none")


def test_targets_need_the_mean_of_three_seeds_and_no_flag():
    tail = {"max_wait_s": {"F1 (event)": 10.0, "L": 10.0, "S": 100.0},
            "makespan_s": {"F1 (event)": 10.0, "L": 10.0, "S": 10.0}}
    base = {"F1 (event)": 100.0, "SJF-pred (event)": 120.0}
    cells = dict(base, L=90.0)
    compare_summary.summarise(_row(), cells, ["L"], ["L"], {"L": 3}, tail, ("SJF-pred (event)",))
    assert cells["best heuristic"] == 100.0 and cells["target met"] is True
    cells = dict(base, L=90.0)
    compare_summary.summarise(_row(), cells, ["L"], ["L"], {"L": 2}, tail, ())
    assert cells["target met"] == "no: 2 seed(s), 3 needed"
    cells = dict(base, S=90.0)
    compare_summary.summarise(_row(), cells, ["S"], ["S"], {"S": 3}, tail, ())
    assert cells["target met"] == "no: flagged (max wait 10.00x F1 (event) (worst of 3 seeds))"
    assert cells["flags"] == "S: max wait 10.00x F1 (event) (worst of 3 seeds)"
    cells = dict(base, L=96.0)  # above 0.95 x 100
    compare_summary.summarise(_row(), cells, ["L"], ["L"], {"L": 3}, tail, ())
    assert cells["target met"] is False
    # the predicted-time heuristic is the best heuristic when it is lowest
    cells = {"F1 (event)": 100.0, "UNICEP-pred (event)": 80.0, "L": 78.0}
    compare_summary.summarise(_row(), cells, ["L"], ["L"], {"L": 3}, tail, ("UNICEP-pred (event)",))
    assert cells["best heuristic name"] == "UNICEP-pred (event)" and cells["target met"] is False


# ------------------------------------------------------------------------- generalisation rows
@pytest.mark.parametrize("text,message", [
    ("nopath", "--extra-trace: expected NAME=PATH[:PROCS] (e.g. anl=/data/ANL.swf.gz:40960), "
               "got 'nopath'"),
    ("=x.swf", "--extra-trace: expected NAME=PATH[:PROCS]"),
    ("lublin=x.swf", "--extra-trace: name 'lublin' is a shipped trace's; choose another"),
    ("a={t}:many", "--extra-trace a: PROCS must be a positive integer, got 'many'"),
    ("a={t}:0", "--extra-trace a: PROCS must be a positive integer, got '0'"),
    ("a=/no/such.swf", "--extra-trace a: no such file '/no/such.swf'; give an SWF trace"),
])
def test_extra_trace_errors_are_one_line_naming_the_value(tmp_path, text, message):
    trace = write_trace(tmp_path / "t.swf.gz", 10)
    with pytest.raises(ConfigError) as err:
        compare_rows.parse_extra_trace(text.format(t=trace))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_extra_trace_adds_generalisation_rows_without_code(tiny, tmp_path, capsys):
    traces, models = tiny
    extra = write_trace(tmp_path / "mine.swf.gz", 300, procs=8)
    parsed = compare_rows.parse_extra_trace(f"mine={extra}:32")
    assert (parsed.name, parsed.path, parsed.procs) == ("mine", str(extra), 32)
    assert compare.main(["--evaluate-only", "--groups", "generalisation", "--traces", str(traces),
                         "--models", str(models), "--nb-jobs", "64", "--starts", "0,1,2",
                         "--jobs", "1", "--rst", "", "--json", str(tmp_path / "g.json"),
                         "--extra-trace", f"mine={extra}:32", "--cache", str(tmp_path)]) == 0
    table = json.loads((tmp_path / "g.json").read_text())
    row = table["mine (other traces' models), no backfilling"]
    assert isinstance(row["PPO-kernel (event), from Lublin-1"], float)  # a Lublin-1 model
    assert row["flags"] in ("none",) or row["flags"].startswith("PPO-kernel")
    # the Lublin-1 row holds no Lublin-1 model; it is evaluated at evenly spaced windows
    assert not any("PPO" in c for c in table["Lublin-1 (other traces' models), no backfilling"])
    assert "mine (other traces' models), EASY backfilling [max_wait_s]" in table


@given(st.integers(1, 100_000), st.integers(1, 20), st.integers(1, 2048))
def test_generalisation_windows_are_evenly_spaced_and_inside_the_trace(nb_trace, count, nb_jobs):
    if nb_trace < nb_jobs:
        with pytest.raises(ConfigError, match=f"the trace has {nb_trace} jobs"):
            compare_rows.spread_starts(nb_trace, count, nb_jobs)
        return
    starts = compare_rows.spread_starts(nb_trace, count, nb_jobs)
    assert len(starts) == count and starts[0] == 0
    assert all(0 <= s and s + nb_jobs <= nb_trace for s in starts)
    if count > 1:
        assert starts[-1] == nb_trace - nb_jobs
        gaps = np.diff(starts)
        assert gaps.max() - gaps.min() <= 1  # evenly spaced, up to rounding


# ------------------------------------------------------------------------- seeds
def test_seed_series_names_resumes_and_errors(tiny, tmp_path):
    from benchmarks import train_seeds
    from benchmarks.compare_models import rule_command, seed_model_name

    assert train_seeds.seed_file("models/ppo_x.pt", 2) == Path("models/ppo_x_seed2.pt")
    assert seed_model_name("ppo_x.pt", 2) == "ppo_x_seed2.pt"
    _, models = tiny
    assert train_seeds.is_final(models / "ppo_lublin.pt")  # a finished run's model
    assert not train_seeds.is_final(tmp_path / "missing.pt")
    with pytest.raises(ConfigError, match="--seeds '1,1': expected distinct integers separated"):
        train_seeds.parse_seeds("1,1")
    with pytest.raises(ConfigError, match="--seeds 'a': expected distinct integers separated"):
        train_seeds.parse_seeds("a")
    assert train_seeds.main(["--out", "x.pt", "--", "--seed", "3"]) == 2
    # the rule's commands drop the pre-rule validation starts and the seed
    argv = rule_command("ppo_hetero_bsld.pt")
    assert "--validation-starts" not in argv and "--seed" not in argv
    assert argv[argv.index("--max-steps") + 1] == "1500000"  # the shipped seeds' budget
    # a setting's overrides replace an option's value or add the option
    argv = rule_command("ppo-attention_lublin_none_event.pt")
    assert argv[argv.index("--minutes") + 1] == "0" and argv.count("--minutes") == 1
    assert argv[-4:] == ["--max-steps", "120000", "--validation-guard", "1.25"]


def test_a_learner_is_flagged_by_its_worst_seed_while_its_cell_is_the_mean():
    def score(bsld, wait, span):
        return Score(bsld, 0.5, 1.0, p95_bsld=bsld, max_bsld=bsld, max_wait_s=wait,
                     makespan_s=span, long_wait_share=0.0)

    row = compare_rows.Row("r", "protocol", "lublin", "lublin", "none")
    seeds = [score(10.0, 1600.0, 100.0), score(20.0, 1000.0, 100.0), score(30.0, 1000.0, 100.0)]
    cells = {"F1 (event)": score(40.0, 1000.0, 100.0), "L": compare_summary.seed_mean(seeds)}
    table: dict = {}
    compare.fill_row(table, row, cells, {"L": seeds})
    main = table["r"]
    assert main["L"] == 20.0 and main["L [min-max]"] == "10.00-30.00 (3 seeds)"
    assert table["r [max_wait_s]"]["L"] == 1200.0  # the mean over seeds: under 1.5 x 1000
    assert main["flags"] == "L: max wait 1.60x F1 (event) (worst of 3 seeds)"
    assert main["target met"] == "no: flagged (max wait 1.60x F1 (event) (worst of 3 seeds))"


def test_a_generalisation_row_where_every_policy_scores_the_same_has_no_target():
    tail = {"max_wait_s": {"F1 (event)": 0.0, "L": 0.0},
            "makespan_s": {"F1 (event)": 9.0, "L": 9.0}}
    cells = {"F1 (event)": 1.0, "FCFS (event)": 1.0, "L": 1.0}
    compare_summary.summarise(_row("generalisation"), cells, ["L"], ["L"], {"L": 3}, tail, ())
    assert cells["target met"].startswith("n/a: every fixed policy scores 1.00 here")
    cells = {"F1 (event)": 1.0, "FCFS (event)": 2.0, "L": 1.0}
    compare_summary.summarise(_row("generalisation"), cells, ["L"], ["L"], {"L": 3}, tail, ())
    assert cells["target met"] is True  # at least as good as the best heuristic


def test_a_flagged_best_learner_does_not_hide_another_that_meets_the_target():
    tail = {"max_wait_s": {"F1 (event)": 10.0, "S": 100.0, "G": 11.0, "T": 10.0},
            "makespan_s": {"F1 (event)": 10.0, "S": 10.0, "G": 10.0, "T": 10.0}}
    cells = {"F1 (event)": 100.0, "S": 50.0, "G": 80.0, "T": 70.0}
    # S is the best but flagged; T is better than G but has 2 seeds: G meets the target
    compare_summary.summarise(_row(), cells, ["S", "G", "T"], ["S", "G", "T"],
                              {"S": 3, "G": 3, "T": 2}, tail, ())
    assert cells["best rule-abiding learner name"] == "S"
    assert cells["target met"] is True and cells["target met by"] == "G"
    cells = {"F1 (event)": 100.0, "S": 50.0, "G": 96.0}  # G above 0.95 x 100: nobody meets it
    compare_summary.summarise(_row(), cells, ["S", "G"], ["S", "G"], {"S": 3, "G": 3}, tail, ())
    assert cells["target met"] == "no: flagged (max wait 10.00x F1 (event) (worst of 3 seeds))"
    assert "target met by" not in cells
