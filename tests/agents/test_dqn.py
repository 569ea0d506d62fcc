"""DQN: schedules, dueling and double targets by hand, masks, learning, checkpoints, determinism."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from hdrm.agents.catalog import get_agent_class
from hdrm.agents.checkpoint import load_checkpoint, save_checkpoint
from hdrm.agents.dqn import DQNAgent, DQNSettings, beta_at, epsilon_at
from hdrm.agents.loader import load_agent_class
from hdrm.agents.networks import KernelNetwork, PolicyValueNetwork
from hdrm.agents.q_networks import DuelingQNetwork, double_q_targets, masked_argmax
from hdrm.agents.testing import check_agent
from hdrm.errors import ConfigError

DROP_IN = Path(__file__).resolve().parents[2] / "agents" / "dqn.py"
#: Small, fast settings: learning from the 32nd decision, one gradient step per decision.
FAST = {
    "learning_starts": 32,
    "batch_size": 32,
    "epsilon_steps": 400,
    "target_update": 50,
    "buffer_size": 4000,
    "torch_threads": 1,
}


# -- schedules ---------------------------------------------------------------------------------
def test_epsilon_schedules_by_hand():
    linear = DQNSettings(epsilon_start=1.0, epsilon_end=0.1, epsilon_steps=100)
    assert [epsilon_at(s, linear) for s in (0, 50, 100, 1000)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    expo = DQNSettings(
        epsilon_start=1.0, epsilon_end=0.1, epsilon_steps=100, epsilon_schedule="exponential"
    )
    assert epsilon_at(0, expo) == 1.0
    assert epsilon_at(100, expo) == pytest.approx(0.1 + 0.9 / math.e)
    assert epsilon_at(10_000, expo) == pytest.approx(0.1)


def test_beta_anneals_linearly_to_one():
    s = DQNSettings(beta=0.4, beta_steps=200)
    assert [beta_at(n, s) for n in (0, 100, 200, 5000)] == pytest.approx([0.4, 0.7, 1.0, 1.0])


def test_bad_settings_are_config_errors(bandit, driver):
    with pytest.raises(ConfigError, match=r"params: unknown setting 'n_steps'; did you mean 'n_step'"):
        driver.make(DQNAgent, bandit, params={"n_steps": 3})
    with pytest.raises(
        ConfigError,
        match=r"params\.epsilon_schedule: invalid value 'expo'; .*choose one of: linear, exponential",
    ):
        driver.make(DQNAgent, bandit, params={"epsilon_schedule": "expo"})
    with pytest.raises(ConfigError, match=r"params\.tau: 1\.5 is too large; use a value <= 1\.0"):
        driver.make(DQNAgent, bandit, params={"tau": 1.5})
    with pytest.raises(ConfigError, match=r"params\.n_step: expected a whole number, got 2\.5"):
        driver.make(DQNAgent, bandit, params={"n_step": 2.5})


# -- Q networks by hand -------------------------------------------------------------------------
class FixedBody(PolicyValueNetwork):
    """Advantages and value given as tensors (batch of 1 broadcast)."""

    def __init__(self, advantages, value):
        super().__init__()
        self.a = torch.tensor(advantages, dtype=torch.float32)
        self.v = torch.tensor(value, dtype=torch.float32)

    def logits(self, obs):
        return self.a.expand(*obs.shape[:-1], -1)

    def value(self, obs):
        return self.v.expand(obs.shape[:-1])


def test_dueling_mean_runs_over_valid_actions_only():
    net = DuelingQNetwork(FixedBody([1.0, 2.0, 3.0, 10.0], 5.0))
    mask = torch.tensor([True, True, True, False])
    # mean of the valid advantages is 2: Q = 5 + A - 2
    assert net.q_values(torch.zeros(2), mask).tolist() == [4.0, 5.0, 6.0, 13.0]
    assert int(net.greedy(torch.zeros(2), mask)) == 2  # never the masked 10
    plain = DuelingQNetwork(FixedBody([1.0, 2.0, 3.0, 10.0], 5.0), dueling=False)
    assert plain.q_values(torch.zeros(2), mask).tolist() == [1.0, 2.0, 3.0, 10.0]


def test_masked_argmax_skips_invalid_entries_and_breaks_ties_low():
    values = torch.tensor([[9.0, 1.0, 1.0], [0.0, -5.0, 7.0], [3.0, 3.0, 3.0]])
    mask = torch.tensor([[False, True, True], [True, True, False], [True, True, True]])
    assert masked_argmax(values, mask).tolist() == [1, 0, 0]


def test_double_q_targets_by_hand():
    next_target = torch.tensor([[1.0, 5.0, 9.0], [2.0, 4.0, 6.0]])
    next_online = torch.tensor([[8.0, 1.0, 100.0], [0.0, 3.0, 1.0]])
    masks = torch.tensor([[True, True, False], [True, True, True]])
    returns = torch.tensor([1.0, 2.0])
    discounts = torch.tensor([0.5, 0.0])
    # row 0: online picks action 0 (action 2 is masked), the target rates it 1 -> 1 + 0.5 * 1
    # row 1: the episode ended, the target is the return
    double = double_q_targets(next_target, next_online, masks, returns, discounts)
    assert double.tolist() == [1.5, 2.0]
    plain = double_q_targets(next_target, None, masks, returns, discounts)
    assert plain.tolist() == [1.0 + 0.5 * 5.0, 2.0]  # the target's own best valid action


def test_kernel_q_values_give_one_value_per_job_and_the_void():
    agent = DQNAgent({"run": "train"}, spaces.Box(0, 1, (5, 3), np.float32), spaces.Discrete(6))
    assert isinstance(agent.network.body, KernelNetwork)
    q = agent.network.q_values(agent.to_update(torch.rand(4, 5, 3)),
                               agent.to_update(torch.ones(4, 6, dtype=torch.bool)))
    assert q.shape == (4, 6)


# -- acting -------------------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.0, 1.0])
def test_masked_actions_never_chosen(epsilon, bandit, window, driver):
    # both envs assert the action is valid; the bandit's always-masked "trap" would pay 5
    for env in (bandit, window):
        params = {**FAST, "epsilon_start": epsilon, "epsilon_end": epsilon}
        agent = driver.make(DQNAgent, env, params=params)
        with torch.no_grad():  # make the masked last action the most attractive by far
            bias = agent.network.body.void_logit if env is window else agent.network.body.actor[-1].bias
            bias[-1] = 1e6
        driver.run(agent, env, 10)


def test_greedy_action_is_the_largest_valid_q(window, driver):
    agent = driver.make(DQNAgent, window, params=FAST).train_mode(False)
    obs, info = window.reset(seed=3)
    mask = info["action_mask"]
    q = agent.network.q_values(agent.to_update(torch.from_numpy(obs)),
                               agent.to_update(torch.from_numpy(mask)))
    expected = int(np.flatnonzero(mask)[np.argmax(q.detach().cpu().numpy()[mask])])
    assert agent.decide(obs, mask) == expected


def test_decide_is_fast_on_a_full_job_window():
    agent = DQNAgent(
        {"run": "train", "params": {"learning_starts": 10**6}},
        spaces.Box(0.0, 1.0, (128, 8), np.float32),
        spaces.Discrete(129),
    )
    obs = np.random.default_rng(0).random((128, 8), dtype=np.float32)
    obs_t = agent.to_rollout(torch.as_tensor(obs))  # where decide() runs its network
    mask = np.ones(129, dtype=np.int8)
    for training in (True, False):
        agent.train_mode(training)
        decide_s, forward_s = [], []
        for _ in range(300):  # interleaved, so a loaded machine slows both alike
            start = time.perf_counter()
            agent.decide(obs, mask)
            decide_s.append(time.perf_counter() - start)
            agent.rewarded(0.0, False)
            start = time.perf_counter()
            with torch.no_grad():
                agent.rollout_network(obs_t)
            forward_s.append(time.perf_counter() - start)
        # decide() measured at 0.35x (train) and 0.5x (test) a bare forward pass, ~0.1-0.2 ms
        assert np.median(decide_s) < 4 * np.median(forward_s), training
        assert np.median(decide_s) < 5e-3, training


# -- the replay is fed with n-step transitions ---------------------------------------------------
def scripted_episode(agent, rewards, done=True):
    """Feed observations i (a one-hot of i % 3) and the given rewards; every action is valid."""
    agent.start_episode()
    for i, reward in enumerate(rewards):
        agent.decide(np.eye(3, dtype=np.float32)[i % 3] * (i + 1), np.array([1, 1, 1, 0]))
        agent.rewarded(reward, done and i == len(rewards) - 1)
    return agent.end_episode()


def test_replay_holds_n_step_transitions_of_each_episode(bandit, driver):
    agent = driver.make(DQNAgent, bandit, gamma=0.5, params={"n_step": 2, "learning_starts": 10**6})
    scripted_episode(agent, [1.0, 2.0, 4.0])
    r = agent.replay
    assert len(r) == 3
    assert r.returns[:3].tolist() == [2.0, 4.0, 4.0]  # 1 + .5*2, 2 + .5*4, 4 (terminal)
    assert r.discounts[:3].tolist() == [0.25, 0.0, 0.0]
    assert r.obs[:3].max(axis=1).tolist() == [1.0, 2.0, 3.0]
    assert r.next_obs[0].max() == 3.0  # s0 bootstraps from s2
    assert r.next_masks[0].tolist() == [True, True, True, False]
    scripted_episode(agent, [1.0, 1.0, 1.0, 1.0], done=False)  # cut: nothing to bootstrap from
    assert len(r) == 5  # only the two transitions whose s_{t+2} was seen


def test_reward_scale_applies_to_stored_returns(bandit, driver):
    agent = driver.make(DQNAgent, bandit, params={"n_step": 1, "reward_scale": 0.5})
    scripted_episode(agent, [4.0])
    assert agent.replay.returns[0] == 2.0


# -- learning -----------------------------------------------------------------------------------
def test_learns_the_masked_bandit(bandit, driver):
    agent = driver.make(DQNAgent, bandit, lr=3e-3, gamma=0.5, params=FAST)
    stats = driver.run(agent, bandit, 40)
    assert driver.mean_return(agent, bandit) == bandit.length
    assert stats[-1]["epsilon"] == pytest.approx(1.0 - 0.95 * 320 / 400)  # linear, 320 decisions
    assert np.isfinite(stats[-1]["loss"]) and stats[-1]["gradient_steps"] == 8
    assert agent.updates == 40 * 8 - 32 + 1  # one gradient step per decision from the 32nd


def test_learns_to_pick_the_smallest_job_with_the_kernel_network(window, driver):
    agent = driver.make(DQNAgent, window, lr=3e-3, gamma=0.5, params=FAST)
    driver.run(agent, window, 120)
    assert driver.mean_return(agent, window) >= 7.2


def test_priorities_are_updated_from_td_errors(bandit, driver):
    agent = driver.make(DQNAgent, bandit, params={**FAST, "learning_starts": 8, "batch_size": 8})
    driver.run(agent, bandit, 2)
    leaves = agent.replay.tree.get(np.arange(len(agent.replay)))
    assert len(set(np.round(leaves, 6).tolist())) > 2  # no longer all the initial max priority


def test_hard_and_polyak_target_updates(bandit, driver):
    hard = driver.make(DQNAgent, bandit, params={**FAST, "target_update": 5})
    driver.run(hard, bandit, 5)  # 40 decisions, 9 gradient steps: last sync at 5
    online = hard.network.state_dict()
    assert hard.updates == 9
    assert any(not torch.equal(v, hard.target.state_dict()[k]) for k, v in online.items())
    hard.learn_batch()  # the 10th step syncs
    target = hard.target.state_dict()
    assert all(torch.equal(v, target[k]) for k, v in hard.network.state_dict().items())

    soft = driver.make(DQNAgent, bandit, params={**FAST, "target_update": 1, "tau": 0.25})
    driver.run(soft, bandit, 5)
    before = {k: v.clone() for k, v in soft.target.state_dict().items()}
    soft.learn_batch()
    for key, value in soft.network.state_dict().items():
        torch.testing.assert_close(soft.target.state_dict()[key], 0.25 * value + 0.75 * before[key])


# -- state, checkpoints, determinism --------------------------------------------------------------
def greedy_actions(agent, env, n=40):
    agent.train_mode(False)
    obs, info = env.reset(seed=123)
    actions = []
    for _ in range(n):
        actions.append(agent.decide(obs, info["action_mask"]))
        obs, _, done, _, info = env.step(actions[-1])
        if done:
            obs, info = env.reset()
    return actions


def test_checkpoint_round_trip(tmp_path, window, driver):
    trained = driver.make(DQNAgent, window, seed=1, params=FAST)
    driver.run(trained, window, 12)
    path = save_checkpoint(trained, tmp_path / "dqn.pt", {"seed": 1})
    fresh = driver.make(DQNAgent, window, seed=2, params=FAST)
    assert greedy_actions(fresh, window) != greedy_actions(trained, window)
    checkpoint = load_checkpoint(fresh, path)
    assert checkpoint["agent_class"] == "hdrm.agents.dqn.DQNAgent"
    assert greedy_actions(fresh, window) == greedy_actions(trained, window)
    assert (fresh.env_steps, fresh.updates) == (trained.env_steps, trained.updates) == (96, 65)
    for key, value in trained.target.state_dict().items():
        assert torch.equal(fresh.target.state_dict()[key], value)
    saved = trained.optimizer_state_dict()["state"][0]["exp_avg"]
    assert torch.equal(fresh.optimizer_state_dict()["state"][0]["exp_avg"], saved)


def test_state_dict_errors(bandit, driver):
    agent = driver.make(DQNAgent, bandit)
    with pytest.raises(ValueError, match="not a DQN state: 'counters' is missing"):
        agent.load_state_dict(agent.network.state_dict())


def test_same_seed_same_run_and_other_seed_another(window, driver):
    def run(seed):
        agent = driver.make(DQNAgent, window, seed=seed, params=FAST)
        returns = [s["return"] for s in driver.run(agent, window, 8)]
        return returns, agent.state_dict()

    (ret_a, state_a), (ret_b, state_b) = run(5), run(5)
    assert ret_a == ret_b
    assert all(torch.equal(state_a[k], state_b[k]) for k in state_a)
    ret_c, state_c = run(6)
    assert not all(torch.equal(state_a[k], state_c[k]) for k in state_a)


def test_global_torch_random_state_untouched(bandit, driver):
    before = torch.random.get_rng_state()
    driver.run(driver.make(DQNAgent, bandit, params=FAST), bandit, 6)
    assert torch.equal(before, torch.random.get_rng_state())


def test_evaluation_changes_nothing(bandit, driver):
    agent = driver.make(DQNAgent, bandit, params=FAST)
    driver.run(agent, bandit, 6)
    start = {k: v.clone() for k, v in agent.state_dict().items()}
    stored = len(agent.replay)
    agent.train_mode(False)
    driver.run(agent, bandit, 3)
    assert all(torch.equal(start[k], v) for k, v in agent.state_dict().items())
    assert len(agent.replay) == stored


@pytest.mark.parametrize(
    "space, n, network",
    [
        (spaces.Box(0.0, 1.0, (8,), np.float32), 5, "auto"),
        (spaces.Box(0.0, 1.0, (4, 3), np.float32), 5, "kernel"),
        (spaces.Box(0.0, 1.0, (4, 3), np.float32), 5, "attention"),
    ],
)
def test_conforms(space, n, network):
    params = {**FAST, "learning_starts": 8, "batch_size": 4, "network": network, "heads": 2}
    check_agent(get_agent_class("dqn"), {"run": "train", "params": params}, space, spaces.Discrete(n))


def test_drop_in_file(bandit, driver):
    cls = load_agent_class(DROP_IN)
    assert issubclass(cls, DQNAgent) and cls is not DQNAgent and cls.__doc__
    check_agent(cls, {"run": "train", "params": {"learning_starts": 8, "batch_size": 4}})
