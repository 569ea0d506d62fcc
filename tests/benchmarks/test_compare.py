"""The comparison harness (benchmarks/compare.py, train.py, protocol.py) on tiny inputs.

A tiny traces folder holds the 500-job Lublin-1 and SDSC-SP2 slices of ``workloads/`` under the
names of the full traces; sequences are 64 jobs at start indices 0 and 100.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import (
    compare,
    imitation,
    protocol,
    reproduce_rlscheduler,
    tables,
    train,
    train_rule,
)
from hdrm.env import SchedulingEnv
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.workload.select import sequence, sequences
from hdrm.workload.swf import read_swf

ROOT = Path(__file__).resolve().parents[2]

STARTS = (0, 100)
NB_JOBS = 64
#: The tiny traces' no-leakage rule: evaluation at STARTS (jobs 0-163), validation in
#: [200, 400), training in [400, 500) (all outside the protocol's test windows).
TINY_RANGES = {"train_range": (400, 500), "validation_range": (200, 400)}
SLICES = {"lublin_256.swf.gz": "lublin_256_first500.swf",
          "SDSC-SP2-1998-4.2-cln.swf.gz": "SDSC-SP2-1998-4.2-cln_first500.swf"}
TINY_PPO = {"params": {"rollout_steps": 64, "minibatch": 32, "epochs": 1}}


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("traces")
    for target, source in SLICES.items():
        (folder / target).write_bytes(gzip.compress((ROOT / "workloads" / source).read_bytes()))
    return folder


@pytest.fixture(scope="module")
def ctx(traces, tmp_path_factory) -> compare.Context:
    return compare.Context(str(traces), str(tmp_path_factory.mktemp("cache")), STARTS, NB_JOBS)


def tiny_settings(traces: Path, out: Path, **kw) -> train.TrainSettings:
    values = dict(out=str(out), trace="lublin", max_steps=300, minutes=0, validate_every=1,
                  train_jobs=NB_JOBS, validation_starts=(200,), agent_json=TINY_PPO, **TINY_RANGES,
                  traces=str(traces), log_dir=str(out.parent / f"log_{out.stem}"))
    values.update(kw)
    return train.TrainSettings(**values)


@pytest.fixture(scope="module")
def models_dir(traces, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    train.train(tiny_settings(traces, folder / "ppo_lublin.pt"), echo=lambda *_: None)
    return folder


@pytest.fixture(scope="module")
def run_compare(traces, ctx, models_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    code = compare.main([
        "--evaluate-only", "--groups", "protocol,hetero", "--traces", str(traces), "--cache",
        ctx.cache, "--models", str(models_dir), "--starts", "0,100", "--nb-jobs", str(NB_JOBS),
        "--jobs", "1", "--json", str(out / "table.json"), "--rst", str(out / "results.rst"),
    ])
    assert code == 0
    return json.loads((out / "table.json").read_text()), (out / "results.rst").read_text()


# ------------------------------------------------------------------------- heuristics
@pytest.mark.parametrize("policy,decision,backfill", [("sjf", "event", "none"),
                                                      ("f1", "commit", "none"),
                                                      ("fcfs", "event", "easy")])
def test_heuristic_cell_equals_the_reproduction_script(ctx, traces, policy, decision, backfill):
    workload = read_swf(traces / "lublin_256.swf.gz", conventions="rlscheduler")
    expected = reproduce_rlscheduler.mean_bsld(sequences(workload, STARTS, NB_JOBS), 256, policy,
                                               decision, backfill)
    got = compare.heuristic_score(ctx, "lublin", backfill, decision, policy)
    assert got.bsld == pytest.approx(expected, rel=1e-12)
    assert 0.0 < got.utilisation <= 1.0


def test_the_two_semantics_differ_on_this_case(ctx):
    event = compare.heuristic_score(ctx, "lublin", "none", "event", "sjf").bsld
    commit = compare.heuristic_score(ctx, "lublin", "none", "commit", "sjf").bsld
    assert event != commit


def test_a_fixed_pair_driven_through_the_environment_scores_as_the_pair_column(ctx):
    from hdrm.agents.base import ClassicAgent
    from hdrm.env import SchedulingEnv

    workload = protocol.hetero_workload_file(ctx.traces, ctx.cache)
    env = SchedulingEnv(config=protocol.hetero_env_config(workload, "avg_bounded_slowdown",
                                                          nb_jobs=NB_JOBS))
    agent = ClassicAgent({"policy": "shortest-high_gflops", "run": "test"}, env.observation_space,
                         env.action_space, action_names=env.action_names)
    via_env = protocol.Score.mean(protocol.run_agent(agent, env, s).score for s in STARTS)
    assert via_env == compare.pair_score(ctx, "shortest-high_gflops")


# ------------------------------------------------------------------------- table shape
def test_json_has_every_row_and_column(run_compare):
    table, _ = run_compare
    names = [r.name for r in compare.rows(("protocol", "hetero"))]
    assert len(names) == 6
    for name in names:
        assert name in table and f"{name} [utilisation]" in table
    lublin = table["Lublin-1, no backfilling"]
    heuristic_cols = [compare.heuristic_column(p, d) for d in ("event", "commit")
                      for p in ("fcfs", "sjf", "wfp3", "unicep", "f1")]
    assert all(isinstance(lublin[c], float) for c in heuristic_cols)
    assert lublin["best heuristic"] == min(lublin[c] for c in heuristic_cols
                                           + list(compare.PREDICTED_COLUMNS))
    assert lublin[lublin["best heuristic name"]] == lublin["best heuristic"]
    assert lublin["target (0.95 x best heuristic)"] == pytest.approx(0.95 * lublin["best heuristic"])
    assert lublin["PPO (RLScheduler, published)"] == 254.67
    assert table["SDSC-SP2, EASY backfilling"]["F1 (RLScheduler, published)"] == 1098.22


def test_the_best_heuristic_includes_the_predicted_time_heuristics(run_compare):
    table, _ = run_compare
    for row in ("SDSC-SP2, no backfilling", "SDSC-SP2, EASY backfilling"):
        cells = table[row]
        predicted = {c: cells[c] for c in ("SJF-pred (event)", "WFP3-pred (event)",
                                            "UNICEP-pred (event)")}
        assert compare.PREDICTED_COLUMNS == tuple(predicted)
        assert cells["best predicted-time heuristic"] == min(predicted.values())
        assert cells[cells["best predicted-time heuristic name"]] == min(predicted.values())
        fixed = [compare.heuristic_column(p, d) for d in ("event", "commit")
                 for p in ("fcfs", "sjf", "wfp3", "unicep", "f1")] + list(predicted)
        assert cells["best heuristic"] == min(cells[c] for c in fixed)
    # SDSC-SP2 has user ids: the predictions change schedules (Lublin-1's synthetic jobs have none)
    easy = table["SDSC-SP2, EASY backfilling"]
    assert easy["WFP3-pred (event)"] != easy["WFP3 (event)"]
    lublin = table["Lublin-1, EASY backfilling"]
    assert lublin["WFP3-pred (event)"] == lublin["WFP3 (event)"]
    assert compare.heuristic_column("wfp3_pred", "event") == "WFP3-pred (event)"


def test_learner_with_a_model_becomes_a_column(run_compare):
    table, _ = run_compare
    for row in ("Lublin-1, no backfilling", "Lublin-1, EASY backfilling"):
        cells = table[row]
        assert isinstance(cells["PPO-kernel (event)"], float)
        assert cells["best learner name"] == "PPO-kernel (event)"
        beats = (cells["best learner"] <= cells["target (0.95 x best heuristic)"]
                 and cells["best learner"] <= 254.67)
        assert cells["PPO-kernel (event) [min-max]"].endswith("(1 seed)")
        # one training seed: a target is never met, whatever the value
        assert (cells["target met"] is False) if not beats else \
            cells["target met"].startswith("no: ")
    assert "PPO-kernel (event)" not in table["SDSC-SP2, no backfilling"]  # no SDSC model
    training = table["training: ppo_lublin.pt"]
    assert training["action mode"] == "job_pick" and training["pick"] == "any"
    assert training["env steps"] >= 300


def test_hetero_rows_hold_the_36_pairs_and_both_objectives(run_compare):
    table, _ = run_compare
    bsld = table["hetero, SDSC-SP2 x3 load, avg_bounded_slowdown"]
    energy = table["hetero, SDSC-SP2 x3 load, energy_consumption (MJ)"]
    pairs = [c for c in bsld if "-" in c and c.split("-")[0] in
             ("random", "first", "shortest", "smallest", "low_mem", "low_mem_bw")]
    assert len(pairs) == 36
    fixed = pairs + list(protocol.PREDICTED_PAIRS)  # the best heuristic's candidates
    assert bsld["best heuristic"] == min(bsld[p] for p in fixed) >= 1.0
    assert energy["best heuristic"] == min(energy[p] for p in fixed) > 0.0
    assert bsld["smallest-high_gflops"] != energy["smallest-high_gflops"]


def test_rst_page_builds_with_sphinx_warnings_as_errors(run_compare, tmp_path):
    _, text = run_compare
    assert ".. list-table:: Protocol rows" in text
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("project = 'x'\n")
    (src / "index.rst").write_text("x\n=\n\n.. toctree::\n\n   results\n   comparison\n")
    (src / "comparison.rst").write_text("Comparison\n==========\n")
    (src / "results.rst").write_text(text)
    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src),
                          str(tmp_path / "html")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_markdown_table_has_one_line_per_row():
    grid = [["", "A", "B"], ["r1", "1.00", "2.00"], ["r2", "n/a", "yes"]]
    text = tables.markdown("T", grid)
    assert text.splitlines()[2:] == ["|  | A | B |", "|---|---|---|", "| r1 | 1.00 | 2.00 |",
                                     "| r2 | n/a | yes |"]
    assert tables.fmt(float("nan")) == "n/a" and tables.fmt(True) == "yes"


# ------------------------------------------------------------------------- protocol
def test_training_samples_only_its_range_outside_every_test_window():
    windows = [(t, t + 1024) for t in protocol.TEST_STARTS]
    for key, nb in (("lublin", 10_000), ("sdsc", 59_705)):
        pool = protocol.training_starts(key, nb)
        spec = protocol.TRACES[key]
        first, end = spec.train_range[0], spec.train_range[1] or nb
        assert pool.min() == first and pool.max() == end - 1024
        for start in pool[[0, -1]]:  # the extreme sequences touch no test or validation job
            assert all(start + 1024 <= a or start >= b for a, b in windows)
            assert start + 1024 <= spec.validation_range[0] or start >= spec.validation_range[1]
    assert len(protocol.training_starts("lublin", 10_000)) == 1981 - 1024 + 1
    # the heterogeneous rows keep SDSC-SP2's indices, so its rule
    assert (protocol.training_starts("sdsc", 59_705, mode="policy_pair")
            == protocol.training_starts("sdsc", 59_705)).all()


def test_pick_any_maps_a_job_that_does_not_fit_to_waiting(traces):
    env = train.make_env(tiny_settings(traces, Path("unused.pt")), NB_JOBS)
    obs, info = env.reset(options={"start_index": 0})
    mask = info["action_mask"]
    view = protocol.agent_mask(env, mask, "any")
    k = len(env.window_jobs())
    assert view[:k].all() and not view[k:].any()
    assert protocol.env_action(mask, env.action_space.n - 1) == env.action_space.n - 1
    blocked = np.flatnonzero(~mask[:k])
    if blocked.size:
        assert protocol.env_action(mask, int(blocked[0])) == env.action_space.n - 1
    fitting = protocol.agent_mask(env, mask, "fitting")
    assert not fitting[-1] and (fitting[:-1] == mask[:-1]).all()


# ------------------------------------------------------------------------- training
def test_training_is_deterministic_for_a_seed(traces, tmp_path):
    import torch

    from hdrm.agents.checkpoint import read_checkpoint

    first = train.train(tiny_settings(traces, tmp_path / "a.pt", max_steps=150), echo=lambda *_: None)
    train.train(tiny_settings(traces, tmp_path / "b.pt", max_steps=150), echo=lambda *_: None)
    a, b = read_checkpoint(tmp_path / "a.pt"), read_checkpoint(tmp_path / "b.pt")
    for name, tensor in a["model_state_dict"].items():
        assert torch.equal(tensor, b["model_state_dict"][name]), name
    meta = a["options"]
    assert meta["setting"]["trace"] == "lublin" and meta["training"]["final"] is True
    assert meta["training"]["env_steps"] == first.env_steps >= 150
    assert (tmp_path / "log_a" / "episodes.csv").read_text().startswith("episode,start_index")


def test_models_are_small(models_dir):
    for path in models_dir.glob("*.pt"):
        assert path.stat().st_size < 2_000_000


@pytest.mark.parametrize("changes,message", [
    ({"trace": "ctc"}, "evaluation only"),
    ({"trace": "lubln"}, "did you mean 'lublin'"),
    ({"mode": "policy_pair"}, "platforms/hetero.json"),
    ({"objective": "energy_consumption"}, "job_pick mode is RLScheduler's protocol"),
    ({"pick": "some"}, "choose one of: any, fitting, env"),
    ({"reward_timing": "acrued"}, r"^--reward-timing: invalid value 'acrued'; choose one of: end, accrued$"),
    ({"load_factors": (2.0, 1.0)}, r"--load-factors: expected LO,HI with 0 < LO <= HI .*got 2,1"),
    ({"load_factors": (0.0, 1.0)}, r"--load-factors: .*got 0,1"),
    ({"validation_load_factors": (1.0, -1.5)},
     r"--validation-load-factors: expected positive numbers \(e\.g\. 1,1\.5\), got 1,-1\.5"),
    ({"validation_load_factors": ()}, r"--validation-load-factors: .*got none"),
    ({"init_model": "missing.pt"}, r"--init-model missing\.pt: no such file"),
])
def test_bad_training_settings_are_one_line_config_errors(traces, tmp_path, changes, message):
    with pytest.raises(ConfigError, match=message):
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", **changes))


def test_load_factors_must_be_two_numbers(tmp_path):
    with pytest.raises(ConfigError, match=r"--load-factors: expected two numbers LO,HI .*'2'"):
        train.parse_args(["--out", str(tmp_path / "x.pt"), "--load-factors", "2"])
    assert train.parse_args(["--out", "x.pt", "--load-factors", "1,1.5"]).load_factors == (1.0, 1.5)
    for bad in ("1,x", "1,0", ","):
        with pytest.raises(ConfigError, match=rf"--validation-load-factors '{bad}': expected "
                                              r"positive numbers separated by commas"):
            train.parse_args(["--out", "x.pt", "--validation-load-factors", bad])
    with pytest.raises(ConfigError, match=r"--validation-starts '6252,x': expected non-negative "
                                          r"integers separated by commas \(e.g. 6252,6668\)"):
        train.parse_args(["--out", "x.pt", "--validation-starts", "6252,x"])
    parsed = train.parse_args(["--out", "x.pt", "--validation-load-factors", "1,1.5"])
    assert parsed.validation_load_factors == (1.0, 1.5)
    assert train.parse_args(["--out", "x.pt"]).validation_load_factors == (1.0,)


def test_training_episodes_draw_their_load_factor_and_validation_keeps_the_trace_load(
        traces, tmp_path, monkeypatch):
    seen = []
    real = protocol.run_agent

    def spy(agent, env, start, seed=0, pick="env", load_factor=1.0, wait_penalty=0.0):
        seen.append(load_factor)
        return real(agent, env, start, seed, pick, load_factor, wait_penalty)

    monkeypatch.setattr(protocol, "run_agent", spy)
    settings = tiny_settings(traces, tmp_path / "a.pt", max_steps=150, load_factors=(1.5, 2.0))
    train.train(settings, echo=lambda *_: None)
    log = (tmp_path / "log_a" / "episodes.csv").read_text().splitlines()
    factors = [float(line.split(",")[2]) for line in log[1:]]
    assert factors and all(1.5 <= f <= 2.0 for f in factors) and len(set(factors)) == len(factors)
    assert [round(f, 4) for f in seen if f != 1.0] == factors  # one draw per training episode
    assert seen.count(1.0) >= len(factors)  # validate_every=1: validation at the trace's load
    from hdrm.agents.checkpoint import read_checkpoint

    setting = read_checkpoint(tmp_path / "a.pt")["options"]["setting"]
    assert setting["load_factors"] == [1.5, 2.0] and setting["validation_load_factors"] == [1.0]


def test_validation_load_factors_score_each_sequence_at_each_factor(traces, tmp_path,
                                                                     monkeypatch):
    calls = []
    real = protocol.run_agent

    def spy(agent, env, start, seed=0, pick="env", load_factor=1.0):
        episode = real(agent, env, start, seed, pick, load_factor)
        calls.append((start, load_factor, episode.score.bsld))
        return episode

    settings = tiny_settings(traces, tmp_path / "v.pt", validation_starts=(200, 300),
                             validation_load_factors=(1.0, 3.0))
    validate = train.Validator(settings, settings.validation_starts)
    agent = train.build_agent("ppo", dict(TINY_PPO), validate.env, seed=0)
    monkeypatch.setattr(protocol, "run_agent", spy)
    value, improved = validate(agent, 0)
    assert [(s, f) for s, f, _ in calls] == [(200, 1.0), (300, 1.0), (200, 3.0), (300, 3.0)]
    assert improved and value == pytest.approx(sum(b for *_, b in calls) / 4)
    assert calls[2][2] != calls[0][2]  # the heavier variant is a different episode


def test_compare_rejects_an_unknown_group(capsys):
    assert compare.main(["--evaluate-only", "--groups", "protocol,hetro", "--rst", ""]) == 2
    assert "unknown group 'hetro'" in capsys.readouterr().err


def test_missing_trace_names_the_file_and_the_option(tmp_path):
    with pytest.raises(ConfigError, match=r"lublin_256.swf.gz: trace not found; .*--traces"):
        protocol.trace_path("lublin", tmp_path)


def test_shipped_models_have_benchmark_metadata():
    models = sorted((ROOT / "models").glob("*.pt"))
    if not models:
        pytest.skip("no shipped models")
    from hdrm.agents.checkpoint import read_checkpoint

    results = (ROOT / "docs" / "results.rst").read_text()
    for path in models:
        assert path.stat().st_size < 2_000_000, path
        meta = read_checkpoint(path)["options"]
        assert {"learner", "label", "agent", "setting", "training"} <= set(meta), path
        assert meta["training"]["final"] is True and meta["training"]["env_steps"] > 0
        assert path.name in results, f"{path.name} missing from docs/results.rst: rerun compare.py"


def _settings_of(command: list[str]) -> dict[str, str]:
    """``--option value`` pairs of a train.py command (a flag without a value, such as
    ``--fresh``, as ``""``), without where its outputs go and whether it resumed."""
    pairs, i = {}, 0
    while i < len(command):
        flag = command[i]
        value = command[i + 1] if i + 1 < len(command) else None
        if value is None or value.startswith("--"):
            pairs[flag], i = "", i + 1
        else:
            pairs[flag], i = value, i + 2
    return {k: v for k, v in pairs.items() if k not in ("--out", "--log-dir", "--fresh")}


def test_settings_of_reads_flags_without_values():
    assert _settings_of(["--seed", "0", "--fresh", "--imitate", "a-b", "--out", "m.pt",
                         "--x"]) == {"--seed": "0", "--imitate": "a-b", "--x": ""}


def test_documented_commands_are_those_that_made_the_shipped_models():
    import shlex

    from hdrm.agents.checkpoint import read_checkpoint

    from benchmarks.compare_models import rule_command

    for path in sorted((ROOT / "models").glob("*.pt")):
        recorded = _settings_of(
            shlex.split(read_checkpoint(path)["options"]["training"]["command"])[2:])
        base, _, seed = path.stem.partition("_seed")
        if seed:  # trained under the no-leakage rule: the setting's rule command and its seed
            documented = _settings_of(rule_command(f"{base}.pt") + ["--seed", seed])
            budget = ("--minutes", "--max-steps")  # a reduced budget is stated in models/README
            recorded = {k: v for k, v in recorded.items() if k not in budget}
            documented = {k: v for k, v in documented.items() if k not in budget}
        else:
            documented = _settings_of(compare.MODEL_COMMANDS[path.name])
        defaults = {"--backfill": "none", "--decision": "event", "--seed": "0", "--pick": "any",
                    "--imitate-backfill": "easy"}  # train.py's defaults
        assert dict(defaults, **recorded) == dict(defaults, **documented), \
            f"{path.name}: compare.MODEL_COMMANDS does not say how it was trained"


# ------------------------------------------------------------------------- imitation
def test_following_the_teacher_reproduces_its_schedule(traces):
    # 64-job sequences never fill the 128-job window, so the env follows the teacher exactly
    settings = tiny_settings(traces, Path("unused.pt"), trace="sdsc")
    env = train.make_env(settings, NB_JOBS)
    demos = imitation.collect(env, [0, 100], "wfp3", "easy", "any", 1.0, 0.01)
    workload = protocol.load_trace("sdsc", str(traces))
    platform = Platform.homogeneous(workload.nb_res)
    expected = [protocol.run_policy(platform, sequence(workload, s, NB_JOBS), "wfp3",
                                    protocol.sim_config("easy", "event")).bsld for s in (0, 100)]
    assert demos.scores == pytest.approx(expected, rel=1e-12)
    assert len(demos) >= 2 * NB_JOBS  # one pick per started job, plus the waits
    rows = np.arange(len(demos))
    assert demos.masks[rows, demos.actions].all()  # every action played is allowed
    assert demos.targets[rows, demos.actions].all()  # and among the acceptable ones
    assert (demos.targets.sum(axis=1) >= 1).all() and not (demos.targets & ~demos.masks).any()
    # returns: the scaled rewards summed to the end, so the first one is -score * scale
    assert demos.returns[0] == pytest.approx(-expected[0] * 0.01, rel=1e-5)


def test_a_pair_teacher_plays_its_pair_at_every_decision(traces, tmp_path):
    env = SchedulingEnv(config=protocol.hetero_env_config(
        protocol.hetero_workload_file(traces, tmp_path), "energy_consumption", nb_jobs=NB_JOBS))
    demos = imitation.collect(env, [0], "shortest-high_gflops", "none", "env", 1.0, 1.0,
                              "energy_consumption")
    index = env.action_names.index("shortest-high_gflops")
    assert (demos.actions == index).all() and demos.targets.sum() == len(demos)
    workload = protocol.hetero_sequences(protocol.hetero_workload_file(traces, tmp_path), [0],
                                         NB_JOBS)[0]
    expected = protocol.run_policy(protocol.hetero_platform(), workload, "shortest-high_gflops",
                                   protocol.sim_config("none", "event", "hdeeprm")).energy_mj
    assert demos.scores == [pytest.approx(expected, rel=1e-12)]


def test_warm_start_fits_the_teacher_and_is_recorded(traces, tmp_path):
    from hdrm.agents.checkpoint import read_checkpoint

    out = tmp_path / "bc.pt"
    lines = []
    settings = tiny_settings(traces, out, trace="sdsc", imitate="wfp3", imitate_episodes=3,
                             imitate_epochs=4, max_steps=1)
    train.train(settings, echo=lines.append)
    accuracies = [float(line.split("matched ")[1].split("%")[0]) for line in lines
                  if line.startswith("imitation epoch")]
    assert len(accuracies) == 4 and accuracies[-1] > accuracies[0]
    figures = read_checkpoint(out)["options"]["training"]
    assert figures["imitation"]["teacher"] == "wfp3" and figures["imitation"]["episodes"] == 3
    assert figures["imitation"]["decisions"] >= 3 * NB_JOBS


def test_warm_start_needs_a_policy_network(traces, tmp_path):
    settings = tiny_settings(traces, tmp_path / "x.pt", trace="sdsc", imitate="wfp3",
                             learner="dqn", agent_json={})
    with pytest.raises(ConfigError, match="--imitate: learner 'dqn' has no policy network"):
        train.train(settings, echo=lambda *_: None)


@pytest.mark.parametrize("kw,message", [
    ({"imitate": "wfp4"}, "--imitate: unknown job selection policy 'wfp4'"),
    ({"imitate": "wfp3", "pick": "fitting"}, "--imitate: the warm start is defined for job_pick"),
    ({"imitate": "wfp3", "decision": "commit"},
     "--imitate-backfill easy: with --decision commit the environment backfills around each pick"),
    ({"imitate": "wfp3", "imitate_backfill": "eazy"}, "--imitate-backfill: unknown backfilling"),
    ({"imitate": "wfp3", "mode": "policy_pair", "trace": "sdsc",
      "platform": str(protocol.HETERO_PLATFORM)}, "--imitate: in policy_pair mode the teacher is"),
])
def test_warm_start_settings_are_checked(traces, tmp_path, kw, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", **kw))


@pytest.fixture
def built_envs(monkeypatch) -> list:
    """The environments ``compare.model_score`` builds, recorded as they are made."""
    import hdrm.env

    built = []

    class Recording(SchedulingEnv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(hdrm.env, "SchedulingEnv", Recording)
    return built


def test_observation_window_and_reservation_are_recorded_and_used_in_evaluation(traces, ctx,
                                                                                  tmp_path,
                                                                                  built_envs):
    from hdrm.agents.checkpoint import read_checkpoint

    out = tmp_path / "res.pt"
    train.train(tiny_settings(traces, out, trace="sdsc", window=16, reservation="wfp3",
                              observation="job_window_reservation"), echo=lambda *_: None)
    meta = read_checkpoint(out)["options"]
    assert (meta["setting"]["window"], meta["setting"]["reservation"],
            meta["setting"]["observation"]) == (16, "wfp3", "job_window_reservation")
    model = compare.Model(str(out), "PPO-kernel (event)", meta)
    row = compare.Row("x", "protocol", "sdsc", "sdsc")
    assert compare.model_score(ctx, model, row).bsld >= 1.0
    assert [(e.config.window, e.config.observation, e.config.reservation)
            for e in built_envs] == [
        (16, "job_window_reservation", "wfp3")]  # the evaluation env is the model's
    row_name = compare.training_rows([model])[f"training: {out.name}"]
    assert row_name["observation"] == "job_window_reservation (wfp3)"


@pytest.mark.parametrize("kw,message", [
    ({"observation": "small"}, "--observation: job_pick mode sees a job window"),
    ({"reservation": "wfp"}, "--reservation: unknown job selection policy 'wfp'"),
    ({"window": 0}, "--window: expected a positive number of jobs, got 0"),
])
def test_observation_settings_are_checked(traces, tmp_path, kw, message):
    with pytest.raises(ConfigError, match=message):
        train.train(tiny_settings(traces, tmp_path / "x.pt", **kw), echo=lambda *_: None)


def test_init_model_starts_from_the_weights_and_validates_them_first(traces, tmp_path,
                                                                     models_dir):
    from hdrm.agents.checkpoint import read_checkpoint

    source = models_dir / "ppo_lublin.pt"
    settings = tiny_settings(traces, tmp_path / "ft.pt", max_steps=100, init_model=str(source))
    train.train(settings, echo=lambda *_: None)
    first = (tmp_path / "log_ft" / "validation.csv").read_text().splitlines()[1].split(",")
    assert first[:2] == ["0", "0"]  # the starting model is validated before any training
    start = train.Validator(settings, settings.validation_starts)
    agent = train.build_agent("ppo", train.agent_config(settings), start.env, seed=0)
    from hdrm.agents.checkpoint import load_checkpoint

    load_checkpoint(agent, source, optimizer=False)
    assert float(first[2]) == pytest.approx(start(agent, 0)[0])
    options = read_checkpoint(tmp_path / "ft.pt")["options"]
    assert options["setting"]["init_model"] == str(source)
    assert options["training"]["init_model"]["env_steps"] == \
        read_checkpoint(source)["options"]["training"]["env_steps"]


def test_init_model_errors_are_one_line(traces, tmp_path, models_dir):
    source = str(models_dir / "ppo_lublin.pt")
    with pytest.raises(ConfigError, match="--init-model and --imitate are two ways to start"):
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", init_model=source,
                                           imitate="sjf"))
    wider = tiny_settings(traces, tmp_path / "y.pt", init_model=source,
                          agent_json={**TINY_PPO, "hidden": [8]})
    with pytest.raises(ConfigError, match=r"^--init-model: .*"):
        train.train(wider, echo=lambda *_: None)


# ------------------------------------------------------------------------- policy_pair actions
PRED_SELECTIONS = ("random", "first", "shortest", "smallest", "low_mem", "low_mem_bw", "sjf_pred",
                   "wfp3_pred", "unicep_pred")


def test_hetero_pairs_are_hdeeprm_36_unless_job_selections_are_named():
    from hdrm.policies.pairs import ALL_PAIRS

    assert protocol.hetero_pairs(None) == ALL_PAIRS == protocol.hetero_pairs(())
    pairs = protocol.hetero_pairs(PRED_SELECTIONS)
    assert len(pairs) == 54 and pairs[:36] == ALL_PAIRS
    assert pairs[36:] == protocol.PREDICTED_PAIRS
    assert pairs[36:42] == tuple(f"sjf_pred-{c}" for c in ("random", "high_gflops", "high_cores",
                                                           "high_mem", "high_mem_bw", "low_power"))


def pair_settings(traces, out, **kw):
    values = dict(trace="sdsc", mode="policy_pair", platform=str(protocol.HETERO_PLATFORM),
                  observation="small_waits_predicted", agent_json={})
    values.update(kw)
    return tiny_settings(traces, out, **values)


@pytest.mark.parametrize("kw,message", [
    ({"job_selections": ("random", "sjf_prd")},
     "--job-selections: unknown job selection policy 'sjf_prd'; did you mean 'sjf_pred'"),
    ({"job_selections": ("random", "random")},
     "--job-selections: expected distinct job selections (e.g. random,first,sjf_pred), "
     "got 'random,random'"),
    ({"job_selections": ()}, "--job-selections: expected distinct job selections"),
    ({"job_selections": ("first",), "imitate": "shortest-high_gflops"},
     "--imitate: in policy_pair mode the teacher is one of the learner's pairs"),
])
def test_job_selections_are_checked(traces, tmp_path, kw, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        train.check_settings(pair_settings(traces, tmp_path / "x.pt", **kw))


def test_job_selections_belong_to_policy_pair_mode(traces, tmp_path):
    with pytest.raises(ConfigError, match="--job-selections: the actions of policy_pair mode"):
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", trace="sdsc",
                                           job_selections=("sjf_pred",)))


def test_job_selections_parse_from_the_command_line(tmp_path):
    s = train.parse_args(["--out", str(tmp_path / "x.pt"), "--job-selections",
                          "random, first,sjf_pred"])
    assert s.job_selections == ("random", "first", "sjf_pred")
    assert train.parse_args(["--out", str(tmp_path / "x.pt")]).job_selections is None


def test_a_pair_learner_is_recorded_and_evaluated_on_its_own_pairs(traces, ctx, tmp_path,
                                                                  built_envs):
    from hdrm.agents.checkpoint import read_checkpoint

    s = pair_settings(traces, tmp_path / "pairs.pt", job_selections=("shortest", "sjf_pred"),
                      network="factored")
    train.check_settings(s)
    env = train.make_env(s, NB_JOBS)
    assert env.action_names == list(protocol.hetero_pairs(("shortest", "sjf_pred")))
    agent = train.build_agent("ppo", train.agent_config(s), env, 0)
    rule = train_rule.split_for(s, len(env.trace)).rule
    train.save(agent, s, train.agent_config(s), {"wall_s": 1.0}, rule)
    meta = read_checkpoint(s.out)["options"]
    assert meta["setting"]["job_selections"] == ["shortest", "sjf_pred"]
    assert compare.learner_column(meta) == "PPO-factored, 12 pairs (event)"  # not HDeepRM's column
    meta_36 = dict(meta, setting=dict(meta["setting"], job_selections=None))
    assert compare.learner_column(meta_36) == "PPO-factored (event)"
    model = compare.Model(s.out, compare.learner_column(meta), meta)
    row = compare.rows(("hetero",))[0]
    assert compare.model_score(ctx, model, row).bsld >= 1.0
    # 12 pairs, not the 36: the model's own actions
    assert [e.action_names for e in built_envs] == [env.action_names]
    training = compare.training_rows([model])["training: pairs.pt"]
    assert training["actions"] == "12 pairs (with sjf_pred)"


def test_hetero_rows_count_the_predicted_pairs_among_the_best_heuristic(run_compare):
    from hdrm.policies.pairs import ALL_PAIRS

    table, _ = run_compare
    for row in ("hetero, SDSC-SP2 x3 load, avg_bounded_slowdown",
                "hetero, SDSC-SP2 x3 load, energy_consumption (MJ)"):
        cells = table[row]
        predicted = {p: cells[p] for p in protocol.PREDICTED_PAIRS}
        assert len(predicted) == 18
        assert cells["best predicted-time heuristic"] == min(predicted.values())
        assert cells["best heuristic"] == min([*predicted.values(), *(cells[p] for p in ALL_PAIRS)])
    assert compare.reference_columns(compare.rows(("hetero",))[0]) == protocol.PREDICTED_PAIRS


def test_the_derived_hetero_workload_is_cached_per_source_trace(traces, tmp_path):
    """A slice of SDSC-SP2 (a test's traces folder) and the whole trace never share a cache file:
    a 500-job derived workload cached once by a test made every later compare.py run fail."""
    import shutil

    other = tmp_path / "other"
    other.mkdir()
    name = protocol.trace_spec("sdsc").file
    with gzip.open(traces / name, "rb") as src:
        lines = src.read().decode().splitlines(keepends=True)
    (other / name).write_bytes(gzip.compress("".join(lines[:-50]).encode()))
    cache = tmp_path / "cache"
    first = protocol.hetero_workload_file(traces, cache)
    second = protocol.hetero_workload_file(other, cache)
    assert first != second and first.is_file() and second.is_file()
    assert protocol.hetero_workload_file(traces, cache) == first
    shutil.rmtree(cache)


def test_unknown_trace_and_gpu_workload_names_get_one_line_with_the_closest_and_the_choices():
    from benchmarks import gpu_protocol

    with pytest.raises(ConfigError, match=r"^--trace: unknown trace 'sdcs'; did you mean 'sdsc' "
                                          r"or 'sdsc-par'\? choose among: lublin, sdsc, ctc, "):
        protocol.trace_spec("sdcs")
    with pytest.raises(ConfigError, match=r"^--workloads: unknown GPU workload 'opnb'; did you "
                                          r"mean 'openb'\? choose among: openb, gavel$"):
        gpu_protocol.workload_spec("opnb")
    assert protocol.trace_spec("sdsc") is protocol.TRACES["sdsc"]
