"""Lock-step progress and energy of the machine against an exact reference (hypothesis).

A parallel job's hosts advance together at the speed of the slowest one (SimGrid's ``ptask_L07``
model, as Batsim runs ``parallel_homogeneous`` jobs). The reference integrates that rule with exact
rational arithmetic over the intervals between power-state changes: the job's end, its final state
(walltime included), its energy and every host's energy must match the machine's. Values are drawn
from coarse grids, so an exact tie between the end of the work and the walltime means a tie.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.sim.machine import COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED, Machine

SPEEDS = (0.0, 0.5, 1.0, 2.0, 2.5, 4.0, 7.5, 10.0)
POWERS = (0.0, 5.0, 25.0, 100.0, 130.5)


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 4))
    nb_states = 3
    speeds = [tuple(draw(st.sampled_from(SPEEDS)) for _ in range(nb_states)) for _ in range(n)]
    powers = [tuple(draw(st.sampled_from(POWERS)) for _ in range(nb_states)) for _ in range(n)]
    initial = [draw(st.integers(0, nb_states - 1)) for _ in range(n)]
    hosts = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1)))
    ops = float(draw(st.integers(1, 100)))
    walltime = draw(st.one_of(st.just(math.inf), st.integers(1, 80).map(lambda q: q / 4)))
    changes, t = [], 0.0
    for _ in range(draw(st.integers(0, 8))):
        t += draw(st.integers(1, 40)) / 4
        changes.append((t, draw(st.integers(0, n - 1)), draw(st.integers(0, nb_states - 1))))
    return speeds, powers, initial, hosts, ops, walltime, changes


def reference(scenario):
    """Exact (end, state, job energy, per-host energy at the end) of the lock-step rule, or
    ``end = None`` when the job never ends."""
    speeds, powers, initial, hosts, ops, walltime, changes = scenario
    state = list(initial)
    left, t = F(ops), F(0)
    wall = None if math.isinf(walltime) else F(walltime)
    host_energy = [F(0)] * len(state)
    job_energy = F(0)
    bounds = [F(c[0]) for c in changes] + [None]
    for i, until in enumerate(bounds):
        speed = min(F(speeds[h][state[h]]) for h in hosts)
        finish = t + left / speed if speed > 0 else None
        stop = min((x for x in (finish, wall, until) if x is not None), default=None)
        if stop is None:  # stalled forever
            return None, None, None, None
        for h in range(len(state)):
            host_energy[h] += F(powers[h][state[h]]) * (stop - t)
        job_energy += sum(F(powers[h][state[h]]) for h in hosts) * (stop - t)
        left -= speed * (stop - t)
        t = stop
        if finish is not None and stop == finish:
            return t, COMPLETED_SUCCESSFULLY, job_energy, host_energy
        if wall is not None and stop == wall:
            return t, COMPLETED_WALLTIME_REACHED, job_energy, host_energy
        _, h, s = changes[i]
        state[h] = s
    raise AssertionError("unreachable")


def simulate(scenario):
    """Run the scenario on the machine, stopping at the job's end; returns (machine, ends)."""
    speeds, powers, initial, hosts, ops, walltime, changes = scenario
    m = Machine(speeds, powers, initial)
    m.start(0, hosts, ops_gflop=ops, walltime_s=walltime)
    for t, h, s in changes:
        if m.next_time() <= t:
            return m, m.advance(m.next_time())
        m.advance(t)
        m.set_state([h], s)
    return m, m.advance(m.next_time()) if m.next_time() < math.inf else []


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_lockstep_matches_exact_reference(scenario):
    m, ends = simulate(scenario)
    end_t, state, job_energy, host_energy = reference(scenario)
    if end_t is None:
        assert not ends and m.is_running(0)
        return
    (end,) = ends
    assert end.state == state
    assert end.finish_s == float(end_t) or math.isclose(end.finish_s, end_t, rel_tol=1e-12)
    assert math.isclose(end.energy_j, job_energy, rel_tol=1e-9, abs_tol=1e-9)
    assert m.now == end.finish_s
    for h, e in enumerate(host_energy):
        assert math.isclose(m.host_energy_j(h), e, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(m.energy_j(), sum(host_energy), rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_never_ends_before_its_work_at_the_fastest_pace(scenario):
    """A completed job took at least its work over the best speed its slowest host can reach."""
    speeds, _, _, hosts, ops, _, _ = scenario
    _, ends = simulate(scenario)
    for end in ends:
        if end.state == COMPLETED_SUCCESSFULLY:
            best = min(max(speeds[h]) for h in hosts)
            assert end.finish_s - end.start_s >= ops / best * (1 - 1e-12)
