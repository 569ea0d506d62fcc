"""A learner limited to EASY's picks (``train.py --pick-limit easy``, issue 26): its teacher is
replayed exactly, the limit travels in the model file to the evaluation, its guard's reference
backfills, its column says so, and bad combinations are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import compare_models, evaluation, imitation, protocol, train, train_guard
from hdrm.agents.checkpoint import read_checkpoint
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.workload.select import sequence

from .test_compare import NB_JOBS, tiny_settings, traces  # noqa: F401 (fixture)


@pytest.mark.parametrize("teacher", ["sjf", "f1"])
def test_the_teacher_in_its_reservation_order_is_replayed_exactly(traces, teacher):  # noqa: F811
    # EASY in the teacher's order is what the limited environment allows when the teacher's
    # order is the reservation's: every teacher start is a pick the mask allows
    settings = tiny_settings(traces, Path("unused.pt"), trace="sdsc", pick_limit="easy",
                             reservation=teacher, observation="job_window_predicted")
    env = train.make_env(settings, NB_JOBS)
    demos = imitation.collect(env, [0, 100], teacher, "easy", "any", 1.0, 0.01)
    workload = protocol.load_trace("sdsc", str(traces))
    platform = Platform.homogeneous(workload.nb_res)
    expected = [protocol.run_policy(platform, sequence(workload, s, NB_JOBS), teacher,
                                    protocol.sim_config("easy", "event")).bsld for s in (0, 100)]
    assert demos.scores == pytest.approx(expected, rel=1e-12)
    rows = np.arange(len(demos))
    assert demos.targets[rows, demos.actions].all()
    # the teacher never starts what the limit masks: a played start is always allowed
    assert (demos.targets.sum(axis=1) >= 1).all()


def test_a_teacher_in_another_order_backfills_in_its_order(traces):  # noqa: F811
    # EASY for F1's head, the shortest allowed job first otherwise: one label a decision, the
    # first allowed job in SJF's order (the jobs ahead of F1's reserved one while any wait)
    settings = tiny_settings(traces, Path("unused.pt"), trace="sdsc", pick_limit="easy",
                             reservation="f1", observation="job_window_reservation")
    env = train.make_env(settings, NB_JOBS)
    obs, info = env.reset(options={"start_index": 0})
    rng = np.random.default_rng(0)
    sjf = imitation.JOB_POLICIES.get("sjf")
    checked = 0
    while True:
        played, acceptable = imitation.limited_pick(env, sjf, rng)
        allowed = env.window_startable()
        assert acceptable.sum() == 1 and acceptable[played] and allowed[played]
        requested = [job.walltime_s for job, ok in zip(env.window_jobs(), allowed) if ok]
        assert env.window_jobs()[played].walltime_s == min(requested)
        checked += 1
        obs, _, done, _, info = env.step(played)
        if done:
            break
    assert checked >= NB_JOBS and len(env.result().outcomes) == NB_JOBS


def test_the_limit_is_recorded_and_evaluated_with(traces, tmp_path, monkeypatch):  # noqa: F811
    out = tmp_path / "easy.pt"
    settings = tiny_settings(traces, out, trace="sdsc", pick_limit="easy", reservation="sjf",
                             observation="job_window_reservation", max_steps=64)
    train.train(settings, echo=lambda *_: None)
    meta = read_checkpoint(out)["options"]
    assert meta["setting"]["pick_limit"] == "easy" and meta["setting"]["reservation"] == "sjf"
    column = compare_models.learner_column(meta)
    assert ", EASY picks (sjf)" in column and column.endswith("(event)")
    made = []
    real = protocol.protocol_env_config
    monkeypatch.setattr(protocol, "protocol_env_config",
                        lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    run = evaluation.model_run(str(out), str(traces), "", (0,), NB_JOBS, "sdsc", "none",
                               "protocol", "", allow_leaky=True)
    score = evaluation.evaluate(run)
    assert np.isfinite(score.bsld) and score.bsld >= 1.0
    assert [c.pick_limit for c in made] == ["easy"] and made[0].reservation == "sjf"


def test_a_work_conserving_learner_may_start_only_what_easy_allows(traces):  # noqa: F811
    # --pick fitting within the limit: the learner's choices are exactly EASY's allowed picks,
    # and it may never wait while one of them can start (the environment asks only then)
    settings = tiny_settings(traces, Path("unused.pt"), trace="sdsc", pick_limit="easy",
                             reservation="fcfs", observation="job_window_reservation")
    env = train.make_env(settings, NB_JOBS)
    obs, info = env.reset(options={"start_index": 100})
    rng, sjf = np.random.default_rng(0), imitation.JOB_POLICIES.get("sjf")
    decisions, done = 0, False
    while not done:
        allowed = env.window_startable()
        mask = protocol.agent_mask(env, info["action_mask"], "fitting")
        assert allowed.any() and not mask[-1]
        assert (mask[: len(allowed)] == allowed).all() and not mask[len(allowed):-1].any()
        played, _ = imitation.limited_pick(env, sjf, rng)
        obs, _, done, _, info = env.step(played)
        decisions += 1
    assert decisions >= NB_JOBS // 2 and len(env.result().outcomes) == NB_JOBS


def test_a_work_conserving_learner_is_warm_started_and_named(traces, tmp_path):  # noqa: F811
    out = tmp_path / "fitting.pt"
    settings = tiny_settings(traces, out, trace="sdsc", pick_limit="easy", reservation="f1",
                             observation="job_window_reservation", pick="fitting",
                             imitate="sjf", imitate_backfill="easy", imitate_episodes=2,
                             imitate_epochs=1, max_steps=64)
    env = train.make_env(settings, NB_JOBS)
    fitting = imitation.collect(env, [0, 100], "sjf", "easy", "fitting", 1.0, 0.01)
    free = imitation.collect(env, [0, 100], "sjf", "easy", "any", 1.0, 0.01)
    # the same teacher, the same labels; only what the learner may choose differs
    assert fitting.scores == free.scores and (fitting.actions == free.actions).all()
    rows = np.arange(len(fitting))
    assert fitting.masks[rows, fitting.actions].all() and not fitting.masks[:, -1].any()
    assert free.masks[:, -1].sum() == 0 and free.masks.sum() > fitting.masks.sum()
    train.train(settings, echo=lambda *_: None)
    meta = read_checkpoint(out)["options"]
    assert meta["setting"]["pick"] == "fitting"
    assert ", EASY picks (f1), work-conserving" in compare_models.learner_column(meta)
    meta["setting"]["pick"] = "any"
    assert "work-conserving" not in compare_models.learner_column(meta)


def test_the_guard_of_a_limited_learner_compares_with_easy_heuristics(traces):  # noqa: F811
    limited = tiny_settings(traces, Path("x.pt"), trace="sdsc", pick_limit="easy",
                            validation_guard=1.25)
    free = tiny_settings(traces, Path("x.pt"), trace="sdsc", validation_guard=1.25)
    assert train_guard.guard_backfill(limited) == "easy"
    assert train_guard.guard_backfill(free) == "none"


@pytest.mark.parametrize("kw,message", [
    ({"pick_limit": "esay"}, "--pick-limit: invalid value 'esay'; choose one of: fits, easy"),
    ({"pick_limit": "easy", "decision": "commit"}, "--pick-limit easy: .*--decision commit"),
    ({"pick_limit": "easy", "imitate": "sjf", "imitate_backfill": "none"},
     "--imitate-backfill none: with --pick-limit easy the teacher .* give --imitate-backfill easy"),
    ({"pick": "fitting", "imitate": "sjf", "imitate_backfill": "easy"},
     r"--imitate: .* --pick any \(or --pick fitting with --pick-limit easy\); got pick 'fitting'"),
])
def test_bad_limits_are_refused(traces, kw, message):  # noqa: F811
    settings = tiny_settings(traces, Path("x.pt"), trace="sdsc", **kw)
    with pytest.raises(ConfigError, match=message):
        train.check_settings(settings)
