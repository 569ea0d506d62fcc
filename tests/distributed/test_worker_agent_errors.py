"""An exception of the user's agent.py played by rollout workers (``hdeeprm-launch --workers N``
on a local Ray, or ``--num-envs K`` in this process) is the same one line as without workers:
the agent's file, line and method and the exception, exit status 1, and the outputs of what was
done so far, the episodes the failing worker had seen end included. (It was 'distributed PPO: a
rollout worker failed (RayTaskError(ZeroDivisionError): ray::RolloutWorker.collect() (pid=...'
with exit status 2 and Ray's frames; an Ape-X actor's was Ray's traceback.)"""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import pytest

from hdrm.launch.agent_failed import AgentFailed, agent_call, describe
from hdrm.launch.loop import EpisodeActions
from hdrm.launcher import main

from .ppo_helpers import write_options
from .test_apex_launch import AGENT as DQN_AGENT
from .test_apex_launch import write_options as apex_options

HINT = "(run with --traceback for the full trace)"
PPO_CRASH = '''
from hdrm.agents.ppo import PPOAgent


class Crash(PPOAgent):
    """PPO that fails in {method} ({when})."""

    def decide_batch(self, observations, masks):
        self.calls = getattr(self, "calls", 0) + 1
        if "{method}" == "decide_batch" and self.calls > 30:
            return self.calls // 0
        return super().decide_batch(observations, masks)

    def update(self, batch):
        if "{method}" == "update":
            raise RuntimeError("no\\nupdate")
        return super().update(batch)
'''
DQN_CRASH = '''
from hdrm.agents.dqn import DQNAgent


class Crash(DQNAgent):
    def decide(self, observation, mask):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 30:
            raise ValueError("boom")
        return super().decide(observation, mask)
'''


def launch(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error" in line]


def crash_agent(folder: Path, source: str, method: str = "") -> Path:
    path = folder / "agent.py"
    path.write_text(source.format(method=method, when="its 31st call"), encoding="utf-8")
    return path


def check_outputs(outdir: Path, complete: int) -> None:
    """episodes.csv has the complete episodes; actions.csv those and the one under way."""
    assert [int(r["episode"]) for r in rows(outdir / "episodes.csv")] == list(range(complete))
    played = {int(r["episode"]) for r in rows(outdir / "actions.csv")}
    assert played == set(range(complete + 1))
    assert (outdir / "model.pt").is_file() and not list(outdir.glob("*.tmp*"))


@pytest.mark.parametrize("flag", [("--workers", "1"), ("--num-envs", "2")])
def test_an_error_in_a_workers_decide_batch_is_one_line(request, tmp_path, capsys, monkeypatch,
                                                        flag):
    """Environments of 20 decisions, 16-step rollouts: one worker fails at its 31st decision,
    in the second episode, after the first ended (reported, as the loop without workers
    would). Two environments in this process fail at their 31st common step, both in their
    second episode: the two first episodes are reported."""
    if flag[0] == "--workers":
        request.getfixturevalue("ray")
    monkeypatch.delenv("HDRM_TRACEBACK", raising=False)
    agent = crash_agent(tmp_path, PPO_CRASH, "decide_batch")
    outdir = tmp_path / "out"
    status, stdout, stderr = launch(capsys, agent, write_options(tmp_path, episodes=4),
                                    *flag, "--outdir", outdir, "--quiet")
    complete = 1 if flag[0] == "--workers" else 2
    assert status == 1 and stdout == "" and "Traceback" not in stderr
    jobs = len(rows(outdir / "out_jobs.csv"))
    assert errors(stderr) == [
        f"hdeeprm-launch: error: {agent}:11 in decide_batch: ZeroDivisionError: integer "
        f"division or modulo by zero; outputs of what was done so far in {outdir}: actions.csv, "
        "episodes.csv, model.pt, out_jobs.csv, out_schedule.csv, out_timeline.csv, "
        f"overutilizations.json ({jobs} jobs ended, {complete} episodes complete); model saved "
        f"to {outdir / 'model.pt'} {HINT}"]
    assert 0 < jobs < 20  # the result so far of the episode under way
    check_outputs(outdir, complete)
    under_way = [r for r in rows(outdir / "actions.csv") if int(r["episode"]) == complete]
    assert len(under_way) == 10


def test_an_error_in_the_learners_update_names_it(ray, tmp_path, capsys, monkeypatch):
    """The learner's update runs in this process between rollouts: the first one fails, before
    any episode ended (a 16-step rollout of 20-decision episodes; the workers keep the rollout's
    decisions, so only the model is written)."""
    monkeypatch.delenv("HDRM_TRACEBACK", raising=False)
    agent = crash_agent(tmp_path, PPO_CRASH, "update")
    outdir = tmp_path / "out"
    status, _, stderr = launch(capsys, agent, write_options(tmp_path), "--workers", 1,
                               "--outdir", outdir, "--quiet")
    assert status == 1
    assert errors(stderr) == [
        f"hdeeprm-launch: error: {agent}:16 in update: RuntimeError: no update; outputs of what "
        f"was done so far in {outdir}: model.pt (0 jobs ended, 0 episodes complete); model saved "
        f"to {outdir / 'model.pt'} {HINT}"]


def test_traceback_prints_the_workers_trace(ray, tmp_path, capsys):
    agent = crash_agent(tmp_path, PPO_CRASH, "decide_batch")
    status, _, stderr = launch(capsys, agent, write_options(tmp_path), "--workers", 1,
                               "--outdir", tmp_path / "out", "--quiet", "--traceback")
    assert status == 1
    lines = stderr.splitlines()
    first = lines.index("Traceback (most recent call last):")
    assert f'  File "{agent}", line 11, in decide_batch' in lines[first:]
    assert "ZeroDivisionError: integer division or modulo by zero" in lines
    assert "ray" not in "\n".join(lines[first:-1]).lower()  # the worker's frames, not Ray's
    assert lines[-1].startswith(f"hdeeprm-launch: error: {agent}:11 in decide_batch: ")
    assert HINT not in stderr


def test_an_error_in_an_apex_actors_agent_is_one_line(ray, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HDRM_TRACEBACK", raising=False)
    agent = crash_agent(tmp_path, DQN_CRASH)
    outdir = tmp_path / "out"
    status, _, stderr = launch(capsys, agent, apex_options(tmp_path), "--workers", 1,
                               "--outdir", outdir, "--quiet")
    assert status == 1 and "Traceback" not in stderr
    (line,) = errors(stderr)
    assert line.startswith(f"hdeeprm-launch: error: {agent}:9 in decide: ValueError: boom; "
                           f"outputs of what was done so far in {outdir}: actions.csv, ")
    assert line.endswith(f"; model saved to {outdir / 'model.pt'} {HINT}")


class _Raises:
    def decide(self, observation, mask):
        return {}["missing"]


def test_agent_failed_crosses_a_process_boundary_with_its_frames():
    """Pickled (as Ray sends it), it keeps the agent's frame, type, text, trace and extras."""
    with pytest.raises(AgentFailed) as caught:
        agent_call(_Raises(), "decide", lambda: EpisodeActions(0, [1.0], [2]), None, None,
                   end=lambda: ("result", ["ended"]))
    copy = pickle.loads(pickle.dumps(caught.value))
    here = Path(__file__)
    line = _Raises.decide.__code__.co_firstlineno + 1
    for failed in (caught.value, copy):
        assert describe(failed, here) == f"{here}:{line} in decide: KeyError: 'missing'"
        assert failed.partial == EpisodeActions(0, [1.0], [2]) and failed.method == "decide"
        assert (failed.end, failed.ended) == ("result", ["ended"])
        assert "KeyError: 'missing'" in failed.trace
    assert copy.error is None and isinstance(caught.value.error, KeyError)
    # another file than the agent's: the deepest frame, named in full
    assert describe(copy, "elsewhere.py").startswith(f"{here}:{line} in decide: ")


def test_an_apex_actors_start_episode_failure_carries_no_decision_of_the_episode_before(tmp_path):
    """start_episode of the second episode raises: the episode under way has no decision yet (it
    carried the first episode's, which the launcher would have written as the new one's)."""
    from hdrm.distributed.apex_actor import ActorSpec, ApexActor, TaskEpisodes
    from hdrm.launch.workers import LaunchTask

    task = LaunchTask(apex_options(tmp_path), DQN_AGENT, seed=5)
    actor = ApexActor(0, ActorSpec(TaskEpisodes(task), task.make_agent, seed=5), lambda b: None)
    ended = []
    while not ended:
        ended = actor.collect(None, -1, 1)["ended"]  # one decision a call: stops at the end
    assert len(ended[0]["actions"]) > 0

    def broken() -> None:
        raise RuntimeError("no start")

    actor.agent.start_episode = broken
    with pytest.raises(AgentFailed) as caught:
        actor.collect(None, -1, 1)
    assert caught.value.method == "start_episode"
    assert (caught.value.partial.times_s, caught.value.partial.actions) == ([], [])
