"""episodes.csv after every episode, a bounded actions.csv, the engine outputs, TensorBoard."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from hdrm.launch import logs
from hdrm.launch.logs import RunLog, TensorBoardHook, tensorboard_writer
from hdrm.launch.loop import EpisodeActions, EpisodeRecord
from hdrm.results.learning import read_actions_csv, read_episodes_csv


def record(episode: int, loss: float = 0.25, **stats: float) -> EpisodeRecord:
    return EpisodeRecord(episode=episode, run=0, steps=3, return_=-2.0 - episode, objective=2.0 + episode,
                         loss=loss, makespan_s=7200.0, mean_waiting_s=30.0,
                         mean_bounded_slowdown=1.5, energy_j=3e6, nb_jobs=3, wall_s=0.1,
                         stats=dict(stats))


def played(episode: int, n: int) -> EpisodeActions:
    return EpisodeActions(episode, [float(10 * k) for k in range(n)], [k % 3 for k in range(n)])


def test_episodes_csv_is_rewritten_after_each_episode(tmp_path):
    log = RunLog(tmp_path / "out", ["a", "b", "void"])
    log.episode_ended(record(0, loss=math.nan), played(0, 2))
    first = read_episodes_csv(log.episodes_path)
    assert first.episode.tolist() == [0] and math.isnan(first.loss[0])
    log.episode_ended(record(1), played(1, 2))
    second = read_episodes_csv(log.episodes_path)
    assert second.returns.tolist() == [-2.0, -3.0] and second.loss[1] == 0.25
    assert second.makespan_s.tolist() == [7200.0, 7200.0] and second.energy_j[0] == 3e6


def test_actions_keep_every_episode_within_the_limit_then_the_last_only(tmp_path):
    log = RunLog(tmp_path, ["a", "b", "void"], actions_limit=5)
    log.episode_ended(record(0), played(0, 2))
    log.episode_ended(record(1), played(1, 3))
    rows = log.action_rows()
    assert [(r["episode"], r["step"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]
    assert [r["action_name"] for r in rows] == ["a", "b", "a", "b", "void"]
    log.episode_ended(record(2), played(2, 1))  # 6 > 5: from now on only the last episode
    assert [(r["episode"], r["step"]) for r in log.action_rows()] == [(2, 0)]
    log.episode_ended(record(3), played(3, 1))
    assert [r["episode"] for r in log.action_rows()] == [3]
    log.episode_ended(record(4), played(4, 7))  # a long episode is kept whole
    assert len(log.action_rows()) == 7


def played_env():
    """A 5-job environment played to the end of its episode (always the first action)."""
    from hdrm.env import SchedulingEnv

    env = SchedulingEnv(nb_jobs=5, observation="minimal")
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(0)
    return env


def test_finish_writes_actions_and_the_engine_outputs(tmp_path):
    env = played_env()
    log = RunLog(tmp_path, env.action_names)
    assert log.finish(env) == {}  # nothing to write before an episode
    log.episode_ended(record(0), played(0, 2))
    paths = log.finish(env)
    assert sorted(paths) == ["actions", "episodes", "jobs", "overutilizations", "schedule", "timeline"]
    actions = read_actions_csv(paths["actions"])
    assert actions.action_name == ["random-random", "random-high_gflops"]
    assert actions.time_s.tolist() == [0.0, 10.0]
    assert len(paths["jobs"].read_text().splitlines()) == 1 + 5


def test_finish_stopped_midway_keeps_the_previous_files_all_of_them(tmp_path, monkeypatch):
    # actions.csv and the engine outputs are published together: a launch stopped while writing
    # out_jobs.csv leaves the previous launch's actions.csv too (before: the new actions.csv
    # beside the previous out_jobs.csv)
    env = played_env()
    log = RunLog(tmp_path, env.action_names)
    log.episode_ended(record(0), played(0, 2))
    log.finish(env)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def stop(*_args, **_kwargs):
        raise KeyboardInterrupt

    log.episode_ended(record(1), played(1, 3))
    monkeypatch.setattr(logs, "write_outputs", stop)
    with pytest.raises(KeyboardInterrupt):
        log.finish(env)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert set(after) == set(before)  # no temporary file left
    assert after["actions.csv"] == before["actions.csv"]
    assert after["out_jobs.csv"] == before["out_jobs.csv"]


def test_finish_copies_batsims_files_in_the_same_set(tmp_path, monkeypatch):
    # engine batsim: Batsim's own out_jobs.csv replaces the one written from the records, in the
    # same publication (it was copied in place afterwards: a stop midway cut it short)
    env = played_env()
    batsim = tmp_path / "batsim"
    batsim.mkdir()
    (batsim / "out_jobs.csv").write_text("batsim's jobs\n")
    (batsim / "batsim.log").write_text("log\n")
    copies = {"jobs": batsim / "out_jobs.csv", "batsim_log": batsim / "batsim.log"}
    out = tmp_path / "out"
    log = RunLog(out, env.action_names)
    log.episode_ended(record(0), played(0, 2))
    paths = log.finish(env, copies)
    assert paths["jobs"] == out / "out_jobs.csv" and paths["batsim_log"] == out / "batsim.log"
    assert paths["jobs"].read_text() == "batsim's jobs\n"
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def stop(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(logs.shutil, "copyfile", stop)
    log.episode_ended(record(1), played(1, 3))
    with pytest.raises(KeyboardInterrupt):
        log.finish(env, copies)
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {k: v for k, v in after.items() if k != "episodes.csv"} == \
        {k: v for k, v in before.items() if k != "episodes.csv"}


class FakeWriter:
    def __init__(self) -> None:
        self.scalars: list[tuple[str, float, int]] = []
        self.flushed = 0
        self.closed = False

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.scalars.append((tag, value, step))

    def flush(self) -> None:
        self.flushed += 1

    def close(self) -> None:
        self.closed = True


def test_tensorboard_hook_writes_figures_and_statistics():
    writer = FakeWriter()
    hook = TensorBoardHook(writer)
    hook.episode_ended(record(2, approx_kl=0.01, policy_loss=-0.5), played(2, 1))
    hook.episode_ended(record(3, loss=math.nan), played(3, 1))
    hook.close()
    got = {(tag, step): value for tag, value, step in writer.scalars}
    assert got[("episode/return", 2)] == -4.0 and got[("episode/objective", 3)] == 5.0
    assert got[("episode/makespan_h", 2)] == 2.0 and got[("episode/energy_mj", 2)] == 3.0
    assert got[("train/approx_kl", 2)] == 0.01 and got[("train/policy_loss", 2)] == -0.5
    assert ("episode/loss", 3) not in got  # nan is skipped
    assert writer.flushed == 2 and writer.closed


def test_tensorboard_writer_never_imports_torch(tmp_path):
    import subprocess

    code = ("import sys; from hdrm.launch.logs import tensorboard_writer; "
            f"assert tensorboard_writer({str(tmp_path)!r}) is None; "
            "assert 'torch' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout == "ok\n", out.stderr


def test_tensorboard_writer_needs_the_tensorboard_package(monkeypatch, tmp_path):
    pytest.importorskip("torch")
    monkeypatch.setattr(logs.importlib.util, "find_spec", lambda name: None)
    assert tensorboard_writer(tmp_path) is None
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="tensorboard not installed")
def test_tensorboard_writer_writes_event_files(tmp_path):
    import torch  # noqa: F401  (the agent brings torch along)

    writer = tensorboard_writer(tmp_path / "tb")
    TensorBoardHook(writer).episode_ended(record(0), played(0, 1))
    writer.close()
    assert any(p.name.startswith("events.out.tfevents") for p in (tmp_path / "tb").iterdir())
