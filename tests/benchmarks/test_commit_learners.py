"""Issue 26: ``job_pick`` learners with commit decisions and EASY backfilling (RLScheduler's
setting): the warm start's teacher in commit semantics, and how the comparison evaluates such a
model (with its backfilling, in its own column, on the rows of that backfilling only)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import compare, evaluation, imitation, protocol, train
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.workload.select import sequence

from .test_compare import NB_JOBS, STARTS, ctx, tiny_settings, traces  # noqa: F401 (fixtures)


def commit_env(traces: Path, backfill: str):
    settings = tiny_settings(traces, Path("unused.pt"), trace="sdsc", decision="commit",
                             backfill=backfill, observation="job_window_predicted")
    return train.make_env(settings, NB_JOBS)


def heuristic_bsld(traces: Path, policy: str, backfill: str, decision: str) -> list[float]:
    workload = protocol.load_trace("sdsc", str(traces))
    platform = Platform.homogeneous(workload.nb_res)
    config = protocol.sim_config(backfill, decision)
    return [protocol.run_policy(platform, sequence(workload, s, NB_JOBS), policy, config).bsld
            for s in STARTS]


@pytest.mark.parametrize("teacher,backfill", [("fcfs", "easy"), ("sjf", "none"),
                                              ("sjf_pred", "none"), ("wfp3", "none")])
def test_a_commit_teacher_replays_the_commit_heuristic(traces, teacher, backfill):
    # with FCFS, or without backfilling, "pick the first job of my order" in the commit env is
    # the heuristic's own commit schedule (64-job sequences never fill the window)
    env = commit_env(traces, backfill)
    demos = imitation.collect(env, list(STARTS), teacher, backfill, "any", 1.0, 0.01)
    expected = heuristic_bsld(traces, teacher, backfill, "commit")
    assert demos.scores == pytest.approx(expected, rel=1e-12)
    assert (demos.targets.sum(axis=1) == 1).all()  # one label: the first job of the order
    rows = range(len(demos))
    assert all(demos.targets[i, demos.actions[i]] and demos.masks[i, demos.actions[i]]
               for i in rows)
    # one decision per job the teacher picks: never more than the jobs (backfilled ones are
    # started by the environment)
    assert len(demos) <= len(STARTS) * NB_JOBS


def test_the_teacher_backfilling_must_be_the_environment_s(traces, tmp_path):
    message = ("--imitate-backfill easy: with --decision commit the environment backfills around "
               "each pick itself (--backfill none); give --imitate-backfill none")
    settings = tiny_settings(traces, tmp_path / "x.pt", trace="sdsc", imitate="fcfs",
                             decision="commit", backfill="none")
    with pytest.raises(ConfigError, match=re.escape(message)):
        train.check_settings(settings)
    with pytest.raises(ConfigError, match=re.escape(message)):
        imitation.collect(commit_env(traces, "none"), [0], "fcfs", "easy", "any", 1.0, 0.01)
    train.check_settings(tiny_settings(traces, tmp_path / "x.pt", trace="sdsc", imitate="fcfs",
                                       decision="commit", backfill="easy"))


@pytest.fixture(scope="module")
def commit_models(traces, tmp_path_factory) -> Path:
    """A PPO trained with commit decisions and EASY on the tiny SDSC-SP2, warm-started by FCFS."""
    folder = tmp_path_factory.mktemp("commit_models")
    settings = tiny_settings(traces, folder / "ppo_sdsc_easy_commit.pt", trace="sdsc",
                             decision="commit", backfill="easy", imitate="fcfs",
                             imitate_episodes=1, imitate_epochs=1, max_steps=64)
    train.train(settings, echo=lambda *_: None)
    return folder


def test_a_commit_easy_model_is_evaluated_with_easy_in_its_own_column(traces, ctx,  # noqa: F811
                                                                       commit_models, tmp_path):
    from hdrm.agents.checkpoint import read_checkpoint

    path = commit_models / "ppo_sdsc_easy_commit.pt"
    meta = read_checkpoint(path)["options"]
    assert (meta["setting"]["decision"], meta["setting"]["backfill"]) == ("commit", "easy")
    assert meta["training"]["imitation"]["backfill"] == "easy"
    out = tmp_path / "t.json"
    assert compare.main(["--evaluate-only", "--groups", "protocol", "--traces", str(traces),
                         "--cache", ctx.cache, "--models", str(commit_models), "--starts",
                         "0,100", "--nb-jobs", str(NB_JOBS), "--jobs", "1", "--rst", "",
                         "--json", str(out)]) == 0
    table = json.loads(out.read_text())
    column = "PPO-kernel, warm start FCFS+EASY (commit)"  # its teacher named (a rule-abiding model)
    assert column not in table["SDSC-SP2, no backfilling"]  # never run without its backfilling
    run = evaluation.model_run(str(path), str(traces), ctx.cache, STARTS, NB_JOBS, "sdsc",
                               "easy", "protocol", "", decision="commit")
    assert run.name.startswith("model_ppo_sdsc_easy_commit_sdsc_easy_commit_")
    assert table["SDSC-SP2, EASY backfilling"][column] == pytest.approx(
        evaluation.evaluate(run).bsld, rel=1e-12)
    (model,) = compare.discover_models(commit_models)
    row = next(r for r in compare.rows(("protocol",), str(traces), [], 2, NB_JOBS)
               if r.trace == "sdsc" and r.backfill == "easy")
    assert compare.model_eval_run(ctx, model, row) == run


def test_an_event_learner_runs_without_backfilling_and_a_commit_one_with_the_row_s():
    event = {"mode": "job_pick", "decision": "event"}
    commit = {"mode": "job_pick", "decision": "commit"}
    pair = {"mode": "policy_pair", "decision": "event"}
    assert evaluation.model_backfill(event, "easy") == "none"
    assert evaluation.model_backfill(commit, "easy") == "easy"
    assert evaluation.model_backfill(pair, "easy") == "easy"
