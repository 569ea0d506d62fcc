"""The episode loop: records measured from the outputs, hooks called as documented."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gymnasium import spaces

from hdrm.agents.base import Agent, ClassicAgent
from hdrm.env import SchedulingEnv
from hdrm.launch.loop import EpisodeActions, EpisodeRecord, HookList, Hooks, run_episode, run_episodes

ROOT = Path(__file__).resolve().parents[2]


def three_jobs(tmp_path: Path) -> str:
    """2 one-core resources; jobs (submit, run): (0, 100), (0, 50), (10, 10), requested 200 s."""
    lines = ["; MaxProcs: 2"] + [
        f"{i + 1} {s} -1 {r} 1 -1 -1 1 200 -1 1 1 -1 -1 -1 -1 -1 -1"
        for i, (s, r) in enumerate([(0, 100), (0, 50), (10, 10)])
    ]
    path = tmp_path / "three.swf"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


class FirstJob(Agent):
    """Always the first job of the window; counts the calls it gets."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls = {"start": 0, "decide": 0, "rewarded": 0, "end": 0}

    def start_episode(self) -> None:
        super().start_episode()
        self.calls["start"] += 1

    def decide(self, observation, mask) -> int:
        self.calls["decide"] += 1
        assert mask[0]
        return 0

    def rewarded(self, reward: float, done: bool) -> None:
        super().rewarded(reward, done)
        self.calls["rewarded"] += 1

    def end_episode(self) -> dict[str, float]:
        self.calls["end"] += 1
        return {**super().end_episode(), "loss": 0.5, "entropy": 1.25}


class Recorder(Hooks):
    step_every = 1

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def episode_started(self, episode: int, nb_jobs: int) -> None:
        self.events.append(("start", episode, nb_jobs))

    def stepped(self, steps: int, info: dict) -> None:
        self.events.append(("step", steps, info["time"]))

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        self.events.append(("end", record.episode, len(actions.actions)))

    def run_ended(self, run: int, records: list[EpisodeRecord]) -> None:
        self.events.append(("run", run, len(records)))


@pytest.fixture
def pick_env(tmp_path) -> SchedulingEnv:
    return SchedulingEnv(workload_file=three_jobs(tmp_path), platform_file=None,
                         homogeneous_procs=2, mode="job_pick", window=4,
                         objective="avg_job_slowdown")


def make_agent(cls, env, **config):
    return cls({"run": "train", **config}, env.observation_space, env.action_space,
               action_names=env.action_names, seed=0)


def test_record_holds_hand_checked_figures(pick_env):
    agent = make_agent(FirstJob, pick_env)
    record, actions = run_episode(pick_env, agent, episode=4, run=1, seed=0)
    # jobs 1 and 2 start at 0 s; job 3 (submitted at 10 s) starts at 50 s when job 2 ends
    assert (record.episode, record.run, record.steps, record.nb_jobs) == (4, 1, 3, 3)
    assert actions == EpisodeActions(4, [0.0, 0.0, 50.0], [0, 0, 0])
    assert record.makespan_s == 100.0
    assert record.mean_waiting_s == pytest.approx(40.0 / 3)
    assert record.mean_bounded_slowdown == pytest.approx((1 + 1 + 5) / 3)
    assert record.return_ == pytest.approx(-7.0 / 3) == pytest.approx(-record.objective)
    assert record.energy_j > 0 and record.wall_s > 0
    assert record.loss == 0.5 and record.stats["entropy"] == 1.25
    assert agent.calls == {"start": 1, "decide": 3, "rewarded": 3, "end": 1}
    row = record.csv_row()
    assert list(row) == ["episode", "return", "loss", "makespan", "mean_waiting",
                         "mean_bounded_slowdown", "energy_j", "wall_s"]
    assert row["makespan"] == 100.0


def test_hooks_see_episodes_steps_and_runs(pick_env):
    recorder, quiet = Recorder(), Hooks()
    hooks = HookList(recorder, quiet, None)
    assert hooks.step_every == 1
    records = run_episodes(pick_env, make_agent(FirstJob, pick_env), episodes=2, nbruns=2,
                           seed=3, hooks=hooks)
    assert [r.episode for r in records] == [0, 1, 2, 3]
    assert [r.run for r in records] == [0, 0, 1, 1]
    starts = [e for e in recorder.events if e[0] in ("start", "end", "run")]
    assert starts == [("start", 0, 3), ("end", 0, 3), ("start", 1, 3), ("end", 1, 3), ("run", 0, 2),
                      ("start", 2, 3), ("end", 2, 3), ("start", 3, 3), ("end", 3, 3), ("run", 1, 4)]
    steps = [e for e in recorder.events if e[0] == "step"][:3]
    assert steps == [("step", 1, 0.0), ("step", 2, 50.0), ("step", 3, 100.0)]


def test_step_every_thins_the_step_calls(pick_env):
    class Every2(Recorder):
        step_every = 2

    recorder = Every2()
    run_episode(pick_env, make_agent(FirstJob, pick_env), hooks=HookList(recorder))
    assert [e[1] for e in recorder.events if e[0] == "step"] == [2]


def test_a_classic_agent_records_no_loss(tmp_path):
    env = SchedulingEnv(workload_file=three_jobs(tmp_path), platform_file=None,
                        homogeneous_procs=2, selection=["sjf"])
    agent = make_agent(ClassicAgent, env, policy="sjf")
    record, actions = run_episode(env, agent, seed=0)
    assert math.isnan(record.loss) and set(actions.actions) == {0}
    assert record.mean_bounded_slowdown == pytest.approx((1 + 1 + 5) / 3)  # sjf: job 3 waits too


def test_an_episode_without_a_choice_ends_at_reset(tmp_path):
    path = tmp_path / "big.swf"
    path.write_text("; MaxProcs: 2\n1 0 -1 10 8 -1 -1 8 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
    env = SchedulingEnv(workload_file=str(path), platform_file=None, homogeneous_procs=2,
                        selection=["fcfs"])
    agent = make_agent(FirstJob, env)
    record, actions = run_episode(env, agent, seed=0)
    assert record.steps == 0 and actions.actions == [] and record.nb_jobs == 1  # rejected
    assert agent.calls["decide"] == 0 and agent.calls["end"] == 1


def test_loop_accepts_a_wrapped_environment(pick_env):
    import gymnasium

    wrapped = gymnasium.wrappers.RecordEpisodeStatistics(pick_env)
    assert isinstance(wrapped.observation_space, spaces.Box)
    record, _ = run_episode(wrapped, make_agent(FirstJob, pick_env), seed=0)
    assert record.makespan_s == 100.0
