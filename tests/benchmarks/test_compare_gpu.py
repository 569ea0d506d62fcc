"""benchmarks/compare_gpu.py: the split, a quick run checked by hand, the targets, the resume.

The quick run uses a 15-task openb pod list whose test range is three tasks submitted together
on a one-GPU node (A 100 s, B 10 s, C 50 s): FIFO runs them A, B, C (JCTs 100, 110, 160 s),
SJF B, C, A (10, 60, 160 s).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import compare_gpu, gpu_evaluation, gpu_protocol, gpu_tables
from benchmarks.gpu_protocol import GpuScore, time_split, windows_in
from hdrm.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]

POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time")
#: (submit, run) of the 15 tasks: 9 training, 3 validation, then the 3 test tasks at 100 s.
TASKS = [(t, 5) for t in range(9)] + [(t, 5) for t in (9, 10, 11)] + [(100, 100), (100, 10),
                                                                    (100, 50)]
PAIRS = "fifo-fgd,sjf-fgd,las-best_fit"
T4_USD_PER_S = 0.35 / 3600


@pytest.fixture()
def traces(tmp_path: Path) -> Path:
    gpu = tmp_path / "traces" / "gpu"
    gpu.mkdir(parents=True)
    lines = [POD_HEADER] + [f"pod-{i},1000,1024,1,1000,,LS,Succeeded,{s},{s + r},{s}"
                            for i, (s, r) in enumerate(TASKS)]
    (gpu / "openb_pod_list_default.csv").write_text("\n".join(lines) + "\n")
    # the protocol keeps every 120th node: node 0, one T4
    nodes = ["sn,cpu_milli,memory_mib,gpu,model", "node-0,8000,65536,1,T4"]
    nodes += [f"node-{i},8000,65536,2,T4" for i in range(1, 120)]
    (gpu / "openb_node_list_gpu_node.csv").write_text("\n".join(nodes) + "\n")
    return tmp_path / "traces"


def _quick(traces: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "table.json"
    argv = ["--evaluate-only", "--quick", "--workloads", "openb", "--pairs", PAIRS, "--traces",
            str(traces), "--cache", str(tmp_path / "cache"), "--models", str(tmp_path / "none"),
            "--json", str(out), "--rst", str(tmp_path / "page.rst"), "--backend", "serial",
            *extra]
    assert compare_gpu.main(argv) == 0
    return json.loads(out.read_text())


# ------------------------------------------------------------------------------------ split
def test_time_split_cuts_at_quantile_times_and_keeps_equal_times_together():
    submit = [0, 1, 2, 3, 4, 5, 5, 5, 8, 9]
    split = time_split(submit, (0.6, 0.2))
    # 60% of 10 tasks: the first cut is task 6's time (5), so tasks 5-7 (all at 5) start
    # validation; 80%: task 8's time (8)
    assert split.cuts_s == (5.0, 8.0)
    assert split.train == (0, 5) and split.validation == (5, 8) and split.test == (8, 10)
    ranges = [split.train, split.validation, split.test]
    assert ranges[0][0] == 0 and ranges[-1][1] == len(submit)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))  # no gap, no overlap
    assert max(submit[slice(*split.train)]) < split.cuts_s[0] <= min(submit[slice(*split.test)])


def test_time_split_refuses_unsorted_or_too_short_workloads():
    with pytest.raises(ConfigError, match="submission order"):
        time_split([3, 1, 2, 4, 5])
    with pytest.raises(ConfigError, match="empty range"):
        time_split([0, 0, 0, 0, 0])


def test_windows_are_disjoint_evenly_spaced_and_inside_their_range():
    assert windows_in((100, 200), 4, 10) == (100, 130, 160, 190)
    assert windows_in((100, 200), 1, 10) == (100,)
    starts = windows_in((6521, 8152), 4, 400)
    assert starts[0] == 6521 and starts[-1] + 400 == 8152
    assert all(b - a >= 400 for a, b in zip(starts, starts[1:]))
    with pytest.raises(ConfigError, match=r"3 windows of 40 tasks do not fit in tasks 0\.\.99"):
        windows_in((0, 100), 3, 40)


def test_the_shared_openb_trace_split_keeps_every_test_window_out_of_training():
    traces = gpu_protocol.DEFAULT_TRACES
    if not (traces / "gpu" / "openb_pod_list_default.csv").is_file():
        pytest.skip("../shared/traces not here")
    setting = gpu_protocol.resolve(gpu_protocol.WORKLOADS["openb"], traces, ROOT / "runs" / "cache")
    train, validation, test = setting.split
    assert train[0] == 0 and train[1] == validation[0] and validation[1] == test[0]
    assert test[1] == 8152
    for start in setting.test_starts:
        assert test[0] <= start and start + setting.window_tasks <= test[1]
    for start in setting.validation_starts:
        assert validation[0] <= start and start + setting.window_tasks <= validation[1]


# ------------------------------------------------------------------------------------ quick run
def test_quick_run_writes_the_json_with_the_hand_checked_best_pair(traces, tmp_path):
    table = _quick(traces, tmp_path)
    row = "openb default, x20 load, 1 test windows of 3 tasks"
    cells = table[row]
    assert cells["fifo-fgd"] == pytest.approx((100 + 110 + 160) / 3)
    assert cells["sjf-fgd"] == pytest.approx((10 + 60 + 160) / 3)
    assert cells["las-best_fit"] == pytest.approx((100 + 110 + 160) / 3)  # one tenant: FIFO
    assert cells["best pair name"] == "sjf-fgd"
    assert cells["best pair"] == pytest.approx(230 / 3)
    assert cells["target (0.95 x best pair)"] == pytest.approx(0.95 * 230 / 3)
    assert cells["target met"] == gpu_tables.NO_MODEL and cells["best learner"] is None
    waits = table[f"{row} [max wait (s)]"]
    assert {k: waits[k] for k in PAIRS.split(",")} == pytest.approx(
        {"fifo-fgd": 110, "sjf-fgd": 60, "las-best_fit": 110})
    # greedy backfilling: the same schedules here (one GPU, every task needs it)
    assert cells["sjf-fgd (greedy)"] == pytest.approx(230 / 3)
    assert cells["fifo-fgd (greedy)"] == pytest.approx(370 / 3)
    assert table[f"{row} [p95 JCT (s)]"]["sjf-fgd"] == 160  # nearest rank: the 3rd of 3
    assert table[f"{row} [makespan (s)]"]["fifo-fgd"] == pytest.approx(160)
    assert table[f"{row} [GPU allocation rate]"]["sjf-fgd"] == pytest.approx(1.0)
    assert table[f"{row} [GPU cost (USD)]"]["sjf-fgd"] == pytest.approx(160 * T4_USD_PER_S)
    page = (tmp_path / "page.rst").read_text()
    assert "No model is shipped under ``models/gpu/``" in page and "sjf-fgd" in page


def test_a_rerun_reuses_the_finished_evaluations(traces, tmp_path, monkeypatch):
    calls = []
    real = gpu_evaluation.run_pair

    def counting(setting, start, policy, seed, backfill):
        calls.append(f"{policy}/{backfill}")
        return real(setting, start, policy, seed, backfill)

    monkeypatch.setattr(gpu_evaluation, "run_pair", counting)
    outdir = str(tmp_path / "keep")
    first = _quick(traces, tmp_path, "--outdir", outdir)
    assert sorted(calls) == sorted(f"{p}/{b}" for p in PAIRS.split(",") for b in ("none", "greedy"))
    calls.clear()
    assert _quick(traces, tmp_path, "--outdir", outdir) == first and calls == []
    _quick(traces, tmp_path, "--outdir", outdir, "--pairs", PAIRS + ",tetris-fgd")
    assert sorted(calls) == ["tetris-fgd/greedy", "tetris-fgd/none"]  # only the new pair runs


def test_bad_arguments_are_one_line_errors(traces, tmp_path, capsys):
    base = ["--evaluate-only", "--quick", "--traces", str(traces), "--rst", "",
            "--cache", str(tmp_path / "cache")]
    assert compare_gpu.main(base + ["--workloads", "philly"]) == 2
    assert "unknown GPU workload 'philly'; choose among: openb, gavel" in capsys.readouterr().err
    assert compare_gpu.main(base + ["--workloads", "gavel"]) == 2
    assert "msr_seed0.trace: GPU trace file not found" in capsys.readouterr().err
    assert compare_gpu.main(base + ["--pairs", "sjf-fgdd"]) == 2
    assert "--pairs" in capsys.readouterr().err
    assert compare_gpu.main(base + ["--backfills", "none,easy"]) == 2
    assert "--backfills: unknown mode 'easy'; choose among: none, greedy" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ targets
def _score(jct: float, cost: float = 10.0, wait: float = 100.0, span: float = 1000.0) -> GpuScore:
    return GpuScore(avg_jct=jct, p95_jct=2 * jct, max_wait=wait, makespan=span,
                    gpu_allocation_rate=0.5, gpu_cost=cost, mean_wait=wait / 2, mean_run=jct)


PAIR_SCORES = {"fifo-fgd": _score(120.0), "sjf-fgd": _score(100.0), "las-fgd": _score(110.0)}


def test_target_met_when_95_percent_of_the_best_pair_and_no_costlier():
    cells = gpu_tables.judge(PAIR_SCORES, {"MAPPO": _score(95.0), "PPO": _score(99.0)})
    assert cells["best pair name"] == "sjf-fgd" and cells["best learner name"] == "MAPPO"
    assert cells["target met"] is True and cells["flag"] == "none"
    assert cells["best learner / best pair"] == pytest.approx(0.95)


@pytest.mark.parametrize("learner", [_score(95.5), _score(90.0, cost=10.5)],
                         ids=["jct above 0.95x", "costlier"])
def test_target_missed_on_jct_or_on_cost(learner):
    assert gpu_tables.judge(PAIR_SCORES, {"MAPPO": learner})["target met"] is False


def test_flags_name_max_wait_and_makespan_beyond_1_5_times_the_best_pair():
    cells = gpu_tables.judge(PAIR_SCORES, {"MAPPO": _score(80.0, wait=151.0, span=1500.0)})
    assert cells["target met"] is True
    assert cells["flag"] == "max wait 1.51 x best pair"  # makespan exactly 1.5x: not flagged
    cells = gpu_tables.judge(PAIR_SCORES, {"MAPPO": _score(80.0, wait=200.0, span=1600.0)})
    assert cells["flag"] == "max wait 2.00 x best pair; makespan 1.60 x best pair"


def test_without_learners_the_row_says_no_model_is_shipped():
    cells = gpu_tables.judge(PAIR_SCORES, {})
    assert cells["target met"] == gpu_tables.NO_MODEL and cells["best learner"] is None


# ------------------------------------------------------------------------------------ load
def test_the_load_factor_is_the_smallest_whose_best_pair_waits_the_share():
    setting = gpu_protocol.Setting("x", "t", None, "p", 1.0, 3, (0,), (10, 20), ((0, 9),) * 3)

    def run(loaded, start, policy, seed):  # wait grows with the factor; sjf always best
        wait = loaded.load_factor * (1.0 if policy == "sjf" else 2.0)
        return GpuScore(100 + wait, 0, 0, 0, 0, 0, wait, 100.0)

    factor, steps = gpu_protocol.choose_load_factor(setting, ["fifo", "sjf"], (1, 5, 10, 20),
                                                    0.10, run)
    assert factor == 10 and [s[:2] for s in steps] == [(1, "sjf"), (5, "sjf"), (10, "sjf")]
    factor, _ = gpu_protocol.choose_load_factor(setting, ["sjf"], (1, 2), 0.5, run)
    assert factor == 2  # never reached: the largest factor tried


def test_spread_is_the_standard_deviation_over_seeds():
    row = {"per_seed": {"0": vars(_score(90.0)), "1": vars(_score(110.0))}}
    summary = gpu_evaluation.summary_of(row)
    assert summary.mean.avg_jct == pytest.approx(100.0)
    assert summary.spread.avg_jct == pytest.approx(float(np.std([90.0, 110.0])))


# ------------------------------------------------------------------------------------ learners
def test_a_shipped_model_gets_its_columns_through_the_multi_agent_env(traces, tmp_path):
    pytest.importorskip("torch")
    from benchmarks import gpu_train

    models = tmp_path / "models"
    for role, name in (("mappo", "mappo.pt"), ("learned_order", "order.pt")):
        assert gpu_train.main(["--workload", "openb", "--role", role, "--quick", "--episodes", "1",
                               "--window", "4", "--traces", str(traces), "--cache",
                               str(tmp_path / "cache"), "--out", str(models / name)]) == 0
    table = _quick(traces, tmp_path, "--models", str(models), "--seeds", "1")
    row = "openb default, x20 load, 1 test windows of 3 tasks"
    cells = table[row]
    # one GPU, three tasks at once: any work-conserving order gives JCTs between SJF's and
    # the reverse order's (50+10+100 ...); the learners' averages are those of real episodes
    for column in ("MAPPO", "learned order + fgd"):
        assert 230 / 3 - 1e-6 <= cells[column] <= (100 + 150 + 160) / 3 + 1e-6
        assert cells[f"{column} (spread)"] == 0.0  # one seed
        assert table[f"{row} [makespan (s)]"][column] == pytest.approx(160)
    assert isinstance(cells["target met"], bool)
    assert cells["best learner name"] in ("MAPPO", "learned order + fgd")
    assert table["training: mappo.pt"]["learner"] == "MAPPO"
    assert table["training: order.pt"]["episodes"] == 1


def test_training_episodes_lie_in_the_training_range():
    from benchmarks.gpu_train import training_starts

    setting = gpu_protocol.Setting("x", "t", None, "p", 1.0, 400, (6521,), (4891,),
                                   ((0, 4891), (4891, 6521), (6521, 8152)))
    starts = training_starts(setting, seed=0, episodes=2000)
    assert len(starts) == 2000 and min(starts) >= 0 and max(starts) + 400 <= 4891
    assert max(starts) > 4000 and min(starts) < 500  # the whole range is drawn from
    short = gpu_protocol.Setting("x", "t", None, "p", 1.0, 400, (), (), ((0, 300),) * 3)
    with pytest.raises(ConfigError, match=r"x: the training range \(300 tasks\) is shorter"):
        training_starts(short, 0, 10)


def test_a_model_of_another_load_or_window_size_gets_no_column(capsys):
    from benchmarks.gpu_learners import GpuModel, applies

    setting = gpu_protocol.Setting("openb", "t", None, "p", 20.0, 400, (), (), ((0, 1),) * 3)
    meta = {"setting": {"workload": "openb", "load_factor": 20.0, "window_tasks": 400}}
    assert applies(GpuModel("m.pt", "MAPPO", meta), setting)
    quick = {"setting": {"workload": "openb", "load_factor": 20.0, "window_tasks": 3}}
    assert not applies(GpuModel("q.pt", "MAPPO", quick), setting)
    err = capsys.readouterr().err
    assert "q.pt was trained on openb at load x20.0 with windows of 3 tasks" in err
    gavel = {"setting": {"workload": "gavel", "load_factor": 20.0, "window_tasks": 400}}
    assert not applies(GpuModel("g.pt", "MAPPO", gavel), setting)


def test_a_work_conserving_learner_waits_only_when_no_queued_task_fits():
    from benchmarks.gpu_learners import WorkConserving

    def obs(mask):
        return {"order": {"action_mask": np.array(mask, dtype=np.int8)},
                "place": {"action_mask": np.array([1], dtype=np.int8)}}

    fits = WorkConserving._conserving(obs([0, 1, 0, 1]))  # task 1 fits: no waiting
    assert fits["order"]["action_mask"].tolist() == [0, 1, 0, 0]
    nothing = WorkConserving._conserving(obs([0, 0, 0, 1]))  # nothing fits: wait stays
    assert nothing["order"]["action_mask"].tolist() == [0, 0, 0, 1]
    original = obs([1, 0, 0, 1])
    WorkConserving._conserving(original)
    assert original["order"]["action_mask"].tolist() == [1, 0, 0, 1]  # the env's copy unchanged


def test_the_shipped_gpu_models_load_for_their_setting():
    pytest.importorskip("torch")
    from benchmarks.gpu_learners import applies, discover_models, load_agent, make_env, view_of

    models = discover_models(ROOT / "models" / "gpu")
    if not models:
        pytest.skip("no model under models/gpu")
    traces = gpu_protocol.DEFAULT_TRACES
    if not (traces / "gpu" / "openb_pod_list_default.csv").is_file():
        pytest.skip("../shared/traces not here")
    for model in models:
        spec = gpu_protocol.WORKLOADS[model.workload]
        setting = gpu_protocol.resolve(spec, traces, ROOT / "runs" / "cache")
        assert applies(model, setting), model.path
        trained = model.meta["setting"]
        first, end = trained["training_range"]
        assert (first, end) == tuple(setting.split[0])  # trained on the training range only
        env = make_env(setting, trained["window"], 0, setting.test_starts[0], trained["pick"],
                       view_of(trained))
        agent = load_agent(model.path, env, 0)
        assert not agent.training


def test_heuristic_drivers_of_a_work_conserving_learner_play_the_greedy_pair():
    """Through make_env with pick ``fitting`` the heuristic drivers (frozen agents, imitation
    teachers) play sjf-first_fit exactly as the engine's greedy pair does (and with pick
    ``env`` as its pair without backfilling): same average JCT to the last digit on an
    80-task validation window of openb at x20, where the two modes differ."""
    import dataclasses

    from benchmarks.gpu_learners import make_env, play_pair

    traces = gpu_protocol.DEFAULT_TRACES
    if not (traces / "gpu" / "openb_pod_list_default.csv").is_file():
        pytest.skip("../shared/traces not here")
    setting = gpu_protocol.resolve(gpu_protocol.workload_spec("openb"), traces,
                                   ROOT / "runs" / "cache")
    setting = dataclasses.replace(setting, window_tasks=80)
    start = setting.validation_starts[0]
    played = {}
    for pick in ("fitting", "env"):
        env = make_env(setting, 80, 0, start, pick)
        played[pick] = play_pair(env, "sjf", "first_fit", 0).avg_jct
    greedy = gpu_protocol.run_pair(setting, start, "sjf-first_fit", 0, "greedy").avg_jct
    none = gpu_protocol.run_pair(setting, start, "sjf-first_fit", 0, "none").avg_jct
    assert greedy != none
    assert played == {"fitting": greedy, "env": none}


def test_fitting_first_view_plays_the_greedy_pair_on_a_whole_openb_window():
    """With the view the new learners train in (the window shows the tasks that fit first,
    GPUs within the chosen node by first_fit's rule), the heuristic drivers with a window of
    64 play sjf-first_fit exactly as the engine's greedy pair does on a whole 400-task
    validation window of openb at x20; with the old view (submission window, FGD's rule
    within the node) they do not: the handicap every earlier learner trained under."""
    from benchmarks.gpu_learners import OLD_VIEW, make_env, play_pair

    traces = gpu_protocol.DEFAULT_TRACES
    if not (traces / "gpu" / "openb_pod_list_default.csv").is_file():
        pytest.skip("../shared/traces not here")
    setting = gpu_protocol.resolve(gpu_protocol.workload_spec("openb"), traces,
                                   ROOT / "runs" / "cache")
    start = setting.validation_starts[0]
    played = []
    for view in ({"fitting_first": True, "placement": "first_fit"}, OLD_VIEW):
        env = make_env(setting, 64, 0, start, "fitting", view)
        played.append(play_pair(env, "sjf", "first_fit", 0).avg_jct)
    greedy = gpu_protocol.run_pair(setting, start, "sjf-first_fit", 0, "greedy").avg_jct
    assert played[0] == greedy
    assert played[1] > greedy * 1.002


def test_a_model_without_a_view_keeps_its_column_and_the_old_view():
    from benchmarks.gpu_learners import OLD_VIEW, model_column, view_of

    meta = {"setting": {"role": "learned_place", "imitate": "sjf-first_fit"},
            "agent": {"params": {"freeze_order": "sjf"}}}
    assert view_of(meta["setting"]) == OLD_VIEW == {"fitting_first": False, "placement": "fgd",
                                                "node_rank": False}
    assert model_column(meta) == "sjf + learned place, warm start sjf-first_fit"
    meta["setting"].update(fitting_first=True, placement="first_fit")
    assert model_column(meta) == ("sjf + learned place, warm start sjf-first_fit, "
                                  "fitting-first window, first_fit in node")


def test_gpu_train_device_flags_go_into_the_agent_params():
    from benchmarks.gpu_train import agent_config, parse

    a = parse(["--out", "x.pt", "--rollout-device", "cpu", "--update-device", "cuda:1"])
    config = agent_config(a.role, a.freeze_order, a.freeze_place, {},
                          {"rollout_device": a.rollout_device, "update_device": a.update_device})
    assert config["params"]["rollout_device"] == "cpu"
    assert config["params"]["update_device"] == "cuda:1"
    plain = parse(["--out", "x.pt"])
    assert (plain.rollout_device, plain.update_device) == (None, None)
    config = agent_config("mappo", "sjf", "fgd", {"params": {"update_device": "cpu"}},
                          {"rollout_device": None, "update_device": "cuda"})
    assert "rollout_device" not in config["params"]
    assert config["params"]["update_device"] == "cpu"  # --agent-json has the last word


def test_a_stop_while_writing_keeps_the_previous_page_and_json(traces, tmp_path, monkeypatch):
    """--rst and --json are published together, each whole: a stop while the JSON was made
    left the new page beside the previous JSON (the page was written first, in place)."""
    import types

    _quick(traces, tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in ("table.json", "page.rst")}

    def stop(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(compare_gpu, "json", types.SimpleNamespace(dumps=stop))
    with pytest.raises(KeyboardInterrupt):
        _quick(traces, tmp_path, "--pairs", PAIRS + ",tetris-fgd")  # another table
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == sorted(before)


def test_a_stopped_gpu_training_is_neither_evaluated_nor_taken_as_trained(traces, tmp_path,
                                                                          monkeypatch):
    """gpu_train.py saves its best model at each improving validation; stopped, that model said
    'finished: false' but not 'final', the flag compare_gpu.py reads: it was evaluated as a
    trained model, and train_missing skipped it. Now it is left out with a note, train_missing
    trains it again, and the new run keeps the stopped one aside as STEM.interrupted.pt."""
    pytest.importorskip("torch")
    from benchmarks import gpu_learners, gpu_train
    from hdrm.agents import mappo_rollout

    models = tmp_path / "models"
    out = models / "mappo_openb_seed0.pt"
    argv = ["--workload", "openb", "--quick", "--episodes", "3", "--validate-every", "1",
            "--window", "4", "--traces", str(traces), "--cache", str(tmp_path / "cache")]
    real = mappo_rollout.play_episode

    def stopping(*args, **kwargs):
        if out.is_file():  # a validation saved the best so far: stop in the next episode
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(mappo_rollout, "play_episode", stopping)
    with pytest.raises(KeyboardInterrupt):
        gpu_train.main([*argv, "--out", str(out)])
    monkeypatch.undo()
    assert out.is_file() and not gpu_train.finished_model(out)
    assert gpu_learners.discover_models(models) == []
    monkeypatch.setattr(gpu_train, "GPU_MODEL_COMMANDS", {out.name: argv[:-4]})
    gpu_train.train_missing(models, str(traces), str(tmp_path / "cache"))
    assert gpu_train.finished_model(out)
    assert sorted(p.name for p in models.iterdir()) == ["mappo_openb_seed0.interrupted.pt",
                                                        out.name]
    assert [m.path for m in gpu_learners.discover_models(models)] == [str(out)]
