"""Issue 26 on the heterogeneous rows: a ``policy_pair`` learner's column is the mean over its
seed files (``NAME_seedK.pt``), one evaluation per seed in seed order, under the no-leakage rule
of SDSC-SP2 (the hetero workload keeps the trace's job indices)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from benchmarks import compare, compare_summary, protocol
from benchmarks import protocol_rule
from benchmarks.protocol_score import Score
from hdrm.errors import ConfigError

SDSC = protocol.TRACES["sdsc"].file
PRED_SELECTIONS = ["random", "first", "shortest", "smallest", "low_mem", "low_mem_bw",
                   "sjf_pred", "wfp3_pred", "unicep_pred"]
BSLD, ENERGY = protocol.HETERO_OBJECTIVES


@pytest.fixture
def traces(tmp_path) -> Path:
    """A folder holding a (tiny) file under SDSC-SP2's name: the hetero rows' source trace."""
    folder = tmp_path / "traces"
    folder.mkdir()
    lines = ["; MaxProcs: 16"] + [f"{i + 1} {i * 60} 0 100 1 -1 -1 1 200 -1 1 1 1 1 1 1 -1 -1"
                                  for i in range(40)]
    (folder / SDSC).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return folder


def hetero_model(folder: Path, traces: Path, name: str, seed: int, objective: str = BSLD,
                 selections: list[str] | None = PRED_SELECTIONS, train: tuple[int, int] = (
                     20_000, 59_705), ruled: bool = True) -> compare.Model:
    """A model file of a ``policy_pair`` setting (its content is never loaded here)."""
    path = folder / name
    path.write_bytes(f"weights of {name}".encode())
    windows = protocol_rule.test_windows(protocol.TEST_STARTS, protocol.SEQUENCE_JOBS)
    rule = protocol_rule.make_rule("sdsc", traces / SDSC, train, (10_000, 20_000), (10_000,),
                                   1024, windows) if ruled else None
    meta = {"rule": rule, "learner": "ppo", "label": "PPO-mlp",
            "setting": {"trace": "sdsc", "backfill": "none", "decision": "event",
                        "mode": "policy_pair", "objective": objective, "seed": seed,
                        "observation": "small_waits_predicted", "job_selections": selections,
                        "pick": "env"}}
    return compare.Model(str(path), compare.learner_column(meta), meta)


def test_hetero_rows_average_a_setting_over_its_seed_files(traces, tmp_path):
    models = [hetero_model(tmp_path, traces, f"ppo_hetero_bsld_pred_seed{k}.pt", k)
              for k in (2, 0, 1)]
    models += [hetero_model(tmp_path, traces, "ppo_hetero_bsld_seed0.pt", 0, selections=None),
               hetero_model(tmp_path, traces, "ppo_hetero_energy_seed0.pt", 0, ENERGY,
                            selections=None)]
    row, energy_row = compare.rows(("hetero",))
    groups = compare.models_for(row, models)
    # one column per setting: the three seeds of the 54-pair setting together, in seed order,
    # the 36-pair setting apart, the energy model only on the energy row
    assert {col: [Path(m.path).name for m in group] for col, group in groups.items()} == {
        "PPO-mlp, 54 pairs (event)": [f"ppo_hetero_bsld_pred_seed{k}.pt" for k in (0, 1, 2)],
        "PPO-mlp (event)": ["ppo_hetero_bsld_seed0.pt"]}
    assert list(compare.models_for(energy_row, models)) == ["PPO-mlp (event)"]
    ctx = compare.Context(str(traces), str(tmp_path / "cache"))
    cells = compare.model_cells(row, ctx, models)
    group, runs = cells["PPO-mlp, 54 pairs (event)"]
    assert [Path(r.policy).name for r in runs] == [Path(m.path).name for m in group]
    assert {r.group for r in runs} == {"hetero"} and {r.objective for r in runs} == {BSLD}
    assert len({r.name for r in runs}) == 3  # three evaluations, one per seed
    # the note under the cell names the three files
    assert compare.model_note(group).startswith(
        "ppo_hetero_bsld_pred_seed0.pt, ppo_hetero_bsld_pred_seed1.pt, "
        "ppo_hetero_bsld_pred_seed2.pt (trained on SDSC-SP2")


def test_hetero_rows_apply_the_rule_of_their_source_trace(traces, tmp_path):
    ctx = compare.Context(str(traces), str(tmp_path / "cache"))
    row = compare.rows(("hetero",))[0]
    pre_rule = hetero_model(tmp_path, traces, "ppo_hetero_bsld_pred.pt", 0, ruled=False)
    assert pre_rule.column == "PPO-mlp, 54 pairs (event) [pre-rule]"  # never with the seeds
    with pytest.raises(ConfigError, match=r"ppo_hetero_bsld_pred.pt: trained before the "
                                          r"no-leakage rule"):
        compare.model_cells(row, ctx, [pre_rule])
    leaky = hetero_model(tmp_path, traces, "ppo_hetero_bsld_pred_seed0.pt", 0, train=(0, 9000))
    with pytest.raises(ConfigError, match=r"training jobs \[0, 9000\) of SDSC-SP2-1998-4.2-cln"
                                          r".swf.gz overlap the evaluated window "
                                          r"\[1981, 3005\)"):
        compare.model_cells(row, ctx, [leaky])
    marked = compare.model_cells(row, compare.Context(str(traces), ctx.cache, allow_leaky=True),
                                 [leaky])
    assert list(marked) == ["PPO-mlp, 54 pairs (event) [leaky]"]


def test_a_hetero_learner_cell_is_its_seeds_mean_against_the_predicted_pairs():
    def score(bsld: float, wait: float) -> Score:
        return Score(bsld, 0.5, 1.0, p95_bsld=bsld, max_bsld=bsld, max_wait_s=wait,
                     makespan_s=100.0, long_wait_share=0.0)

    row = compare.rows(("hetero",))[0]
    seeds = [score(100.0, 1000.0), score(130.0, 1000.0), score(160.0, 1000.0)]
    col = "PPO-mlp, 54 pairs (event)"
    cells = {"unicep_pred-high_gflops": score(137.45, 1000.0),
             "random-high_gflops": score(300.0, 1000.0), col: compare_summary.seed_mean(seeds)}
    table: dict = {}
    compare.fill_row(table, row, cells, {col: seeds})
    main = table[row.name]
    assert main[col] == 130.0 and main[f"{col} [min-max]"] == "100.00-160.00 (3 seeds)"
    assert main["best predicted-time heuristic"] == 137.45
    assert main["best heuristic"] == 137.45
    # the mean of three seeds, 130, is under 0.95 x 137.45 = 130.58 (one seed, 160, is not)
    assert main["target met"] is True


def test_a_derived_workload_stopped_while_written_leaves_nothing_in_the_cache(traces, tmp_path,
                                                                             monkeypatch):
    # a fixed NAME.json.tmp stayed in the cache (and two processes building it shared the name)
    cache = tmp_path / "cache"
    real = protocol.write_batsim_json

    def stopped(workload, path, **kwargs):
        Path(path).write_text('{"jobs": [', encoding="utf-8")
        raise KeyboardInterrupt

    monkeypatch.setattr(protocol, "write_batsim_json", stopped)
    with pytest.raises(KeyboardInterrupt):
        protocol.hetero_workload_file(traces, cache)
    assert list(cache.iterdir()) == []
    monkeypatch.setattr(protocol, "write_batsim_json", real)
    path = protocol.hetero_workload_file(traces, cache)
    assert [p.name for p in cache.iterdir()] == [path.name]
