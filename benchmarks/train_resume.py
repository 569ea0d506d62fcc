"""``benchmarks/train.py``'s resume state: an interrupted training continues where it stopped.

At a validation ``train.py`` writes ``<out>.resume`` beside its model, whole or not at all
(:func:`hdrm.durable.replacing`): the learner's weights and optimizer state, its random
generators, counters and buffers (:mod:`hdrm.agents.resume`; a DQN's replay buffer), the
process-wide generators, the run's episode generator, the counters (episodes, environment steps,
wall time, validations, rows logged), the validator's best score, where it was reached and its
weights, the validation guard's reference and the warm start's figures, and with rollout
workers or ``--num-envs`` > 1 the distributed PPO learner's state
(:class:`hdrm.distributed.learners.ResumeHandle`). A validation is the
point to save at: the last episode has ended (PPO's rollout buffer may hold part of a rollout: it
is kept; a DQN's n-step steps and pending decision are dropped at every episode's end).
It is written when the validation improved (so the state is never older than the model at
``--out``) and otherwise once :data:`EVERY_S` seconds have passed since the last write: a PPO
state is ~17.5 MB with the benchmark's rollout, a DQN's holds its replay buffer, compressed and
without the next observations that repeat a later transition's (:mod:`hdrm.agents.replay_state`:
12.6 MB and ~0.4 s when the 50,000 transitions of a 128-job window are filled, 424 MB and ~1 s
before).

Rerunning the same command then continues from that state; the logs are cut back to the rows
the state had logged and appended to, and the model at ``--out`` is only replaced by a better
one. With ``--max-steps`` on the CPU the resumed run's final model and validation log equal the
uninterrupted run's (tests/benchmarks/test_train_resume.py; with rollout workers too,
tests/benchmarks/test_train_resume_workers.py, unless Ray restarted a worker during the run). The
state is removed when the run ends normally; ``--fresh`` discards it and restarts. DQN runs with
``--workers`` (Ape-X) write none and restart: the unfinished model such a run left at ``--out`` is
first renamed ``STEM.interrupted.pt`` (:func:`keep_unfinished_aside`), so the new run's first
validation does not replace a better model.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hdrm.durable import fsync_folder, replacing
from hdrm.errors import ConfigError

if TYPE_CHECKING:
    from benchmarks.train import _Run
    from benchmarks.train_settings import TrainSettings

#: At most this long (seconds of training) between two writes of the state, unless a
#: validation improves (then it is written at once).
EVERY_S = 60.0
#: The resume state's format.
FORMAT = 2
#: Settings that may differ between the interrupted run and its rerun (they change no figure).
NOT_COMPARED = ("command", "fresh")
#: Agent attributes holding a buffer saved with its own ``resume_state`` (a DQN's replay).
BUFFERS = ("replay",)


def resume_path(out: str | Path) -> Path:
    """``models/NAME.pt`` -> ``models/NAME.pt.resume``."""
    out = Path(out)
    return out.with_name(out.name + ".resume")


def settings_record(s: "TrainSettings") -> dict[str, Any]:
    """The settings a resumed run must share with the interrupted one, as plain values."""
    from hdrm.agents.checkpoint import plain

    return {k: plain(v) for k, v in dataclasses.asdict(s).items() if k not in NOT_COMPARED}


def check_same_settings(saved: dict[str, Any], s: "TrainSettings", path: Path) -> None:
    """Refuse a resume state written for other settings.

    Raises:
        ConfigError: one line naming the first option that differs and both values.
    """
    now = settings_record(s)
    for key in sorted(set(saved) | set(now)):
        if saved.get(key) != now.get(key):
            raise ConfigError(
                f"{path}: a resume state of other settings (--{key.replace('_', '-')} was "
                f"{saved.get(key)!r}, now {now.get(key)!r}); rerun the interrupted command, or "
                "give --fresh to discard the state and restart")


def capture(run: "_Run") -> dict[str, Any]:
    """Everything the rest of ``run`` depends on, as data ``torch.load(weights_only=True)``
    reads."""
    import torch

    from hdrm.agents.checkpoint import plain
    from hdrm.agents.resume import agent_resume_state, global_rng_state

    agent, v = run.agent, run.validate
    best = None if v.best_state is None else {"model": v.best_state[0],
                                               "optimizer": v.best_state[1]}
    buffers = {name: getattr(agent, name).resume_state() for name in BUFFERS
               if hasattr(getattr(agent, name, None), "resume_state")}
    return {
        "format": FORMAT, "settings": settings_record(run.s),
        "counters": {"episode": run.episode, "env_steps": run.env_steps,
                     "wall_s": run.wall_s(), "validations": run.validations,
                     "last_value": float(run.last_value)},
        "distributed": (None if run.learner_state.capture is None
                        else plain(run.learner_state.capture())),
        "log_rows": {"episodes": run.episodes_log.rows, "validation": run.val_log.rows},
        "run_rng": plain(dict(run.rng.bit_generator.state)),
        "global_rng": global_rng_state(),
        "agent": {"model": _cpu(agent.state_dict()),
                  "optimizer": _cpu(agent.optimizer_state_dict()),
                  "resume": agent_resume_state(agent), "buffers": buffers},
        "validator": {"best": v.best, "best_env_steps": v.best_env_steps, "best_state": best,
                      "ratios": list(v.ratios),
                      "guard": None if v.guard is None else v.guard.record()},
        "figures": plain({"imitation": run.imitation, "init": run.init}),
        "torch_version": str(torch.__version__),
    }


def _cpu(state: Any) -> Any:
    from hdrm.agents.devices import to_cpu

    return to_cpu(state)


def write(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` whole or not at all (the previous state stays otherwise)."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as scratch:
        torch.save(state, scratch)
    fsync_folder(path.parent)


def read(path: Path) -> dict[str, Any]:
    """The resume state at ``path``.

    Raises:
        ConfigError: not a readable resume state (one line; --fresh discards it).
    """
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for corrupt files
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{path}: not a readable resume state ({why}); give --fresh to "
                          "discard it and restart") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a resume state of this train.py (format "
                          f"{state.get('format') if isinstance(state, dict) else None}); give "
                          "--fresh to discard it and restart")
    return state


def restore(run: "_Run", state: dict[str, Any]) -> None:
    """Put ``state`` back into a freshly built ``run`` (same settings, checked before)."""
    import time

    from benchmarks.train_guard import Guard
    from hdrm.agents.resume import restore_agent_resume_state, restore_global_rng

    agent, v, a = run.agent, run.validate, state["agent"]
    agent.load_state_dict(a["model"])
    agent.load_optimizer_state_dict(a["optimizer"])
    restore_agent_resume_state(agent, a["resume"])
    for name, saved in a["buffers"].items():
        getattr(agent, name).load_resume_state(saved)
    restore_global_rng(state["global_rng"])
    run.rng.bit_generator.state = state["run_rng"]
    c = state["counters"]
    run.episode, run.env_steps, run.validations = (int(c["episode"]), int(c["env_steps"]),
                                                   int(c["validations"]))
    run.t0 = time.perf_counter() - float(c["wall_s"])
    run.last_value = float(c["last_value"])
    run.learner_state.saved = state["distributed"]
    sv = state["validator"]
    v.best, v.best_env_steps = float(sv["best"]), int(sv["best_env_steps"])
    v.ratios = tuple(float(r) for r in sv["ratios"])
    best = sv["best_state"]
    v.best_state = None if best is None else (best["model"], best["optimizer"])
    if sv["guard"] is not None and "traces" not in sv["guard"]:  # several traces' guards are
        v.guard = Guard(**sv["guard"])  # made again from their validation sequences, the same
    run.imitation, run.init = state["figures"]["imitation"], state["figures"]["init"]


def cut_log(path: Path, rows: int) -> int:
    """Keep the header and the first ``rows`` rows of the CSV log ``path`` (the rows an
    interrupted run wrote after its resume state are dropped); returns the rows kept."""
    if not path.is_file():
        return 0
    with path.open(newline="", encoding="utf-8") as handle:
        lines = list(csv.reader(handle))
    kept = lines[: rows + 1]
    with replacing(path) as scratch:
        with scratch.open("w", newline="", encoding="utf-8") as out:
            csv.writer(out).writerows(kept)
    return max(0, len(kept) - 1)


def remove(path: Path) -> None:
    """Remove the resume state (the run has ended normally)."""
    path.unlink(missing_ok=True)
    fsync_folder(path.parent)


def keep_unfinished_aside(out: str | Path) -> Path | None:
    """Rename an unfinished model at ``out`` (a best-so-far model whose run was stopped and left
    no resume state: a DQN run with rollout workers, or one of an older ``train.py``) to
    ``STEM.interrupted.pt`` (``STEM.interrupted-2.pt`` ... if taken) before a new run starts
    there, so the new run's first validation does not replace a better model; returns the new
    name, or None (no file, a final model, or not a checkpoint: left as it is)."""
    from hdrm.agents.checkpoint import read_checkpoint
    from hdrm.errors import AgentLoadError

    out = Path(out)
    if not out.is_file():
        return None
    try:
        training = read_checkpoint(out)["options"].get("training") or {}
    except (AgentLoadError, AttributeError):
        return None
    if training.get("final", True):
        return None
    target, k = out.with_name(f"{out.stem}.interrupted{out.suffix}"), 1
    while target.exists():
        k += 1
        target = out.with_name(f"{out.stem}.interrupted-{k}{out.suffix}")
    out.rename(target)
    return target


__all__ = ["capture", "check_same_settings", "cut_log", "keep_unfinished_aside", "read",
           "remove", "restore", "resume_path", "settings_record", "write"]


class CsvLog:
    """A CSV file written row by row (flushed, so progress can be followed).

    ``keep`` (a resumed run): the file's first ``keep`` rows are kept and the new rows appended
    (a missing file is started anew).
    """

    def __init__(self, path: Path, columns: tuple[str, ...], keep: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.rows = 0
        if keep is not None and path.is_file():
            self.rows = cut_log(path, keep)
            self.handle = path.open("a", newline="", encoding="utf-8")
            self.writer = csv.writer(self.handle)
            return
        self.handle = path.open("w", newline="", encoding="utf-8")
        self.writer = csv.writer(self.handle)
        self.writer.writerow(columns)

    def row(self, *values: Any) -> None:
        """Append one row."""
        self.writer.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in values])
        self.handle.flush()
        self.rows += 1

    def close(self) -> None:
        """Close the file."""
        self.handle.close()
