"""Machine.apply_states on a few hosts none of which runs a job (a processor woken before its
job starts, or put back to sleep): the short path gives the very bits of the host-by-host loop."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.sim.machine import Machine

N = 8
SPEEDS = [(10.0, 7.5, 0.0, 0.0)] * 4 + [(7.0, 5.25, 0.0, 0.0)] * 4
POWERS = [(62.5, 50.1, 18.75, 3.125)] * 4 + [(150.5, 99.9, 80.25, 7.1)] * 4


def pair(host_energy: bool = True) -> tuple[Machine, Machine]:
    """The same machine twice; the second never takes the short path."""
    fast = Machine(SPEEDS, POWERS, 3, host_energy=host_energy)
    slow = Machine(SPEEDS, POWERS, 3, host_energy=host_energy)
    slow._apply_free_hosts = lambda changes: False
    return fast, slow


def look(m: Machine) -> tuple:
    hosts = [m.host_energy_j(h) for h in range(N)] if m._energy_acc is not None else []
    return (list(m.state), list(m._factor), list(m.job_on), m.power_w, m.energy_j(), hosts,
            sorted((k, j.power_w, j.energy_j, j.end_s) for k, j in m._jobs.items()),
            m._unit_factors)


def test_free_hosts_by_hand():
    m, _ = pair()
    m.advance(2.0)
    m.apply_states({0: (0, 1.0), 1: (2, 1.0), 2: (2, 1.0), 3: (2, 1.0)})  # wake a processor
    assert m.state[:4] == [0, 2, 2, 2] and m._energy_t[:4] == [2.0] * 4
    assert m.host_energy_j(0) == 2.0 * 3.125 and m.energy_j() == 2.0 * (4 * 3.125 + 4 * 7.1)
    m.start(5, [0], ops_gflop=100.0)  # 100 GFLOP at 10 GFLOP/s: ends at 12
    m.advance(4.0)
    m.apply_states({1: (1, 0.5)})  # a free host: nothing to re-time
    assert m._jobs[5].end_s == 12.0 and not m._unit_factors
    m.apply_states({0: (1, 1.0), 1: (2, 1.0)})  # a busy host among them: re-timed
    assert m._jobs[5].end_s == 4.0 + 80.0 / 7.5


changes = st.dictionaries(st.integers(0, N - 1),
                          st.tuples(st.integers(0, 3), st.sampled_from([1.0, 0.5, 0.8])),
                          min_size=1, max_size=N)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(changes, st.booleans(), st.integers(0, 4)), min_size=1, max_size=25),
       st.booleans(), st.integers(0, 2**16))
def test_free_hosts_equal_host_by_host(script, host_energy, seed):
    """Random changes of free and busy hosts (some unchanged), jobs started on free hosts."""
    rng = np.random.default_rng(seed)
    fast, slow = pair(host_energy)
    now = 0.0
    for i, (change, start, step) in enumerate(script):
        now += step + 0.25
        assert [e.key for e in fast.advance(now)] == [e.key for e in slow.advance(now)]
        for m in (fast, slow):
            m.apply_states(dict(change))
        free = [h for h in range(N) if fast.job_on[h] == -1 and fast.state[h] < 2]
        if start and free:
            hosts = [int(h) for h in rng.choice(free, size=min(2, len(free)), replace=False)]
            for m in (fast, slow):
                m.start(i, hosts, ops_gflop=20.0 + i)
        assert look(fast) == look(slow)
    assert [e.key for e in fast.advance(now + 1e6)] == [e.key for e in slow.advance(now + 1e6)]
    assert look(fast) == look(slow)


def test_a_narrow_job_takes_its_slowest_host_host_by_host():
    """A job on a few hosts (a tuple) gets the slowest speed and its count as the runs of
    hosts would give them, read host by host (an inference request: one host)."""
    m, _ = pair()
    m.apply_states({0: (0, 1.0), 1: (1, 1.0), 2: (1, 0.5), 5: (1, 0.5)})
    assert m._slowest((0,)) == (10.0, 1)
    assert m._slowest((0, 1, 2)) == (3.75, 1)  # 7.5 x 0.5
    assert m._slowest((1, 0, 1)) == (7.5, 2)
    assert m._slowest((5, 2)) == (2.625, 1)  # 5.25 x 0.5 on the second type
    m.start(9, (0, 1), ops_gflop=75.0)
    assert (m._jobs[9].min_speed, m._jobs[9].at_min, m._jobs[9].end_s) == (7.5, 1, 10.0)
