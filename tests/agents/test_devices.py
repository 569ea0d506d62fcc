"""Rollout and update devices of the built-in learners (hdrm.agents.devices), tested on the CPU.

The GPU-only tests at the end skip without CUDA. The others run every device code path on the CPU:
the settings, the resolution of ``auto`` (with a simulated GPU), the one-line errors, and the
learners with a separate rollout network (forced on the CPU) against one shared network.
"""

from __future__ import annotations

import pytest
import torch

from hdrm.agents import devices
from hdrm.agents.a2c import A2CAgent
from hdrm.agents.checkpoint import load_checkpoint, save_checkpoint
from hdrm.agents.dqn import DQNAgent
from hdrm.agents.ppo import PPOAgent
from hdrm.agents.reinforce import ReinforceAgent
from hdrm.errors import ConfigError

GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

#: Per learner: settings small enough for several updates in a few short episodes.
PARAMS = {
    ReinforceAgent: {},
    A2CAgent: {},
    PPOAgent: {"rollout_steps": 16, "minibatch": 8, "epochs": 2},
    DQNAgent: {"learning_starts": 8, "batch_size": 8, "buffer_size": 64, "target_update": 4},
}
LEARNERS = list(PARAMS)


def build(driver, cls, env, seed=3, **params):
    return driver.make(cls, env, seed=seed, lr=0.01, params={**PARAMS[cls], **params})


def train(driver, agent, env, episodes=6):
    driver.run(agent, env, episodes, seed=11)
    return agent


def same_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
def test_update_device_cpu_equals_the_default_bit_for_bit(driver, window, cls):
    if torch.cuda.is_available():
        pytest.skip("the default updates on the GPU here (test_gpu_updates_stay_close_to_cpu_updates)")
    default = train(driver, build(driver, cls, window), window)
    cpu = train(driver, build(driver, cls, window, update_device="cpu", rollout_device="cpu"), window)
    assert default.devices == cpu.devices
    assert same_weights(default, cpu)
    # the run learned something: the weights moved away from the initial ones
    assert not same_weights(default, build(driver, cls, window))


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
def test_a_separate_rollout_network_gets_the_weights_after_each_update(
    driver, window, cls, monkeypatch
):
    cpu = {"rollout_device": "cpu", "update_device": "cpu"}  # bit for bit on any machine
    shared = train(driver, build(driver, cls, window, **cpu), window)
    monkeypatch.setattr(devices, "separate_networks", lambda pair: True)
    separate = build(driver, cls, window, **cpu)
    assert separate.rollout_network is not separate.network
    assert not any(p.requires_grad for p in separate.rollout_network.parameters())
    train(driver, separate, window)
    # same decisions (hence same training) as with one network, and the copy is up to date
    assert same_weights(shared, separate)
    net, copy = separate.network.state_dict(), separate.rollout_network.state_dict()
    assert all(torch.equal(net[k], copy[k]) for k in net)


def test_loading_a_state_refreshes_the_rollout_network(driver, window, monkeypatch):
    trained = train(driver, build(driver, PPOAgent, window), window)
    monkeypatch.setattr(devices, "separate_networks", lambda pair: True)
    fresh = build(driver, PPOAgent, window, seed=9)
    fresh.load_state_dict(trained.state_dict())
    copy = fresh.rollout_network.state_dict()
    assert all(torch.equal(v.cpu(), copy[k].cpu()) for k, v in trained.network.state_dict().items())


@pytest.mark.parametrize("value", ["gpu", "cuda:", "CUDA", "cuda:x", "", 0, None])
def test_a_misspelt_device_names_the_setting_the_value_and_the_choices(driver, bandit, value):
    with pytest.raises(ConfigError) as err:
        driver.make(PPOAgent, bandit, params={"update_device": value})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("pybatsim.agent.params.update_device: invalid device")
    assert repr(value) in message and "auto, cpu, cuda, cuda:N" in message


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("key,value", [("update_device", "cuda"), ("rollout_device", "cuda:1")])
def test_asking_for_a_gpu_without_one_is_one_line(driver, window, cls, key, value):
    with pytest.raises(ConfigError) as err:
        build(driver, cls, window, **{key: value})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"pybatsim.agent.params.{key}: {value!r} asked for but no CUDA GPU")
    assert "available: cpu;" in message


def fake_gpus(monkeypatch, count: int) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


def test_auto_puts_updates_on_the_first_gpu_and_rollouts_on_the_cpu(monkeypatch):
    fake_gpus(monkeypatch, 2)
    pair = devices.resolve_devices("auto", "auto", "p")
    assert pair == (torch.device("cpu"), torch.device("cuda:0"))
    assert not pair.shared and pair.describe() == "rollout cpu, update cuda:0"
    assert devices.resolve_device("cuda", "rollout", "p") == torch.device("cuda:0")
    assert devices.resolve_device("cuda:1", "update", "p") == torch.device("cuda:1")
    with pytest.raises(ConfigError, match=r"^p: 'cuda:2' asked for but 2 GPU\(s\) .*available: "
                                          r"cpu, cuda:0, cuda:1;"):
        devices.resolve_device("cuda:2", "update", "p")
    fake_gpus(monkeypatch, 0)
    assert devices.resolve_devices("auto", "auto", "p") == (torch.device("cpu"),) * 2
    assert devices.resolve_devices("auto", "auto", "p").shared


def test_copy_weights_copies_parameters_and_buffers():
    source = torch.nn.BatchNorm1d(3)
    with torch.no_grad():
        source.weight.fill_(2.0)
        source.running_mean.fill_(5.0)
    target = torch.nn.BatchNorm1d(3)
    devices.copy_weights(source, target)
    assert torch.equal(target.weight, source.weight)
    assert torch.equal(target.running_mean, source.running_mean)
    assert target.weight.data_ptr() != source.weight.data_ptr()


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
def test_checkpoints_hold_cpu_tensors_and_load_on_the_cpu(driver, window, cls, tmp_path):
    agent = train(driver, build(driver, cls, window), window)
    path = save_checkpoint(agent, tmp_path / "m.pt", {})
    raw = torch.load(path, weights_only=True)
    tensors = [v for v in raw["model_state_dict"].values() if isinstance(v, torch.Tensor)]
    tensors += [v for s in raw["optimizer_state_dict"]["state"].values() for v in s.values()
                if isinstance(v, torch.Tensor)]
    assert tensors and all(t.device.type == "cpu" for t in tensors)
    fresh = build(driver, cls, window, seed=5, update_device="cpu", rollout_device="cpu")
    load_checkpoint(fresh, path)
    assert same_weights(fresh, agent)


def test_to_cpu_keeps_structure_and_state_dict_metadata():
    value = {"a": [torch.ones(2), (torch.zeros(1), 3)], "b": "x"}
    out = devices.to_cpu(value)
    assert isinstance(out["a"], list) and isinstance(out["a"][1], tuple) and out["b"] == "x"
    assert out["a"][0] is value["a"][0]  # already on the CPU: not copied
    state = torch.nn.LayerNorm(3).state_dict()
    kept = devices.to_cpu(state)
    assert type(kept) is type(state) and kept._metadata == state._metadata


# ----------------------------------------------------------------------------- GPU only


@GPU
@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
def test_gpu_updates_stay_close_to_cpu_updates(driver, window, cls):
    cpu = train(driver, build(driver, cls, window, update_device="cpu"), window, episodes=2)
    gpu = train(driver, build(driver, cls, window, update_device="cuda"), window, episodes=2)
    assert gpu.devices.update.type == "cuda" and gpu.devices.rollout.type == "cpu"
    assert next(gpu.network.parameters()).is_cuda
    assert not next(gpu.rollout_network.parameters()).is_cuda
    for key, value in cpu.state_dict().items():
        if value.is_floating_point():
            assert torch.allclose(value, gpu.state_dict()[key], atol=1e-3), key


@GPU
@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
def test_a_gpu_checkpoint_loads_on_a_cpu_learner(driver, window, cls, tmp_path):
    gpu = train(driver, build(driver, cls, window, update_device="cuda", rollout_device="cuda"),
                window, episodes=2)
    path = save_checkpoint(gpu, tmp_path / "gpu.pt", {})
    cpu = build(driver, cls, window, seed=8, update_device="cpu", rollout_device="cpu")
    load_checkpoint(cpu, path)
    assert same_weights(cpu, gpu)


def test_train_py_device_flags_reach_the_learner_and_bad_ones_are_one_line(tmp_path):
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks import train

    s = train.parse_args(["--out", str(tmp_path / "m.pt"), "--update-device", "cpu",
                          "--rollout-device", "auto", "--agent-json", '{"params": {"epochs": 2}}'])
    params = train.agent_config(s)["params"]
    assert (params["update_device"], params["rollout_device"], params["epochs"]) == ("cpu", "auto", 2)
    assert "update_device" not in train.agent_config(train.parse_args(["--out", "x.pt"]))["params"]
    bad = train.parse_args(["--out", str(tmp_path / "m.pt"), "--update-device", "gpu:0"])
    with pytest.raises(ConfigError, match=r"^pybatsim\.agent\.params\.update_device: invalid "
                                          r"device 'gpu:0'; choose one of: auto, cpu, cuda, cuda:N"):
        train.build_agent("ppo", train.agent_config(bad), train.make_env(bad, 16), 0)
