"""The environment decides as the engine does: a fixed policy played through the environment gives
the schedule of :meth:`hdrm.sim.engine.Simulation.run` with that policy, under both decision
semantics (RLScheduler's ``commit`` and the event-driven ``event``)."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.inputs import InputSpec, load_inputs

from .conftest import LUBLIN, rollout

NB_JOBS = 150
SETTINGS = dict(workload_file=LUBLIN, platform_file=None, homogeneous_procs=256,
                conventions="rlscheduler", nb_jobs=NB_JOBS, start_index=[60], contention="none")


def engine_starts(policy: str, decision: str, backfilling: str) -> dict:
    platform, workload = load_inputs(InputSpec(LUBLIN, homogeneous_procs=256, nb_jobs=NB_JOBS,
                                               conventions="rlscheduler", start_index=60))
    config = SimulationConfig(contention="none", backfilling=backfilling, decision=decision)
    result = Simulation(platform, workload, config).run(policy)
    return {o.job.id: o.start_s for o in result.outcomes}


def env_starts(env: SchedulingEnv) -> dict:
    return {o.job.id: o.start_s for o in env.result().outcomes}


@pytest.mark.parametrize("backfilling", ["none", "easy"])
@pytest.mark.parametrize("decision", ["event", "commit"])
@pytest.mark.parametrize("policy", ["sjf", "f1"])
def test_policy_pair_mode_reproduces_the_engine(policy, decision, backfilling):
    env = SchedulingEnv(selection=[policy], decision=decision, backfilling=backfilling,
                        observation="minimal", **SETTINGS)
    played = rollout(env, lambda obs, info: 0, seed=0)
    assert len(played.actions) > 20
    assert env_starts(env) == engine_starts(policy, decision, backfilling)


def test_job_pick_commit_with_shortest_first_reproduces_sjf():
    """Picking the shortest requested time of the window under ``commit`` is RLScheduler's SJF."""
    env = SchedulingEnv(mode="job_pick", window=NB_JOBS, decision="commit", **SETTINGS)

    def shortest(obs: np.ndarray, info: dict) -> int:
        jobs = env.window_jobs()
        requested = [j.walltime_s if j.has_walltime else j.run_time_s for j in jobs]
        return int(np.argmin(requested))  # the first of equals: submission order, as sorted()

    played = rollout(env, shortest, seed=0)
    assert len(played.actions) == NB_JOBS  # one pick per job
    engine = engine_starts("sjf", "commit", "none")
    assert env_starts(env) == engine
    assert engine != engine_starts("sjf", "event", "none")  # the semantics do differ here
