"""Issue 26: a model records its observation's features and evaluation refuses one whose
observation has changed since (benchmarks/train.py, evaluation.py); benchmarks/train_check.py
judges models on their validation range only, with the tail and the starvation ratios."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from benchmarks import evaluation, train, train_check
from hdrm.agents.checkpoint import read_checkpoint, save_snapshot
from hdrm.env.observations import QUEUE_JOB_FEATURES, RESERVATION_JOB_FEATURES
from hdrm.errors import ConfigError

from .test_compare import NB_JOBS, SLICES, TINY_PPO, tiny_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny traces of test_compare and a ``job_window_queue`` model trained on them under
    TINY_RANGES (validation jobs [200, 400), sequences at 200)."""
    traces = tmp_path_factory.mktemp("traces")
    for target, source in SLICES.items():
        (traces / target).write_bytes(gzip.compress((ROOT / "workloads" / source).read_bytes()))
    model = tmp_path_factory.mktemp("models") / "queue.pt"
    train.train(tiny_settings(traces, model, max_steps=100, observation="job_window_queue"),
                echo=lambda *_: None)
    return traces, model


def _rewritten(model: Path, out: Path, **setting) -> Path:
    """A copy of ``model`` whose recorded setting is updated with ``setting`` (None: removed)."""
    checkpoint = read_checkpoint(model)
    options = checkpoint["options"]
    for key, value in setting.items():
        if value is None:
            options["setting"].pop(key, None)
        else:
            options["setting"][key] = value
    save_snapshot(checkpoint, out, options)
    return out


def _run(model: Path, traces: Path, tmp: Path) -> evaluation.EvalRun:
    return evaluation.model_run(str(model), str(traces), str(tmp), (0,), NB_JOBS, "lublin",
                                "none", "protocol", "")


def test_the_model_records_its_observation_features(tiny):
    _, model = tiny
    setting = read_checkpoint(model)["options"]["setting"]
    assert setting["observation"] == "job_window_queue"
    assert setting["features"] == list(QUEUE_JOB_FEATURES)
    assert train.observation_features(None) == train.observation_features("job_window")
    assert train.observation_features("small") is None  # policy_pair kinds name no columns


def test_a_changed_feature_set_is_refused_in_one_line(tiny, tmp_path):
    traces, model = tiny
    old = list(QUEUE_JOB_FEATURES)
    old[12] = "queue_free"  # as if the observation had changed since training
    changed = _rewritten(model, tmp_path / "changed.pt", features=old)
    with pytest.raises(ConfigError) as err:
        evaluation.evaluate(_run(changed, traces, tmp_path))
    text = str(err.value)
    assert "\n" not in text
    assert text == (f"{changed}: options.setting.features: the model was trained on 16 features "
                    "of observation 'job_window_queue' but it now gives 16 (column 12: "
                    "'queue_free' then, 'queue_blocked' now); retrain the model with "
                    "benchmarks/train.py or evaluate it with the code it was trained with")
    shorter = _rewritten(model, tmp_path / "short.pt",
                         features=list(RESERVATION_JOB_FEATURES))
    with pytest.raises(ConfigError, match=r"trained on 12 features .* now gives 16 \(column 10: "
                                          r"'is_job' then, 'queue_length' now\)"):
        evaluation.evaluate(_run(shorter, traces, tmp_path))


def test_a_model_recording_no_features_evaluates_as_before(tiny, tmp_path):
    traces, model = tiny
    older = _rewritten(model, tmp_path / "older.pt", features=None)
    assert "features" not in read_checkpoint(older)["options"]["setting"]
    assert (evaluation.evaluate(_run(older, traces, tmp_path))
            == evaluation.evaluate(_run(model, traces, tmp_path)))


def test_train_check_scores_the_validation_range_with_the_starvation_ratios(tiny, capsys):
    traces, model = tiny
    args = [str(model), "--traces", str(traces), "--heuristics", "fcfs,f1", "--nb-jobs", "64",
            "--starts", "200,300"]
    assert train_check.main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("best heuristic: ")
    rows = {line.split(" | ")[0].strip("| "): line for line in lines[3:]}
    assert set(rows) == {"fcfs (event)", "f1 (event)", "queue.pt"}
    cells = rows["queue.pt"].strip("| ").split(" | ")
    assert len(cells) == 1 + len(train_check.COLUMNS) + 2
    ratio = float(cells[-2].rstrip(" !"))  # max wait over the best heuristic's
    assert ratio > 0 and cells[-2].endswith("!") == (ratio > 1.5)
    runs = train_check.plan_runs([str(model)], ("f1",), str(traces), "unused")
    assert {r.starts for r in runs.values()} == {(200,)}  # the rule's validation sequences
    assert {r.nb_jobs for r in runs.values()} == {NB_JOBS}


@pytest.mark.parametrize("extra,message", [
    (["--starts", "150"], "error: --starts: the sequence [150, 214) leaves the allowed jobs "
                          "[200, 400); choose starts inside it"),
    (["--starts", "2x0"], "error: --starts '2x0': expected non-negative integers separated by "
                          "commas (e.g. 6252,6352)"),
])
def test_train_check_stays_inside_the_validation_range(tiny, capsys, extra, message):
    traces, model = tiny
    assert train_check.main([str(model), "--traces", str(traces), *extra]) == 2
    assert capsys.readouterr().err.strip() == message


def test_train_check_refuses_a_file_that_is_not_a_model(tmp_path, capsys):
    missing = tmp_path / "none.pt"
    assert train_check.main([str(missing)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {missing}: no such model file; give checkpoints written by benchmarks/train.py")


def test_a_rule_abiding_model_of_another_observation_gets_its_own_column(tiny):
    from benchmarks import compare

    _, model = tiny
    meta = read_checkpoint(model)["options"]
    assert compare.learner_column(meta) == "PPO-kernel, job_window_queue (event)"
    plain = dict(meta, setting=dict(meta["setting"], observation="job_window"))
    assert compare.learner_column(plain) == "PPO-kernel (event)"
    old = dict(meta, rule=None)  # trained before the rule: its column stays as it was
    assert compare.learner_column(old) == "PPO-kernel (event) [pre-rule]"


def test_a_model_trained_or_validated_at_other_loads_gets_its_own_column(tiny):
    from benchmarks import compare

    _, model = tiny
    meta = read_checkpoint(model)["options"]
    base = dict(meta["setting"], observation="job_window", validation_guard=1.25)
    heavy = dict(meta, setting=dict(base, validation_load_factors=[1.0, 1.5, 2.0]))
    assert compare.learner_column(heavy) == \
        "PPO-kernel, guard 1.25, validated at loads 1,1.5,2 (event)"
    trained = dict(meta, setting=dict(base, load_factors=[1.0, 2.0]))
    assert compare.learner_column(trained) == "PPO-kernel, guard 1.25, trained at loads 1-2 (event)"
    assert compare.learner_column(dict(meta, setting=base)) == "PPO-kernel, guard 1.25 (event)"


def test_a_model_warm_started_by_another_teacher_gets_its_own_column(tiny):
    """Two settings that differ only by the heuristic their warm start imitated are never
    averaged together: the teacher and its backfilling are in the column."""
    from benchmarks import compare

    _, model = tiny
    meta = read_checkpoint(model)["options"]
    base = dict(meta["setting"], observation="job_window", validation_guard=1.25)

    def taught(teacher, backfill):
        training = dict(meta.get("training") or {},
                        imitation={"teacher": teacher, "backfill": backfill})
        return dict(meta, setting=dict(base, imitate=teacher), training=training)

    assert compare.learner_column(taught("f1", "none")) == \
        "PPO-kernel, warm start F1, guard 1.25 (event)"
    assert compare.learner_column(taught("sjf_pred", "easy")) == \
        "PPO-kernel, warm start SJF-pred+EASY, guard 1.25 (event)"
    pre_rule = dict(taught("f1", "none"), rule=None)  # its column stays as it was
    assert compare.learner_column(pre_rule) == "PPO-kernel (event) [pre-rule]"


class _FirstJob:
    """Picks the first window job; keeps the rewards it is given."""

    def __init__(self) -> None:
        self.rewards: list[float] = []

    def start_episode(self) -> None:
        self.rewards = []

    def decide(self, obs, mask) -> int:
        return int(mask.nonzero()[0][0])

    def rewarded(self, reward: float, done: bool) -> None:
        self.rewards.append(reward)

    def end_episode(self) -> dict:
        return {}


def test_the_wait_penalty_adds_the_mean_wait_in_hours_to_the_return(tmp_path):
    from benchmarks import protocol
    from hdrm.env import SchedulingEnv

    # 4 cores, FCFS picks: j1 (4 cores, 100 s) runs at 0; j2 (4 cores, 50 s, submitted at 0)
    # waits 100 s; j3 (1 core, 10 s, submitted at 10) waits until j2 ends at 150: 140 s.
    lines = ["; MaxProcs: 4"] + [
        f"{i} {sub} 0 {run} {procs} -1 -1 {procs} {run} -1 1 1 1 1 1 1 -1 -1"
        for i, (sub, run, procs) in enumerate([(0, 100, 4), (0, 50, 4), (10, 10, 1)], 1)]
    (tmp_path / "w.swf").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = SchedulingEnv(workload_file=str(tmp_path / "w.swf"), platform_file=None,
                        homogeneous_procs=4, mode="job_pick", window=4, nb_jobs=3)
    agent = _FirstJob()
    plain = protocol.run_agent(agent, env, 0, pick="any")
    base = sum(agent.rewards)
    shaped = protocol.run_agent(agent, env, 0, pick="any", wait_penalty=2.0)
    assert shaped.score == plain.score  # the schedule and its score are the same
    assert sum(agent.rewards) - base == pytest.approx(-2.0 * (0 + 100 + 140) / 3 / 3600)
    assert plain.score.max_wait_s == 140


@pytest.mark.parametrize("kw,message", [
    ({"wait_penalty": -1.0}, "--wait-penalty: expected a number >= 0 (e.g. 4), got -1"),
    ({"wait_penalty": 2.0, "num_envs": 2},
     "--wait-penalty 2: shapes the rewards of episodes played in this process; leave "
     "--workers and --num-envs out"),
])
def test_wait_penalty_settings_are_checked(tiny, tmp_path, kw, message):
    traces, _ = tiny
    with pytest.raises(ConfigError) as err:
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", **kw))
    assert str(err.value) == message


def test_a_wait_penalty_model_records_it_and_gets_its_own_column(tiny):
    from benchmarks import compare

    _, model = tiny
    meta = read_checkpoint(model)["options"]
    assert meta["setting"]["wait_penalty"] == 0.0
    shaped = dict(meta, setting=dict(meta["setting"], wait_penalty=4.0))
    assert compare.learner_column(shaped) == ("PPO-kernel, job_window_queue, wait penalty 4 "
                                              "(event)")


# ------------------------------------------------------------------------- validation guard
def test_the_guard_bounds_the_longest_wait_and_the_makespan():
    from benchmarks.protocol_score import Score
    from benchmarks.train_guard import Guard

    guard = Guard(1.25, "f1", max_wait_s=1000.0, makespan_s=4000.0)
    assert guard.ratios(Score(5.0, 0.5, 0.0, max_wait_s=1250.0, makespan_s=4000.0)) == (1.25, 1.0)
    assert guard.allows(Score(5.0, 0.5, 0.0, max_wait_s=1250.0, makespan_s=5000.0))
    assert not guard.allows(Score(5.0, 0.5, 0.0, max_wait_s=1251.0, makespan_s=100.0))
    assert not guard.allows(Score(5.0, 0.5, 0.0, max_wait_s=10.0, makespan_s=5001.0))


def test_the_guard_s_reference_is_the_best_heuristic_on_the_validation_sequences(tiny):
    from benchmarks.train_guard import REFERENCE_HEURISTICS, build_guard

    traces, _ = tiny
    s = tiny_settings(traces, Path("unused.pt"), validation_guard=1.5)
    guard = build_guard(s, (200, 300), NB_JOBS)
    path = str(traces / "lublin_256.swf.gz")
    scores = {h: evaluation.evaluate(evaluation.EvalRun(
        "heuristic", h, str(traces), "unused", (200, 300), NB_JOBS, "lublin", "none", "event",
        trace_file=path)) for h in REFERENCE_HEURISTICS}
    best = min(scores, key=lambda h: scores[h].bsld)
    assert (guard.factor, guard.reference) == (1.5, best)
    assert (guard.max_wait_s, guard.makespan_s) == (scores[best].max_wait_s,
                                                    scores[best].makespan_s)
    assert build_guard(tiny_settings(traces, Path("unused.pt")), (200,), NB_JOBS) is None


def test_the_guard_s_reference_runs_at_each_validation_load_factor(tiny):
    """With ``--validation-load-factors 1,2`` the validation scores each sequence as it is and
    with its submission times halved: the guard's reference is the best heuristic on those same
    four sequences, so the bound compares like with like."""
    from benchmarks import protocol
    from benchmarks.train_guard import REFERENCE_HEURISTICS, build_guard
    from hdrm.platform.model import Platform
    from hdrm.workload.load import scale_arrivals

    traces, _ = tiny
    s = tiny_settings(traces, Path("unused.pt"), validation_guard=1.5,
                      validation_load_factors=(1.0, 2.0))
    train.check_settings(s)  # accepted together since the reference follows the factors
    guard = build_guard(s, (200, 300), NB_JOBS)
    path = str(traces / "lublin_256.swf.gz")
    plain = protocol.file_sequences(path, (200, 300), NB_JOBS)
    # the validation's environment runs the sequence at 200 at factor 2 as scale_arrivals does
    env = train.Validator(s, (200, 300)).env
    env.reset(options={"start_index": 200, "load_factor": 2.0})
    halved = scale_arrivals(plain[0], 2.0)
    assert [j.submit_s for j in env.sim.workload.jobs] == \
        [j.submit_s for j in halved.jobs] != [j.submit_s for j in plain[0].jobs]
    sequences = plain + [scale_arrivals(w, 2.0) for w in plain]
    platform = Platform.homogeneous(protocol.load_trace_file(path).nb_res)
    config = protocol.sim_config("none", "event")
    scores = {h: protocol.Score.mean(protocol.run_policy(platform, w, h, config)
                                     for w in sequences) for h in REFERENCE_HEURISTICS}
    best = min(scores, key=lambda h: scores[h].bsld)
    assert (guard.reference, guard.max_wait_s, guard.makespan_s) == \
        (best, scores[best].max_wait_s, scores[best].makespan_s)
    at_load = build_guard(tiny_settings(traces, Path("unused.pt"), validation_guard=1.5),
                          (200, 300), NB_JOBS)
    assert guard.makespan_s < at_load.makespan_s  # the halved sequences end sooner


def test_a_guarded_run_keeps_only_models_within_the_bound(tiny, tmp_path):
    import csv

    traces, _ = tiny
    out = tmp_path / "g.pt"
    train.train(tiny_settings(traces, out, max_steps=200, validation_guard=1.0),
                echo=lambda *_: None)
    rows = list(csv.DictReader((tmp_path / "log_g" / "validation.csv").open()))
    assert rows and all(r["max_wait_ratio"] and r["makespan_ratio"] for r in rows)
    for r in rows:  # kept only within the bound (and better than before)
        if r["best"] == "1":
            assert float(r["max_wait_ratio"]) <= 1.0 and float(r["makespan_ratio"]) <= 1.0
    meta = read_checkpoint(out)["options"]
    assert meta["setting"]["validation_guard"] == 1.0
    assert meta["training"]["validation_guard"]["factor"] == 1.0
    assert meta["training"]["validation_guard"]["reference"]


@pytest.mark.parametrize("kw,message", [
    ({"validation_guard": 0.5}, "--validation-guard: expected a factor >= 1 (e.g. 1.25; 0: none), "
                                "got 0.5"),
])
def test_validation_guard_settings_are_checked(tiny, tmp_path, kw, message):
    traces, _ = tiny
    with pytest.raises(ConfigError) as err:
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", **kw))
    assert str(err.value) == message


def test_a_validation_beyond_the_bound_is_never_the_best(tiny):
    from benchmarks.train_guard import Guard

    traces, _ = tiny
    s = tiny_settings(traces, Path("unused.pt"), validation_guard=1.25)
    validate = train.Validator(s, (200,))
    agent = train.build_agent("ppo", dict(TINY_PPO), validate.env, seed=0)
    validate.guard = Guard(1.25, "f1", max_wait_s=1e-3, makespan_s=1e-3)  # nothing fits in it
    value, improved = validate(agent, 0)
    assert not improved and validate.best == float("inf") and validate.best_state is None
    assert validate.ratios[0] > 1.25 or validate.ratios[1] > 1.25
    validate.guard = Guard(1.25, "f1", max_wait_s=1e12, makespan_s=1e12)  # everything does
    assert validate(agent, 0) == (value, True) and validate.best == value
