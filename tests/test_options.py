"""Tests of hdrm.options: schema defaults, paths, round trips, immutability and every error kind."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import os
import re
import types
from pathlib import Path

import pytest

from hdrm import options as options_module
from hdrm.errors import ConfigError
from hdrm.options import (
    ActionsOptions,
    AgentOptions,
    Options,
    SELECTION_PATH,
    check_names,
    load_options,
    option_fields,
    options_from_dict,
)

#: HDeepRM's documented example file, as users have it today.
HDEEPRM_FILE = {
    "seed": 2009,
    "nb_resources": 175,
    "nb_jobs": 1000,
    "workload_file_path": "workloads/my_workload.swf",
    "platform_file_path": "platforms/my_platform.json",
    "pybatsim": {
        "log_level": "DEBUG",
        "env": {
            "objective": "avg_job_slowdown",
            "actions": {
                "selection": [
                    {"random": ["random"]},
                    {"first": ["high_mem_bw"]},
                    {"shortest": ["low_power"]},
                ],
                "void": False,
            },
            "observation": "normal",
            "queue_sensitivity": 0.05,
        },
        "agent": {"type": "CLASSIC", "run": "train", "hidden": 128, "lr": 0.001, "gamma": 0.99},
    },
}

MINIMAL = {"workload_file_path": "w.swf"}


def parse(extra: dict, source: str = "options.json") -> Options:
    """Parse MINIMAL merged with ``extra`` (a nested dict, merged one level deep per block)."""
    return options_from_dict({**MINIMAL, **extra}, source=source)


def nested(path: str, value: object) -> dict:
    """{"a": {"b": value}} from "a.b"."""
    data: object = value
    for key in reversed(path.split(".")):
        data = {key: data}
    return data  # type: ignore[return-value]


def raises(data: dict, message: str) -> None:
    """Assert parsing ``data`` (on top of MINIMAL) raises exactly the one-line ``message``."""
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        parse(data)


# --------------------------------------------------------------------------- defaults


def test_defaults_of_a_minimal_file():
    opts = options_from_dict(MINIMAL)
    assert opts.workload_file_path == "w.swf"  # no base_dir: left as given
    assert (opts.seed, opts.nb_resources, opts.nb_jobs, opts.platform_file_path) == (
        2009,
        None,
        None,
        None,
    )
    assert opts.engine == "builtin"
    assert opts.batsim.binary == "batsim" and opts.batsim.timeout_s == 60.0
    assert opts.batsim.extra_args == ()
    assert opts.workload.conventions == "default" and opts.workload.strict is True
    assert opts.workload.start_index is None and opts.workload.window is None
    assert opts.workload.bandwidth == "hdeeprm"
    sim = opts.simulation
    assert (sim.contention, sim.backfilling, sim.decision, sim.kill_on_walltime) == (
        "hdeeprm",
        "none",
        "event",
        True,
    )
    env = opts.pybatsim.env
    assert (env.objective, env.observation, env.queue_sensitivity) == (
        "avg_job_slowdown",
        "normal",
        0.05,
    )
    assert env.actions == ActionsOptions("policy_pair", None, False, 128)
    agent = opts.pybatsim.agent
    assert (agent.type, agent.run, agent.policy, agent.hidden) == (
        "classic",
        "train",
        "shortest-high_gflops",
        None,
    )
    assert (agent.lr, agent.gamma, agent.episodes, agent.greedy, dict(agent.params)) == (
        0.001,
        0.99,
        1,
        True,
        {},
    )
    assert opts.pybatsim.log_level == "WARNING"
    assert opts.source == "<dict>"


def test_dataclass_defaults_equal_parsed_defaults():
    assert options_from_dict(MINIMAL) == Options(workload_file_path="w.swf")


def test_hdeeprm_original_file_loads(tmp_path):
    path = tmp_path / "options.json"
    path.write_text(json.dumps(HDEEPRM_FILE))
    opts = load_options(path)
    assert opts.nb_resources == 175 and opts.nb_jobs == 1000 and opts.seed == 2009
    assert opts.workload_file_path == str(tmp_path / "workloads" / "my_workload.swf")
    assert opts.platform_file_path == str(tmp_path / "platforms" / "my_platform.json")
    assert opts.pybatsim.log_level == "DEBUG"
    assert opts.pybatsim.agent.type == "classic"  # "CLASSIC" is accepted case-insensitively
    assert opts.pybatsim.agent.hidden == 128
    assert opts.pybatsim.env.actions.selected_pairs() == (
        ("random", "random"),
        ("first", "high_mem_bw"),
        ("shortest", "low_power"),
    )
    assert opts.pybatsim.agent.policy == "shortest-high_gflops"  # three pairs: no implied policy
    assert opts.source == str(path)


def test_learning_type_case_insensitive_and_closed_choices_canonical():
    opts = parse(
        {
            "engine": "BatSim",
            "pybatsim": {"log_level": "debug", "agent": {"type": "LEARNING"}},
            "simulation": {"backfilling": "EASY"},
        }
    )
    assert opts.engine == "batsim"
    assert opts.pybatsim.log_level == "DEBUG"
    assert opts.pybatsim.agent.type == "learning"
    assert opts.simulation.backfilling == "easy"


def test_single_pair_selection_implies_the_classic_policy():
    opts = parse(nested("pybatsim.env.actions.selection", [{"smallest": ["low_power"]}]))
    assert opts.pybatsim.agent.policy == "smallest-low_power"
    given = parse(
        {
            "pybatsim": {
                "env": {"actions": {"selection": [{"smallest": ["low_power"]}]}},
                "agent": {"policy": "sjf"},
            }
        }
    )
    assert given.pybatsim.agent.policy == "sjf"


def test_rlscheduler_conventions_imply_commit_unless_decision_is_given():
    assert parse(nested("workload.conventions", "rlscheduler")).simulation.decision == "commit"
    opts = parse({"workload": {"conventions": "rlscheduler"}, "simulation": {"decision": "event"}})
    assert opts.simulation.decision == "event"
    assert parse(nested("workload.conventions", "default")).simulation.decision == "event"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (0, 0),
        (17, 17),
        ([3, 1, 4], (3, 1, 4)),
        ("random", "random"),
        ("RANDOM", "random"),
    ],
)
def test_start_index_forms(value, expected):
    assert parse(nested("workload.start_index", value)).workload.start_index == expected


def test_window_and_params_are_converted():
    opts = parse(
        {
            "workload": {"window": [0, 86400]},
            "pybatsim": {"agent": {"params": {"clip": 0.2, "layers": [64, 64], "sub": {"k": 1}}}},
        }
    )
    assert opts.workload.window == (0.0, 86400.0)
    assert isinstance(opts.workload.window[0], float)
    params = opts.pybatsim.agent.params
    assert params["clip"] == 0.2 and params["layers"] == (64, 64) and params["sub"]["k"] == 1


def test_integers_are_accepted_for_numbers():
    opts = parse({"batsim": {"timeout_s": 5}, "pybatsim": {"agent": {"gamma": 1, "lr": 1}}})
    assert opts.batsim.timeout_s == 5.0 and isinstance(opts.batsim.timeout_s, float)
    assert opts.pybatsim.agent.gamma == 1.0 and opts.pybatsim.agent.lr == 1.0


# --------------------------------------------------------------------------- paths


def test_relative_paths_resolve_against_the_options_folder(tmp_path):
    folder = tmp_path / "examples" / "classic"
    folder.mkdir(parents=True)
    path = folder / "options.json"
    path.write_text(
        json.dumps(
            {
                "workload_file_path": "../../workloads/x.swf",
                "platform_file_path": "/abs/platform.json",
                "batsim": {"binary": "./bin/batsim"},
            }
        )
    )
    opts = load_options(path)
    assert opts.workload_file_path == str(tmp_path / "workloads" / "x.swf")
    assert opts.platform_file_path == "/abs/platform.json"
    assert opts.batsim.binary == str(folder / "bin" / "batsim")


def test_relative_options_path_still_gives_absolute_paths(tmp_path, monkeypatch):
    (tmp_path / "o.json").write_text(json.dumps({"workload_file_path": "w.swf"}))
    monkeypatch.chdir(tmp_path)
    opts = load_options("o.json")
    assert opts.workload_file_path == str(tmp_path / "w.swf")
    assert opts.source == "o.json"


def test_bare_command_name_and_home_paths():
    opts = options_from_dict(
        {"workload_file_path": "~/w.swf", "batsim": {"binary": "batsim-4"}}, base_dir="/base"
    )
    assert opts.batsim.binary == "batsim-4"  # looked up on PATH, not resolved
    assert opts.workload_file_path == os.path.expanduser("~/w.swf")


def test_base_dir_for_dicts():
    opts = options_from_dict({"workload_file_path": "a/../w.swf"}, base_dir=Path("/data"))
    assert opts.workload_file_path == "/data/w.swf"


# ------------------------------------------------------------------ round trip and immutability


def test_round_trip_through_json():
    opts = options_from_dict(HDEEPRM_FILE, base_dir="/exp")
    data = json.loads(json.dumps(opts.to_dict()))
    assert options_from_dict(data) == opts
    assert (
        data["pybatsim"]["env"]["actions"]["selection"]
        == HDEEPRM_FILE["pybatsim"]["env"]["actions"]["selection"]
    )
    assert data["workload_file_path"] == "/exp/workloads/my_workload.swf"
    assert "source" not in data


def test_round_trip_keeps_every_setting():
    full = parse(
        {
            "batsim": {"extra_args": ["--verbosity", "quiet"]},
            "workload": {"start_index": [1, 2], "window": [10, 20]},
            "pybatsim": {
                "agent": {"params": {"a": [1, {"b": None}]}},
                "env": {"actions": {"mode": "job_pick"}},
            },
        }
    )
    data = full.to_dict()
    assert data["batsim"]["extra_args"] == ["--verbosity", "quiet"]
    assert data["workload"]["start_index"] == [1, 2]
    assert data["pybatsim"]["agent"]["params"] == {"a": [1, {"b": None}]}
    assert options_from_dict(data) == full
    assert full.pybatsim.to_dict() == data["pybatsim"]


def test_options_are_frozen():
    opts = options_from_dict(HDEEPRM_FILE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.seed = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.pybatsim.agent.lr = 1.0  # type: ignore[misc]
    entry = opts.pybatsim.env.actions.selection[0]
    assert isinstance(opts.pybatsim.env.actions.selection, tuple)
    with pytest.raises(TypeError):
        entry["random"] = ("x",)  # type: ignore[index]
    assert isinstance(entry["random"], tuple)


def test_params_are_deeply_read_only():
    opts = parse(nested("pybatsim.agent.params", {"layers": [1, 2], "sub": {"k": [3]}}))
    params = opts.pybatsim.agent.params
    assert isinstance(params, types.MappingProxyType)
    with pytest.raises(TypeError):
        params["new"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        params["sub"]["k"] = 2  # type: ignore[index]
    assert params["sub"]["k"] == (3,)


def test_parsing_copies_the_input():
    data = json.loads(json.dumps(HDEEPRM_FILE))
    opts = options_from_dict(data)
    data["pybatsim"]["env"]["actions"]["selection"][0]["random"].append("low_power")
    data["pybatsim"]["agent"]["hidden"] = 1
    assert opts.pybatsim.env.actions.selection[0]["random"] == ("random",)
    assert opts.pybatsim.agent.hidden == 128


def test_replace_gives_a_new_object():
    opts = options_from_dict(MINIMAL)
    agent = dataclasses.replace(opts.pybatsim.agent, lr=0.01)
    changed = dataclasses.replace(opts, pybatsim=dataclasses.replace(opts.pybatsim, agent=agent))
    assert changed.pybatsim.agent.lr == 0.01 and opts.pybatsim.agent.lr == 0.001
    assert changed != opts


# --------------------------------------------------------------------------- errors: keys and types


def test_unknown_key_suggests_the_closest():
    raises(
        nested("pybatsim.env.objectiv", "x"),
        "options.json: pybatsim.env.objectiv: unknown key; did you mean 'objective' or 'observation'? "
        "valid keys: actions, objective, observation, preemption, preemption_overhead_s, "
        "queue_sensitivity, reservation, reward_timing, sla_energy_weight_per_j",
    )


def test_unknown_key_without_a_close_name():
    raises(
        {"zzz": 1},
        "options.json: zzz: unknown key; valid keys: accelerator_types_path, batsim, engine, "
        "nb_jobs, nb_resources, platform_file_path, pybatsim, seed, simulation, workload, "
        "workload_file_path",
    )


def test_source_is_not_an_options_key():
    with pytest.raises(ConfigError, match=r"^options\.json: source: unknown key;"):
        parse({"source": "x"})


def test_missing_workload_path():
    with pytest.raises(
        ConfigError,
        match=r"^o\.json: workload_file_path: missing required key \(a string\); add it$",
    ):
        options_from_dict({"seed": 1}, source="o.json")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"seed": "abc"}, 'seed: expected an integer >= 0, got "abc"'),
        ({"seed": True}, "seed: expected an integer >= 0, got true"),
        ({"seed": 1.5}, "seed: expected an integer >= 0, got 1.5"),
        ({"seed": None}, "seed: expected an integer >= 0, got null"),
        ({"nb_jobs": "10"}, 'nb_jobs: expected an integer >= 1 or null, got "10"'),
        ({"workload_file_path": 3}, "workload_file_path: expected a string, got 3"),
        (nested("workload.strict", "yes"), 'workload.strict: expected true or false, got "yes"'),
        (
            nested("workload.window", [1]),
            "workload.window: expected a list of 2 numbers >= 0, got [1]",
        ),
        (
            nested("workload.start_index", 1.5),
            "workload.start_index: expected an integer >= 0, a non-empty list of integers >= 0, "
            '"random" or null, got 1.5',
        ),
        (
            nested("workload.start_index", [1, "a"]),
            'workload.start_index[1]: expected an integer >= 0, got "a"',
        ),
        (
            nested("batsim.extra_args", "-q"),
            'batsim.extra_args: expected a list of strings, got "-q"',
        ),
        (nested("batsim.extra_args", ["-q", 1]), "batsim.extra_args[1]: expected a string, got 1"),
        ({"pybatsim": 3}, "pybatsim: expected an object, got 3"),
        (
            nested("pybatsim.agent.params", [1]),
            "pybatsim.agent.params: expected an object, got [1]",
        ),
        (
            nested("pybatsim.env.actions.void", 0),
            "pybatsim.env.actions.void: expected true or false, got 0",
        ),
        (
            nested("pybatsim.env.actions.selection", {"shortest": ["random"]}),
            "pybatsim.env.actions.selection: expected a non-empty list of objects or null, "
            'got {"shortest": ["random"]}',
        ),
        (
            nested("pybatsim.env.actions.selection", ["shortest"]),
            'pybatsim.env.actions.selection[0]: expected an object, got "shortest"',
        ),
        (
            nested("pybatsim.env.actions.selection", [{"shortest": "random"}]),
            "pybatsim.env.actions.selection[0].shortest: expected a non-empty list of strings, "
            'got "random"',
        ),
        (
            nested("pybatsim.env.actions.selection", []),
            "pybatsim.env.actions.selection: expected a non-empty list, got []",
        ),
        (
            nested("pybatsim.env.actions.selection", [{}]),
            "pybatsim.env.actions.selection[0]: expected a non-empty object, got {}",
        ),
        (
            nested("pybatsim.env.actions.selection", [{"first": []}]),
            "pybatsim.env.actions.selection[0].first: expected a non-empty list, got []",
        ),
        (nested("pybatsim.env.objective", 5), "pybatsim.env.objective: expected a string, got 5"),
        (
            nested("workload.start_index", []),
            "workload.start_index: expected a non-empty list, got []",
        ),
    ],
)
def test_wrong_types(data, message):
    raises(data, "options.json: " + message)


@pytest.mark.parametrize(
    ("path", "value", "rule"),
    [
        ("pybatsim.agent.gamma", 1.5, "a number in [0, 1]"),
        ("pybatsim.agent.gamma", -0.1, "a number in [0, 1]"),
        ("pybatsim.agent.lr", 0, "a number > 0"),
        ("pybatsim.agent.lr", -1e-3, "a number > 0"),
        ("pybatsim.agent.hidden", 0, "an integer >= 1"),
        ("pybatsim.agent.episodes", -2, "an integer >= 1"),
        ("pybatsim.env.actions.window", 0, "an integer >= 1"),
        ("pybatsim.env.queue_sensitivity", -0.5, "a number >= 0"),
        ("batsim.timeout_s", 0, "a number > 0"),
        ("seed", -1, "an integer >= 0"),
        ("nb_resources", 0, "an integer >= 1"),
        ("nb_jobs", 0, "an integer >= 1"),
    ],
)
def test_out_of_range(path, value, rule):
    raises(nested(path, value), f"options.json: {path}: expected {rule}, got {json.dumps(value)}")


def test_non_finite_and_huge_numbers():
    raises(
        nested("batsim.timeout_s", float("inf")),
        "options.json: batsim.timeout_s: expected a number > 0, got Infinity",
    )
    raises(
        nested("pybatsim.agent.gamma", float("nan")),
        "options.json: pybatsim.agent.gamma: expected a number in [0, 1], got NaN",
    )
    with pytest.raises(
        ConfigError, match=r"^options\.json: pybatsim\.agent\.lr: expected a number > 0, got 1000"
    ):
        parse(nested("pybatsim.agent.lr", 10**400))


def test_window_must_not_end_before_it_starts():
    raises(
        nested("workload.window", [50, 10]),
        "options.json: workload.window: expected [t0, t1] with t0 <= t1, got [50.0, 10.0]",
    )
    raises(
        nested("workload.window", [-5, 10]),
        "options.json: workload.window[0]: expected a number >= 0, got -5",
    )


@pytest.mark.parametrize(
    ("path", "value", "hint", "choices"),
    [
        ("engine", "batsm", "did you mean 'batsim'? ", "builtin, batsim"),
        ("simulation.decision", "events", "did you mean 'event'? ", "event, commit"),
        ("simulation.backfilling", "EASYY", "did you mean 'easy' or 'easy_first'? ", "none, easy, easy_first, conservative"),
        (
            "pybatsim.env.actions.mode",
            "job-pick",
            "did you mean 'job_pick'? ",
            "policy_pair, job_pick",
        ),
        ("pybatsim.agent.run", "testing", "did you mean 'test' or 'train'? ", "train, test"),
        ("pybatsim.agent.type", "Learner", "did you mean 'learning'? ", "classic, learning"),
        ("workload.conventions", "rlsched", "did you mean 'rlscheduler'? ", "default, rlscheduler"),
        (
            "pybatsim.log_level",
            "WARN",
            "did you mean 'warning'? ",
            "DEBUG, INFO, WARNING, ERROR, CRITICAL",
        ),
        ("workload.start_index", "randm", "did you mean 'random'? ", "random"),
        ("engine", "qqq", "", "builtin, batsim"),
    ],
)
def test_closed_choices(path, value, hint, choices):
    raises(
        nested(path, value),
        f'options.json: {path}: unknown value "{value}"; {hint}valid choices: {choices}',
    )


def test_closed_choice_of_the_wrong_type():
    raises({"engine": 1}, "options.json: engine: expected one of builtin, batsim, got 1")


def test_top_level_must_be_an_object():
    with pytest.raises(
        ConfigError, match=r"^x\.json: \(top level\): expected an object, got \[1, 2\]$"
    ):
        options_from_dict([1, 2], source="x.json")


def test_long_bad_values_are_shortened():
    raises(
        {"seed": "x" * 500},
        'options.json: seed: expected an integer >= 0, got "' + "x" * 56 + "...",
    )


# --------------------------------------------------------------------------- errors: files


def test_missing_file(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(
        ConfigError, match=f"^{re.escape(str(path))}: no such options file; check the path$"
    ):
        load_options(path)


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "options.json"
    path.write_text('{\n  "seed": 1,\n  "nb_jobs": ,\n}\n')
    with pytest.raises(ConfigError, match=re.escape(f"{path}:3:14: invalid JSON: Expecting value")):
        load_options(path)


def test_duplicate_keys_are_refused(tmp_path):
    path = tmp_path / "options.json"
    path.write_text('{"workload_file_path": "a", "seed": 1, "seed": 2}')
    with pytest.raises(
        ConfigError, match=re.escape(f"{path}: key 'seed' is given twice in one object; keep one")
    ):
        load_options(path)


def test_a_folder_is_not_an_options_file(tmp_path):
    with pytest.raises(ConfigError, match=re.escape(f"{tmp_path}: cannot read the options file")):
        load_options(tmp_path)


def test_errors_from_a_file_name_the_file(tmp_path):
    path = tmp_path / "options.json"
    path.write_text(json.dumps({**MINIMAL, "pybatsim": {"agent": {"gamma": 2}}}))
    with pytest.raises(
        ConfigError,
        match="^" + re.escape(f"{path}: pybatsim.agent.gamma: expected a number in [0, 1], got 2"),
    ):
        load_options(path)


# --------------------------------------------------------------------------- open names

PAIRS = [
    f"{job}-{core}"
    for job in ("random", "first", "shortest")
    for core in ("random", "high_gflops", "low_power")
]


def test_check_names_accepts_valid_names_case_insensitively():
    opts = parse(
        {
            "pybatsim": {
                "env": {
                    "objective": "MAKESPAN",
                    "actions": {"selection": [{"shortest": ["high_gflops", "Low_Power"]}]},
                }
            }
        }
    )
    check_names(
        opts,
        {
            "pybatsim.env.objective": ["makespan", "avg_job_slowdown"],
            "pybatsim.env.observation": iter(["normal", "small"]),
            SELECTION_PATH: PAIRS,
            "pybatsim.agent.policy": PAIRS,
        },
    )


def test_check_names_unknown_objective():
    opts = parse(nested("pybatsim.env.objective", "avg_job_slowdwn"))
    with pytest.raises(
        ConfigError,
        match="^"
        + re.escape(
            'options.json: pybatsim.env.objective: unknown objective "avg_job_slowdwn"; did you mean '
            "'avg_job_slowdown'? valid choices: avg_job_slowdown, makespan"
        )
        + "$",
    ):
        check_names(opts, {"pybatsim.env.objective": ["makespan", "avg_job_slowdown"]})


def test_check_names_contention_and_policy():
    opts = parse({"simulation": {"contention": "nothing"}})
    with pytest.raises(
        ConfigError,
        match=r"^options\.json: simulation\.contention: unknown contention \"nothing\"; "
        r"did you mean 'none'\? valid choices: hdeeprm, none$",
    ):
        check_names(opts, {"simulation.contention": ["hdeeprm", "none"]})
    with pytest.raises(
        ConfigError,
        match=r"^options\.json: pybatsim\.agent\.policy: unknown policy "
        r"\"shortest-high_gflops\"; valid choices: fcfs, sjf$",
    ):
        check_names(opts, {"pybatsim.agent.policy": ["sjf", "fcfs"]})


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (
            [{"shortest": ["random"]}, {"shortst": ["random"]}],
            'pybatsim.env.actions.selection[1].shortst: unknown job selection "shortst"; '
            "did you mean 'shortest' or 'first'? valid choices: first, random, shortest",
        ),
        (
            [{"shortest": ["random"]}, {"first": ["random", "high_gflop"]}],
            'pybatsim.env.actions.selection[1].first[1]: unknown core selection "high_gflop"; did you mean '
            "'high_gflops'? valid choices: high_gflops, low_power, random",
        ),
    ],
)
def test_check_names_selection_paths(selection, message):
    opts = parse(nested("pybatsim.env.actions.selection", selection))
    with pytest.raises(ConfigError, match="^" + re.escape("options.json: " + message) + "$"):
        check_names(opts, {SELECTION_PATH: PAIRS})


def test_check_names_selection_pairs_outside_the_product():
    opts = parse(nested("pybatsim.env.actions.selection", [{"first": ["low_power"]}]))
    with pytest.raises(
        ConfigError, match=r"selection\[0\]\.first\[0\]: unknown policy pair \"first-low_power\""
    ):
        check_names(opts, {SELECTION_PATH: ["first-random", "random-low_power"]})


def test_check_names_with_no_selection_checks_nothing():
    check_names(parse({}), {SELECTION_PATH: []})


def test_check_names_refuses_a_path_that_is_not_a_name():
    with pytest.raises(ValueError, match="'pybatsim.agent.gamma' is not a string option"):
        check_names(parse({}), {"pybatsim.agent.gamma": ["x"]})
    with pytest.raises(ValueError, match="'pybatsim.nope' is not a string option"):
        check_names(parse({}), {"pybatsim.nope": ["x"]})


# ------------------------------------------------------------------ documentation of the schema


def _option_classes() -> list[type]:
    return [
        c
        for _, c in inspect.getmembers(options_module, inspect.isclass)
        if dataclasses.is_dataclass(c) and c.__module__ == options_module.__name__
    ]


def test_every_field_has_a_docstring():
    tree = ast.parse(Path(options_module.__file__).read_text(encoding="utf-8"))
    documented: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            body, names = node.body, set()
            for first, second in zip(body, body[1:]):
                if (
                    isinstance(first, ast.AnnAssign)
                    and isinstance(second, ast.Expr)
                    and isinstance(second.value, ast.Constant)
                    and str(second.value.value).strip()
                ):
                    names.add(first.target.id)  # type: ignore[union-attr]
            documented[node.name] = names
    classes = _option_classes()
    assert len(classes) == 8
    for cls in classes:
        missing = {f.name for f in dataclasses.fields(cls)} - documented[cls.__name__]
        assert not missing, f"{cls.__name__}: fields without a docstring: {sorted(missing)}"


def test_option_fields_cover_every_key():
    rows = option_fields()
    paths = [r.path for r in rows]
    assert len(paths) == len(set(paths))
    leaves = {r.path for r in rows if not r.is_block}
    assert leaves == set(_leaf_paths(options_from_dict(MINIMAL).to_dict()))
    by_path = {r.path: r for r in rows}
    assert by_path["pybatsim.agent.gamma"].type_text == "a number in [0, 1]"
    assert by_path["pybatsim.agent.gamma"].default == 0.99
    assert by_path["pybatsim.agent.gamma"].owner is AgentOptions
    assert by_path["workload_file_path"].required and by_path["workload_file_path"].default is None
    assert by_path["engine"].type_text == 'one of "builtin", "batsim"'
    assert by_path["pybatsim.env"].is_block and not by_path["seed"].required
    assert by_path["batsim.extra_args"].default == []


def _leaf_paths(data: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else key
        is_block = isinstance(value, dict) and key not in ("params",)
        out.extend(_leaf_paths(value, path) if is_block else [path])
    return out


def test_reward_timing_reaches_the_environment_and_is_checked():
    from hdrm.env.config import EnvConfig

    assert EnvConfig.from_options(parse(nested("pybatsim.env.reward_timing", "accrued"))
                                  ).reward_timing == "accrued"
    assert EnvConfig.from_options(parse({})).reward_timing == "end"
    raises(nested("pybatsim.env.reward_timing", "acrued"),
           "options.json: pybatsim.env.reward_timing: unknown value \"acrued\"; did you mean "
           "'accrued'? valid choices: end, accrued")
