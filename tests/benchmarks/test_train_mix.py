"""Issue 26: training on several traces at once (benchmarks/train_mix.py, ``train.py --trace
sdsc,lublin``): the one-trace path unchanged, the mix draws from each trace's own training range,
validation combines the traces over their best heuristics, the rule record names every trace,
and the comparison refuses the model on what it saw and names it by its traces.

The tiny traces of test_compare (500-job slices under the full traces' names) get a rule of
their own for each trace (``protocol.TRACES`` patched): evaluation at 0 and 100 (64 jobs),
Lublin-1 training [400, 500) and validation [200, 400), SDSC-SP2 training [300, 500) and
validation [164, 300).
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import compare, compare_models, protocol, train, train_mix, train_rule
from benchmarks.protocol_rule import (
    MIX_RULE_VERSION,
    RULE_VERSION,
    check_evaluation,
    rule_parts,
    trace_keys,
    traces_label,
)
from hdrm.errors import ConfigError

from .test_compare import NB_JOBS, SLICES, TINY_PPO

ROOT = Path(__file__).resolve().parents[2]
RULES = {"lublin": dict(train_range=(400, 500), validation_range=(200, 400),
                        validation_starts=(200,)),
         "sdsc": dict(train_range=(300, 500), validation_range=(164, 300),
                      validation_starts=(164, 200))}


@pytest.fixture(scope="module")
def tiny_rules():
    """``protocol.TRACES`` with the tiny traces' rules (restored after the module)."""
    saved = dict(protocol.TRACES)
    for key, rule in RULES.items():
        protocol.TRACES[key] = dataclasses.replace(protocol.TRACES[key], **rule)
    yield
    protocol.TRACES.clear()
    protocol.TRACES.update(saved)


@pytest.fixture(scope="module")
def mixed(tiny_rules, tmp_path_factory) -> tuple[Path, Path, Path]:
    """The tiny traces, and a folder with one model trained on SDSC-SP2 and Lublin-1 (with a
    warm start from SJF+EASY on both) and its logs."""
    traces = tmp_path_factory.mktemp("traces")
    for target, source in SLICES.items():
        (traces / target).write_bytes(gzip.compress((ROOT / "workloads" / source).read_bytes()))
    models = tmp_path_factory.mktemp("models")
    logs = tmp_path_factory.mktemp("logs")
    train.train(mix_settings(traces, models / "ppo_mix.pt", log_dir=str(logs)),
                echo=lambda *_: None)
    return traces, models, logs


def mix_settings(traces: Path, out: Path, **kw) -> train.TrainSettings:
    values = dict(out=str(out), trace="sdsc,lublin", max_steps=400, minutes=0,
                  validate_every=1, train_jobs=NB_JOBS, agent_json=TINY_PPO, traces=str(traces),
                  imitate="sjf", imitate_backfill="easy", imitate_episodes=3, imitate_epochs=1,
                  validation_guard=3.0, log_dir=str(out.parent / f"log_{out.stem}"))
    values.update(kw)
    return train.TrainSettings(**values)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# ------------------------------------------------------------------------- the one-trace path
def test_one_trace_draws_as_before():
    """With one trace the warm start and the episodes draw what train.py drew before the mix:
    ``rng.choice(pool, size=E, replace=False)``, then one ``rng.choice(pool)`` an episode."""
    pool = np.arange(10, 900)
    split = train_rule.Split((10, 964), (0, 0), (), 64, pool, {})
    part = train_mix.Part("lublin", None, None, split)
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    (got,) = train_mix.imitation_starts([part], a, 60)
    assert np.array_equal(got, b.choice(pool, size=60, replace=False))
    for episode in range(5):
        assert train_mix.episode_part([part], episode) is part
        assert int(a.choice(train_mix.episode_part([part], episode).split.pool)) == int(
            b.choice(pool))
    assert a.bit_generator.state == b.bit_generator.state
    assert train_mix.pool_text([part]) == "890 start indices in jobs [10, 964)"


def test_one_trace_records_the_version_1_rule_and_logs_as_before(tiny_rules, tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    for target, source in SLICES.items():
        (traces / target).write_bytes(gzip.compress((ROOT / "workloads" / source).read_bytes()))
    s = mix_settings(traces, tmp_path / "one.pt", trace="lublin", max_steps=100,
                     imitate=None, validation_guard=0.0)
    train.train(s, echo=lambda *_: None)
    meta = compare.discover_models(tmp_path)[0].meta
    split = train_rule.split_for(s, 500)
    assert meta["rule"] == split.rule and meta["rule"]["version"] == RULE_VERSION
    assert meta["setting"]["trace"] == "lublin"
    assert compare_models.learner_column(meta) == "PPO-kernel (event)"
    log = tmp_path / "log_one"
    assert "trace" not in read_csv(log / "episodes.csv")[0]
    assert list(read_csv(log / "validation.csv")[0]) == [
        "episode", "env_steps", "objective", "best", "wall_s", "max_wait_ratio",
        "makespan_ratio"]
    assert meta["training"]["training_starts"] == "37 start indices in jobs [400, 500)"


# ------------------------------------------------------------------------- the mix
def test_the_mix_alternates_traces_inside_their_training_ranges(mixed):
    _, _, logs = mixed
    rows = read_csv(logs / "episodes.csv")
    assert len(rows) >= 4
    assert [r["trace"] for r in rows] == [("sdsc", "lublin")[i % 2] for i in range(len(rows))]
    windows = train_rule.protocol_windows()
    for r in rows:
        first, end = RULES[r["trace"]]["train_range"]
        start = int(r["start_index"])
        assert first <= start and start + NB_JOBS <= end
        # never a job of a test window, nor of the trace's validation range
        assert all(start + NB_JOBS <= w[0] or start >= w[1] for w in windows)
        vfirst, vend = RULES[r["trace"]]["validation_range"]
        assert start >= vend or start + NB_JOBS <= vfirst


def test_validation_is_the_mean_over_traces_of_the_score_over_the_best_heuristic(mixed):
    _, models, logs = mixed
    meta = compare.discover_models(models)[0].meta
    ref = meta["training"]["validation_reference"]
    assert ref["sdsc"]["validation_starts"] == [164, 200]
    assert ref["lublin"]["validation_starts"] == [200]
    assert ref["sdsc"]["reference"] in protocol.HEURISTICS + protocol.PREDICTED_HEURISTICS
    rows = read_csv(logs / "validation.csv")
    assert rows
    for r in rows:
        by_hand = np.mean([float(r["objective_sdsc"]) / ref["sdsc"]["reference_value"],
                           float(r["objective_lublin"]) / ref["lublin"]["reference_value"]])
        assert float(r["objective"]) == pytest.approx(by_hand, rel=1e-5)
    # a model is kept only within every trace's guard (the worst ratio is logged)
    kept = [r for r in rows if r["best"] == "1"]
    assert all(float(r["max_wait_ratio"]) <= 3.0 and float(r["makespan_ratio"]) <= 3.0
               for r in kept)
    best = min(float(r["objective"]) for r in kept)
    assert meta["training"]["best_validation"] == pytest.approx(best, rel=1e-5)
    guards = meta["training"]["validation_guard"]["traces"]
    assert set(guards) == {"sdsc", "lublin"} and guards["sdsc"]["factor"] == 3.0
    assert meta["training"]["imitation"]["episodes"] == 3  # sdsc 2, lublin 1
    assert set(meta["training"]["imitation"]["teacher_scores"]) == {"sdsc", "lublin"}


def test_the_rule_record_names_every_trace_and_round_trips(mixed):
    traces, models, _ = mixed
    meta = compare.discover_models(models)[0].meta
    rule = meta["rule"]
    assert rule["version"] == MIX_RULE_VERSION and rule["trace"] == "sdsc,lublin"
    for part, key in zip(rule_parts(rule), ("sdsc", "lublin")):
        s = dataclasses.replace(mix_settings(traces, models / "x.pt"), trace=key)
        assert part == train_rule.split_for(s, 500).rule
    assert [p["train_jobs"] for p in rule_parts(rule)] == [[300, 500], [400, 500]]
    assert json.loads(json.dumps(rule)) == rule  # plain data, as the checkpoint keeps it
    assert meta["setting"]["trace"] == "sdsc,lublin"
    assert trace_keys("sdsc, lublin") == ("sdsc", "lublin")
    assert traces_label("sdsc,lublin") == "SDSC-SP2+Lublin-1"


def test_the_model_is_refused_on_what_either_trace_saw(mixed, tmp_path, capsys):
    traces, models, _ = mixed
    meta = compare.discover_models(models)[0].meta
    lublin, sdsc = traces / "lublin_256.swf.gz", traces / "SDSC-SP2-1998-4.2-cln.swf.gz"
    assert check_evaluation("m.pt", meta, lublin, [(0, 64), (100, 164)]) == ""
    assert check_evaluation("m.pt", meta, sdsc, [(0, 64), (100, 164)]) == ""
    with pytest.raises(ConfigError, match=r"^m\.pt: its training jobs \[400, 500\) of "
                                          r"lublin_256\.swf\.gz overlap the evaluated window "
                                          r"\[420, 484\)"):
        check_evaluation("m.pt", meta, lublin, [(0, 64), (420, 484)])
    # jobs [164, 200) are SDSC-SP2 validation jobs; Lublin-1's seen jobs start at 200: each
    # trace's ranges hold for its own jobs only (recognised by content)
    with pytest.raises(ConfigError, match=r"its validation jobs \[164, 300\) of "
                                          r"SDSC-SP2-1998-4\.2-cln\.swf\.gz overlap"):
        check_evaluation("m.pt", meta, sdsc, [(136, 200)])
    assert check_evaluation("m.pt", meta, lublin, [(136, 200)]) == ""
    assert check_evaluation("m.pt", meta, sdsc, [(136, 200)], allow_leaky=True) == "leaky"
    # a reader of one-trace rules only would take the mix for a model without a rule
    assert check_evaluation("m.pt", {"rule": {"version": 3}}, lublin, [(0, 64)],
                            allow_leaky=True) == "pre-rule"
    # through the comparison: one line naming the model and the overlap
    args = compare_args(traces, models, tmp_path, "protocol")
    assert compare.main([*args, "--starts", "0,170"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err == (f"error: {models / 'ppo_mix.pt'}: its validation jobs [200, 400) of "
                   "lublin_256.swf.gz overlap the evaluated window [170, 234) on jobs "
                   "[200, 234); evaluate it elsewhere, or pass --allow-leaky to mark the cell "
                   "leaky")


def compare_args(traces: Path, models: Path, tmp: Path, groups: str) -> list[str]:
    return ["--evaluate-only", "--groups", groups, "--traces", str(traces), "--cache",
            str(tmp / "c"), "--models", str(models), "--nb-jobs", str(NB_JOBS), "--jobs", "1",
            "--rst", "", "--json", str(tmp / "t.json")]


def test_the_column_names_both_traces_on_protocol_and_generalisation_rows(mixed, tmp_path):
    from .test_compare_rule import write_trace

    traces, models, _ = mixed
    name = "PPO-kernel, warm start SJF+EASY, guard 3 (event), from SDSC-SP2+Lublin-1"
    assert compare.main([*compare_args(traces, models, tmp_path, "protocol"), "--starts",
                         "0,100"]) == 0
    table = json.loads((tmp_path / "t.json").read_text())
    for row in ("Lublin-1, no backfilling", "SDSC-SP2, EASY backfilling"):
        assert isinstance(table[row][name], float)
    assert table["training: ppo_mix.pt"]["trained on"] == "SDSC-SP2+Lublin-1"
    assert table["training: ppo_mix.pt"]["jobs seen (no-leakage rule)"] == (
        "training [300, 500), validation [164, 300) of SDSC-SP2-1998-4.2-cln.swf.gz; "
        "training [400, 500), validation [200, 400) of lublin_256.swf.gz")
    extra = write_trace(tmp_path / "mine.swf.gz", 300, procs=8)
    assert compare.main([*compare_args(traces, models, tmp_path, "generalisation"), "--starts",
                         "0,1", "--extra-trace", f"mine={extra}:32"]) == 0
    table = json.loads((tmp_path / "t.json").read_text())
    assert isinstance(table["mine (other traces' models), no backfilling"][name], float)
    # the rows of its own traces hold no cell of it
    for label in ("Lublin-1", "SDSC-SP2"):
        assert not any("PPO" in col for col in
                       table[f"{label} (other traces' models), no backfilling"])


def test_mix_settings_errors_are_one_line(tiny_rules, tmp_path):
    base = mix_settings(tmp_path, tmp_path / "m.pt")
    cases = [
        (dict(trace="sdsc,sdsc"), r"^--trace sdsc,sdsc: sdsc named twice; name each trace once"),
        (dict(trace="sdsc,ctc"), r"^--trace: 'ctc' is for evaluation only; train on one of: "
                                 r"lublin, sdsc \(or several: sdsc,lublin\)"),
        (dict(train_range=(0, 100)), r"^--train-range: names jobs of one trace; with --trace "
                                     r"sdsc,lublin each trace keeps its own rule"),
        (dict(validation_starts=(200,)), r"^--validation-starts: names jobs of one trace"),
        (dict(num_envs=2), r"^--trace sdsc,lublin: several traces are played in this process"),
    ]
    for change, message in cases:
        with pytest.raises(ConfigError, match=message):
            train.check_settings(dataclasses.replace(base, **change))
    with pytest.raises(ConfigError, match="did you mean|unknown|choose"):
        train.check_settings(dataclasses.replace(base, trace="sdsc,lubin"))


def test_the_registered_command_is_the_sdsc_recipe_on_both_traces():
    mix = compare_models.rule_command("ppo-kernel_sdsc_lublin_none_event_easypicks_f1.pt")
    one = compare_models.rule_command("ppo-kernel_sdsc_none_event_easypicks_f1.pt")
    at = one.index("--trace") + 1
    assert mix[at] == "sdsc,lublin" and one[at] == "sdsc"
    assert mix[:at] + mix[at + 1:] == one[:at] + one[at + 1:]
    assert mix[mix.index("--max-steps") + 1] == "300000"
    assert mix[-2:] == ["--validation-guard", "1.25"]
