"""Output files of the DAG, periodic and fragmentation commands are written whole or not at all:
a write stopped midway (Ctrl-C) keeps the previous file and leaves no temporary one (each was
written in place and left cut short)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hdrm.dag.periodic_metrics import write_instances_csv
from hdrm.dag.schedule import Schedule
from hdrm.fragmentation.experiment import write_curve


def _stopping_rows(first):
    yield first
    raise KeyboardInterrupt


class _Stop:
    def __getattr__(self, name):
        raise KeyboardInterrupt


def _check_kept(tmp_path, path, write):
    path.write_text("previous\n", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        write()
    assert path.read_text(encoding="utf-8") == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_dag_schedule_csv_stopped_midway(tmp_path):
    schedule = SimpleNamespace(rows=lambda: _stopping_rows(("t0", "p0", 0.0, 1.0, 1.0)))
    path = tmp_path / "schedule.csv"
    _check_kept(tmp_path, path, lambda: Schedule.write_csv(schedule, path))


def test_an_instances_csv_stopped_midway(tmp_path):
    path = tmp_path / "out_instances.csv"
    _check_kept(tmp_path, path, lambda: write_instances_csv([_Stop()], path))


def test_a_fragmentation_curve_stopped_midway(tmp_path):
    run = SimpleNamespace(curve_rows=lambda: _stopping_rows((0.5, 10, 0.1)))
    path = tmp_path / "curve_0.csv"
    _check_kept(tmp_path, path, lambda: write_curve(run, path))
