"""The Gymnasium environment and the launcher on the ``batsim`` engine, with a fake ``batsim``.

The fake (``fake_batsim/batsim``, first on the PATH) runs ``hdrm serve``, whose physics are the
built-in engine's: so an episode under ``engine="batsim"`` must give the same masks, observations,
rewards, return and schedule as under ``engine="builtin"`` for the same actions. Every test also
checks that no decision thread outlives it.
"""

from __future__ import annotations

import json
import re
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from batsim_helpers import PLATFORMS, REPO, ppo_jobpick_options, read_csv
from gymnasium.utils.env_checker import check_env

from hdrm.batsim.env_bridge import BatsimEpisode
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import ConfigError, ProtocolError, SimulationError
from hdrm.launcher import main as launch
from hdrm.options import BatsimOptions
from hdrm.platform.loader import load_platform
from hdrm.policies.pairs import resolve_policy
from hdrm.sim.engine import SimulationConfig
from hdrm.workload.job import Job, Workload

HETERO = PLATFORMS / "tiny_hetero.json"
NB_JOBS = 20


def write_workload(path: Path, seed: int = 4) -> Path:
    """Jobs of 1-4 cores on the 8 of tiny_hetero, bunched, with memory and bandwidth demands; some
    reach their walltime, job 5 (12 cores) is rejected."""
    rng = np.random.default_rng(seed)
    jobs, profiles, t = [], {}, 0.0
    for i in range(NB_JOBS):
        t += float(rng.integers(0, 20))
        jobs.append({"id": i, "subtime": t, "res": 12 if i == 5 else int(rng.integers(1, 5)),
                     "walltime": 300, "profile": f"p{i}", "mem_bw_gbps": float(rng.choice([0, 4, 8, 12])),
                     "mem_mb": float(rng.choice([0, 512, 1024]))})
        profiles[f"p{i}"] = {"type": "parallel_homogeneous", "cpu": float(rng.integers(100, 4000)) * 1e9,
                             "com": 0}
    path.write_text(json.dumps({"nb_res": 8, "jobs": jobs, "profiles": profiles}))
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict:
    """Environment settings of the small heterogeneous case."""
    workload = write_workload(tmp_path_factory.mktemp("wl") / "workload.json")
    return dict(workload_file=str(workload), platform_file=str(HETERO), seed=3)



@pytest.fixture(autouse=True)
def no_thread_left_behind():
    yield
    deadline = time.monotonic() + 5
    while any(t.name == "hdrm-decision" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [t for t in threading.enumerate() if t.name == "hdrm-decision"]


def play(base: dict, engine: str, seed: int = 7, **settings):
    """One episode with actions drawn by a seeded generator among the valid ones."""
    env = SchedulingEnv(engine=engine, **base, **settings)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=5)
    steps = [(obs, info["action_mask"], 0.0, info["time"])]
    done = env.sim.done
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, done, truncated, info = env.step(action)
        assert not truncated
        steps.append((obs, info["action_mask"], reward, info["time"]))
    result = env.result()
    outputs = env.batsim_outputs()
    env.close()
    return steps, result, outputs


@pytest.mark.parametrize("settings", [
    dict(mode="policy_pair", observation="normal", objective="edp", void=True),
    dict(mode="job_pick", window=8, objective="avg_bounded_slowdown"),
    dict(mode="job_pick", window=8, decision="commit", backfilling="easy", objective="makespan"),
], ids=["policy_pair", "job_pick", "job_pick_commit"])
def test_an_episode_under_batsim_equals_the_builtin_one(fake_batsim, base, settings):
    builtin, expected, none = play(base, "builtin", **settings)
    steps, result, outputs = play(base, "batsim", **settings)
    assert none == {} and sorted(outputs) == ["batsim_log", "jobs", "schedule"]
    assert len(steps) == len(builtin) > 15
    for (obs, mask, reward, t), (obs_b, mask_b, reward_b, t_b) in zip(steps, builtin):
        assert np.array_equal(mask, mask_b)
        np.testing.assert_allclose(obs, obs_b, atol=1e-6)
        assert reward == pytest.approx(reward_b, rel=1e-6, abs=1e-9)
        assert t == pytest.approx(t_b, abs=1e-6)
    assert sum(s[2] for s in steps) == pytest.approx(sum(s[2] for s in builtin), rel=1e-6)
    want = {o.job.idx: o for o in expected.outcomes}
    assert len(result.outcomes) == len(want) == NB_JOBS
    states = {o.state for o in result.outcomes}
    assert {"REJECTED", "COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"} <= states
    for out in result.outcomes:
        ref = want[out.job.idx]
        assert (out.state, sorted(out.cores)) == (ref.state, sorted(ref.cores))
        # hdrm serve keeps Batsim's sub-nanosecond message times (they pile up along chains of
        # jobs, here to ~5e-7 s; checked with the binary, runs/s24l): within 2e-6 s
        assert (out.start_s, out.finish_s) == (pytest.approx(ref.start_s, abs=2e-6),
                                               pytest.approx(ref.finish_s, abs=2e-6))
    assert result.energy_j == pytest.approx(expected.energy_j, rel=1e-6)  # Batsim's consumed_joules


def test_closing_mid_episode_stops_batsim_and_the_decision_thread(fake_batsim, base):
    env = SchedulingEnv(engine="batsim", **base)
    root = env.unwrapped._bridge.run_root
    env.reset(seed=1)
    episode = env.unwrapped.sim
    mine = {id(job) for job in episode.workload.jobs}  # the core queues the env's own jobs
    assert episode.core.queue and all(id(job) in mine for job in episode.core.queue)
    env.step(0)
    first = env.unwrapped.sim.session
    assert first.process.poll() is None and first.thread.is_alive()
    env.reset()  # ends the run of the unfinished episode
    assert first.process.poll() is not None and not first.thread.is_alive()
    assert not first.run.run_dir.exists()  # only the latest episode's folder is kept
    env.step(0)
    second = env.unwrapped.sim.session
    env.close()
    assert second.process.poll() is not None and not second.thread.is_alive()
    assert not root.exists()
    env.close()


def test_gymnasium_check_env_passes_under_batsim(fake_batsim, base):
    env = SchedulingEnv(engine="batsim", mode="job_pick", window=8, **base)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a failure...
        warnings.filterwarnings("ignore", message=".*render.*")  # ...but the env has no render
        check_env(env, skip_render_check=True)
    env.close()


def test_batsim_failures_are_clear_errors(fake_batsim, base, monkeypatch, tmp_path):
    monkeypatch.setenv("HDRM_FAKE_BATSIM", "crash")
    env = SchedulingEnv(engine="batsim", **base)
    with pytest.raises(SimulationError, match=r"batsim exited with status 3 before the simulation "
                                              r"ended; last lines of .*batsim.log:\n\[fake batsim\]"):
        env.reset()
    env.close()
    monkeypatch.setenv("HDRM_FAKE_BATSIM", "silent")
    env = SchedulingEnv(engine="batsim", batsim={"timeout_s": 0.5}, **base)
    with pytest.raises(ProtocolError, match=r"^Batsim sent nothing for 0.5 s; it stopped answering"):
        env.reset()
    assert env.unwrapped.sim.session.process.poll() is not None  # the silent batsim was killed
    env.close()
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match=r"^batsim.binary: 'batsim' not found on PATH; install Batsim 4.x"):
        SchedulingEnv(engine="batsim", **base)


@pytest.mark.parametrize("settings, message", [
    (dict(kill_on_walltime=False), r"^kill_on_walltime: Batsim always kills jobs at their walltime"),
    (dict(contention="smooth"), r"model 'smooth' slows cores by continuous factors"),
    (dict(engine="simgrid"), r"^engine: unknown engine 'simgrid'; choose one of: builtin, batsim$"),
    (dict(engine="batsm"), r"^engine: unknown engine 'batsm'; did you mean 'batsim'\? choose one of"),
    (dict(batsim={"binry": "b"}), r"^batsim: unknown setting 'binry'; did you mean 'binary'"),
])
def test_settings_batsim_cannot_run_are_refused(fake_batsim, base, settings, message):
    settings = {"engine": "batsim", **base, **settings}
    with pytest.raises(ConfigError, match=message):
        SchedulingEnv(**settings)


def test_the_decision_thread_does_not_wait_forever_for_the_environment(fake_batsim, tmp_path):
    platform = load_platform(HETERO)
    jobs = [Job(i, i, float(i), 2, 100.0, 50.0, profile=f"p{i}") for i in range(3)]
    episode = BatsimEpisode(platform, Workload(jobs, "three"), SimulationConfig(),
                            BatsimOptions(timeout_s=10), tmp_path / "run", idle_timeout_s=0.3)
    assert episode.next_decision() and episode.now == 0.0
    time.sleep(0.6)
    with pytest.raises(ProtocolError, match=r"^the environment handed over no decision for 0.3 s; "
                                            r"call step\(\) or close\(\) the environment"):
        episode.decide(resolve_policy("fcfs"))
    assert episode.session.process.poll() is not None
    with pytest.raises(RuntimeError, match="no decision point"):
        episode.decide(resolve_policy("fcfs"))


def test_the_launcher_trains_under_batsim_like_under_the_builtin_engine(fake_batsim, base, tmp_path,
                                                                        capsys):
    for engine in ("builtin", "batsim"):
        argv = ["agents/ppo.py", ppo_jobpick_options(tmp_path / engine, engine, HETERO,
                                        base["workload_file"]), "--outdir",
                tmp_path / engine / "out", "--outmodel", tmp_path / engine / "model.pt", "--quiet"]
        assert launch([str(REPO / a) if a == "agents/ppo.py" else str(a) for a in argv]) == 0
    notes = capsys.readouterr().err.splitlines()  # each engine: the same rejected job, else silent
    assert len(notes) == 2 and notes[0] == notes[1] and re.match(
        r"hdeeprm-launch: note: \d+ of 20 jobs of the last episode were rejected: ", notes[0])
    builtin, batsim = (read_csv(tmp_path / e / "out" / "episodes.csv") for e in ("builtin", "batsim"))
    assert len(batsim) == 2
    for row, ref in zip(batsim, builtin):  # same rewards, same learning, same schedule
        for key in ("return", "loss", "makespan", "mean_waiting", "energy_j"):
            assert float(row[key] or "nan") == pytest.approx(float(ref[key] or "nan"), rel=1e-6,
                                                             nan_ok=True), key
    out = tmp_path / "batsim" / "out"
    assert (tmp_path / "batsim" / "model.pt").is_file()
    assert f"hdrm serve: {NB_JOBS} jobs" in (out / "batsim.log").read_text()
    rows = read_csv(out / "out_jobs.csv")  # Batsim's own file: rows in the order jobs ended
    ends = [float(r["finish_time"]) for r in rows if r["final_state"] != "REJECTED"]
    assert ends == sorted(ends) and len(rows) == NB_JOBS
    played, ref = (read_csv(tmp_path / e / "out" / "actions.csv") for e in ("batsim", "builtin"))
    assert [r["action"] for r in played] == [r["action"] for r in ref] and len(played) > NB_JOBS
    assert [float(r["time"]) for r in played] == pytest.approx([float(r["time"]) for r in ref], abs=1e-6)
