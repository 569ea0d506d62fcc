"""benchmarks/train.py resumes an interrupted run (benchmarks/train_resume.py): with --max-steps the
resumed run ends with the uninterrupted run's model and logs."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from benchmarks import train, train_resume
from hdrm.agents.checkpoint import read_checkpoint
from hdrm.errors import ConfigError

from .test_compare import tiny_settings, traces  # noqa: F401 (fixture)

TINY_DQN = {"params": {"learning_starts": 40, "batch_size": 16, "buffer_size": 150,
                       "target_update": 30, "epsilon_steps": 200}}
QUIET = {"echo": lambda *_: None}



def _settings(traces: Path, out: Path, learner: str, **kw) -> train.TrainSettings:
    extra = {"learner": "dqn", "agent_json": TINY_DQN} if learner == "dqn" else {}
    return tiny_settings(traces, out, **{"max_steps": 560, **extra, **kw})


def _interrupt_at_episode(monkeypatch, episode: int) -> None:
    """Ctrl-C right after episode ``episode`` is logged (before its validation)."""
    original = train.CsvLog.row

    def row(self, *values):
        original(self, *values)
        if self.handle.name.endswith("episodes.csv") and values[0] == episode:
            raise KeyboardInterrupt

    monkeypatch.setattr(train.CsvLog, "row", row)


def _stopped(s: train.TrainSettings, monkeypatch, episode: int) -> train.TrainSettings:
    """``s`` trained and stopped by Ctrl-C right after episode ``episode`` is logged."""
    with monkeypatch.context() as patch:
        _interrupt_at_episode(patch, episode)
        with pytest.raises(KeyboardInterrupt):
            train.train(s, **QUIET)
    return s


def _rows(path: Path, drop: str = "wall_s") -> list[list[str]]:
    """The rows of a log, the wall-time column left out (it is the only one that varies)."""
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    keep = [i for i, name in enumerate(rows[0]) if name != drop]
    return [[r[i] for i in keep] for r in rows]


@pytest.mark.parametrize("learner, extra, every_s", [
    ("ppo", {}, 0.0), ("dqn", {}, 0.0), ("ppo", {"validation_guard": 3.5}, 0.0),
    ("dqn", {}, float("inf"))], ids=["ppo", "dqn", "ppo-guard", "dqn-on-improvement"])
def test_an_interrupted_run_resumes_to_the_uninterrupted_model_and_logs(traces, tmp_path,
                                                                        monkeypatch, learner,
                                                                        extra, every_s):
    # every_s 0: the state is written at every validation; inf: only when one improves
    monkeypatch.setattr(train_resume, "EVERY_S", every_s)
    whole = _settings(traces, tmp_path / "whole.pt", learner, **extra)
    train.train(whole, **QUIET)
    cut = _settings(traces, tmp_path / "cut.pt", learner, **extra)
    with monkeypatch.context() as patch:
        _interrupt_at_episode(patch, 3)
        with pytest.raises(KeyboardInterrupt):
            train.train(cut, **QUIET)
    state = train_resume.resume_path(cut.out)
    assert state.is_file()
    assert read_checkpoint(cut.out)["options"]["training"]["final"] is False
    logs = Path(cut.log_dir)
    assert len(_rows(logs / "episodes.csv")) == 1 + 3  # episode 3 logged, not yet validated
    echoed: list[str] = []
    result = train.train(cut, echo=echoed.append)
    resumed_at = 2 if every_s == 0 else max(int(r[0]) for r in _rows(
        Path(whole.log_dir) / "validation.csv")[1:] if int(r[0]) <= 2 and r[3] == "1")
    assert every_s == 0 or resumed_at == 1  # DQN's 2nd validation did not improve: not written
    assert echoed[0].startswith(f"resuming from {state}: episode {resumed_at}, ")
    assert not state.exists()  # a run that ended normally leaves no resume state
    a, b = read_checkpoint(whole.out), read_checkpoint(cut.out)
    assert b["options"]["training"]["final"] is True
    assert b["options"]["training"]["env_steps"] == a["options"]["training"]["env_steps"] \
        == result.env_steps >= 560
    for part in ("model_state_dict", "optimizer_state_dict"):
        flat_a, flat_b = _tensors(a[part]), _tensors(b[part])
        assert flat_a.keys() == flat_b.keys() and flat_a
        assert all(torch.equal(flat_a[k], flat_b[k]) for k in flat_a), part
    for log in ("episodes.csv", "validation.csv"):
        assert _rows(logs / log) == _rows(Path(whole.log_dir) / log), log
    assert len(_rows(logs / "validation.csv")) > 3  # validations on both sides of the cut


def _tensors(state, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor of a (nested) state dict, by its path."""
    if isinstance(state, torch.Tensor):
        return {prefix: state}
    items = state.items() if isinstance(state, dict) else enumerate(state) \
        if isinstance(state, list) else ()
    return {k: v for key, value in items for k, v in _tensors(value, f"{prefix}/{key}").items()}


def test_a_resume_state_of_other_settings_is_refused_naming_the_option(traces, tmp_path,
                                                                       monkeypatch):
    s = _stopped(_settings(traces, tmp_path / "m.pt", "ppo"), monkeypatch, 2)
    other = _settings(traces, tmp_path / "m.pt", "ppo", max_steps=400)
    state = train_resume.resume_path(s.out)
    with pytest.raises(ConfigError) as err:
        train.train(other, **QUIET)
    assert str(err.value) == (
        f"{state}: a resume state of other settings (--max-steps was 560, now 400); rerun the "
        "interrupted command, or give --fresh to discard the state and restart")
    assert state.is_file()  # still there for the right command
    echoed: list[str] = []
    train.train(_settings(traces, tmp_path / "m.pt", "ppo", max_steps=400, fresh=True),
                echo=echoed.append)
    assert echoed[0] == f"{state}: resume state discarded (--fresh); training restarts"
    assert not state.exists()
    assert _rows(Path(s.log_dir) / "episodes.csv")[1][0] == "1"  # the log restarted


def test_an_unreadable_resume_state_is_refused_in_one_line(traces, tmp_path):
    s = _settings(traces, tmp_path / "m.pt", "ppo")
    state = train_resume.resume_path(s.out)
    state.write_text("not a resume state")
    with pytest.raises(ConfigError, match=r"m\.pt\.resume: not a readable resume state \(.*\); "
                                          "give --fresh to discard it and restart$"):
        train.train(s, **QUIET)


def test_fresh_is_an_option_and_not_a_compared_setting():
    s = train.parse_args(["--out", "m.pt", "--fresh"])
    assert s.fresh is True and train.parse_args(["--out", "m.pt"]).fresh is False
    assert "fresh" not in train_resume.settings_record(s)
    assert "command" not in train_resume.settings_record(s)
    assert train_resume.resume_path("models/a.pt") == Path("models/a.pt.resume")


def test_cut_log_keeps_the_header_and_the_first_rows(tmp_path):
    log = tmp_path / "episodes.csv"
    log.write_text("episode,x\n1,a\n2,b\n3,c\n")
    assert train_resume.cut_log(log, 2) == 2
    assert log.read_text() == "episode,x\n1,a\n2,b\n"
    assert train_resume.cut_log(log, 5) == 2  # fewer rows than asked: all kept
    assert train_resume.cut_log(tmp_path / "missing.csv", 3) == 0


def test_an_unfinished_model_without_a_resume_state_is_kept_aside_not_replaced(traces, tmp_path,
                                                                               monkeypatch):
    # a run that leaves no resume state (rollout workers, or a train.py before resuming) was
    # stopped: its best-so-far model at --out was replaced by the rerun's first validation
    s = _stopped(_settings(traces, tmp_path / "m.pt", "ppo"), monkeypatch, 3)
    train_resume.resume_path(s.out).unlink()
    stopped = read_checkpoint(s.out)
    assert stopped["options"]["training"]["final"] is False
    echoed: list[str] = []
    train.train(s, echo=echoed.append)
    aside = tmp_path / "m.interrupted.pt"
    assert echoed[0] == (f"{s.out}: an unfinished model with no resume state (its run was "
                         f"stopped); kept as {aside}, training starts anew")
    kept = read_checkpoint(aside)
    assert kept["sha256"] == stopped["sha256"]
    assert read_checkpoint(s.out)["options"]["training"]["final"] is True
    train.train(s, **QUIET)  # a final model is replaced as before, nothing more kept aside
    assert sorted(p.name for p in tmp_path.glob("m*.pt")) == ["m.interrupted.pt", "m.pt"]
