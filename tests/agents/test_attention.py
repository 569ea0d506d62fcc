"""The attention network: equivariance, padding masks, the cluster summary token, PPO learning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from hdrm.agents.loader import load_agent_class
from hdrm.agents.networks import AttentionNetwork, build_network
from hdrm.agents.ppo import PPOAgent
from hdrm.agents.testing import check_agent
from hdrm.errors import ConfigError

DROP_IN = Path(__file__).resolve().parents[2] / "agents" / "ppo_attention.py"
K, F = 6, 4  # rows of [size, noise, real flag, free cores]
REAL, CLUSTER = 2, 3


def network(seed: int = 0, layers: int = 2) -> AttentionNetwork:
    """An attention network with non-trivial weights (output layers start near zero)."""
    space = spaces.Box(0.0, 1.0, (K, F), np.float32)
    net = build_network(
        "attention", space, K + 1, (8, 4), heads=2, layers=layers, real_column=REAL,
        cluster_columns=(CLUSTER,),
    )
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return net


def window(n_real: int, seed: int = 1) -> torch.Tensor:
    """Real jobs in the first ``n_real`` rows, padding (random junk, flag 0) after them."""
    obs = torch.rand(K, F, generator=torch.Generator().manual_seed(seed))
    obs[:, REAL] = (torch.arange(K) < n_real).float()
    obs[:, CLUSTER] = 0.4
    return obs


def test_job_logits_are_permutation_equivariant_over_real_rows():
    net, obs = network(), window(4)
    logits, value = net(obs)
    perm = torch.tensor([2, 0, 5, 3, 1, 4])  # shuffles real and padding rows together
    plogits, pvalue = net(obs[perm])
    real = obs[perm, REAL] == 1
    torch.testing.assert_close(plogits[:K][real], logits[:K][perm][real], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(plogits[K], logits[K])  # the void logit
    torch.testing.assert_close(pvalue, value, rtol=1e-5, atol=1e-5)


def test_padding_rows_never_influence_real_rows_or_the_value():
    net = network()
    obs = window(3)
    other = obs.clone()
    other[3:, [0, 1, CLUSTER]] = torch.tensor([[9.0, -7.0, 0.9], [0.0, 0.0, 0.0], [5.0, 5.0, 5.0]])
    logits, value = net(torch.stack([obs, other]))  # batched, as in a PPO minibatch
    assert torch.equal(logits[0, :3], logits[1, :3])
    assert torch.equal(value[0], value[1])
    assert not torch.equal(logits[0, 3:K], logits[1, 3:K])  # the padding rows' own scores differ


def test_real_rows_do_attend_to_each_other_and_the_cluster_state():
    net, obs = network(), window(4)
    logits = net.logits(obs)
    moved = obs.clone()
    moved[3, 0] += 0.5  # another real job changes
    assert not torch.allclose(net.logits(moved)[:3], logits[:3])
    busier = obs.clone()
    busier[:, CLUSTER] = 0.9  # the cluster state, through the summary token
    assert not torch.allclose(net.logits(busier)[:3], logits[:3])


def test_an_empty_window_still_gives_finite_outputs():
    logits, value = network()(window(0))
    assert torch.isfinite(logits).all() and torch.isfinite(value)


def test_the_defaults_follow_the_job_window_layout():
    net = build_network("attention", spaces.Box(0.0, 1.0, (5, 8), np.float32), 6, (8, 4), heads=2)
    assert (net.real_column, net.cluster_columns) == (-2, (-1,))
    one = build_network("attention", spaces.Box(0.0, 1.0, (5, 1), np.float32), 6, (8, 4), heads=2)
    assert (one.real_column, one.cluster_columns) == (None, ())
    flat_real = build_network(
        "attention", spaces.Box(0.0, 1.0, (5, 3), np.float32), 5, (8,), heads=2, real_column=None
    )
    assert flat_real.real_rows(torch.zeros(5, 3)).all()  # no flag: every row is a job


def test_bad_columns_are_config_errors():
    space = spaces.Box(0.0, 1.0, (5, 3), np.float32)
    with pytest.raises(
        ConfigError,
        match=r"params\.real_column: column 3 is outside the 3 features of a job row; use -3\.\.2",
    ):
        build_network("attention", space, 6, (8,), heads=2, real_column=3)
    with pytest.raises(ConfigError, match=r"params\.cluster_columns: column -4 is outside"):
        build_network("attention", space, 6, (8,), heads=2, cluster_columns=(0, -4))


def test_ppo_with_attention_learns_to_pick_the_smallest_job(window, driver):
    # conftest's window rows are [size, noise, present]: the real-job flag is column 2
    cls = load_agent_class(DROP_IN)
    params = {"torch_threads": 1, "rollout_steps": 64, "minibatch": 16, "real_column": 2,
              "cluster_columns": []}
    agent = driver.make(cls, window, lr=3e-3, gamma=0.9, params=params)
    assert isinstance(agent.network, AttentionNetwork) and agent.network.real_column == 2
    before = driver.mean_return(agent, window)
    driver.run(agent, window, 200)
    after = driver.mean_return(agent, window)
    assert after >= 7.0 and after > before + 3.0


def test_the_drop_in_is_one_ppo_subclass_that_conforms():
    cls = load_agent_class(DROP_IN)
    assert issubclass(cls, PPOAgent) and cls is not PPOAgent and cls.__doc__
    params = {"rollout_steps": 10, "minibatch": 5, "heads": 2}
    check_agent(cls, {"run": "train", "params": params}, spaces.Box(0.0, 1.0, (4, 3), np.float32),
                spaces.Discrete(5))
