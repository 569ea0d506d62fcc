"""A ``composed`` job on the simulated machine: parts one after another, the walltime left
passed on, each part at its own speeds.

Batsim 4.2.1 (``src/jobs_execution.cpp``) runs a sequence's parts on all the job's hosts one
after another, with one remaining-time counter: a ``delay`` part succeeds only if its delay is
below the time left (else the job is killed when the time left runs out), a computation is
waited for with the time left as timeout. The kills at 3 s and 4.375 s below were checked with
the binary (tests/batsim/test_serve_composed.py).
"""

from __future__ import annotations

import math

import pytest

from hdrm.errors import SimulationError
from hdrm.sim.machine import (
    COMPLETED_KILLED,
    COMPLETED_SUCCESSFULLY,
    COMPLETED_WALLTIME_REACHED,
    Machine,
)


def _machine(nb: int = 3) -> Machine:
    """Hosts of 2 GFLOP/s in state 0 and 1 GFLOP/s in state 1, 100 W."""
    return Machine([(2.0, 1.0)] * nb, [(100.0, 100.0)] * nb, 0)


def _run(machine: Machine) -> list:
    ends = []
    while machine.next_time() < math.inf:
        ends += machine.advance(machine.next_time())
    return ends


def test_parts_run_one_after_another_each_at_its_speed():
    m = _machine()
    m.start(0, [0, 1], parts=((1.0, None), (None, 4.0), (0.5, None), (None, 1.0)))
    (end,) = _run(m)
    assert (end.state, end.finish_s) == (COMPLETED_SUCCESSFULLY, 1.0 + 2.0 + 0.5 + 0.5)
    assert m.parts_begun == 3


def test_a_state_change_retimes_only_the_computing_part_it_falls_in():
    m = _machine()
    m.start(0, [0, 1], parts=((1.0, None), (None, 4.0), (1.0, None)))
    m.advance(0.5)
    m.set_state([1], 1)  # during the sleep: it still ends at 1 s
    ends = m.advance(2.0)
    assert ends == [] and m.running_job(0).part_i == 1
    m.set_state([1], 0)  # 1 s at 1 GFLOP/s then 1.5 GFLOP left at 2 GFLOP/s
    (end,) = _run(m)
    assert end.finish_s == pytest.approx(1.0 + 1.0 + 1.5 + 1.0)


@pytest.mark.parametrize(("walltime", "finish", "state"), [
    (8.76, 8.75, COMPLETED_SUCCESSFULLY),
    (8.75, 8.75, COMPLETED_WALLTIME_REACHED),  # the last part's delay equals the time left
    (4.375, 4.375, COMPLETED_WALLTIME_REACHED),  # d3 = the time left after d1: killed then
    (5.0, 5.0, COMPLETED_WALLTIME_REACHED),  # during the third part
])
def test_the_walltime_left_passes_from_delay_part_to_part(walltime, finish, state):
    m = _machine(1)
    m.start(0, [0], walltime_s=walltime,
            parts=((1.125, None), (3.25, None), (1.125, None), (3.25, None)))
    (end,) = _run(m)
    assert (end.state, end.finish_s) == (state, pytest.approx(finish))


def test_a_computing_part_is_killed_when_the_time_left_runs_out():
    """'sc' (2.07 GFLOP per host, then 4.32 GFLOP over 3 hosts) with a walltime of 3 s on
    1 GFLOP/s hosts: the binary kills it at 3.0 s, in its second part."""
    m = Machine([(1.0,)] * 3, [(100.0,)] * 3, 0)
    m.start(0, [0, 1, 2], walltime_s=3.0, parts=((None, 2.07), (None, 4.32 / 3)))
    (end,) = _run(m)
    assert (end.state, end.finish_s) == (COMPLETED_WALLTIME_REACHED, 3.0)
    assert end.progress == pytest.approx((3.0 - 2.07) / 1.44)


def test_a_kill_reports_the_running_parts_progress():
    m = _machine(1)
    m.start(0, [0], parts=((1.125, None), (3.25, None)))
    m.advance(2.0)
    assert m.running_job(0).part_i == 1
    assert m.progress(0) == pytest.approx(0.875 / 3.25)
    end = m.kill(0)
    assert (end.state, end.finish_s) == (COMPLETED_KILLED, 2.0)


def test_a_part_hook_sees_each_later_part_begin():
    m = _machine()
    seen = []
    m.on_part = lambda key, hosts, computing: seen.append((m.now, key, tuple(hosts), computing))
    m.start(4, [1, 2], parts=((1.0, None), (None, 2.0), (None, 2.0)))
    _run(m)
    assert seen == [(1.0, 4, (1, 2), True), (2.0, 4, (1, 2), True)]


def test_energy_of_a_sequence_is_its_hosts_power_over_its_time():
    m = Machine([(1.0,)] * 2, [(10.0,), (30.0,)], 0)
    m.start(0, [0, 1], parts=((2.0, None), (None, 3.0)))
    (end,) = _run(m)
    assert (end.finish_s, end.energy_j) == (5.0, 40.0 * 5.0)


def test_parts_exclude_a_delay_or_an_amount():
    with pytest.raises(SimulationError, match=r"give exactly one of delay_s and ops_gflop \(or "
                                              r"parts\)"):
        _machine().start(0, [0], delay_s=1.0, parts=((1.0, None),))
