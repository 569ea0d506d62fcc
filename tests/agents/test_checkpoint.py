"""Checkpoints: atomic save, round trip, and clear errors for missing, corrupt or mismatched files."""

from __future__ import annotations

import os
import re
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


# ------------------------------------------------------------------ checksums and agent classes

ROOT = Path(__file__).resolve().parents[2]


def _flip_bit_in_largest_tensor(path: Path, offset: int = 37) -> None:
    """Flip one bit inside the stored bytes of the checkpoint's largest tensor (not its zip
    structure, so that torch still reads the file)."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        info = max((i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
        assert info.compress_type == zipfile.ZIP_STORED
    raw = bytearray(path.read_bytes())
    name_len = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little")
    extra_len = int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    raw[start + offset] ^= 0x10
    path.write_bytes(bytes(raw))


def test_a_flipped_bit_in_the_weights_is_refused(tmp_path, bandit, driver):
    agent = driver.make(ReinforceAgent, bandit, hidden=16)
    path = save_checkpoint(agent, tmp_path / "m.pt", {})
    _flip_bit_in_largest_tensor(path)
    loaded = torch.load(path, weights_only=True)  # torch itself reads the damaged file silently
    assert any(not torch.equal(v, agent.state_dict()[k]) for k, v in loaded["model_state_dict"].items())
    with pytest.raises(AgentLoadError, match=rf"^checkpoint {path}: content does not match its "
                                             r"sha256 checksum \(stored [0-9a-f]{12}\.\.\., content "
                                             r"gives [0-9a-f]{12}\.\.\.\): the file is corrupt"):
        load_checkpoint(driver.make(ReinforceAgent, bandit, hidden=16), path)


def test_every_flipped_bit_is_refused_or_unreadable(tmp_path, bandit, driver):
    """Whatever byte a bit flips in, the file never loads as a different model."""
    agent = driver.make(ReinforceAgent, bandit, hidden=4)
    path = save_checkpoint(agent, tmp_path / "m.pt", {})
    clean = path.read_bytes()
    rng = np.random.default_rng(5)
    for position in rng.choice(len(clean), size=60, replace=False):
        damaged = bytearray(clean)
        damaged[position] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(damaged))
        fresh = driver.make(ReinforceAgent, bandit, hidden=4, seed=9)
        try:
            load_checkpoint(fresh, path)
        except AgentLoadError:
            continue
        for name, tensor in agent.state_dict().items():  # loaded: then it is the very same model
            assert torch.equal(fresh.state_dict()[name], tensor), f"byte {position} changed {name}"


def test_a_checkpoint_of_another_agent_class_is_refused_in_one_line(tmp_path, bandit, driver):
    reinforce = save_checkpoint(driver.make(ReinforceAgent, bandit), tmp_path / "r.pt", {})
    ppo = driver.make(PPOAgent, bandit)
    with pytest.raises(AgentLoadError) as caught:
        load_checkpoint(ppo, reinforce)
    assert str(caught.value) == (
        f"checkpoint {reinforce}: saved by agent class hdrm.agents.reinforce.ReinforceAgent, "
        "expected hdrm.agents.ppo.PPOAgent (or a class it derives from); give a checkpoint of this "
        "agent, or --allow-other-class to load matching weights anyway")


def test_other_class_weights_load_only_when_allowed_and_without_the_optimizer(tmp_path, bandit,
                                                                               driver):
    from hdrm.agents.a2c import A2CAgent

    a2c = driver.make(A2CAgent, bandit, seed=1)
    driver.run(a2c, bandit, 3)
    path = save_checkpoint(a2c, tmp_path / "a2c.pt", {})
    ppo = driver.make(PPOAgent, bandit, seed=2)
    with pytest.raises(AgentLoadError, match="saved by agent class hdrm.agents.a2c.A2CAgent"):
        load_checkpoint(ppo, path)
    checkpoint = load_checkpoint(ppo, path, allow_other_class=True)
    assert checkpoint["optimizer_loaded"] is False and ppo.optimizer_state_dict()["state"] == {}
    for name, tensor in a2c.state_dict().items():
        assert torch.equal(ppo.state_dict()[name], tensor)


def test_a_subclass_and_its_base_load_each_others_checkpoints(tmp_path, bandit, driver):
    class Annealed(PPOAgent):
        pass

    base = save_checkpoint(driver.make(PPOAgent, bandit), tmp_path / "base.pt", {})
    derived = save_checkpoint(driver.make(Annealed, bandit), tmp_path / "derived.pt", {})
    load_checkpoint(driver.make(Annealed, bandit), base)
    load_checkpoint(driver.make(PPOAgent, bandit), derived)


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "models").glob("*.pt")))
def test_shipped_models_read_checked_or_from_before_checksums(name):
    """Every shipped model reads: a format-2 file is verified against its checksum; one saved
    before checksums existed (format 1) reads unverified."""
    from hdrm.agents.checkpoint import read_checkpoint

    checkpoint = read_checkpoint(ROOT / "models" / name)
    if checkpoint.get("format") == 2:
        assert checkpoint["checked"] is True
    else:
        assert checkpoint["checked"] is False and "sha256" not in checkpoint


def test_new_checkpoints_are_checked_and_record_the_lineage(tmp_path, bandit, driver):
    from hdrm.agents.checkpoint import read_checkpoint

    path = save_checkpoint(driver.make(PPOAgent, bandit), tmp_path / "m.pt", {}, {"episode": 4})
    checkpoint = read_checkpoint(path)
    assert checkpoint["checked"] is True and checkpoint["format"] == 2
    assert checkpoint["progress"] == {"episode": 4}
    assert checkpoint["agent_lineage"][:3] == ["hdrm.agents.ppo.PPOAgent",
                                               "hdrm.agents.learning.ValueLearningAgent",
                                               "hdrm.agents.learning.PolicyLearningAgent"]


def test_resume_state_restores_the_generators_and_counters(tmp_path, bandit, driver):
    from hdrm.agents.checkpoint import read_checkpoint
    from hdrm.agents.resume import agent_resume_state, restore_agent_resume_state

    params = {"rollout_steps": 8, "minibatch": 4}
    agent = driver.make(PPOAgent, bandit, seed=1, params=params)
    driver.run(agent, bandit, 3)
    assert agent.updates > 0
    path = save_checkpoint(agent, tmp_path / "m.pt", {}, {"agent": agent_resume_state(agent)})
    agent.train_mode(False)
    agent.greedy = False  # sample: the draws show the generator's state
    expected = [agent.decide(np.eye(3, dtype=np.float32)[0], np.array([1, 1, 1, 0])) for _ in range(20)]
    fresh = driver.make(PPOAgent, bandit, seed=7, params=params)
    load_checkpoint(fresh, path)
    restore_agent_resume_state(fresh, read_checkpoint(path)["progress"]["agent"])
    assert fresh.updates == agent.updates
    fresh.train_mode(False)
    fresh.greedy = False
    got = [fresh.decide(np.eye(3, dtype=np.float32)[0], np.array([1, 1, 1, 0])) for _ in range(20)]
    assert got == expected


def test_temporary_files_name_the_writing_process(tmp_path, bandit, driver, monkeypatch):
    agent = driver.make(ReinforceAgent, bandit)
    seen = []

    def broken_save(obj, handle):
        seen.extend(name for name in os.listdir(tmp_path) if name != "m.pt")
        raise KeyboardInterrupt  # a Ctrl-C in the middle of the write

    monkeypatch.setattr(torch, "save", broken_save)
    target = tmp_path / "m.pt"
    target.write_bytes(b"previous model")
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(agent, target, {})
    assert seen and seen[0].startswith(f".m.pt.{os.getpid()}.") and seen[0].endswith(".tmp")
    assert sorted(os.listdir(tmp_path)) == ["m.pt"] and target.read_bytes() == b"previous model"


def test_a_new_checkpoint_that_lost_its_checksum_is_refused(tmp_path, bandit, driver):
    path = save_checkpoint(driver.make(ReinforceAgent, bandit), tmp_path / "m.pt", {})
    checkpoint = torch.load(path, weights_only=True)
    del checkpoint["sha256"]
    torch.save(checkpoint, path)
    with pytest.raises(AgentLoadError, match=rf"^checkpoint {path}: format 2 but no sha256 checksum"):
        load_checkpoint(driver.make(ReinforceAgent, bandit), path)


@pytest.mark.parametrize("content, why", [
    (b"; Version: 2.2\n1 0 -1 100 4 -1 -1 4 200 -1 1 7 3 -1 1 -1 -1 -1\n",
     r"Unsupported operand 59"),
    ("payload", r"Unsupported global: GLOBAL numpy\.random\.\S+ was not an allowed global by "
                r"default"),
])
def test_a_refused_file_is_not_said_to_load_with_weights_only_false(tmp_path, bandit, driver,
                                                                    content, why):
    # torch's message said re-running with weights_only=False "will likely succeed" (of an SWF
    # trace too), over several lines with terminal escapes (\x1b[1m)
    agent = driver.make(ReinforceAgent, bandit)
    path = tmp_path / "m.pt"
    if content == "payload":
        torch.save({"model_state_dict": {}, "payload": np.random.default_rng(0)}, path)
    else:
        path.write_bytes(content)
    with pytest.raises(AgentLoadError) as info:
        load_checkpoint(agent, path)
    assert re.fullmatch(
        rf"checkpoint {re.escape(str(path))}: not a readable hdrm checkpoint \(torch's safe loader "
        rf"refused it: {why}; give a model written by hdeeprm-launch, hdrm loads only tensors and "
        r"plain data\)", str(info.value))
