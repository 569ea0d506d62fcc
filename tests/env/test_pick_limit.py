"""``pick_limit="easy"``: a ``job_pick`` agent may start only the jobs EASY backfilling would
start, so a learned order keeps EASY's guarantee for the reserved job. Hand-checked masks, the
masked pick waiting, EASY's schedule replayed exactly, the reservation never pushed back by a
random agent, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.config import EXAMPLE_WORKLOAD
from hdrm.errors import ConfigError
from hdrm.policies.backfill import reservation
from hdrm.policies.job_selection import JOB_POLICIES
from hdrm.sim.engine import Simulation, SimulationConfig

from .conftest import write_jobs


def _env(tmp_path, reservation_order="fcfs", pick_limit="easy", **kwargs):
    # 4 cores. At 0: j1 (2 cores, requested 100 s) and j2 (1 core, 50 s) start, 1 core stays free.
    # At 1: j3 (4 cores, 40 s) cannot fit; j4 (1 core, 200 s) and j5 (1 core, 30 s) fit.
    jobs = [(0, 100, 2, 100), (0, 50, 1, 50), (1, 40, 4, 40), (1, 200, 1, 200), (1, 30, 1, 30)]
    return SchedulingEnv(workload_file=write_jobs(tmp_path / "w.swf", jobs), platform_file=None,
                         homogeneous_procs=4, mode="job_pick", window=6,
                         reservation=reservation_order, pick_limit=pick_limit, **kwargs)


def _to_first_arrival(env):
    obs, info = env.reset()
    for _ in range(2):  # start j1, then j2, at time 0
        obs, *_, info = env.step(0)
    assert info["time"] == 1.0 and [j.id for j in env.window_jobs()] == [3, 4, 5]
    return info


def test_the_job_that_would_delay_the_reservation_is_masked(tmp_path):
    info = _to_first_arrival(_env(tmp_path))
    # j3 is reserved at 100 with no extra core; j4 would end at 201 on a core j3 needs; j5 ends
    # at 31: of the fitting jobs only j5 may start, and waiting (the last action) stays valid
    mask = info["action_mask"]
    assert mask[:3].tolist() == [False, False, True]
    assert mask[3:-1].sum() == 0 and mask[-1]


def test_without_the_limit_every_fitting_job_may_start(tmp_path):
    info = _to_first_arrival(_env(tmp_path, pick_limit="fits"))
    assert info["action_mask"][:3].tolist() == [False, True, True]


def test_a_masked_pick_waits_instead_of_starting(tmp_path):
    env = _env(tmp_path)
    _to_first_arrival(env)
    *_, info = env.step(1)  # j4: EASY would not start it now, so the agent waits for j2's end
    assert info["time"] == 50.0
    assert [j.id for j in env.window_jobs()] == [3, 4, 5]


def test_the_reservation_follows_the_configured_order(tmp_path):
    # SJF: j5 (30 s) fits and comes first, j3 (40 s) is reserved; j4 delays it
    info = _to_first_arrival(_env(tmp_path, "sjf"))
    assert info["action_mask"][:3].tolist() == [False, False, True]
    assert env_marks(tmp_path, "sjf") == (0, [False, False, True], [False, True, False])


def env_marks(tmp_path, order):
    env = _env(tmp_path, order)
    _to_first_arrival(env)
    marks = env.reservation_marks()
    return marks.reserved, marks.ahead.tolist(), marks.delays.tolist()


def _protocol_like(**kwargs):
    return {**dict(workload_file=EXAMPLE_WORKLOAD, platform_file=None, homogeneous_procs=-1,
                   conventions="rlscheduler", contention="none", kill_on_walltime=False,
                   mode="job_pick", decision="event", window=512, nb_jobs=400), **kwargs}


@pytest.mark.parametrize("order", ["fcfs", "sjf", "wfp3"])
def test_playing_the_reservation_order_replays_easy_exactly(order):
    env = SchedulingEnv(**_protocol_like(pick_limit="easy", reservation=order))
    policy = JOB_POLICIES.get(order)
    rng = np.random.default_rng(0)
    obs, info = env.reset()
    done = False
    while not done:
        window, mask = env.window_jobs(), info["action_mask"]
        allowed = [job for job, ok in zip(window, mask) if ok]
        action = len(mask) - 1
        if allowed:
            first = policy.order(allowed, env.sim.now, rng, env.sim.core.predictor.predict)[0]
            action = next(i for i, job in enumerate(window) if job is first)
        obs, _, done, _, info = env.step(action)
    mine = {o.job.idx: o.start_s for o in env.result().outcomes}
    config = SimulationConfig(contention="none", backfilling="easy", decision="event",
                              kill_on_walltime=False, record_timeline=False)
    easy = Simulation(env.sim.platform, env.sim.workload, config).run(order)
    theirs = {o.job.idx: o.start_s for o in easy.outcomes}
    assert len(mine) == len(theirs) == 400
    assert mine == theirs


def test_a_random_agent_never_pushes_the_reservation_back():
    # with FCFS: the oldest job that does not fit is delayed by older jobs only (which start
    # first, as EASY starts them), never by a backfilled one
    env = SchedulingEnv(**_protocol_like(pick_limit="easy", window=64))
    rng = np.random.default_rng(3)
    obs, info = env.reset()
    done, checked, ahead_first = False, 0, 0
    while not done:
        marks = env.reservation_marks()
        before = _shadow(env, marks)
        mask = info["action_mask"]
        if marks.ahead.any():  # EASY starts the jobs before the reserved one first
            assert (mask[: len(marks.ahead)] <= marks.ahead).all()
            ahead_first += 1
        action = int(rng.choice(np.flatnonzero(mask)))
        head = env.window_jobs()[marks.reserved] if marks.reserved >= 0 else None
        now = env.sim.now
        obs, _, done, _, info = env.step(action)
        if head is not None and env.sim.now == now and head in env.sim.core.queue:
            after = reservation(env.sim.core.state, env.sim.core.expected_ends(now), head, now)[0]
            if not marks.ahead[action]:
                assert after <= before
                checked += 1
    assert checked > 50 and ahead_first > 10  # both cases arose often enough to mean something


def _shadow(env, marks):
    if marks.reserved < 0:
        return np.inf
    head = env.window_jobs()[marks.reserved]
    core = env.sim.core
    return reservation(core.state, core.expected_ends(env.sim.now), head, env.sim.now)[0]


@pytest.mark.parametrize("kwargs, match", [
    (dict(pick_limit="esay"), "pick_limit.*'esay'.*easy"),
    (dict(pick_limit="easy", mode="policy_pair"), "pick_limit.*job_pick.*'policy_pair'"),
    (dict(pick_limit="easy", mode="job_pick", decision="commit"), "pick_limit.*'commit'"),
    (dict(pick_limit="easy", mode="job_pick", reservation="sjff"), "reservation.*'sjff'"),
])
def test_bad_settings_are_one_line_config_errors(tmp_path, kwargs, match):
    path = write_jobs(tmp_path / "w.swf", [(0, 10, 1, 10)])
    with pytest.raises(ConfigError, match=match) as err:
        SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4, **kwargs)
    assert "\n" not in str(err.value)


def test_options_json_sets_the_limit_and_refuses_a_bad_one(tmp_path):
    from hdrm.env.config import EnvConfig
    from hdrm.options import options_from_dict

    path = write_jobs(tmp_path / "w.swf", [(0, 10, 1, 10)])
    data = {"workload_file_path": path, "nb_resources": 4,
            "pybatsim": {"env": {"actions": {"mode": "job_pick", "pick_limit": "easy"}}}}
    config = EnvConfig.from_options(options_from_dict(data, source="options.json"))
    assert (config.mode, config.pick_limit) == ("job_pick", "easy")
    data["pybatsim"]["env"]["actions"]["pick_limit"] = "eas"
    with pytest.raises(ConfigError, match=r"pybatsim\.env\.actions\.pick_limit: unknown value "
                                          r"\"eas\"; did you mean 'easy'") as err:
        options_from_dict(data, source="options.json")
    assert "\n" not in str(err.value)


def test_options_json_names_the_key_when_the_decision_is_commit(tmp_path):
    from hdrm.env.config import EnvConfig
    from hdrm.options import options_from_dict

    path = write_jobs(tmp_path / "w.swf", [(0, 10, 1, 10)])
    data = {"workload_file_path": path, "nb_resources": 4,
            "workload": {"conventions": "rlscheduler"},  # implies commit decisions
            "pybatsim": {"env": {"actions": {"mode": "job_pick", "pick_limit": "easy"}}}}
    with pytest.raises(ConfigError, match=r"^options\.json: pybatsim\.env\.actions\.pick_limit: "
                                          r"'easy' .* decision 'commit'.*simulation\.decision"):
        EnvConfig.from_options(options_from_dict(data, source="options.json"))
    data["simulation"] = {"decision": "event"}
    assert EnvConfig.from_options(options_from_dict(data, source="options.json")).pick_limit == \
        "easy"
