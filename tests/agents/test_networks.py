"""Policy/value networks: shapes, automatic choice, void bias, permutation equivariance and the
factored pair heads."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from hdrm.agents.networks import (
    AttentionNetwork,
    FactoredPairNetwork,
    KernelNetwork,
    MLPNetwork,
    build_network,
    resolve_network,
)
from hdrm.agents.ppo import PPOAgent
from hdrm.agents.testing import check_agent
from hdrm.errors import ConfigError
from hdrm.policies.pairs import ALL_PAIRS

WINDOW = spaces.Box(0.0, 1.0, (5, 3), np.float32)
FLAT = spaces.Box(0.0, 1.0, (7,), np.float32)


def randomise(net: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Give every parameter non-trivial values (output layers start near zero)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return net


def test_auto_picks_kernel_for_windows_and_mlp_otherwise():
    assert resolve_network("auto", WINDOW, 6, "w") == "kernel"
    assert resolve_network("auto", WINDOW, 5, "w") == "kernel"
    assert resolve_network("auto", WINDOW, 9, "w") == "mlp"
    assert resolve_network("auto", FLAT, 4, "w") == "mlp"
    assert isinstance(build_network("auto", WINDOW, 6, (8,)), KernelNetwork)
    assert isinstance(build_network("auto", FLAT, 4, (8,)), MLPNetwork)


@pytest.mark.parametrize("name", ["mlp", "kernel", "attention"])
def test_shapes_single_and_batched(name):
    net = build_network(name, WINDOW, 6, (8, 4), heads=2)
    single = torch.rand(5, 3)
    logits, value = net(single)
    assert logits.shape == (6,) and value.shape == ()
    logits, value = net(torch.rand(4, 5, 3))
    assert logits.shape == (4, 6) and value.shape == (4,)


@pytest.mark.parametrize("cls", [KernelNetwork, AttentionNetwork])
def test_job_networks_are_permutation_equivariant(cls):
    net = randomise(cls((5, 3), 6, (8, 4), heads=2))
    obs = torch.rand(5, 3, generator=torch.Generator().manual_seed(1))
    perm = torch.tensor([3, 0, 4, 1, 2])
    logits, value = net(obs)
    plogits, pvalue = net(obs[perm])
    torch.testing.assert_close(plogits[:5], logits[:5][perm], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(plogits[5], logits[5])  # void is unchanged
    torch.testing.assert_close(pvalue, value, rtol=1e-5, atol=1e-5)


def test_kernel_scores_each_row_with_the_same_mlp():
    net = randomise(KernelNetwork((5, 3), 5, (8,)))
    obs = torch.rand(5, 3)
    obs[2] = obs[4]
    logits = net.logits(obs)
    assert logits.shape == (5,)  # no void: K actions
    # equal rows, equal scores: to rounding (the batched product may block rows differently per CPU)
    torch.testing.assert_close(logits[2], logits[4], rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(logits[0], net.scorer(obs[0]).squeeze())


def test_void_action_has_a_learned_bias_logit():
    net = KernelNetwork((5, 3), 6, (8,))
    with torch.no_grad():
        net.void_logit.fill_(2.5)
    logits = net.logits(torch.rand(2, 5, 3))
    assert torch.equal(logits[:, 5], torch.tensor([2.5, 2.5]))
    assert "void_logit" in dict(net.named_parameters())


def test_mlp_flattens_2d_observations():
    net = build_network("mlp", WINDOW, 9, (8,))
    assert net.actor[0].in_features == 15
    assert net.logits(torch.rand(3, 5, 3)).shape == (3, 9)


def test_errors_name_the_setting():
    with pytest.raises(
        ConfigError,
        match=r"params\.network: 'kernel' needs 2-D job_pick observations .* "
        r"got shape \(7,\); use \"mlp\"",
    ):
        build_network("kernel", FLAT, 4, (8,), where="pybatsim.agent.params.network")
    with pytest.raises(ConfigError, match=r"'kernel' needs 5 or 6 actions .* the action space has 9"):
        build_network("kernel", WINDOW, 9, (8,))
    with pytest.raises(
        ConfigError,
        match=r"unknown policy network 'kernal'; did you mean 'kernel'\? choose one of: auto, ",
    ):
        build_network("kernal", WINDOW, 6, (8,))
    with pytest.raises(ConfigError, match=r"params\.heads: 3 heads do not divide the width 8"):
        build_network("attention", WINDOW, 6, (8,), heads=3)
    with pytest.raises(ConfigError, match=r"need a Box observation space, got Discrete\(3\)"):
        build_network("auto", spaces.Discrete(3), 3, (8,))


def test_factored_pair_logit_is_the_sum_of_its_job_and_core_logits():
    net = randomise(build_network("factored", FLAT, 36, (8,), action_names=ALL_PAIRS))
    assert isinstance(net, FactoredPairNetwork)
    assert (net.job_head.out_features, net.core_head.out_features) == (6, 6)
    obs = torch.rand(3, 7, generator=torch.Generator().manual_seed(2))
    body = net.actor(obs)
    jobs = dict(zip(sorted(set(n.split("-")[0] for n in ALL_PAIRS)), net.job_head(body).T))
    cores = dict(zip(sorted(set(n.split("-")[1] for n in ALL_PAIRS)), net.core_head(body).T))
    logits = net.logits(obs)
    assert logits.shape == (3, 36)
    for a, name in enumerate(ALL_PAIRS):
        job, core = name.split("-")
        torch.testing.assert_close(logits[:, a], jobs[job] + cores[core])
    # so the policy over the 36 pairs is the product of a job policy and a core policy
    probs = torch.softmax(logits, -1).reshape(3, 6, 6)
    product = probs.sum(2, keepdim=True) * probs.sum(1, keepdim=True)
    torch.testing.assert_close(probs, product)
    assert net.value(obs).shape == (3,)


def test_factored_pairs_of_a_selection_share_their_parts():
    names = ["shortest-high_gflops", "random-high_gflops", "shortest-low_power"]
    net = randomise(build_network("factored", FLAT, 3, (8,), action_names=names))
    assert (net.job_head.out_features, net.core_head.out_features) == (2, 2)
    obs = torch.rand(4, 7)
    logits = net.logits(obs)
    assert logits.shape == (4, 3)
    body = net.actor(obs)
    jobs, cores = net.job_head(body), net.core_head(body)  # parts sorted by name
    # shortest-high_gflops minus random-high_gflops is the job difference alone ...
    torch.testing.assert_close(logits[:, 0] - logits[:, 1], jobs[:, 1] - jobs[:, 0])
    # ... and shortest-high_gflops minus shortest-low_power the core difference alone
    torch.testing.assert_close(logits[:, 0] - logits[:, 2], cores[:, 0] - cores[:, 1])


def test_factored_needs_pair_names():
    with pytest.raises(
        ConfigError,
        match=r"params\.network: 'factored' needs the name of each of the 4 actions, "
        r"the environment gives 0; use \"mlp\"",
    ):
        build_network("factored", FLAT, 4, (8,), where="pybatsim.agent.params.network")
    with pytest.raises(
        ConfigError, match=r"'factored' needs policy_pair actions named JOB-CORE, got the action 'fcfs'"
    ):
        build_network("factored", FLAT, 2, (8,), action_names=["first-random", "fcfs"])


def test_ppo_with_factored_heads_honours_the_agent_api():
    check_agent(
        PPOAgent,
        {"params": {"network": "factored", "rollout_steps": 16, "minibatch": 8}},
        action_space=spaces.Discrete(36),
        action_names=ALL_PAIRS,
    )
