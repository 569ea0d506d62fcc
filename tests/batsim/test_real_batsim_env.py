"""The Gymnasium environment and ``hdeeprm-launch`` on the REAL Batsim: the built-in episode.

The same seeded actions on ``engine="builtin"`` and on ``engine="batsim"`` with the real Batsim
4.2.1 binary must give the same action masks, observations, rewards and decision times, and the
same final schedule (states, cores, times within 1 ms, energy within 0.1 %); the launcher must
train the same agent to the same episode figures. Skipped, with the reason, when no real Batsim can
run (see ``real_batsim.py``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from batsim_helpers import PLATFORMS, REPO, ppo_jobpick_options, read_csv
from real_batsim import real_batsim

from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.launcher import main as launch

BATSIM, WHY_NOT = real_batsim()
pytestmark = pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)

SWF = REPO / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
HETERO = PLATFORMS / "tiny_hetero.json"


def play(engine: str, seed: int = 7, **settings):
    """One episode with actions drawn by a seeded generator among the valid ones."""
    extra = {"batsim": {"binary": BATSIM}} if engine == "batsim" else {}
    env = SchedulingEnv(engine=engine, workload_file=str(SWF), platform_file=str(HETERO), seed=3,
                        nb_jobs=60, **extra, **settings)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=5)
    steps = [(obs, info["action_mask"], 0.0, info["time"])]
    done = env.unwrapped.sim.done
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, done, truncated, info = env.step(action)
        assert not truncated
        steps.append((obs, info["action_mask"], reward, info["time"]))
    result = env.unwrapped.result()
    env.close()
    return steps, result


@pytest.mark.parametrize("settings", [
    dict(mode="policy_pair", observation="normal", objective="edp", contention="hdeeprm"),
    dict(mode="job_pick", window=8, objective="avg_bounded_slowdown", contention="none"),
    dict(mode="job_pick", window=8, decision="commit", backfilling="easy", objective="makespan"),
    dict(mode="job_pick", window=8, objective="avg_bounded_slowdown", contention="none",
         observation="job_window_reservation", reservation="sjf", pick_limit="easy"),
], ids=["policy_pair", "job_pick", "job_pick_commit", "job_pick_easy_limit"])
def test_an_episode_under_real_batsim_equals_the_builtin_one(settings):
    builtin, expected = play("builtin", **settings)
    steps, result = play("batsim", **settings)
    assert len(steps) == len(builtin) > 15
    for i, ((obs, mask, reward, t), (obs_b, mask_b, reward_b, t_b)) in enumerate(zip(steps, builtin)):
        assert np.array_equal(mask, mask_b), i
        np.testing.assert_allclose(obs, obs_b, atol=1e-6, err_msg=f"step {i}")
        assert reward == pytest.approx(reward_b, rel=1e-6, abs=1e-9), i
        assert t == pytest.approx(t_b, abs=1e-3), i
    want = {o.job.idx: o for o in expected.outcomes}
    assert len(result.outcomes) == len(want)
    for out in result.outcomes:  # Batsim's own out_jobs.csv rows
        ref = want[out.job.idx]
        assert (out.state, sorted(out.cores)) == (ref.state, sorted(ref.cores))
        assert abs(out.start_s - ref.start_s) <= 1e-3 and abs(out.finish_s - ref.finish_s) <= 1e-3
    assert result.energy_j == pytest.approx(expected.energy_j, rel=1e-3)  # Batsim's consumed_joules


def test_the_launcher_trains_under_real_batsim_like_under_the_builtin_engine(tmp_path, capsys):
    for engine in ("builtin", "batsim"):
        argv = [str(REPO / "agents" / "ppo.py"), str(ppo_jobpick_options(
            tmp_path / engine, engine, HETERO, str(SWF), nb_jobs=40,
            **({"batsim": {"binary": BATSIM}} if engine == "batsim" else {}))),
                "--outdir", str(tmp_path / engine / "out"), "--outmodel", str(tmp_path / engine / "m.pt"),
                "--quiet"]
        assert launch(argv) == 0
    notes = capsys.readouterr().err.splitlines()  # each engine: the same rejected job, else silent
    assert len(notes) == 2 and notes[0] == notes[1] and re.match(
        r"hdeeprm-launch: note: \d+ of \d+ jobs of the last episode were rejected: ", notes[0])
    builtin, batsim = (read_csv(tmp_path / e / "out" / "episodes.csv") for e in ("builtin", "batsim"))
    assert len(batsim) == len(builtin) == 2
    for row, ref in zip(batsim, builtin):  # same rewards, same learning, same schedule
        for key in ("return", "loss", "makespan", "mean_waiting", "energy_j"):
            assert float(row[key] or "nan") == pytest.approx(float(ref[key] or "nan"), rel=1e-3,
                                                             nan_ok=True), key
    played, ref = (read_csv(tmp_path / e / "out" / "actions.csv") for e in ("batsim", "builtin"))
    assert [r["action"] for r in played] == [r["action"] for r in ref] and len(played) > 40
    rows = read_csv(tmp_path / "batsim" / "out" / "out_jobs.csv")  # the real Batsim's own file
    assert len(rows) == 40
