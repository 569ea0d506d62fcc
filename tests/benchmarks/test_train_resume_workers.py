"""benchmarks/train.py --num-envs K / --workers N resumes an interrupted run (the distributed PPO
learner's state in OUT.resume): with --max-steps the resumed run ends with the uninterrupted run's
model and logs, as a single-process run does (test_train_resume.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks import train, train_resume
from benchmarks.train_workers import ProtocolEpisodes, TrainTask
from hdrm.agents.checkpoint import read_checkpoint
from hdrm.distributed.learners import EndedEpisode, ResumeHandle, WorkerPlan, train_with_workers
from hdrm.errors import ConfigError

from .test_compare import tiny_settings, traces  # noqa: F401 (fixture)
from .test_train_resume import QUIET, _interrupt_at_episode, _rows, _tensors

CALLS: list[tuple] = []



def _no_resume_learner(*args):
    """A distributed learner without a ``resume`` argument (as Ape-X's)."""
    CALLS.append(args)
    return "ran"


def _settings(traces: Path, out: Path, **kw) -> train.TrainSettings:
    return tiny_settings(traces, out, **{"max_steps": 560, **kw})


def _check_resumes_exactly(traces: Path, tmp_path: Path, monkeypatch, cut_at: int,
                           pending: int = 0, **kw) -> None:
    """An uninterrupted run, then one stopped (Ctrl-C) right after episode ``cut_at`` is logged
    and rerun: the same final model, optimizer and logs (wall times aside); the state held
    ``pending`` episodes still to be logged."""
    monkeypatch.setattr(train_resume, "EVERY_S", 0.0)  # written at every validation
    whole = _settings(traces, tmp_path / "whole.pt", **kw)
    train.train(whole, **QUIET)
    cut = _settings(traces, tmp_path / "cut.pt", **kw)
    with monkeypatch.context() as patch:
        _interrupt_at_episode(patch, cut_at)
        with pytest.raises(KeyboardInterrupt):
            train.train(cut, **QUIET)
    state = train_resume.resume_path(cut.out)
    saved = train_resume.read(state)
    assert saved["distributed"] is not None and saved["counters"]["episode"] == cut_at - 1
    assert len(saved["distributed"]["pending"]) == pending
    slots = [slot for c in saved["distributed"]["collectors"] for slot in c["slots"]]
    assert any(slot["actions"] for slot in slots)  # an episode under way, replayed on resume
    echoed: list[str] = []
    result = train.train(cut, echo=echoed.append)
    assert echoed[0].startswith(f"resuming from {state}: episode {cut_at - 1}, ")
    assert not state.exists()
    a, b = read_checkpoint(whole.out), read_checkpoint(cut.out)
    fig_a, fig_b = a["options"]["training"], b["options"]["training"]
    assert fig_b["final"] is True and fig_b["env_steps"] == fig_a["env_steps"] == result.env_steps
    assert fig_b["distributed"] == fig_a["distributed"]
    for part in ("model_state_dict", "optimizer_state_dict"):
        flat_a, flat_b = _tensors(a[part]), _tensors(b[part])
        assert flat_a.keys() == flat_b.keys() and flat_a
        assert all(torch.equal(flat_a[k], flat_b[k]) for k in flat_a), part
    logs = Path(cut.log_dir)
    for log in ("episodes.csv", "validation.csv"):
        assert _rows(logs / log) == _rows(Path(whole.log_dir) / log), log
    assert len(_rows(logs / "validation.csv")) > cut_at  # validations on both sides of the cut


@pytest.mark.parametrize("cut_at, pending", [(2, 1), (3, 0), (6, 1)])
def test_num_envs_run_resumes_to_the_uninterrupted_model_and_logs(traces, tmp_path,
                                                                  monkeypatch, cut_at, pending):
    # episodes 1 and 2 end in the same rollout: cut at 2, the state (at the validation of
    # episode 1) holds episode 2 still to be logged
    _check_resumes_exactly(traces, tmp_path, monkeypatch, cut_at, pending, num_envs=2,
                           max_steps=1200)


@pytest.fixture(scope="module")
def ray():
    """One local Ray of 2 CPUs for the module (as tests/distributed/test_ppo.py's): the runs
    join it instead of starting their own."""
    pytest.importorskip("ray")
    from hdrm.distributed import ray_backend

    with ray_backend.connect(None, num_cpus=2) as module:
        yield module


def test_rollout_workers_run_resumes_to_the_uninterrupted_model_and_logs(ray, traces, tmp_path,
                                                                         monkeypatch):
    _check_resumes_exactly(traces, tmp_path, monkeypatch, 4, workers=2, max_steps=800)


def test_an_episode_under_way_is_drawn_and_replayed_as_it_was(traces):
    s = _settings(traces, Path("unused.pt"), load_factors=(1.0, 2.0))
    task = TrainTask(s, train.agent_config(s), np.array([0, 20, 40]))
    env, again = task.make_env(0), task.make_env(0)
    assert isinstance(env, ProtocolEpisodes)
    env.reset(seed=5)
    obs, info = env.reset()  # the second episode of the stream
    drawn = (env.start, env.factor)
    saved = env.resume_state()
    for _ in range(3):
        obs, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    replayed, again_info = again.load_resume_state(saved)
    assert (again.start, again.factor) == drawn
    for _ in range(3):
        replayed, _, _, _, again_info = again.step(
            int(np.flatnonzero(again_info["action_mask"])[0]))
    assert np.array_equal(replayed, obs) and np.array_equal(again_info["action_mask"],
                                                            info["action_mask"])
    env.reset(), again.reset()
    assert (again.start, again.factor) == (env.start, env.factor)  # the stream goes on alike


def test_an_ended_episode_record_round_trips():
    episode = EndedEpisode(1, 3, -2.5, {"start": 40, "factor": 1.0, "value": 3.5}, [0.0, 1.0],
                           [2, 0], [{"loss": 0.25}], 0.5, True)
    assert EndedEpisode.from_record(episode.record()) == episode


def test_a_learner_that_cannot_resume_refuses_a_saved_state(monkeypatch):
    from hdrm.distributed import learners

    where = "tests.benchmarks.test_train_resume_workers:_no_resume_learner"
    monkeypatch.setattr(learners, "route", lambda agent: where)
    CALLS.clear()
    handle = ResumeHandle()
    assert train_with_workers(None, None, WorkerPlan(), print, resume=handle) == "ran"
    assert handle.capture is None  # no state to save: train.py writes none
    with pytest.raises(ConfigError, match=rf"^{where}".replace(".", r"\.") +
                       " cannot continue from a saved state; start anew$"):
        train_with_workers(None, None, WorkerPlan(), print, resume=ResumeHandle(saved={}))
    assert len(CALLS) == 1
