"""benchmarks/model_files.py: the model files both comparisons read, and their notes on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import compare_models, gpu_learners
from benchmarks.model_files import ModelFile, read_models

pytest.importorskip("torch")

from hdrm.agents.checkpoint import save_snapshot  # noqa: E402

CPU_SETTING = {"trace": "lublin", "backfill": "none", "decision": "event", "mode": "job_pick"}
#: read by both: the GPU one wants the workload, the CPU one names the column by the decision.
GPU_SETTING = {"workload": "openb", "role": "mappo", "load_factor": 1.0, "window_tasks": 10,
               "decision": "event", "mode": "job_pick"}


def _save(path: Path, options: dict) -> None:
    state = {"model_state_dict": {}, "optimizer_state_dict": {}, "agent_class": "test.Agent",
             "agent_lineage": []}
    save_snapshot(state, path, options)


@pytest.fixture()
def models(tmp_path: Path) -> Path:
    """a: a CPU model, b: no metadata, c: an unknown learner, d: a GPU model (learner ppo)."""
    _save(tmp_path / "a.pt", {"learner": "ppo", "label": "PPO", "setting": CPU_SETTING})
    _save(tmp_path / "b.pt", {"lr": 0.1})
    _save(tmp_path / "c.pt", {"learner": "nope", "setting": GPU_SETTING})
    _save(tmp_path / "d.pt", {"learner": "ppo", "label": "PPO", "setting": GPU_SETTING})
    return tmp_path


def test_the_cpu_comparison_reads_its_models_and_notes_the_others(models, capsys):
    found = compare_models.discover_models(models)
    assert [Path(m.path).name for m in found] == ["a.pt", "d.pt"]
    assert all(isinstance(m, ModelFile) for m in found)
    assert found[0].setting == CPU_SETTING and not found[0].has_rule
    assert found[0].column.startswith("PPO (event)")
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"note: {models / 'b.pt'} has no benchmark metadata; skipped"
    assert err[1].startswith(f"note: skipped {models / 'c.pt'}: {models / 'c.pt'}: learner")
    assert "'nope'" in err[1] and len(err) == 2


def test_the_gpu_comparison_reads_only_models_with_a_workload(models, capsys):
    found = gpu_learners.discover_models(models)
    assert [(Path(m.path).name, m.column, m.workload) for m in found] == [
        ("d.pt", "MAPPO", "openb")]
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"note: {models / 'a.pt'} has no GPU comparison metadata; skipped"
    assert err[1] == f"note: {models / 'b.pt'} has no GPU comparison metadata; skipped"
    assert err[2].startswith(f"note: skipped {models / 'c.pt'}:") and len(err) == 3


def test_an_absent_folder_holds_no_model(tmp_path):
    assert read_models(tmp_path / "none", "benchmark", lambda meta: True, lambda n, w: None) == []


def test_an_unfinished_model_is_left_out_with_a_note(tmp_path, capsys):
    # a training running (its best-so-far model) or stopped (an interrupted.pt kept aside) was
    # evaluated and its seed averaged into its setting's column
    done = {"learner": "ppo", "label": "PPO", "setting": CPU_SETTING, "training": {"final": True}}
    _save(tmp_path / "a_seed0.pt", done)
    _save(tmp_path / "a_seed1.pt", dict(done, training={"final": False}))
    _save(tmp_path / "a_seed0.interrupted.pt", dict(done, training={"final": False}))
    found = compare_models.discover_models(tmp_path)
    assert [Path(m.path).name for m in found] == ["a_seed0.pt"]
    err = capsys.readouterr().err.splitlines()
    assert err == [f"note: skipped {tmp_path / name}: an unfinished model (its training is "
                   "running, or was stopped: rerun its command; train.py resumes, "
                   "gpu_train.py starts again)"
                   for name in ("a_seed0.interrupted.pt", "a_seed1.pt")]
