"""episodes.csv and actions.csv of a learning run, and the moving average of the learning plot."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hdrm.errors import ConfigError
from hdrm.results.example import example_actions, example_episodes
from hdrm.results.learning import (
    EPISODES_COLUMNS,
    moving_average,
    read_actions_csv,
    read_episodes_csv,
    write_actions_csv,
    write_episodes_csv,
)


def test_episodes_round_trip_with_an_empty_loss(tmp_path: Path):
    path = write_episodes_csv(example_episodes(), tmp_path / "episodes.csv")
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(EPISODES_COLUMNS)
    assert lines[3] == "3,-9,,38,3.8,1.3,15200,0.5"
    episodes = read_episodes_csv(path)
    assert len(episodes) == 6
    assert list(episodes.episode) == [1, 2, 3, 4, 5, 6]
    assert list(episodes.returns) == [-10, -8, -9, -6, -5, -4]
    assert math.isnan(episodes.loss[2]) and episodes.loss[5] == 0.3
    assert list(episodes.makespan_s) == [40, 36, 38, 31, 29, 27]
    assert episodes.energy_j[0] == 16000.0


def test_actions_counts(tmp_path: Path):
    actions = read_actions_csv(write_actions_csv(example_actions(), tmp_path / "actions.csv"))
    assert len(actions) == 11
    assert actions.counts() == [(0, "FCFS-high_gflops", 5), (1, "SJF-high_mem_bw", 2),
                                (2, "LJF-low_power", 4)]
    assert list(actions.episode[:4]) == [1, 1, 1, 2]
    assert list(actions.time_s[3:7]) == [0, 5, 10, 15]


def test_missing_column_and_bad_number(tmp_path: Path):
    path = tmp_path / "episodes.csv"
    path.write_text("episode,return\n1,2\n")
    with pytest.raises(ConfigError, match=r"episodes.csv:1: header lacks column\(s\) loss, "
                                          r"makespan"):
        read_episodes_csv(path)
    path = tmp_path / "actions.csv"
    path.write_text("episode,step,time,action,action_name\n1,0,0,x,FCFS\n")
    with pytest.raises(ConfigError, match=r"actions.csv:2: column action: 'x' is not a number"):
        read_actions_csv(path)
    path.write_text("episode,step,time,action,action_name\n1,0,0\n")
    with pytest.raises(ConfigError, match=r"actions.csv:2: field count differs from the header"):
        read_actions_csv(path)


def test_moving_average_by_hand():
    assert list(moving_average(np.array([1.0, 2.0, 3.0, 4.0]), 2)) == [1.0, 1.5, 2.5, 3.5]
    assert list(moving_average(np.array([1.0, 2.0, 3.0]), 1)) == [1.0, 2.0, 3.0]
    assert list(moving_average(np.array([2.0, 4.0, 6.0]), 10)) == [2.0, 3.0, 4.0]


def test_moving_average_skips_nan():
    result = moving_average(np.array([np.nan, 1.0, np.nan, 3.0, 5.0]), 2)
    assert math.isnan(result[0])
    assert list(result[1:]) == [1.0, 1.0, 3.0, 4.0]


def test_moving_average_window_must_be_positive():
    with pytest.raises(ConfigError, match=r"window must be at least 1, got 0"):
        moving_average(np.array([1.0]), 0)
