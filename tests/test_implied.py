"""What the SWF conventions imply for the simulation (decision semantics, walltime kills) is one
rule (:mod:`hdrm.implied`) that every entry point applies, an explicit setting overriding it:
``hdrm replay``, options.json, ``SchedulingEnv``, ``EnvConfig`` and ``gymnasium.make``."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from hdrm import ENV_ID
from hdrm.cli.main import main
from hdrm.env import SchedulingEnv
from hdrm.env.config import EnvConfig
from hdrm.implied import implied_simulation
from hdrm.options import options_from_dict


def _swf(path: Path, jobs: list[tuple[int, int, int, int]], max_procs: int = 4) -> str:
    """``[(submit_s, run_s, procs, requested_s), ...]`` as SWF lines (fields 5 and 8 = procs)."""
    lines = ["; Version: 2.2", f"; MaxProcs: {max_procs}"]
    for i, (submit, run, procs, requested) in enumerate(jobs, start=1):
        fields = [i, submit, -1, run, procs, -1, -1, procs, requested] + [-1] * 9
        lines.append(" ".join(str(f) for f in fields))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture
def overrun(tmp_path) -> str:
    """Job 1 runs 100 s but asked for 40 s (real traces have such jobs); job 2 is short."""
    return _swf(tmp_path / "overrun.swf", [(0, 100, 2, 40), (10, 5, 4, 50)])


@pytest.mark.parametrize(("conventions", "decision", "kill", "engine", "expected"), [
    ("rlscheduler", None, None, "builtin", ("commit", False, "conventions 'rlscheduler'",
                                            "conventions 'rlscheduler'")),
    ("default", None, None, "builtin", ("event", True, "conventions 'default'",
                                        "conventions 'default'")),
    ("rlscheduler", "event", True, "builtin", ("event", True, "given", "given")),
    ("rlscheduler", None, None, "batsim", ("commit", True, "conventions 'rlscheduler'",
                                           "engine 'batsim' always kills")),
    ("RLScheduler", None, False, "batsim", ("commit", False, "conventions 'rlscheduler'", "given")),
])
def test_the_rule(conventions, decision, kill, engine, expected):
    implied = implied_simulation(conventions, decision, kill, engine)
    assert (implied.decision, implied.kill_on_walltime, implied.decision_from,
            implied.kill_from) == expected


def test_description_for_summaries():
    assert implied_simulation("rlscheduler").describe() == (
        "decision commit, walltime kills off (conventions 'rlscheduler')")
    assert implied_simulation("rlscheduler", "event").describe() == (
        "decision event (given), walltime kills off (conventions 'rlscheduler')")


@pytest.mark.parametrize(("given", "expected"), [
    ({}, ("commit", False)),
    ({"decision": "event"}, ("event", False)),
    ({"kill_on_walltime": True}, ("commit", True)),
])
def test_options_json(given, expected):
    options = options_from_dict({"workload_file_path": "w.swf",
                                 "workload": {"conventions": "rlscheduler"}, "simulation": given})
    assert (options.simulation.decision, options.simulation.kill_on_walltime) == expected
    config = EnvConfig.from_options(options)
    assert (config.decision, config.kill_on_walltime) == expected


def test_options_json_with_engine_batsim_keeps_kills():
    options = options_from_dict({"workload_file_path": "w.swf", "engine": "batsim",
                                 "workload": {"conventions": "rlscheduler"}})
    assert (options.simulation.decision, options.simulation.kill_on_walltime) == ("commit", True)


def _episode_steps(env, seed: int) -> int:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps, done = 0, False
    while not done:
        valid = np.flatnonzero(env.unwrapped.action_masks())
        _, _, done, _, _ = env.step(int(rng.choice(valid)))
        steps += 1
    return steps


@pytest.mark.parametrize("make", ["class", "gymnasium"])
def test_env_under_rlscheduler_commits_one_job_per_step_and_never_kills(tmp_path, make):
    # 40 jobs on 4 cores, half of them running past their requested time
    rng = np.random.default_rng(5)
    jobs = [(int(10 * i), int(rng.integers(20, 200)), int(rng.integers(1, 5)),
             int(rng.integers(10, 300))) for i in range(40)]
    swf = _swf(tmp_path / "w.swf", jobs)
    kwargs = dict(workload_file=swf, platform_file=None, homogeneous_procs=4, mode="job_pick",
                  window=8, conventions="rlscheduler")
    env = SchedulingEnv(**kwargs) if make == "class" else gym.make(ENV_ID, **kwargs)
    assert env.unwrapped.config.implied.describe().startswith("decision commit")
    # commit: every step picks a job that is held until it starts: two episodes of 40 jobs
    # take 80 steps (event decisions took more: a pick that does not fit waits for an event)
    assert _episode_steps(env, 0) + _episode_steps(env, 1) == 80
    result = env.unwrapped.result()
    assert len(result.outcomes) == 40
    assert all(o.finish_s - o.start_s == pytest.approx(j.run_time_s)  # nobody was killed
               for j, o in zip(result.workload.jobs, (result.outcomes[j.idx] for j in
                                                       result.workload.jobs)))


def test_env_explicit_settings_win(overrun):
    env = SchedulingEnv(workload_file=overrun, platform_file=None, homogeneous_procs=4,
                        conventions="rlscheduler", decision="event", kill_on_walltime=True)
    assert (env.config.decision, env.config.kill_on_walltime) == ("event", True)
    assert env.config.implied.describe() == "decision event, walltime kills on (given)"


def _replay(argv: list[str], tmp_path: Path, capsys) -> tuple[str, str]:
    outdir = tmp_path / "out"
    assert main(["replay", *argv, "--homogeneous-procs", "4", "--contention", "none",
                 "--outdir", str(outdir)]) == 0
    header = capsys.readouterr().out.splitlines()
    finished = next(line for line in header if "finished / killed" in line)
    return header[0], finished.split()[-5:]


def test_replay_applies_the_rule_and_says_so(overrun, tmp_path, capsys):
    head, counts = _replay(["--workload", overrun, "--conventions", "rlscheduler"], tmp_path,
                           capsys)
    assert head.endswith("decision commit, walltime kills off (conventions 'rlscheduler')")
    assert counts == ["2", "/", "0", "/", "0"]  # job 1 runs its 100 s
    head, counts = _replay(["--workload", overrun, "--conventions", "rlscheduler",
                            "--walltime-kill"], tmp_path, capsys)
    assert head.endswith("decision commit (conventions 'rlscheduler'), walltime kills on (given)")
    assert counts == ["1", "/", "1", "/", "0"]  # job 1 killed at 40 s
    head, counts = _replay(["--workload", overrun], tmp_path, capsys)
    assert head.endswith("decision event, walltime kills on (conventions 'default')")
    assert counts == ["1", "/", "1", "/", "0"]


def test_launcher_summary_says_what_the_conventions_imply(overrun, tmp_path, capsys):
    import json

    from hdrm.launcher import main as launch

    root = Path(__file__).resolve().parents[1]
    options = tmp_path / "options.json"
    options.write_text(json.dumps({
        "workload_file_path": overrun, "nb_resources": 4,
        "workload": {"conventions": "rlscheduler"},
        "simulation": {"contention": "none"},
        "pybatsim": {"agent": {"type": "classic", "run": "test", "policy": "fcfs-high_gflops"}},
    }), encoding="utf-8")
    assert launch([str(root / "agents" / "classic.py"), str(options), "--outdir",
                   str(tmp_path / "out")]) == 0
    head = next(line for line in capsys.readouterr().out.splitlines()
                if line.startswith("hdeeprm-launch: ") and " from " in line)
    assert head.endswith(", decision commit, walltime kills off (conventions 'rlscheduler')"), head
