"""hdrm.cli.script: argparse types that refuse bad numbers in one line, and the guard that turns a
script's bad input into one line and exit 2."""

from __future__ import annotations

import argparse

import pytest

from hdrm.cli import script
from hdrm.errors import ConfigError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="x.py")
    p.add_argument("--repeat", type=script.count(1), default=3)
    p.add_argument("--seed", type=script.seed, default=0)
    p.add_argument("--minutes", type=script.positive, default=1.0)
    return p


def test_good_values_pass():
    a = _parser().parse_args(["--repeat", "2", "--seed", "0", "--minutes", "0.5"])
    assert (a.repeat, a.seed, a.minutes) == (2, 0, 0.5)


@pytest.mark.parametrize("argv, says", [
    (["--repeat", "0"], "argument --repeat: expected an integer >= 1, got '0'"),
    (["--repeat", "x"], "argument --repeat: expected an integer >= 1, got 'x'"),
    (["--repeat", "1.5"], "argument --repeat: expected an integer >= 1, got '1.5'"),
    (["--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (["--minutes", "0"], "argument --minutes: expected a number > 0, got '0'"),
    (["--minutes", "nan"], "argument --minutes: expected a number > 0, got 'nan'"),
    (["--minutes", "inf"], "argument --minutes: expected a number > 0, got 'inf'"),
])
def test_bad_values_are_argparse_one_line_errors(capsys, argv, says):
    with pytest.raises(SystemExit) as stop:
        _parser().parse_args(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"x.py: error: {says}"


def test_the_guard_turns_bad_input_into_one_line(capsys):
    def bad() -> int:
        raise ConfigError("--cases: unknown case 'zz'; choose among: a, b")

    assert script.guarded(bad, "bench_x.py") == 2
    assert capsys.readouterr().err == "bench_x.py: error: --cases: unknown case 'zz'; choose " \
                                      "among: a, b\n"
    assert script.guarded(lambda: None, "x") == 0 and script.guarded(lambda: 1, "x") == 1

    def interrupted() -> int:
        raise KeyboardInterrupt

    assert script.guarded(interrupted, "bench_x.py") == 130
    assert capsys.readouterr().err == "bench_x.py: interrupted\n"


def test_a_bug_is_not_hidden():
    def broken() -> int:
        raise ZeroDivisionError("a defect, not bad input")

    with pytest.raises(ZeroDivisionError):
        script.guarded(broken, "x")
