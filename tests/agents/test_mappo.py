"""MAPPO (hdrm/agents/mappo*.py) on the toy two-agent env of tests/mappo_toy.py."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.agents.checkpoint import load_checkpoint, save_checkpoint
from hdrm.agents.distributions import MASKED_LOGIT
from hdrm.agents.mappo import MAPPOAgent
from hdrm.agents.mappo_buffer import observation_arrays, stack_steps
from hdrm.agents.mappo_encoders import SetEncoder, dedup, transformer
from hdrm.agents.mappo_networks import MAPPONetwork, RunningNorm, real_rows
from hdrm.agents.mappo_rollout import make_agent, play_episode
from hdrm.agents.mappo_update import head_terms
from hdrm.errors import ConfigError
from mappo_toy import ToyGpuEnv, fast_rate

SMALL = {"dim": 16, "heads": 2}


def small_agent(env: ToyGpuEnv, seed: int = 0, **params) -> MAPPOAgent:
    config = {"lr": 1e-3, "gamma": 0.9,
              "params": {**SMALL, "rollout_steps": 128, "minibatch": 64, **params}}
    return make_agent(env, config, seed=seed)


def network() -> MAPPONetwork:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return MAPPONetwork(2, 1, 2, dim=16, heads=2, share_actors=False)


def test_heads_accept_any_window_and_node_count():
    net = network()
    for window, nodes in ((3, 2), (7, 5), (1, 1)):
        jobs = torch.rand(4, window, 2)
        mask = torch.ones(4, window + 1, dtype=torch.bool)
        assert net.order(jobs, torch.rand(4, 1), mask).shape == (4, window + 1)
        place_mask = torch.ones(4, nodes, dtype=torch.bool)
        assert net.place(torch.rand(4, 2), torch.rand(4, nodes, 2), place_mask).shape == (4, nodes)


def test_window_padding_is_masked_out_of_attention():
    """Zero padding rows (masked) change no logit of the real rows nor the wait logit."""
    net = network()
    jobs = torch.tensor([[[0.25, 1.0], [0.75, 1.0]]])
    cluster = torch.tensor([[0.5]])
    short = net.order(jobs, cluster, torch.tensor([[True, True, True]]))
    padded = torch.cat([jobs, torch.zeros(1, 3, 2)], dim=1)
    mask = torch.tensor([[True, True, False, False, False, True]])
    long = net.order(padded, cluster, mask)
    torch.testing.assert_close(long[0, :2], short[0, :2])
    torch.testing.assert_close(long[0, -1], short[0, -1])


def test_permuting_nodes_permutes_place_logits():
    net = network()
    nodes = torch.rand(1, 5, 2)
    mask = torch.tensor([[True, False, True, True, False]])
    job = torch.rand(1, 2)
    logits = net.place(job, nodes, mask)
    perm = torch.tensor([3, 0, 4, 1, 2])
    torch.testing.assert_close(net.place(job, nodes[:, perm], mask[:, perm]), logits[:, perm])
    assert (logits[~mask] == MASKED_LOGIT).all()


def test_distinct_node_attention_equals_attention_over_all_nodes_with_masked_keys():
    """The speed-up (attend over the distinct feasible node rows, weighted by their counts)
    changes no logit: the same as masking the infeasible nodes' keys in an attention over every
    node, duplicated rows included."""
    net = network()
    place = net.place
    nodes, job = torch.rand(3, 6, 2), torch.rand(3, 2)
    nodes[0, 2] = nodes[0, 5] = nodes[0, 1]  # a feasible row three times (once infeasible)
    nodes[2, :4] = nodes[2, 4]  # five equal rows and one other
    mask = torch.tensor([[1, 1, 1, 0, 0, 1], [0, 0, 0, 1, 0, 0], [1, 1, 1, 1, 1, 1]]).bool()
    assert dedup(nodes, mask)[0].shape[1] == 2  # at most two distinct feasible rows per set
    extra = place.summary(nodes, real_rows(nodes, mask))
    rows, summary = place.encoder(nodes, mask, job, extra)
    both = torch.cat([rows, summary.unsqueeze(1).expand_as(rows)], dim=-1)
    full = place.head(both).squeeze(-1)
    torch.testing.assert_close(net.place(job, nodes, mask)[mask], full[mask])


def test_set_encoder_without_any_valid_row_is_finite():
    encoder = SetEncoder(2, 0, 8, transformer(8, 2, 1))
    rows, summary = encoder(torch.rand(2, 3, 2), torch.zeros(2, 3, dtype=torch.bool))
    assert torch.isfinite(rows).all() and torch.isfinite(summary).all()


def test_running_norm_matches_the_mean_and_variance_of_everything_seen():
    norm = RunningNorm(eps=0.0)
    norm.count.fill_(0.0)
    rng = np.random.default_rng(1)
    parts = [rng.normal(5.0, 3.0, n) for n in (7, 1, 30)]
    for part in parts:
        norm.update(torch.from_numpy(part))
    seen = np.concatenate(parts)
    assert float(norm.mean) == pytest.approx(seen.mean())
    assert float(norm.var) == pytest.approx(seen.var())
    x = torch.tensor([1.0, 9.0], dtype=torch.float64)
    torch.testing.assert_close(norm.denormalise(norm.normalise(x)), x)


def rates(env: ToyGpuEnv, agent: MAPPOAgent, episodes: int = 20) -> tuple[float, float]:
    """The greedy and the sampled policy's fast-node rates, without learning."""
    agent.train_mode(False)
    out = []
    for greedy in (True, False):
        agent.greedy = greedy
        since = len(env.decisions)
        for episode in range(episodes):
            play_episode(env, agent, seed=200 if episode == 0 else None)
        out.append(fast_rate(env, since))
    agent.train_mode(True)
    agent.greedy = True
    return out[0], out[1]


def test_mappo_learns_the_fast_node_of_the_two_node_toy():
    """After 120 training episodes (seeded) the placer takes the node with the fast GPUs in
    > 90 % of the decisions where both nodes fit, greedy or sampling from its policy (untrained,
    sampling: about half), in well under 60 s."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    env = ToyGpuEnv(seed=1)
    agent = small_agent(env, seed=3)
    _, before = rates(env, agent)
    for episode in range(120):
        play_episode(env, agent, seed=1 if episode == 0 else None)
    greedy, sampled = rates(env, agent)
    assert agent.updates >= 5
    assert greedy > 0.9 and sampled > 0.9 and before < 0.7
    assert env.masked_picks == 0
    assert time.perf_counter() - start < 60


@settings(max_examples=25, deadline=None)
@given(st.lists(st.booleans(), min_size=4, max_size=4).filter(any),
       st.lists(st.booleans(), min_size=4, max_size=4).filter(any), st.integers(0, 2**31))
def test_decide_never_takes_a_masked_action(order_mask, place_mask, seed):
    env = ToyGpuEnv(nodes=4, window=3)
    agent = small_agent(env, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    observation = {
        "order": {"jobs": rng.random((3, 2), dtype=np.float32),
                  "cluster": rng.random(1, dtype=np.float32),
                  "action_mask": np.array(order_mask, np.int8)},
        "place": {"job": rng.random(2, dtype=np.float32),
                  "nodes": rng.random((4, 2), dtype=np.float32),
                  "action_mask": np.array(place_mask, np.int8)},
    }
    for _ in range(5):
        assert order_mask[agent.decide({**observation, "phase": 0}, np.ones(4))]
        assert place_mask[agent.decide({**observation, "phase": 1}, np.ones(4))]
    launcher_mask = np.array(place_mask, bool) & (np.arange(4) == int(np.argmax(place_mask)))
    assert agent.decide({**observation, "phase": 1}, launcher_mask) == int(np.argmax(place_mask))
    with pytest.raises(ValueError, match="no valid place action"):
        agent.decide({**observation, "phase": 1}, ~np.array(place_mask, bool))


def test_work_conserving_masks_wait_while_a_task_fits():
    env = ToyGpuEnv(window=3)
    agent = small_agent(env, work_conserving=True, rollout_steps=10_000)
    obs, _ = env.reset(seed=1)
    mask = np.array([1, 0, 0, 1], np.int8)  # task 0 fits, or wait
    obs["order"]["action_mask"] = mask
    actions = {agent.decide({**obs, "phase": 0}, mask) for _ in range(40)}
    assert actions == {0}
    assert not agent.rollout.obs[-1]["order_mask"][-1]  # the stored mask is the one sampled
    obs["order"]["action_mask"] = np.array([0, 0, 0, 1], np.int8)  # nothing fits: wait
    assert agent.decide({**obs, "phase": 0}, np.ones(4)) == 3
    free = small_agent(env, rollout_steps=10_000)
    obs["order"]["action_mask"] = mask
    assert {free.decide({**obs, "phase": 0}, mask) for _ in range(40)} == {0, 3}


def test_same_seed_same_training():
    """Two agents of one seed on two envs of one seed take the same actions and end with the
    same weights after several updates (no global random state is used)."""
    runs = []
    for _ in range(2):
        env = ToyGpuEnv(seed=4)
        agent = small_agent(env, seed=8, rollout_steps=32)
        returns = [play_episode(env, agent, seed=9 if e == 0 else None)["return"]
                   for e in range(8)]
        runs.append((returns, env.decisions, agent.state_dict(), agent.updates))
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1] and runs[0][3] >= 3
    for name, tensor in runs[0][2].items():
        assert torch.equal(tensor, runs[1][2][name]), name


def test_an_agent_gets_no_policy_gradient_from_the_other_agents_records():
    """With separate actors, records of the order phase leave the place actor's gradient zero
    (the inactive agent's steps never enter its policy loss), and the reverse."""
    env = ToyGpuEnv()
    agent = small_agent(env, share_actors=False)
    for _ in range(3):
        play_episode(env, agent)
    batch = agent.rollout.finish(0.0, 0.9, 0.95)
    for head, other in (("order", "place"), ("place", "order")):
        only = batch[f"has_{head}"]
        mb = {name: tensor[only] for name, tensor in batch.items()}
        agent.network.zero_grad()
        log_prob, entropy = head_terms(agent.network, mb)
        (log_prob.sum() + entropy.sum()).backward()
        mine = [p.grad for p in getattr(agent.network, head).parameters()]
        theirs = [p.grad for p in getattr(agent.network, other).parameters()]
        assert any(g is not None and g.abs().sum() > 0 for g in mine)
        assert all(g is None or g.abs().sum() == 0 for g in theirs)


def test_checkpoint_round_trip_gives_the_same_actions(tmp_path):
    env = ToyGpuEnv(nodes=3)
    agent = small_agent(env, seed=5)
    for _ in range(12):  # some updates, so weights, optimizer and normaliser are not initial
        play_episode(env, agent)
    assert agent.updates >= 1 and float(agent.network.value_norm.count) > 1
    path = save_checkpoint(agent, tmp_path / "mappo.pt", {"agent": "mappo"})
    other = small_agent(env, seed=99)
    checkpoint = load_checkpoint(other, path)
    names = set(checkpoint["model_state_dict"])
    assert {n.split(".")[0] for n in names} == {"order", "place", "critic", "value_norm"}
    env.reset(seed=7)
    env.step({"order": 0, "place": 0})
    observations = env._observe()
    agent.train_mode(False)
    other.train_mode(False)
    for phase in (0, 1):
        turn = {**observations, "phase": phase}
        turn[("order", "place")[phase]]["action_mask"][:] = 1
        batch = stack_steps([observation_arrays(turn)])
        assert agent.decide(turn, np.ones(4)) == other.decide(turn, np.ones(4))
        assert agent.value_of(batch, phase) == other.value_of(batch, phase)


def test_factored_mode_makes_one_record_per_joint_action():
    env = ToyGpuEnv()
    agent = small_agent(env, mode="factored", rollout_steps=10_000)
    play_episode(env, agent, seed=4)
    records = agent.rollout.scalars
    assert all(records["has_order"])
    placed = sum(records["has_place"])
    assert placed == env.nb_jobs  # every task placed, in the record of the order that chose it
    assert len(records["has_order"]) == placed + sum(
        1 for has_place in records["has_place"] if not has_place)


def test_a_frozen_agent_is_played_by_its_driver():
    env = ToyGpuEnv()
    agent = small_agent(env, freeze_place="fastest", rollout_steps=10_000)
    assert agent.learned_agents == ("order",)
    play_episode(env, agent, drivers={"place": lambda e: e.fast if e.place_mask[e.fast]
                                      else int(np.argmax(e.place_mask))}, seed=2)
    assert fast_rate(env) == 1.0
    assert not any(agent.rollout.scalars["has_place"])
    with pytest.raises(ValueError, match="no driver for the frozen agent"):
        play_episode(env, agent)


@pytest.mark.parametrize("params, message", [
    ({"freeze_order": "fifo", "freeze_place": "fgd"}, "freeze_order and freeze_place are both"),
    ({"mode": "factored", "freeze_place": "fgd"}, "cannot freeze place"),
    ({"dim": 10, "heads": 4}, r"params.dim: 10 is not a multiple of heads=4"),
    ({"mode": "joint"}, r"params.mode: invalid value 'joint'"),
])
def test_bad_settings_are_one_line_errors(params, message):
    with pytest.raises(ConfigError, match=message):
        small_agent(ToyGpuEnv(), **{**SMALL, **params})
