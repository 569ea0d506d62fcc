"""``hdeeprm-launch agents/dqn.py ... --workers N``: DQN agents route to Ape-X, whose actors play
the launch's environments; the learner's checkpoint is the single-process DQN's and resumes with
``--inmodel``; bad Ape-X settings are one line. Ray tests use a local Ray started by the launch
and are skipped when Ray is not installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hdrm.launcher import main

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "agents" / "dqn.py"


def write_options(folder: Path, episodes: int = 6, apex: dict | None = None) -> Path:
    """examples/ppo's setting (policy pairs on hetero) with 20-job episodes and fast DQN
    options."""
    source = ROOT / "examples" / "ppo" / "options.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    for key in ("workload_file_path", "platform_file_path"):
        data[key] = str((source.parent / data[key]).resolve())
    data["nb_jobs"] = 20
    agent = data["pybatsim"]["agent"]
    agent["episodes"] = episodes
    agent["params"] = {"learning_starts": 32, "batch_size": 16, "buffer_size": 500,
                       "target_update": 20, "torch_threads": 1, "rollout_device": "cpu",
                       "update_device": "cpu",
                       "apex": {"actor_steps": 16, "weight_sync": 5, **(apex or {})}}
    path = folder / "options.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def launch(capsys, *argv) -> tuple[int, str]:
    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


def test_dqn_agents_route_to_apex(tmp_path):
    from hdrm.distributed.learners import route
    from hdrm.launch.experiment import build_experiment
    from hdrm.options import load_options

    agent = build_experiment(load_options(write_options(tmp_path)), AGENT).agent
    assert route(agent) == "hdrm.distributed.apex_workers:train_apex_workers"


def test_bad_apex_settings_are_one_line(tmp_path, capsys):
    pytest.importorskip("ray")
    options = write_options(tmp_path, apex={"actor": 2})
    status, err = launch(capsys, AGENT, options, "--outdir", tmp_path / "out", "--workers", 2,
                         "--quiet")
    assert status != 0
    assert "pybatsim.agent.params.apex: unknown setting 'actor'; did you mean 'actors'" in err
    assert len(err.strip().splitlines()) == 1


def test_a_launch_with_workers_trains_with_apex_and_resumes(tmp_path, capsys):
    pytest.importorskip("ray")
    options = write_options(tmp_path)
    out = tmp_path / "out"
    status, err = launch(capsys, AGENT, options, "--outdir", out, "--workers", 2, "--quiet")
    assert status == 0, err
    saved = torch.load(out / "model.pt", weights_only=True)
    steps, updates = (int(v) for v in saved["model_state_dict"]["counters"])
    assert steps >= 6 * 20 - 2 * 16 and updates > 0  # 6 episodes of about 20 decisions
    status, err = launch(capsys, AGENT, options, "--outdir", tmp_path / "more", "--workers", 2,
                         "--quiet", "--inmodel", out / "model.pt")
    assert status == 0, err
    more = torch.load(tmp_path / "more" / "model.pt", weights_only=True)["model_state_dict"]
    assert int(more["counters"][1]) > updates  # the learner went on from the checkpoint
