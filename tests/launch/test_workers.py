"""``hdeeprm-launch --workers N [--address ADDR] --num-envs K``: the flags' checks (one line, exit
2), Ray missing, and K environments in this process (options.json's ``num_envs`` or the flag).
The runs on Ray are in tests/distributed/test_ppo.py."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from hdrm.launcher import main
from launch_options import example_options

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "agents"


def options(folder: Path, example: str = "ppo", **params) -> Path:
    """A shipped example with 20-job episodes, 3 episodes, 16-step PPO rollouts."""
    ppo = {"rollout_steps": 16, "minibatch": 8, "epochs": 1, **params}
    return example_options(folder, example, episodes=3, params=ppo if example == "ppo" else None)


def launch(capsys, *argv) -> tuple[int, str]:
    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


def episodes(outdir: Path) -> list[dict[str, str]]:
    with open(outdir / "episodes.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_workers_without_ray_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if it were not installed
    status, err = launch(capsys, AGENTS / "ppo.py", options(tmp_path), "--workers", 2,
                         "--outdir", tmp_path / "o")
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("hdeeprm-launch: error: --workers 2: Ray is not installed; install "
                          "the 'distributed' extra")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [
    (("--workers", "-1"), "--workers: expected 0 (this process) or a positive number of rollout "
                          "workers, got -1"),
    (("--num-envs", "0"), "--num-envs: expected a positive number of environments, got 0"),
    (("--address", "127.0.0.1:6379"), "--address 127.0.0.1:6379: a Ray cluster is used by "
                                      "rollout workers; add --workers N"),
])
def test_bad_worker_flags_are_one_line(tmp_path, capsys, argv, message):
    status, err = launch(capsys, AGENTS / "ppo.py", options(tmp_path), *argv)
    assert status == 2 and err == f"hdeeprm-launch: error: {message}\n"


def test_several_environments_need_a_batched_learner(tmp_path, capsys):
    status, err = launch(capsys, AGENTS / "reinforce.py", options(tmp_path, "reinforce"),
                         "--num-envs", 2, "--outdir", tmp_path / "o")
    assert status == 2 and err.startswith("hdeeprm-launch: error: --num-envs 2: Reinforce")
    assert err.endswith(" has no decide_batch: vectorised rollouts need a learner that decides "
                        "for several environments at once (ppo)\n") and err.count("\n") == 1


def test_a_classic_agent_has_nothing_to_train_with_workers(tmp_path, capsys):
    pytest.importorskip("ray")
    status, err = launch(capsys, AGENTS / "classic.py", options(tmp_path, "classic"),
                         "--workers", 1, "--outdir", tmp_path / "o")
    assert status == 2 and "--workers 1: rollout workers train a learning agent; " in err
    assert err.count("\n") == 1


def test_num_envs_from_the_options_or_the_flag(tmp_path, capsys):
    """K environments in this process: 3 episodes recorded, environments 0..K-1 first reset with
    seeds seed..seed+K-1 (the flag and options.json's num_envs give the same run)."""
    flag, key = tmp_path / "flag", tmp_path / "key"
    assert launch(capsys, AGENTS / "ppo.py", options(tmp_path), "--num-envs", 2,
                  "--outdir", flag, "--quiet")[0] == 0
    (tmp_path / "k").mkdir()
    assert launch(capsys, AGENTS / "ppo.py", options(tmp_path / "k", num_envs=2),
                  "--outdir", key, "--quiet")[0] == 0
    a, b = episodes(flag), episodes(key)
    assert [r["episode"] for r in a] == ["0", "1", "2"]
    assert [r["return"] for r in a] == [r["return"] for r in b]
    assert (flag / "model.pt").is_file() and (flag / "out_jobs.csv").is_file()
    single = tmp_path / "single"
    assert launch(capsys, AGENTS / "ppo.py", options(tmp_path), "--outdir", single,
                  "--quiet")[0] == 0
    assert [r["return"] for r in episodes(single)] != [r["return"] for r in a]


def test_a_resumed_launch_seeds_its_environments_anew():
    """Environment i of a launch starts from seed + i; a launch resumed at episode 3 draws its
    seeds from (seed, 3, i), so it does not replay the episodes the first launch began with."""
    from hdrm.launch.workers import LaunchTask

    first = LaunchTask(ROOT / "examples/ppo/options.json", AGENTS / "ppo.py", 7)
    resumed = LaunchTask(ROOT / "examples/ppo/options.json", AGENTS / "ppo.py", 7, start=3)
    assert [first.first_seed(i) for i in range(3)] == [7, 8, 9]
    seeds = [resumed.first_seed(i) for i in range(3)]
    assert len(set(seeds) | {7, 8, 9}) == 6
    assert seeds == [LaunchTask(first.options_path, first.agent_path, 7, 3).first_seed(i)
                     for i in range(3)]
