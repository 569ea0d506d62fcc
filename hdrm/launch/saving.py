"""Saving a training launch so that an interruption loses nothing, and resuming it.

:class:`Saver` keeps a snapshot of the agent taken at the end of every episode (weights,
optimizer state, random generators, the environment's generator and episode counter) and writes
it as a checkpoint:

* every :attr:`SavePolicy.every_episodes` episodes and, at the end of the first episode after
  :attr:`SavePolicy.every_minutes` minutes since the last save;
* at the end of each run of ``--nbruns`` and at the end of the launch;
* when the launch is stopped (Ctrl-C, SIGTERM) or fails: the snapshot of the last *completed*
  episode is written, so the episode under way is played again on resume, from the same state.

The checkpoint's ``progress`` records the next episode number, the plan (episodes in all) and
whether the launch finished; :func:`resume` puts a training launch back where an unfinished one
stopped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping

from hdrm.errors import ConfigError
from hdrm.launch.experiment import Experiment
from hdrm.launch.loop import EpisodeActions, EpisodeRecord, Hooks

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SavePolicy:
    """When a training launch saves its model (0 disables a criterion).

    Attributes:
        every_episodes: save after every this many episodes.
        every_minutes: save at the end of the first episode this many minutes after the last save.
    """

    every_episodes: int = 10
    every_minutes: float = 10.0

    def describe(self) -> str:
        """``"every 10 episodes and 10 min"`` (or what is enabled)."""
        parts = []
        if self.every_episodes:
            parts.append(f"{self.every_episodes} episodes")
        if self.every_minutes:
            parts.append(f"{self.every_minutes:g} min")
        return "every " + " and ".join(parts) if parts else "at the end only"


def env_state(env: Any) -> dict[str, Any]:
    """The environment's random generator and episode counter (what its next reset draws from)."""
    base = env.unwrapped
    return {"np_random": dict(base.np_random.bit_generator.state),
            "episode": int(getattr(base, "_episode", 0))}


def restore_env_state(env: Any, state: Mapping[str, Any]) -> None:
    """Put back what :func:`env_state` took."""
    import numpy as np

    base = env.unwrapped
    generator = np.random.default_rng()
    generator.bit_generator.state = dict(state["np_random"])
    base.np_random = generator
    if hasattr(base, "_episode"):
        base._episode = int(state["episode"])


class Saver(Hooks):
    """Snapshots the agent after every episode and writes checkpoints (see the module docstring).

    Args:
        exp: the experiment (its agent, environment and options).
        path: the checkpoint file.
        policy: when to save periodically.
        planned: the episodes of the launch in all.
        start: the first episode of this launch (a resumed one starts later).
        shield: a context manager factory holding stop signals back during a write.
        clock: seconds, for the time criterion (``time.monotonic``).
    """

    def __init__(self, exp: Experiment, path: str | Path, policy: SavePolicy, planned: int,
                 start: int = 0, shield: Callable[[], ContextManager[Any]] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        from hdrm.agents import checkpoint, resume  # torch: only with a model

        self._checkpoint, self._resume = checkpoint, resume
        self.exp = exp
        self.path = Path(path)
        self.policy = policy
        self.planned = planned
        self.shield = shield
        self.clock = clock
        self.saves = 0
        self.saved_episode: int | None = None
        self.reason = ""
        self._last_save = clock()
        self._snap = self._take(start)

    def _take(self, done: int) -> tuple[dict[str, Any], dict[str, Any]]:
        agent = self.exp.agent
        progress = {
            "episode": done,
            "planned": self.planned,
            "finished": False,
            "agent": self._resume.agent_resume_state(agent),
            "global_rng": self._resume.global_rng_state(),
            "env": env_state(self.exp.env) if done > 0 else None,
        }
        return self._checkpoint.snapshot(agent), progress

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        """Snapshot the agent; write the checkpoint when the policy says it is time."""
        done = record.episode + 1
        self._snap = self._take(done)
        every, minutes = self.policy.every_episodes, self.policy.every_minutes
        if done >= self.planned:  # the launcher's final save follows
            return
        if every and done % every == 0:
            self.write(f"every {every} episodes")
        elif minutes and self.clock() - self._last_save >= minutes * 60:
            self.write(f"{minutes:g} min since the last save")

    def run_ended(self, run: int, records: list[EpisodeRecord]) -> None:
        """Write the checkpoint at the end of each run (HDeepRM's behaviour)."""
        done = self._snap[1]["episode"]
        if done < self.planned and self.saved_episode != done:  # the last run: the final save
            self.write(f"end of run {run}")

    def write(self, reason: str, finished: bool = False) -> Path:
        """Write the last snapshot now (shielded from stop signals); returns the file."""
        state, progress = self._snap
        # an evaluation has nothing to resume: its checkpoint never restarts a training midway
        finished = finished or not self.exp.training
        progress = {**progress, "finished": finished, "reason": reason}
        if self.shield is not None:
            with self.shield():
                self._checkpoint.save_snapshot(state, self.path, self.exp.options.to_dict(), progress)
        else:
            self._checkpoint.save_snapshot(state, self.path, self.exp.options.to_dict(), progress)
        self.saves += 1
        self.saved_episode = progress["episode"]
        self.reason = reason
        self._last_save = self.clock()
        logger.info("saved %s after episode %d (%s)", self.path, progress["episode"], reason)
        return self.path


def resume(exp: Experiment, checkpoint: Mapping[str, Any], path: str, planned: int) -> int:
    """Put a training launch back where the unfinished launch of ``checkpoint`` stopped.

    Restores the agent's and the process's random generators and the environment's generator and
    episode counter. Nothing is restored for a finished launch's checkpoint, an old checkpoint,
    or one saved before its first episode ended: the launch then starts at episode 0.

    Returns:
        The first episode to play.

    Raises:
        ConfigError: the checkpoint has already played ``planned`` episodes or more.
    """
    from hdrm.agents.resume import restore_agent_resume_state, restore_global_rng

    progress = checkpoint.get("progress") or {}
    start = int(progress.get("episode", 0))
    if progress.get("finished", True) or start == 0 or progress.get("env") is None:
        return 0
    if start >= planned:
        raise ConfigError(
            f"--inmodel {path}: its unfinished training already played {start} episodes, and "
            f"this launch plans {planned}; raise --episodes or --nbruns to train further"
        )
    restore_agent_resume_state(exp.agent, progress.get("agent", {}))
    restore_global_rng(progress.get("global_rng", {}))
    restore_env_state(exp.env, progress["env"])
    return start


__all__ = ["SavePolicy", "Saver", "env_state", "restore_env_state", "resume"]
