"""The documented training commands of benchmarks/gpu_train.py (``GPU_MODEL_COMMANDS``) cover
every model shipped under models/gpu/, with the setting each file records."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.gpu_learners import view_of
from benchmarks.gpu_train import GPU_MODEL_COMMANDS, ROLES, parse, view

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((ROOT / "models" / "gpu").glob("*.pt"))


def test_every_documented_command_parses_to_a_known_role():
    for name, argv in GPU_MODEL_COMMANDS.items():
        a = parse([*argv, "--out", name])
        assert a.role in ROLES, name
        assert name.endswith(f"_seed{a.seed}.pt"), name  # files are named by their seed


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_a_shipped_model_has_the_documented_command_of_its_setting(path):
    """``compare_gpu.py`` without ``--evaluate-only`` retrains a missing model from its
    documented command: that command must be the setting the shipped file was trained in."""
    pytest.importorskip("torch")
    from hdrm.agents.checkpoint import read_checkpoint

    assert path.name in GPU_MODEL_COMMANDS, f"{path.name}: no entry in GPU_MODEL_COMMANDS"
    meta = read_checkpoint(path)["options"]
    setting, params = meta["setting"], meta["agent"].get("params", {})
    a = parse([*GPU_MODEL_COMMANDS[path.name], "--out", path.name])
    assert (a.workload, a.role, a.seed, a.window) == (
        setting["workload"], setting["role"], setting["seed"], setting["window"])
    assert a.imitate == setting.get("imitate", "")
    assert view(a) == view_of(setting)
    if a.role == "learned_order":
        assert a.freeze_place == params["freeze_place"]
    if a.role == "learned_place":
        assert a.freeze_order == params["freeze_order"]
    trained = meta["training"]
    assert trained["episodes"] <= a.episodes  # the documented budget bounds the shipped run
    if a.episodes < 10**9:
        assert trained["episodes"] == a.episodes, "the episode budget is the one it ran"


def _snapshot(path: Path, options: dict) -> Path:
    from hdrm.agents.checkpoint import save_snapshot

    state = {"model_state_dict": {}, "optimizer_state_dict": {}, "agent_class": "x.Agent",
             "agent_lineage": ["x.Agent"]}
    return save_snapshot(state, path, options)


def test_a_checkpoint_without_options_is_refused_by_the_reader_and_left_as_it_is(tmp_path):
    """finished_model reads checkpoint["options"]: read_checkpoint guarantees the key (a file
    without it is one AgentLoadError naming the file), so no KeyError reaches the command."""
    torch = pytest.importorskip("torch")
    from benchmarks.gpu_train import finished_model
    from hdrm.agents.checkpoint import read_checkpoint
    from hdrm.errors import AgentLoadError

    path = tmp_path / "m.pt"
    torch.save({"model_state_dict": {}, "optimizer_state_dict": {}, "version": "1",
                "agent_class": "x.Agent"}, path)
    with pytest.raises(AgentLoadError, match=f"checkpoint {path}: not an hdrm checkpoint, "
                                             "missing options$"):
        read_checkpoint(path)
    assert finished_model(path)  # not a checkpoint: counted as ended, never retrained over


@pytest.mark.parametrize("training, finished", [
    ({"final": False}, False), ({"final": True}, True), ({"finished": False}, False), ({}, True),
    ("yes", True), ([1], True),
])
def test_finished_model_reads_the_training_block(training, finished, tmp_path):
    pytest.importorskip("torch")
    from benchmarks.gpu_train import finished_model

    assert finished_model(_snapshot(tmp_path / "m.pt", {"training": training})) is finished
