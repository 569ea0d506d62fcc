"""Policy pairs: the 36 HDeepRM names and resolve_policy's errors."""

from __future__ import annotations

import pytest

from hdrm.errors import ConfigError
from hdrm.policies.pairs import ALL_PAIRS, PolicyPair, policy_names, resolve_policy


def test_the_36_pairs_in_job_major_order():
    assert len(ALL_PAIRS) == 36 and len(set(ALL_PAIRS)) == 36
    assert ALL_PAIRS[:7] == (
        "random-random", "random-high_gflops", "random-high_cores", "random-high_mem",
        "random-high_mem_bw", "random-low_power", "first-random",
    )
    assert ALL_PAIRS[-1] == "low_mem_bw-low_power"
    assert "shortest-high_gflops" in ALL_PAIRS


@pytest.mark.parametrize("name", ALL_PAIRS)
def test_every_pair_resolves_to_itself(name):
    pair = resolve_policy(name)
    assert isinstance(pair, PolicyPair)
    assert pair.name == name


@pytest.mark.parametrize("name,expected", [
    ("sjf", "sjf-high_gflops"),
    ("FCFS", "first-high_gflops"),
    ("  F1 ", "f1-high_gflops"),
    ("wfp3-low_power", "wfp3-low_power"),
    ("Shortest-High_Mem", "shortest-high_mem"),
])
def test_heuristics_and_case(name, expected):
    assert resolve_policy(name).name == expected


def test_policy_names_cover_pairs_and_heuristics():
    names = set(policy_names())
    assert set(ALL_PAIRS) <= names
    assert {"fcfs", "sjf", "ljf", "wfp3", "unicep", "f1", "f1-random"} <= names


@pytest.mark.parametrize("name,hint", [
    ("shortest-high_gflop", r"did you mean 'shortest-high_gflops'"),
    ("sjff", r"did you mean 'sjf'"),
    ("shortes-high_gflops", r"did you mean 'shortest-high_gflops'"),
])
def test_unknown_names_suggest(name, hint):
    with pytest.raises(ConfigError, match=rf"policy: unknown policy '{name}'; {hint}"):
        resolve_policy(name)


def test_error_names_where_and_the_choices():
    with pytest.raises(ConfigError) as err:
        resolve_policy("best-fit", where="options.json: env.policy")
    message = str(err.value)
    assert message.startswith("options.json: env.policy: unknown policy 'best-fit'; ")
    assert "use a heuristic (" in message and "unicep" in message
    choices = "high_cores, high_gflops, high_mem, high_mem_bw, low_power, random"
    assert f"core selection one of {choices}" in message
    assert "\n" not in message
