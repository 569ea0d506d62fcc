"""compare.py's evaluation grid through ``hdrm sweep``'s machinery: same numbers, resume.

The tiny traces folder of test_compare.py (500-job slices under the full traces' names), 64-job
sequences at start indices 0 and 100.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from benchmarks import compare, evaluation, protocol, train
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.sim.engine import Simulation

ROOT = Path(__file__).resolve().parents[2]

STARTS = (0, 100)
NB_JOBS = 64
SLICES = {"lublin_256.swf.gz": "lublin_256_first500.swf",
          "SDSC-SP2-1998-4.2-cln.swf.gz": "SDSC-SP2-1998-4.2-cln_first500.swf"}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory) -> compare.Context:
    folder = tmp_path_factory.mktemp("traces")
    for target, source in SLICES.items():
        (folder / target).write_bytes(gzip.compress((ROOT / "workloads" / source).read_bytes()))
    return compare.Context(str(folder), str(tmp_path_factory.mktemp("cache")), STARTS, NB_JOBS)


@pytest.fixture(scope="module")
def models(ctx, tmp_path_factory) -> list[compare.Model]:
    folder = tmp_path_factory.mktemp("models")
    settings = train.TrainSettings(
        out=str(folder / "ppo_lublin.pt"), trace="lublin", max_steps=200, minutes=0,
        validate_every=1, train_jobs=NB_JOBS, validation_starts=(200,), traces=ctx.traces,
        train_range=(400, 500), validation_range=(200, 400),
        agent_json={"params": {"rollout_steps": 64, "minibatch": 32, "epochs": 1}},
        log_dir=str(folder / "log"))
    train.train(settings, echo=lambda *_: None)
    return compare.discover_models(folder)


def by_hand(ctx: compare.Context, trace: str, backfill: str, decision: str, policy: str
            ) -> protocol.Score:
    """What the former heuristic_score computed, written out: the engine on each sequence."""
    platform = Platform.homogeneous(protocol.load_trace(trace, ctx.traces).nb_res)
    config = protocol.sim_config(backfill, decision)
    scores = [protocol.score_result(Simulation(platform, w, config).run(policy))
              for w in protocol.eval_sequences(trace, ctx.traces, STARTS, NB_JOBS)]
    return protocol.Score.mean(scores)


def test_processes_backend_gives_the_in_process_numbers(ctx, models, tmp_path):
    row_list = [r for r in compare.rows(("protocol",)) if r.trace == "lublin"]
    execution = evaluation.Execution("processes", 2, str(tmp_path / "eval"))
    table, _ = compare.build_table(row_list, ctx, models, execution)
    for row in row_list:
        for policy in protocol.HEURISTICS:
            for decision in protocol.DECISIONS:
                expected = by_hand(ctx, "lublin", row.backfill, decision, policy)
                column = compare.heuristic_column(policy, decision)
                assert table[row.name][column] == expected.bsld
                assert table[f"{row.name} [utilisation]"][column] == expected.utilisation
        (model,) = models
        expected = evaluation.model_score(compare.model_eval_run(ctx, model, row))
        assert table[row.name][model.column] == expected.bsld
    # one folder per distinct evaluation, each a finished run with its score
    folders = list((tmp_path / "eval" / "runs").iterdir())
    # the event-driven job_pick model is evaluated once for both backfilling rows
    assert len(folders) == 2 * (len(protocol.HEURISTICS) * 2 + 3) + 1
    assert all((f / "done.json").is_file() and (f / "score.json").is_file() for f in folders)


def test_hetero_pairs_are_evaluated_once_for_both_objectives(ctx, tmp_path):
    execution = evaluation.Execution("serial", 1, str(tmp_path / "eval"))
    table, _ = compare.build_table(compare.rows(("hetero",)), ctx, [], execution)
    folders = list((tmp_path / "eval" / "runs").iterdir())
    assert len(folders) == 36 + len(protocol.PREDICTED_PAIRS)
    bsld_row, energy_row = (r.name for r in compare.rows(("hetero",)))
    pair = "shortest-high_gflops"
    expected = compare.pair_score(ctx, pair)
    assert (table[bsld_row][pair], table[energy_row][pair]) == (expected.bsld, expected.energy_mj)


class Interrupted(Exception):
    """Stands for a Ctrl-C or a killed machine in the middle of an evaluation."""


def test_an_interrupted_evaluation_resumes_where_it_stopped(ctx, tmp_path, monkeypatch):
    row_list = compare.rows(("protocol",))[:1]
    execution = evaluation.Execution("serial", 1, str(tmp_path / "eval"))
    reference, _ = compare.build_table(row_list, ctx, [], evaluation.Execution("serial", 1))
    calls: list[str] = []
    armed = True
    real = evaluation.evaluate

    def stopping(run):
        calls.append(run.policy)
        if len(calls) == 4 and armed:
            raise Interrupted("stopped midway")
        return real(run)

    monkeypatch.setattr(evaluation, "evaluate", stopping)
    with pytest.raises(Interrupted):
        compare.build_table(row_list, ctx, [], execution)
    runs_dir = tmp_path / "eval" / "runs"
    finished = {p.name: p.stat().st_mtime_ns for p in runs_dir.iterdir()}
    assert len(finished) == 3  # the interrupted run left no folder
    calls.clear()
    armed = False
    table, _ = compare.build_table(row_list, ctx, [], execution)
    assert len(calls) == len(protocol.HEURISTICS) * 2 + 3 - 3  # only the unfinished ones ran
    assert all((runs_dir / n).stat().st_mtime_ns == t for n, t in finished.items())
    assert table == reference


def test_a_resume_folder_with_other_settings_is_refused(ctx, tmp_path):
    execution = evaluation.Execution("serial", 1, str(tmp_path / "eval"))
    run = compare.heuristic_run(ctx, "lublin", "none", "event", "sjf")
    evaluation.run_evaluations([run], execution)
    done = tmp_path / "eval" / "runs" / run.name / "done.json"
    marker = json.loads(done.read_text())
    done.write_text(json.dumps(dict(marker, digest="0" * 64)))
    with pytest.raises(ConfigError, match="records other settings"):
        evaluation.run_evaluations([run], execution)


def test_command_line_backend_and_max_parallel_errors(ctx, tmp_path, capsys):
    base = ["--evaluate-only", "--groups", "protocol", "--traces", ctx.traces, "--cache",
            ctx.cache, "--models", str(tmp_path), "--starts", "0", "--nb-jobs", "16", "--rst", ""]
    assert compare.main(base + ["--max-parallel", "0"]) == 2
    assert "--max-parallel: expected a number >= 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        compare.main(base + ["--backend", "threads"])


def test_ray_backend_from_another_folder_gives_the_serial_table(ctx, tmp_path):
    """Ray's workers unpickle the evaluations by module: they must find ``benchmarks`` even
    when the command runs outside the repository (it failed there before PYTHONPATH was set)."""
    pytest.importorskip("ray")
    import subprocess

    def table(backend: str) -> dict:
        out = tmp_path / f"{backend}.json"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--evaluate-only",
                        "--groups", "protocol", "--traces", ctx.traces, "--cache", ctx.cache,
                        "--models", str(tmp_path / "none"), "--starts", "0", "--nb-jobs", "16",
                        "--rst", "", "--json", str(out), "--backend", backend,
                        "--max-parallel", "2"], cwd=tmp_path, check=True, capture_output=True)
        return json.loads(out.read_text())

    assert table("ray") == table("serial")
