"""What ``step`` takes as an action, on every environment: an int, a numpy integer, a 0-d array
or a whole float (what policies hand over) is that action; a batch of one (``array([2])``, a
policy's output with its batch dimension), a fraction or another value is refused in one line
naming it (they were a numpy TypeError about 0-d arrays, or silently truncated: 2.5 was 2)."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.gpu_multiagent import parallel_env

from dag.periodic_gpu_case import write_case
from gpu_builders import write_tiny

from .conftest import PLATFORMS, write_jobs

JOBS = [(0, 100, 3, 100), (0, 50, 2, 50), (10, 10, 1, 10), (10, 30, 4, 30)]
KINDS = ["policy_pair", "job_pick", "gpu", "dag"]


def _env(tmp_path, kind: str) -> SchedulingEnv:
    swf = write_jobs(tmp_path / "four.swf", JOBS)
    if kind == "policy_pair":
        return SchedulingEnv(workload_file=swf, **PLATFORMS["tiny4"])
    if kind == "job_pick":
        return SchedulingEnv(workload_file=swf, mode="job_pick", window=4,
                             **PLATFORMS["homogeneous"])
    if kind == "gpu":
        return SchedulingEnv(**write_tiny(tmp_path), observation="gpu")
    taskset, platform = write_case(tmp_path)
    return SchedulingEnv(workload_file=str(taskset), platform_file=str(platform),
                         mode="job_pick", window=2)


def _first_step(env, action):
    env.reset(seed=0)
    return env.step(action)


@pytest.mark.parametrize("kind", KINDS)
def test_integers_of_every_kind_and_whole_floats_are_the_same_action(tmp_path, kind):
    env = _env(tmp_path, kind)
    _, info = env.reset(seed=0)
    valid = int(np.flatnonzero(info["action_mask"])[0])
    expected = _first_step(env, valid)
    for given in (np.int64(valid), np.int8(valid), np.array(valid), float(valid),
                  np.float32(valid)):
        obs, reward, terminated, _, info = _first_step(env, given)
        np.testing.assert_array_equal(obs, expected[0])
        assert (reward, terminated, info["time"]) == (expected[1], expected[2],
                                                      expected[4]["time"]), repr(given)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("given, message", [
    (np.array([0]), r"^action array\(\[0\]\): expected one action of Discrete\(\d+\) \(an int or "
                    r"a 0-d array\), got shape \(1,\); for a batch of one environment give "
                    r"action\[0\] or action\.item\(\)$"),
    (np.zeros((1, 1), dtype=np.int64), r"got shape \(1, 1\)"),
    (1.5, r"^action 1\.5: expected a whole number, one action of Discrete\(\d+\)$"),
    ("1", r"^action '1': expected a whole number"),
    (None, r"^action None: expected a whole number"),
    (1e300, r"^action 1e\+300 outside Discrete\(\d+\)$"),  # not a 301-digit number
    (-1.0, r"^action -1\.0 outside Discrete\(\d+\)$"),
])
def test_a_batch_a_fraction_or_another_value_is_refused_naming_it(tmp_path, kind, given,
                                                                   message):
    env = _env(tmp_path, kind)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        env.step(given)


def test_the_multi_agent_env_takes_and_refuses_the_same(tmp_path):
    env = parallel_env(**write_tiny(tmp_path), window=4)
    obs, _ = env.reset(seed=0)
    env.step({"order": np.array(0), "place": np.int64(0)})  # t1 chosen, then placed
    env.step({"order": 0.0, "place": np.array(0)})
    with pytest.raises(ValueError, match=r"^action array\(\[0\]\): expected one action of "
                                         r"Discrete\(5\)"):
        env.step({"order": np.array([0]), "place": 0})
    with pytest.raises(ValueError, match=r"^action 0\.5: expected a whole number"):
        env.step({"order": 0.5, "place": 0})
