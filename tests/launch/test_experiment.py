"""Building an experiment: name checks, the classic agent's environment, seeding, agent errors."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hdrm.errors import AgentLoadError, ConfigError
from hdrm.launch.experiment import (
    build_experiment,
    check_open_names,
    env_overrides,
    seed_globals,
    with_source,
)
from hdrm.options import load_options, options_from_dict

ROOT = Path(__file__).resolve().parents[2]
CLASSIC = ROOT / "agents" / "classic.py"
REINFORCE = ROOT / "agents" / "reinforce.py"


def options(**data):
    base = {"workload_file_path": str(ROOT / "workloads" / "lublin_256_first500.swf"),
            "nb_resources": 256, "nb_jobs": 20, "workload": {"conventions": "rlscheduler"}}
    base.update(data)
    return options_from_dict(base, source="exp.json")


def test_open_names_are_checked_with_the_file_and_path():
    with pytest.raises(ConfigError, match=r"^exp\.json: simulation\.contention: unknown contention "
                                          r"\"hdeepr\"; did you mean 'hdeeprm'"):
        check_open_names(options(simulation={"contention": "hdeepr"}))
    with pytest.raises(ConfigError, match=r"^exp\.json: pybatsim\.env\.observation: unknown "
                                          r"observation \"norml\"; did you mean 'normal'"):
        check_open_names(options(pybatsim={"env": {"observation": "norml"}}))
    selection = {"pybatsim": {"env": {"actions": {"selection": [{"shortest": ["low_powr"]}]}}}}
    with pytest.raises(ConfigError, match=r"selection\[0\]\.shortest\[0\]: unknown core selection "
                                          r"\"low_powr\"; did you mean 'low_power'"):
        check_open_names(options(**selection))
    typo = options(pybatsim={"agent": {"policy": "sjff"}})
    check_open_names(typo)  # a learner ignores the policy...
    with pytest.raises(ConfigError, match=r"pybatsim\.agent\.policy: unknown policy \"sjff\"; "
                                          r"did you mean 'sjf'"):
        check_open_names(typo, classic=True)  # ...a classic agent needs it


def test_classic_heuristics_outside_the_pairs_become_the_only_action():
    assert env_overrides(options(pybatsim={"agent": {"policy": "SJF"}}), classic=True) == {
        "selection": ("sjf",)}
    assert env_overrides(options(pybatsim={"agent": {"policy": "smallest-low_power"}}), True) == {}
    assert env_overrides(options(pybatsim={"agent": {"policy": "sjf"}}), classic=False) == {}
    chosen = {"env": {"actions": {"selection": [{"first": ["high_gflops"]}]}}, "agent": {"policy": "sjf"}}
    assert env_overrides(options(pybatsim=chosen), True) == {}  # the user's selection is kept
    pick = options(pybatsim={"env": {"actions": {"mode": "job_pick"}}})
    with pytest.raises(ConfigError, match=r"^exp\.json: pybatsim\.env\.actions\.mode: a classic agent"):
        env_overrides(pick, classic=True)


def test_build_a_classic_experiment():
    exp = build_experiment(options(pybatsim={"agent": {"policy": "f1", "episodes": 4}}), CLASSIC)
    assert exp.classic and exp.training and exp.episodes == 4
    assert exp.env.action_names == ["f1"] and exp.agent.action == 0
    assert exp.agent.config["policy"] == "f1" and isinstance(exp.agent.config, dict)
    assert build_experiment(exp.options, CLASSIC, episodes=9).episodes == 9


def test_build_a_learning_experiment_in_test_mode():
    opts = options(pybatsim={"env": {"actions": {"mode": "job_pick", "window": 16}},
                             "agent": {"run": "test", "hidden": 8}})
    exp = build_experiment(opts, REINFORCE)
    assert not exp.classic and not exp.training and not exp.agent.training
    assert exp.torch_seeded and exp.env.observation_space.shape == (16, 8)
    assert exp.agent.hidden == (8, 8)


def test_the_shipped_options_build(tmp_path):
    exp = build_experiment(load_options(ROOT / "examples" / "classic" / "options.json"), CLASSIC)
    assert exp.env.platform.name == "hetero" and exp.env.action_space.n == 36
    assert exp.agent.action == exp.env.action_names.index("shortest-high_gflops")


def test_seed_globals_seeds_python_and_numpy():
    seed_globals(5)
    first = (random.random(), np.random.random())
    seed_globals(5)
    assert (random.random(), np.random.random()) == first
    seed_globals(2**40 + 5)  # seeds beyond numpy's 32 bits are folded
    assert isinstance(np.random.random(), float)


def test_seed_globals_never_imports_torch():
    code = ("import sys; from hdrm.launch.experiment import seed_globals; "
            "print(seed_globals(3), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_agent_errors_name_the_files(tmp_path):
    bad = options(pybatsim={"agent": {"params": {"gama": 1}}})
    with pytest.raises(ConfigError, match=r"^exp\.json: pybatsim\.agent\.params: unknown setting "
                                          r"'gama'"):
        build_experiment(bad, REINFORCE)
    agent = tmp_path / "agent.py"
    agent.write_text("from hdrm.agents.base import ClassicAgent\n\nclass Mine(ClassicAgent):\n"
                     "    def __init__(self, *args, **kwargs):\n        super().__init__()\n")
    with pytest.raises(AgentLoadError, match=rf"^{agent}:5: creating Mine failed: TypeError: "):
        build_experiment(options(), agent)
    with pytest.raises(ConfigError, match=r"--episodes: expected a positive number of episodes, got 0"):
        build_experiment(options(), CLASSIC, episodes=0)


def test_with_source_prefixes_once():
    assert with_source("a.json", "x: bad") == "a.json: x: bad"
    assert with_source("a.json", "a.json: x: bad") == "a.json: x: bad"


def test_options_are_never_mutated():
    opts = options(pybatsim={"agent": {"policy": "sjf"}})
    before = opts.to_dict()
    exp = build_experiment(opts, CLASSIC)
    assert opts.to_dict() == before and exp.options is opts
    assert opts.pybatsim.env.actions.selection is None  # the override went to the env only
