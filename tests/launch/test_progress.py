"""Progress on stderr: one flushed line per episode, and one every few seconds in a long episode."""

from __future__ import annotations

import io

from hdrm.launch.loop import EpisodeActions, EpisodeRecord
from hdrm.launch.progress import BarProgress, LineProgress, progress_hook


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Stream(io.StringIO):
    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty
        self.flushes = 0

    def isatty(self) -> bool:
        return self.tty

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


def record(episode: int) -> EpisodeRecord:
    return EpisodeRecord(episode=episode, run=0, steps=466, return_=-1.0334812, objective=1.0334812,
                         loss=float("nan"), makespan_s=1.0, mean_waiting_s=0.0,
                         mean_bounded_slowdown=1.0, energy_j=1.0, nb_jobs=468, wall_s=12.345)


def test_a_line_per_episode_and_one_every_interval_within_it():
    clock, stream = Clock(), Stream()
    lines = LineProgress(30, "hdeeprm-launch", stream, interval_s=10.0, clock=clock)
    lines.episode_started(3, 468)
    clock.now += 9.9
    lines.stepped(64, {"jobs_done": 10})  # under the interval: nothing
    clock.now += 0.2
    lines.stepped(128, {"jobs_done": 40})
    clock.now += 5
    lines.stepped(192, {"jobs_done": 50})  # 5 s after the last line: nothing
    lines.episode_ended(record(3), EpisodeActions(3, [], []))
    assert stream.getvalue() == (
        "hdeeprm-launch: episode 3 (4/30): 128 decisions, 40/468 jobs done, 10 s\n"
        "hdeeprm-launch: episode 3 (4/30): return -1.03348, 466 decisions, 12.35 s\n")
    assert stream.flushes >= 2  # each line is flushed as it is printed


def test_bars_on_a_terminal_lines_elsewhere_nothing_when_quiet():
    assert isinstance(progress_hook(5, "p", False, stream=Stream(tty=True)), BarProgress)
    assert isinstance(progress_hook(5, "p", False, stream=Stream(tty=False)), LineProgress)
    assert progress_hook(5, "p", True, stream=Stream(tty=False)) is None
