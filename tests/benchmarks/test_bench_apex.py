"""Issue 23: benchmarks/bench_apex.py compares Ape-X with a single-process DQN validated on the same
sequences: a reference checkpoint validated elsewhere (before the no-leakage rule) is refused, and a
peer run's time to its best is read from its own validation log."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import pytest

from benchmarks import bench_apex, protocol, train
from hdrm.agents.checkpoint import read_checkpoint, save_snapshot
from hdrm.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PRE_RULE_DQN = ROOT / "models" / "dqn_lublin_none_event.pt"
RULE_STARTS = tuple(protocol.training_spec("lublin").validation_starts)


def test_a_model_validated_on_other_sequences_is_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        bench_apex.reference_figures(PRE_RULE_DQN, RULE_STARTS)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"--reference {PRE_RULE_DQN}: validated on sequences "
                              "[400, 1300, 6300, 8960], not on the no-leakage rule's [6252, 6668]")
    assert message.endswith("leave --reference out to train the peer here")


def rule_model(tmp_path: Path) -> Path:
    """The pre-rule DQN relabelled as validated on the rule's sequences: 80,000 decisions in
    400 s, its best (12.5) at 60,000."""
    checkpoint = read_checkpoint(PRE_RULE_DQN)  # format 1: no lineage recorded
    checkpoint.setdefault("agent_lineage", [checkpoint["agent_class"]])
    options = copy.deepcopy(checkpoint["options"])
    options["training"].update(validation_starts=list(RULE_STARTS), wall_s=400.0,
                               env_steps=80_000, best_env_steps=60_000, best_validation=12.5)
    model = tmp_path / "dqn_rule.pt"
    save_snapshot(checkpoint, model, options)
    return model


def test_a_model_validated_on_the_rules_sequences_gives_its_figures(tmp_path):
    model = rule_model(tmp_path)
    figures = bench_apex.reference_figures(model, RULE_STARTS)
    # 80,000 decisions in 400 s: 200 a second, so the best (at 60,000) came after 300 s
    assert (figures["best_validation"], figures["decisions_per_s"], figures["wall_s_to_best"]) \
        == (12.5, 200.0, 300.0)
    # the seed the model records (the report's "seed ?" before)
    assert figures["seed"] == read_checkpoint(PRE_RULE_DQN)["options"]["setting"]["seed"]
    log = tmp_path / "validation.csv"  # with its run's log, the time is the logged one
    log.write_text("episode,env_steps,objective,best,wall_s\n10,10240,20,1,50.5\n"
                   "60,61440,12.5,1,287.25\n", encoding="utf-8")
    assert bench_apex.reference_figures(model, RULE_STARTS, log)["wall_s_to_best"] == 287.25


def test_the_peer_reached_its_best_at_the_first_validation_that_scored_it(tmp_path):
    log = tmp_path / "validation.csv"
    log.write_text("episode,env_steps,objective,best,wall_s,max_wait_ratio,makespan_ratio\n"
                   "10,10240,40.5,1,61.2,1,1\n20,20480,31.25,1,122.9,1,1\n"
                   "30,30720,33,0,180.4,1,1\n40,40960,31.25,0,241.0,1,1\n", encoding="utf-8")
    assert bench_apex.first_reached(log, 31.25) == 122.9
    assert bench_apex.first_reached(log, 40.5) == 61.2
    # the log keeps 6 significant digits: a best of 31.249996 is logged as 31.25, and found there
    assert bench_apex.first_reached(log, 31.249996) == 122.9
    with pytest.raises(ConfigError, match=r"validation.csv: no validation reached 30$"):
        bench_apex.first_reached(log, 30.0)


@pytest.mark.parametrize("by, expected", [
    ("updates", [(30_000, 100), (90_000, 200)]),  # every 100 gradient steps
    ("decisions", [(30_000, 100), (60_000, 150), (90_000, 200)]),  # every 20,000 decisions
])
def test_validations_are_spaced_by_gradient_steps_or_by_decisions(tmp_path, by, expected):
    s = bench_apex.settings(tmp_path / "apex.pt", 0)
    monitor = bench_apex.Monitor(s, {}, target=0.0, minutes=60.0,
                                 every=100 if by == "updates" else 20_000, by=by)
    validated = []
    monitor.validate = lambda agent, p: validated.append((p.env_steps, p.updates))
    # at a low replay ratio the actors collect many decisions per gradient step
    for env_steps, updates in [(10_000, 40), (30_000, 100), (60_000, 150), (90_000, 200),
                               (95_000, 210)]:
        assert monitor(None, bench_apex.ApexProgress(env_steps=env_steps, updates=updates)) \
            is False
    assert validated == expected


def test_bad_validation_spacing_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        bench_apex.main(["--validate-updates", "-5"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("bench_apex.py: error: --validate-every 10 / --validate-updates -5:")


def test_agent_json_changes_ape_x_s_dqn_options_and_not_the_peer_s(tmp_path):
    apex = train.agent_config(bench_apex.settings(tmp_path / "a.pt", 0,
                                                  {"params": {"batch_size": 32}}))
    peer = train.agent_config(bench_apex.settings(tmp_path / "p.pt", 0))
    assert (apex["params"]["batch_size"], peer["params"]["batch_size"]) == (32, 128)
    # the rest of the row's options stay as they are
    assert {k: v for k, v in apex["params"].items() if k != "batch_size"} \
        == {k: v for k, v in peer["params"].items() if k != "batch_size"}


@pytest.mark.parametrize("flag", ["--agent-json", "--apex-json"])
@pytest.mark.parametrize("text, says", [
    ("{batch_size: 32}", "not JSON (Expecting property name enclosed in double quotes at "
                         "character 1)"),
    ("[32]", "give a JSON object, e.g."),
])
def test_bad_json_options_are_refused_in_one_line(capsys, flag, text, says):
    with pytest.raises(SystemExit) as stop:
        bench_apex.main([flag, text])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"bench_apex.py: error: {flag} ") and says in err


def test_the_verdict_compares_medians_with_unreached_runs_as_infinite():
    assert bench_apex.median_time([72.0, 78.0, 301.0]) == 78.0
    assert bench_apex.median_time([93.0, None, None]) == float("inf")
    assert bench_apex.median_time([93.0, 131.0, None, 176.0]) == 153.5


@pytest.mark.parametrize("flag, text, says", [
    ("--peer-seeds", "0,x", "expected distinct non-negative integers separated by commas "
                            "(e.g. 0,1,2)"),
    ("--apex-seeds", "1,1", "expected distinct non-negative integers separated by commas"),
    ("--apex-seeds", ",", "expected distinct non-negative integers separated by commas"),
    ("--peer-seeds", "-1", "expected distinct non-negative integers separated by commas"),
])
def test_bad_seed_lists_are_refused_in_one_line(capsys, flag, text, says):
    with pytest.raises(SystemExit) as stop:
        bench_apex.main([flag, text])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"bench_apex.py: error: {flag} {text!r}: {says}")


@pytest.mark.parametrize("flag, text, says", [
    ("--actors", "-1", "--actors -1: expected 1 actor or more"),
    ("--minutes", "0", "--minutes 0: expected a budget above 0 minutes"),
    ("--peer-minutes", "-1", "--peer-minutes -1: expected a budget above 0 minutes"),
    ("--cpus", "0", "--cpus 0: expected 1 CPU or more"),
    ("--seed", "-1", "--seed -1: expected a non-negative seed"),  # was a numpy traceback
    ("--target", "-1", "--target -1: expected a positive score"),
])
def test_bad_numbers_are_refused_before_any_run(capsys, flag, text, says):
    # each used to start the peer's training (or fail inside it)
    with pytest.raises(SystemExit) as stop:
        bench_apex.main([flag, text])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"bench_apex.py: error: {says}")


def test_the_report_lists_every_run_and_the_medians():
    peer = {"seed": 0, "wall_s_to_target": 301.0, "best_validation": 30.85,
            "decisions_per_s": 306.7, "source": "peer run"}
    runs = [{"seed": k, "wall_s_to_target": t, "best_validation": b, "updates": 5120,
             "updates_per_s": 57.0, "env_steps": 100_000, "load_1min_before": 0.2}
            for k, t, b in [(0, 93.0, 29.8), (1, None, 37.7), (2, 176.0, 27.5)]]
    summary = {"target": 30.85, "actors": 2, "single_process": [
        peer, {**peer, "seed": 1, "wall_s_to_target": 72.0},
        {**peer, "seed": 2, "wall_s_to_target": 78.0}], "apex": runs,
        "median_s": {"single_process": 78.0, "apex": 176.0}, "met": False, "cpus": 2}
    lines: list[str] = []
    bench_apex.report(summary, echo=lines.append)
    assert lines[0] == "time to a validation of 30.85 or less (Lublin-1 job_pick row):"
    assert len(lines) == 1 + 3 + 3 + 1
    assert "seed 1" in lines[5] and "not reached" in lines[5] and "best 37.70" in lines[5]
    assert lines[-1] == ("median: single-process 78 s, Ape-X 176 s: Ape-X not sooner (2 CPUs)")


def test_a_reference_gives_its_time_to_a_lower_target_from_its_log(tmp_path):
    model = rule_model(tmp_path)
    log = tmp_path / "validation.csv"
    log.write_text("episode,env_steps,objective,best,wall_s\n10,10240,20,1,50.5\n"
                   "60,61440,12.5,1,287.25\n", encoding="utf-8")
    a = argparse.Namespace(reference=str(model), reference_log=str(log), target=15.0,
                           out=str(tmp_path / "apex.pt"))
    (figures,) = bench_apex.single_process(a, RULE_STARTS)
    assert figures["wall_s_to_target"] == 287.25  # 20 at 50.5 s is above 15
    a.target = 25.0
    assert bench_apex.single_process(a, RULE_STARTS)[0]["wall_s_to_target"] == 50.5
    a.target, a.reference_log = None, None  # its own best: the time to its best
    assert bench_apex.single_process(a, RULE_STARTS)[0]["wall_s_to_target"] == 300.0


def test_no_seed_on_one_side_needs_a_target_and_gives_no_verdict(capsys):
    with pytest.raises(SystemExit):
        bench_apex.main(["--peer-seeds", "none"])
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "bench_apex.py: error: --peer-seeds none: give --target SCORE (the score the Ape-X runs "
        "must reach)")
    with pytest.raises(SystemExit):
        bench_apex.main(["--peer-seeds", "none", "--apex-seeds", "None", "--target", "30"])
    assert "nothing to run" in capsys.readouterr().err
    assert bench_apex.median_time([]) is None
    a = argparse.Namespace(actors=2, agent_json={})
    run = {"seed": 3, "wall_s_to_target": None, "best_validation": 40.0, "updates": 10,
           "updates_per_s": 1.0, "env_steps": 100, "load_1min_before": 0.0}
    summary = bench_apex.summarise(a, 30.0, [], [run], 16)
    assert (summary["median_s"], summary["met"]) == ({"single_process": None,
                                                      "apex": float("inf")}, None)
    lines: list[str] = []
    bench_apex.report(summary, echo=lines.append)
    assert len(lines) == 2 and "seed 3" in lines[1]  # no median line without a peer
