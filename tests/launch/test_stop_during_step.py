"""A stop asked for while the environment fails in a step: the episode stops with its decisions
so far (what a terminal's Ctrl-C does under the real Batsim, which dies of it during a step;
``tests/batsim/test_batsim_engine_ctrl_c.py`` runs that with the binary)."""

from __future__ import annotations

import pytest

from hdrm.agents.base import Agent
from hdrm.env import SchedulingEnv
from hdrm.errors import SimulationError
from hdrm.launch.loop import EpisodeActions, EpisodeStopped, run_episode


class FirstJob(Agent):
    """Always the first job of the window."""

    def decide(self, observation, mask) -> int:
        return 0


@pytest.fixture
def pick_env(tmp_path) -> SchedulingEnv:
    """2 one-core resources; jobs (submit, run): (0, 100), (0, 50), (10, 10)."""
    lines = ["; MaxProcs: 2"] + [
        f"{i + 1} {s} -1 {r} 1 -1 -1 1 200 -1 1 1 -1 -1 -1 -1 -1 -1"
        for i, (s, r) in enumerate([(0, 100), (0, 50), (10, 10)])]
    (tmp_path / "three.swf").write_text("\n".join(lines) + "\n")
    return SchedulingEnv(workload_file=str(tmp_path / "three.swf"), platform_file=None,
                         homogeneous_procs=2, mode="job_pick", window=4,
                         objective="avg_job_slowdown")


def make_agent(env) -> FirstJob:
    return FirstJob({"run": "test"}, env.observation_space, env.action_space,
                    action_names=env.action_names, seed=0)


def _failing_second_step(env, monkeypatch, flag: list[bool]) -> None:
    original = SchedulingEnv.step
    calls = []

    def step(self, action):
        calls.append(action)
        if len(calls) == 2:
            flag.append(True)  # the signal arrives ...
            raise SimulationError("batsim exited with status -2 before the simulation ended")
        return original(self, action)

    monkeypatch.setattr(SchedulingEnv, "step", step)


def test_an_error_after_a_stop_request_stops_the_episode_with_its_decisions(pick_env, monkeypatch):
    flag: list[bool] = []
    _failing_second_step(pick_env, monkeypatch, flag)
    agent = make_agent(pick_env)
    with pytest.raises(EpisodeStopped) as stopped:
        run_episode(pick_env, agent, episode=3, seed=0, stop=lambda: bool(flag))
    # the first decision was played, the second one's step failed: both were decided
    assert stopped.value.partial == EpisodeActions(3, [0.0, 0.0], [0, 0])
    assert stopped.value.mid_episode
    assert isinstance(stopped.value.__cause__, SimulationError)


def test_an_error_without_a_stop_request_is_raised_as_it_is(pick_env, monkeypatch):
    _failing_second_step(pick_env, monkeypatch, [])
    agent = make_agent(pick_env)
    with pytest.raises(SimulationError, match="batsim exited with status -2"):
        run_episode(pick_env, agent, episode=0, seed=0, stop=lambda: False)
    _failing_second_step(pick_env, monkeypatch, [])
    with pytest.raises(SimulationError, match="batsim exited"):
        run_episode(pick_env, agent, episode=0, seed=0)  # no stop callable at all
