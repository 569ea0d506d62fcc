"""``benchmarks/train.py --workers N --num-envs K`` (benchmarks/train_workers.py) on the tiny
traces of test_compare: K environments in this process, rollout workers on Ray, the checkpoint
compare.py reads, and the flags' one-line errors."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import train  # noqa: E402
from benchmarks.train_workers import ProtocolEpisodes, TrainTask  # noqa: E402
from hdrm.agents.checkpoint import read_checkpoint  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402

from .test_compare import tiny_settings, traces  # noqa: F401, E402 (fixture)



def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_episodes_are_drawn_as_the_single_process_loop_draws_them(traces):
    """Environment i draws (start, seed, load factor) from --seed + i in train.py's order."""
    s = tiny_settings(traces, Path("unused.pt"), load_factors=(1.0, 2.0))
    pool = np.array([0, 50, 100, 150])
    env = TrainTask(s, train.agent_config(s), pool).make_env(0)
    assert isinstance(env, ProtocolEpisodes)
    env.reset(seed=s.seed)
    rng = np.random.default_rng(s.seed)
    start, _, factor = int(rng.choice(pool)), rng.integers(2**31), rng.uniform(1.0, 2.0)
    assert (env.start, env.factor) == (start, factor)
    _, info = env.reset()
    assert env.start == int(rng.choice(pool))  # the next draw of the same stream
    assert info["action_mask"].any()


def test_num_envs_in_this_process_trains_deterministically(traces, tmp_path):
    quick = {"num_envs": 2, "max_steps": 200, "validate_every": 100}  # validated at the end only
    first = train.train(tiny_settings(traces, tmp_path / "a.pt", **quick), echo=lambda *_: None)
    train.train(tiny_settings(traces, tmp_path / "b.pt", **quick), echo=lambda *_: None)
    a, b = read_checkpoint(tmp_path / "a.pt"), read_checkpoint(tmp_path / "b.pt")
    b_state = b["model_state_dict"]
    assert all(np.array_equal(t, b_state[k]) for k, t in a["model_state_dict"].items())
    figures = a["options"]["training"]
    assert figures["distributed"]["num_envs"] == 2 and figures["distributed"]["updates"] >= 3
    assert figures["env_steps"] == first.env_steps > 0
    episodes = rows(tmp_path / "log_a" / "episodes.csv")
    assert [int(r["episode"]) for r in episodes] == list(range(1, len(episodes) + 1))
    assert a["options"]["agent"]["params"]["num_envs"] == 2


@pytest.mark.parametrize("num_envs", [1, 2])
def test_stop_at_ends_the_run_at_the_first_validation_that_scores_it(traces, tmp_path, num_envs):
    """--stop-at SCORE: any score reaches 1e12 (stopped at the first validation); none reaches
    0.5 (a bounded slowdown is at least 1: the run spends its step budget)."""
    quick = {"num_envs": num_envs, "max_steps": 600, "validate_every": 1}
    reached = train.train(tiny_settings(traces, tmp_path / "a.pt", stop_at=1e12, **quick),
                          echo=lambda *_: None)
    assert reached.stopped_by == "stop_at"
    logged = rows(tmp_path / "log_a" / "validation.csv")
    assert len(logged) == 1 and float(logged[0]["objective"]) == pytest.approx(
        reached.best_validation, rel=1e-5)
    figures = read_checkpoint(tmp_path / "a.pt")["options"]["training"]
    assert figures["stopped_by"] == "stop_at" and figures["env_steps"] < 600
    missed = train.train(tiny_settings(traces, tmp_path / "b.pt", stop_at=0.5, **quick),
                         echo=lambda *_: None)
    # (with 2 environments, env_steps counts the ended episodes' steps only)
    assert missed.stopped_by == "max_steps" and missed.env_steps > reached.env_steps
    assert len(rows(tmp_path / "log_b" / "validation.csv")) > 1


def test_stop_at_is_read_from_the_command_line():
    s = train.parse_args(["--out", "m.pt", "--stop-at", "30.5"])
    assert s.stop_at == 30.5 and "--stop-at 30.5" in s.command
    assert train.parse_args(["--out", "m.pt"]).stop_at is None


def test_rollout_workers_train_a_model_compare_reads(traces, tmp_path):
    pytest.importorskip("ray")
    from benchmarks import compare

    result = train.train(tiny_settings(traces, tmp_path / "w.pt", workers=2, validate_every=3),
                         echo=lambda *_: None)
    figures = read_checkpoint(tmp_path / "w.pt")["options"]["training"]
    assert figures["distributed"]["workers"] == 2 and result.stopped_by == "max_steps"
    assert figures["distributed"]["collected_env_steps"] >= 300
    assert len(rows(tmp_path / "log_w" / "validation.csv")) >= 1  # at least the final one
    (model,) = compare.discover_models(tmp_path)
    assert model.column == "PPO-kernel (event)"


@pytest.mark.parametrize("changes, message", [
    ({"workers": -2}, "--workers: expected 0 (this process) or a positive number"),
    ({"num_envs": 0}, "--num-envs: expected a positive number of environments, got 0"),
    ({"address": "auto"}, "--address auto: a Ray cluster is used by rollout workers"),
    ({"num_envs": 2, "learner": "a2c"}, "--num-envs 2: vectorised rollouts in this process need"),
])
def test_bad_worker_settings_are_one_line(traces, tmp_path, changes, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", **changes))


def test_workers_without_ray(traces, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"^--workers 2: Ray is not installed; install the "):
        train.check_settings(tiny_settings(traces, tmp_path / "x.pt", workers=2))
    assert train.main(["--out", str(tmp_path / "x.pt"), "--workers", "2", "--traces",
                       str(traces)]) == 2
