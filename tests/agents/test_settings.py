"""Reading the agent block: typed keys, hidden sizes and settings dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

import pytest

from hdrm.agents.settings import check_number, parse_settings, read_bool, read_hidden, read_number
from hdrm.errors import ConfigError


@dataclass(frozen=True)
class Demo:
    clip: float = field(default=0.2, metadata={"min": 0.0, "max": 1.0})
    epochs: int = field(default=4, metadata={"min": 1})
    network: str = field(default="auto", metadata={"choices": ("auto", "mlp", "kernel")})
    standardise: bool = True
    sizes: tuple = (1, 2)


def test_defaults_when_params_absent():
    assert parse_settings(Demo, None, where="a.params") == Demo()
    assert parse_settings(Demo, MappingProxyType({}), where="a.params") == Demo()


def test_values_are_typed_and_ints_accepted_for_floats():
    got = parse_settings(Demo, {"clip": 1, "epochs": 3.0, "network": "mlp", "sizes": [4]}, where="p")
    assert got == Demo(clip=1, epochs=3, network="mlp", sizes=(4,))
    assert isinstance(got.epochs, int)


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(
        ConfigError,
        match=r"^a\.params: unknown setting 'clp'; did you mean 'clip'\? choose among: clip, epochs",
    ):
        parse_settings(Demo, {"clp": 0.1}, where="a.params")


@pytest.mark.parametrize(
    "params, message",
    [
        ({"clip": "big"}, r"a\.params\.clip: expected a number, got 'big'"),
        ({"clip": 1.5}, r"a\.params\.clip: 1\.5 is too large; use a value <= 1\.0"),
        ({"epochs": 0}, r"a\.params\.epochs: 0 is too small; use a value >= 1"),
        ({"epochs": 2.5}, r"a\.params\.epochs: expected a whole number, got 2\.5"),
        ({"epochs": True}, r"a\.params\.epochs: expected a whole number, got True"),
        ({"standardise": 1}, r"a\.params\.standardise: expected true or false, got 1"),
        (
            {"network": "kernal"},
            r"a\.params\.network: invalid value 'kernal'; did you mean 'kernel'\? "
            r"choose one of: auto, mlp, kernel",
        ),
        ({"sizes": 3}, r"a\.params\.sizes: expected a list, got 3"),
    ],
)
def test_bad_values_name_path_value_and_fix(params, message):
    with pytest.raises(ConfigError, match=message):
        parse_settings(Demo, params, where="a.params")


def test_params_must_be_a_mapping():
    with pytest.raises(ConfigError, match=r"a\.params: expected an object of settings, got \[1\]"):
        parse_settings(Demo, [1], where="a.params")


def test_read_number_and_bool():
    assert read_number({"lr": 0.5}, "lr", 1.0) == 0.5
    assert read_number({}, "lr", 1.0) == 1.0
    assert read_number({"lr": None}, "lr", 1.0) == 1.0
    with pytest.raises(ConfigError, match=r"pybatsim\.agent\.gamma: 2 is too large; use a value <= 1"):
        read_number({"gamma": 2}, "gamma", 0.9, maximum=1)
    with pytest.raises(ConfigError, match=r"x: expected a number, got nan"):
        check_number(float("nan"), "x")
    assert read_bool({"greedy": False}, "greedy", True) is False
    with pytest.raises(ConfigError, match=r"pybatsim\.agent\.greedy: expected true or false, got 'yes'"):
        read_bool({"greedy": "yes"}, "greedy", True)


def test_read_hidden_forms():
    assert read_hidden({}) == (64, 64)
    assert read_hidden({}, (32, 16, 8)) == (32, 16, 8)
    assert read_hidden({"hidden": 128}) == (128, 128)
    assert read_hidden({"hidden": [32, 16]}) == (32, 16)
    with pytest.raises(
        ConfigError, match=r"pybatsim\.agent\.hidden\[1\]: 0 is too small; use a value >= 1"
    ):
        read_hidden({"hidden": [32, 0]})
    with pytest.raises(
        ConfigError, match=r"pybatsim\.agent\.hidden: expected a layer size like 64 or a list"
    ):
        read_hidden({"hidden": "wide"})
