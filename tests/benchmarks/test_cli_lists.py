"""The benchmark scripts' comma-separated options: one parser, one-line errors, no traceback."""

from __future__ import annotations

import pytest

from benchmarks import bench_distributed, cli_lists, compare, gpu_analysis
from hdrm.errors import ConfigError


def test_ints_and_floats_read_lists_with_blanks_and_empty_items():
    assert cli_lists.ints(" 3, 4,,5 ,", "--x") == [3, 4, 5]
    assert cli_lists.ints("-2,7", "--x") == [-2, 7]
    assert cli_lists.floats("1, 2.5,1e1", "--x") == [1.0, 2.5, 10.0]


@pytest.mark.parametrize("text, kwargs, says", [
    ("1,x", {}, "--x '1,x': expected integers separated by commas (e.g. 0,1,2)"),
    ("", {}, "--x '': expected integers separated by commas (e.g. 0,1,2)"),
    (",,", {}, "--x ',,': expected integers separated by commas (e.g. 0,1,2)"),
    ("1.5", {}, "--x '1.5': expected integers separated by commas (e.g. 0,1,2)"),
    ("1,1", {"distinct": True}, "--x '1,1': expected distinct integers separated by commas"),
    ("0,-1", {"minimum": 0}, "--x '0,-1': expected non-negative integers separated by commas"),
    ("0", {"minimum": 1, "example": "1,2"},
     "--x '0': expected positive integers separated by commas (e.g. 1,2)"),
    ("4", {"minimum": 5}, "--x '4': expected integers of at least 5 separated by commas"),
])
def test_bad_integer_lists_name_the_option_the_text_and_an_example(text, kwargs, says):
    with pytest.raises(ConfigError) as err:
        cli_lists.ints(text, "--x", **kwargs)
    assert str(err.value).startswith(says)


@pytest.mark.parametrize("text, positive", [("1,y", False), ("nan", False), ("1,inf", False),
                                            ("1,0", True), ("-1", True), ("", False)])
def test_bad_number_lists_are_refused(text, positive):
    with pytest.raises(ConfigError, match=rf"--f {text!r}: expected "
                                          rf"{'positive ' if positive else ''}numbers separated"):
        cli_lists.floats(text, "--f", positive=positive)
    assert cli_lists.floats("2", "--f", positive=positive) == [2.0]


def test_compare_refuses_bad_starts_in_one_line(capsys):
    # was a ValueError traceback from int()
    assert compare.main(["--evaluate-only", "--starts", "1981,x"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --starts '1981,x': expected non-negative integers separated by commas "
        "(e.g. 1981,2756)")


@pytest.mark.parametrize("main, argv, says", [
    (gpu_analysis.main, ["--seeds", "0,a"],
     "gpu_analysis.py: error: --seeds '0,a': expected distinct non-negative integers separated by "
     "commas"),
    (bench_distributed.main, ["--workers", "1,b"],
     "bench_distributed.py: error: --workers '1,b': expected positive integers separated by "
     "commas (e.g. 1,2)"),
    (bench_distributed.main, ["--workers", "0"],
     "bench_distributed.py: error: --workers '0': expected positive integers"),
])
def test_scripts_refuse_bad_lists_before_any_work(capsys, monkeypatch, main, argv, says):
    # the usage line, then the one error line; was a ValueError traceback from int()
    monkeypatch.setattr("sys.argv", [says.split(":")[0]])
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(says)


def test_the_sla_scripts_read_their_lists_through_the_same_parser(capsys):
    from benchmarks import compare_sla, sla_gate

    assert compare_sla.train_seeds_of("7, 8,9") == [7, 8, 9]
    assert compare_sla.main(["--train-seeds", "7,-1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --train-seeds '7,-1': expected distinct non-negative integers separated by "
        "commas (e.g. 7,8,9)")
    assert sla_gate.factors_of("1.1,1.3") == [1.1, 1.3]
    with pytest.raises(ConfigError, match=r"--factors '1.1,0': expected positive numbers"):
        sla_gate.factors_of("1.1,0")

