"""What the environment offers an SLA learner (hdrm.env.tenants): the ``laxity`` window order,
the ``job_window_sla`` observation and the ``sla_energy`` weight, on hand-made cases."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env.config import EnvConfig
from hdrm.env.objectives import SlaAccounting, Tracker, make_objective
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import ConfigError
from hdrm.options import options_from_dict
from hdrm.workload.job import Job
from hdrm.workload.tenants import Sla, Tenant, TenantTable

# job: (submit, run time); one core; requested time = run time; deadline = submit + 3 x run
JOBS = [(0, 10), (1, 2), (2, 4), (3, 1), (4, 5)]


def _swf(tmp_path) -> str:
    path = tmp_path / "five.swf"
    lines = [f"{i + 1} {s} 0 {r} 1 -1 -1 1 {r} -1 1 1 1 -1 -1 -1 -1 -1"
             for i, (s, r) in enumerate(JOBS)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _at_ten(tmp_path, **kwargs) -> SchedulingEnv:
    """Job 0 runs on the only core from 0 to 10; the decision at 10, four jobs queued."""
    env = SchedulingEnv(workload_file=_swf(tmp_path), platform_file=None, homogeneous_procs=1,
                        tenants="job", sla="relative:3", mode="job_pick", window=8,
                        objective="sla_satisfaction", **kwargs)
    _, info = env.reset(seed=0)
    env.step(0)  # job 0 starts at 0
    while env.sim.now < 10:
        env.step(int(np.argmax(env.action_masks())))  # nothing fits: wait
    return env


def test_laxity_window_shows_the_feasible_jobs_by_laxity_then_the_lost_ones(tmp_path):
    # at 10: job 1 d=7 (lost), job 2 d=14 laxity 14-10-4=0, job 3 d=6 (lost), job 4 d=19
    # laxity 19-10-5=4: feasible ones by laxity (2, 4), then the lost ones in submission order
    env = _at_ten(tmp_path, window_order="laxity", observation="job_window_sla")
    assert [j.id for j in env.window_jobs()] == [3, 5, 2, 4]  # SWF ids are index + 1
    obs = env.observer.build()
    assert env.observer.features[6:8] == ("laxity", "lost")
    # laxity / (d - s): job 2: 0 / 12, job 4: 4 / 15; lost jobs 0 and flagged
    assert obs[:4, 6] == pytest.approx([0.0, 4 / 15, 0.0, 0.0])
    assert obs[:4, 7].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert obs[4:, 6:8].sum() == 0.0  # padding
    env.step(0)  # the first row is job 2 (id 3): it starts now
    assert env.sim.outcomes[2].start_s == 10.0


def test_submission_window_is_unchanged(tmp_path):
    env = _at_ten(tmp_path)
    assert [j.id for j in env.window_jobs()] == [2, 3, 4, 5]


def test_window_order_and_observation_need_tenants_and_a_known_name(small_swf):
    with pytest.raises(ConfigError, match="window_order 'laxity' and observation "
                                          "'job_window_sla' read deadlines; give tenants"):
        SchedulingEnv(workload_file=small_swf, nb_jobs=5, mode="job_pick", window_order="laxity")
    with pytest.raises(ConfigError, match=r"window_order: unknown order 'laxitty'; .*laxity"):
        EnvConfig(window_order="laxitty")
    with pytest.raises(ConfigError, match="sla_energy_weight_per_j: expected a weight >= 0"):
        EnvConfig(sla_energy_weight_per_j=-1.0)


def test_sla_energy_weight_per_joule():
    table = TenantTable((Tenant("A", 1.0, Sla("latency", 30.0)),), np.array([0, 0], np.int32),
                        np.array([30.0, 30.0]))
    tracker = Tracker(nb_jobs=2, energy_j=0.4)  # 0.2 J a job
    accounting = SlaAccounting(table)
    accounting.start(tracker)
    accounting.ended(tracker, Job(0, 0, 0.0, 1, 100.0, 10.0), 40.0, True)  # missed
    accounting.ended(tracker, Job(1, 1, 0.0, 1, 100.0, 10.0), 20.0, True)  # met
    objective = make_objective("sla_energy")
    assert objective.value(tracker, True) == pytest.approx(0.5 + 1e-6 * 0.2)  # 1 per MJ
    objective.weight_per_j = 5.0
    assert objective.value(tracker, True) == pytest.approx(0.5 + 5.0 * 0.2)


def test_the_weight_reaches_the_objective_from_options_json(tmp_path):
    data = {"workload_file_path": _swf(tmp_path), "nb_resources": 1,
            "workload": {"tenants": "job", "sla": "relative:3"},
            "pybatsim": {"env": {"objective": "sla_energy", "sla_energy_weight_per_j": 5.0,
                                 "actions": {"mode": "job_pick", "window_order": "laxity"}}}}
    config = EnvConfig.from_options(options_from_dict(data, "options.json"))
    assert (config.sla_energy_weight_per_j, config.window_order) == (5.0, "laxity")
    env = SchedulingEnv(config=config)
    assert env.objective.weight_per_j == 5.0
    _, info = env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        _, reward, done, _, info = env.step(int(np.argmax(info["action_mask"])))
        total += reward
    report, result = env.sla_report(), env.result()
    expected = 1 - report.overall.sla_satisfaction + 5.0 * result.energy_j / len(JOBS)
    assert total == pytest.approx(-expected)


def test_jobs_without_a_deadline_come_after_the_lost_ones():
    from hdrm.env.tenants import Episode

    table = TenantTable((Tenant("A", 1.0, Sla("latency", 30.0)),), np.zeros(3, np.int32),
                        np.array([np.inf, 100.0, 5.0]))
    jobs = [Job(i, i, 0.0, 1, 100.0, 10.0) for i in range(3)]  # requested 100 s, run 10 s
    episode = Episode(SlaAccounting(table), None, jobs)
    # at 0: job 1's laxity 100 - 0 - 100 = 0 (feasible), job 2's 5 - 100 < 0 (lost)
    assert [j.idx for j in episode.laxity_window(jobs, 0.0, 3)] == [1, 2, 0]
    assert [j.idx for j in episode.laxity_window(jobs, 0.0, 2)] == [1, 2]
    laxity, lost = episode.laxity_columns(np.arange(3), 0.0)
    assert laxity.tolist() == [1.0, 0.0, 0.0] and lost.tolist() == [0.0, 0.0, 1.0]
