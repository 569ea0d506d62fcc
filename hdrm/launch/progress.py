"""Progress of a launch on stderr: tqdm bars on a terminal, plain lines otherwise.

When stderr is a terminal, two bars follow the episodes and the jobs of the current episode
(:class:`BarProgress`). When it is not (redirected to a file, a pipe, a batch system's log),
bars would print nothing useful until the end, so :class:`LineProgress` prints one flushed line
per episode and, during a long episode, one line every :attr:`LineProgress.interval_s` seconds.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Callable

from hdrm.launch.loop import EpisodeActions, EpisodeRecord, Hooks


class BarProgress(Hooks):
    """tqdm bars over the episodes and over the jobs and decisions of the current episode."""

    step_every = 64

    def __init__(self, total: int, initial: int = 0, stream: IO[str] | None = None) -> None:
        from tqdm import tqdm

        self.tqdm = tqdm
        self.stream = stream or sys.stderr
        self.episodes = tqdm(total=total, initial=initial, unit="episode", file=self.stream,
                             position=0)
        self.steps: Any = None

    def episode_started(self, episode: int, nb_jobs: int) -> None:
        self.steps = self.tqdm(total=nb_jobs, unit="job", desc=f"episode {episode}",
                               file=self.stream, position=1, leave=False)

    def stepped(self, steps: int, info: dict[str, Any]) -> None:
        self.steps.set_postfix_str(f"{steps} decisions", refresh=False)
        self.steps.update(info["jobs_done"] - self.steps.n)

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        self.steps.close()
        self.episodes.set_postfix_str(f"return {record.return_:.4g}", refresh=False)
        self.episodes.update(1)

    def close(self) -> None:
        """Close the bars."""
        if self.steps is not None:
            self.steps.close()
        self.episodes.close()


class LineProgress(Hooks):
    """One line per episode, and one every ``interval_s`` seconds within a long episode.

    Args:
        total: the episodes of the launch.
        prog: the program name that starts every line.
        stream: where to print (stderr).
        interval_s: seconds between two lines within an episode.
        clock: seconds (``time.monotonic``).
    """

    step_every = 64

    def __init__(self, total: int, prog: str, stream: IO[str] | None = None,
                 interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.prog = prog
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.clock = clock
        self.episode = 0
        self.nb_jobs = 0
        self._started = self._last = clock()

    def _print(self, text: str) -> None:
        print(f"{self.prog}: {text}", file=self.stream, flush=True)

    def episode_started(self, episode: int, nb_jobs: int) -> None:
        self.episode, self.nb_jobs = episode, nb_jobs
        self._started = self._last = self.clock()

    def stepped(self, steps: int, info: dict[str, Any]) -> None:
        now = self.clock()
        if now - self._last >= self.interval_s:
            self._last = now
            self._print(f"episode {self.episode} ({self.episode + 1}/{self.total}): {steps} decisions, "
                        f"{info['jobs_done']}/{self.nb_jobs} jobs done, {now - self._started:.0f} s")

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        self._print(f"episode {record.episode} ({record.episode + 1}/{self.total}): return "
                    f"{record.return_:.6g}, "
                    f"{record.steps} decisions, {record.wall_s:.2f} s")


def progress_hook(total: int, prog: str, quiet: bool, initial: int = 0,
                  stream: IO[str] | None = None) -> Hooks | None:
    """Bars on a terminal, lines otherwise, nothing with ``quiet``."""
    stream = stream or sys.stderr
    if quiet:
        return None
    if stream.isatty():
        return BarProgress(total, initial, stream)
    return LineProgress(total, prog, stream)


__all__ = ["BarProgress", "LineProgress", "progress_hook"]
