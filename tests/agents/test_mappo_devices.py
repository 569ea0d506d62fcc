"""MAPPO's device settings (issue 28): rollout and update devices, weight copies, bf16, checkpoints.

On a machine without a GPU the two-network path is exercised by forcing a separate rollout copy on
the CPU: it must give the very same training as one shared network. GPU tests skip without CUDA.
"""

from __future__ import annotations

import math

import pytest
import torch

from hdrm.agents import devices
from hdrm.agents.checkpoint import load_checkpoint, save_checkpoint
from hdrm.agents.mappo import MAPPOAgent
from hdrm.agents.mappo_buffer import minibatches
from hdrm.agents.mappo_rollout import make_agent, play_episode
from hdrm.agents.mappo_update import minibatch_loss
from hdrm.errors import ConfigError
from mappo_toy import ToyGpuEnv

GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One intra-op thread: these networks are tiny, and two threads on a busy 2-core machine made
    a training 25x slower in CPU time. Restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def trained(episodes: int = 3, **params) -> tuple[MAPPOAgent, list[float], list]:
    """A small MAPPO agent trained on the seeded toy: the agent, its returns, the env's decisions."""
    env = ToyGpuEnv(seed=4)
    config = {"lr": 1e-3, "gamma": 0.9, "params": {"dim": 16, "heads": 2, "rollout_steps": 12,
                                                   "minibatch": 6, "epochs": 2, **params}}
    agent = make_agent(env, config, seed=8)
    returns = [play_episode(env, agent, seed=9 if e == 0 else None)["return"]
               for e in range(episodes)]
    return agent, returns, env.decisions


def same_state(a: MAPPOAgent, b: MAPPOAgent) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the default updates on the GPU here")
def test_update_device_cpu_equals_the_default_bit_for_bit():
    default, returns, decisions = trained()
    cpu, cpu_returns, cpu_decisions = trained(update_device="cpu", rollout_device="cpu")
    assert default.updates >= 3 and default.devices == cpu.devices
    assert (returns, decisions) == (cpu_returns, cpu_decisions)
    assert same_state(default, cpu)


def test_a_separate_rollout_copy_trains_exactly_as_one_network(monkeypatch):
    """Decisions on a copy that gets the weights after each update (what 'auto' does with a GPU)
    give the same actions and weights as one network (fails if a copy is missed)."""
    shared, returns, decisions = trained(update_device="cpu", rollout_device="cpu")
    monkeypatch.setattr(devices, "separate_networks", lambda pair: True)
    split, split_returns, split_decisions = trained(update_device="cpu", rollout_device="cpu")
    assert split.rollout_network is not split.network
    assert not any(p.requires_grad for p in split.rollout_network.parameters())
    assert (returns, decisions) == (split_returns, split_decisions) and split.updates >= 3
    assert same_state(shared, split)
    rollout = split.rollout_network.state_dict()
    assert all(torch.equal(v, rollout[k]) for k, v in split.network.state_dict().items())


def test_loading_weights_refreshes_the_rollout_copy(monkeypatch):
    source, _, _ = trained()
    monkeypatch.setattr(devices, "separate_networks", lambda pair: True)
    fresh, _, _ = trained(episodes=0)
    fresh.load_state_dict(source.state_dict())
    copy = fresh.rollout_network.state_dict()
    assert all(torch.equal(v.cpu(), copy[k].cpu()) for k, v in source.network.state_dict().items())


def test_bf16_loss_is_finite_and_close_to_fp32_on_a_fixed_batch():
    agent, _, _ = trained(episodes=2, rollout_steps=10_000, update_device="cpu")
    batch = agent.rollout.finish(0.0, agent.gamma, agent.settings.gae_lambda)
    mb = next(minibatches(batch, 64, torch.Generator().manual_seed(0)))
    loss32, parts32 = minibatch_loss(agent.network, mb, agent.settings)
    seen = []
    hook = agent.network.critic.register_forward_hook(
        lambda m, i, out: seen.append(out.dtype))
    bf16 = type(agent.settings)(**{**vars(agent.settings), "precision": "bf16"})
    loss16, parts16 = minibatch_loss(agent.network, mb, bf16)
    hook.remove()
    assert seen == [torch.bfloat16]  # autocast did run the critic in bf16
    assert loss16.dtype == torch.float32 and math.isfinite(loss16.item())
    assert loss16.item() != loss32.item()
    assert abs(loss16.item() - loss32.item()) <= 0.03 * abs(loss32.item()) + 0.01
    for key in ("policy_loss", "value_loss", "entropy"):
        assert abs(parts16[key] - parts32[key]) <= 0.03 * abs(parts32[key]) + 0.01, key


def test_training_with_bf16_updates_stays_finite():
    agent, returns, _ = trained(precision="bf16", update_device="cpu")
    assert agent.updates >= 3 and all(math.isfinite(r) for r in returns)
    assert all(torch.isfinite(v).all() for v in agent.state_dict().values())
    assert all(p.dtype == torch.float32 for p in agent.network.parameters())


@pytest.mark.parametrize("key, value", [("update_device", "gpu"), ("rollout_device", "cuda:x")])
def test_a_misspelt_device_is_one_line(key, value):
    with pytest.raises(ConfigError, match=rf"^pybatsim\.agent\.params\.{key}: invalid device "
                                          rf"{value!r}; choose one of: auto, cpu, cuda, cuda:N"):
        trained(episodes=0, **{key: value})


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_asking_for_a_gpu_without_one_is_one_line():
    with pytest.raises(ConfigError, match=r"^pybatsim\.agent\.params\.update_device: 'cuda' asked "
                                          r"for but no CUDA GPU is visible"):
        trained(episodes=0, update_device="cuda")


def test_checkpoints_hold_cpu_tensors_and_load_on_the_cpu(tmp_path):
    agent, _, _ = trained()
    path = save_checkpoint(agent, tmp_path / "mappo.pt", {"agent": "mappo"})
    raw = torch.load(path, map_location="cpu", weights_only=False)
    tensors = [v for v in raw["model_state_dict"].values() if isinstance(v, torch.Tensor)]
    assert tensors and all(t.device.type == "cpu" for t in tensors)
    other, _, _ = trained(episodes=0, update_device="cpu", rollout_device="cpu")
    load_checkpoint(other, path)
    assert same_state(agent, other)


@GPU
def test_gpu_updates_stay_close_to_cpu_updates():
    cpu, _, _ = trained(episodes=2, update_device="cpu")
    gpu, _, _ = trained(episodes=2, update_device="cuda")
    assert gpu.devices.update.type == "cuda" and gpu.devices.rollout.type == "cpu"
    assert next(gpu.network.parameters()).is_cuda
    assert not next(gpu.rollout_network.parameters()).is_cuda
    assert gpu.updates == cpu.updates >= 1
    for name, value in cpu.state_dict().items():
        torch.testing.assert_close(gpu.state_dict()[name], value, rtol=1e-3, atol=1e-3)


@GPU
def test_a_gpu_checkpoint_loads_on_a_cpu_learner(tmp_path):
    gpu, _, _ = trained(episodes=2, update_device="cuda", rollout_device="cuda")
    path = save_checkpoint(gpu, tmp_path / "g.pt", {"agent": "mappo"})
    cpu, _, _ = trained(episodes=0, update_device="cpu", rollout_device="cpu")
    load_checkpoint(cpu, path)
    assert same_state(gpu, cpu)
