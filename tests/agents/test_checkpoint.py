"""Checkpoints: atomic save, round trip, and clear errors for missing, corrupt or mismatched files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
import torch
from gymnasium import spaces

from hdrm import __version__
from hdrm.agents.base import ClassicAgent
from hdrm.agents.checkpoint import CHECKPOINT_KEYS, load_checkpoint, plain, save_checkpoint
from hdrm.agents.ppo import PPOAgent
from hdrm.agents.reinforce import ReinforceAgent
from hdrm.errors import AgentLoadError

OPTIONS = MappingProxyType({"seed": 3, "pybatsim": {"agent": {"type": "ppo", "hidden": (8, 8)}}})


def greedy_actions(agent, env, n=40):
    agent.train_mode(False)
    obs, info = env.reset(seed=123)
    actions = []
    for _ in range(n):
        action = agent.decide(obs, info["action_mask"])
        actions.append(action)
        obs, _, done, _, info = env.step(action)
        if done:
            obs, info = env.reset()
    return actions


def test_round_trip_gives_the_same_decisions(tmp_path, window, driver):
    trained = driver.make(PPOAgent, window, seed=1, params={"rollout_steps": 16, "minibatch": 8})
    driver.run(trained, window, 6)
    path = save_checkpoint(trained, tmp_path / "models" / "ppo.pt", OPTIONS)
    assert sorted(os.listdir(tmp_path / "models")) == ["ppo.pt"]  # no temp file left

    fresh = driver.make(PPOAgent, window, seed=2, params={"rollout_steps": 16, "minibatch": 8})
    assert greedy_actions(fresh, window) != greedy_actions(trained, window)
    checkpoint = load_checkpoint(fresh, path)
    assert greedy_actions(fresh, window) == greedy_actions(trained, window)
    assert set(CHECKPOINT_KEYS) <= set(checkpoint)
    assert checkpoint["options"] == {"seed": 3, "pybatsim": {"agent": {"type": "ppo", "hidden": [8, 8]}}}
    assert checkpoint["version"] == __version__
    assert checkpoint["agent_class"] == "hdrm.agents.ppo.PPOAgent"
    saved_opt = trained.optimizer_state_dict()["state"]
    loaded_opt = fresh.optimizer_state_dict()["state"]
    assert torch.equal(saved_opt[0]["exp_avg"], loaded_opt[0]["exp_avg"])


def test_saving_replaces_atomically(tmp_path, bandit, driver):
    agent = driver.make(ReinforceAgent, bandit)
    path = tmp_path / "m.pt"
    path.write_bytes(b"old")
    save_checkpoint(agent, path, {})
    assert torch.load(path, weights_only=True)["options"] == {}
    assert os.listdir(tmp_path) == ["m.pt"]


def test_saved_file_gets_the_usual_permissions(tmp_path, bandit, driver):
    # written through a private temporary file, the checkpoint still ends up as open() makes files
    agent = driver.make(ReinforceAgent, bandit)
    old = os.umask(0o022)
    try:
        save_checkpoint(agent, tmp_path / "m.pt", {})
        (tmp_path / "plain").write_bytes(b"")
    finally:
        os.umask(old)
    assert (tmp_path / "m.pt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "plain").stat().st_mode & 0o777 == 0o644


def test_classic_agent_checkpoint_is_empty_but_valid(tmp_path, bandit):
    agent = ClassicAgent(
        {"run": "test", "policy": "arm_0"},
        bandit.observation_space,
        bandit.action_space,
        action_names=bandit.action_names,
    )
    path = save_checkpoint(agent, tmp_path / "c.pt", {"a": 1})
    assert load_checkpoint(agent, path)["model_state_dict"] == {}


def test_missing_and_corrupt_files(tmp_path, bandit, driver):
    agent = driver.make(ReinforceAgent, bandit)
    with pytest.raises(AgentLoadError, match=r"checkpoint .*absent\.pt: no such file; check --inmodel"):
        load_checkpoint(agent, tmp_path / "absent.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"this is not a zip file")
    with pytest.raises(AgentLoadError, match=rf"^checkpoint {bad}: not a readable hdrm checkpoint \("):
        load_checkpoint(agent, bad)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(
        AgentLoadError,
        match=r"other\.pt: not an hdrm checkpoint, missing model_state_dict, optimizer_state_dict",
    ):
        load_checkpoint(agent, other)
    tensor_only = tmp_path / "tensor.pt"
    torch.save(torch.zeros(2), tensor_only)
    with pytest.raises(AgentLoadError, match=r"tensor\.pt: not an hdrm checkpoint \(holds a Tensor\)"):
        load_checkpoint(agent, tensor_only)


def test_unsafe_pickles_are_refused(tmp_path, bandit, driver):
    agent = driver.make(ReinforceAgent, bandit)
    path = tmp_path / "evil.pt"
    torch.save({"model_state_dict": {}, "payload": np.random.default_rng(0)}, path)
    with pytest.raises(AgentLoadError, match=r"evil\.pt: not a readable hdrm checkpoint"):
        load_checkpoint(agent, path)


def test_mismatched_architecture_names_the_parameter(tmp_path, bandit, window, driver):
    small = driver.make(ReinforceAgent, bandit, hidden=16)
    path = save_checkpoint(small, tmp_path / "small.pt", {})
    big = driver.make(ReinforceAgent, bandit, hidden=32)
    with pytest.raises(
        AgentLoadError,
        match=r"small\.pt: parameter 'actor\.0\.weight' has shape \[16, 3\] "
        r"but this agent's has \[32, 3\] "
        r"\(saved by hdrm\.agents\.reinforce\.ReinforceAgent\); check hidden",
    ):
        load_checkpoint(big, path)
    kernel = driver.make(ReinforceAgent, window)
    with pytest.raises(AgentLoadError, match=r"small\.pt: parameter 'void_logit' is missing"):
        load_checkpoint(kernel, path)
    with_void = save_checkpoint(kernel, tmp_path / "void.pt", {})
    no_void = ReinforceAgent({}, window.observation_space, spaces.Discrete(window.k), seed=0)
    with pytest.raises(AgentLoadError, match=r"void\.pt: unexpected parameter 'void_logit'"):
        load_checkpoint(no_void, with_void)


def test_plain_converts_options_to_loadable_data(tmp_path):
    @dataclass(frozen=True)
    class Opt:
        path: Path
        n: np.int64

    value = plain(MappingProxyType({"a": (1, {"b": None}), "o": Opt(Path("/x/y"), np.int64(3))}))
    assert value == {"a": [1, {"b": None}], "o": {"path": "/x/y", "n": 3}}
    assert type(value["o"]["n"]) is int
    torch.save(value, tmp_path / "v.pt")
    assert torch.load(tmp_path / "v.pt", weights_only=True) == value
