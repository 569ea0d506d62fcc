"""A batch of runs of changes with busy hosts among free ones (a processor slowed beside a job
that starts): applied run by run where the hosts are free and alike, host by host elsewhere,
it gives the very states, powers, energies, job speeds and end times (to the last bit) of the
host-by-host loop over the whole batch; a parallel job's slowest host is found run by run."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.runs import CoreRuns
from hdrm.sim import machine as machine_module
from hdrm.sim.machine import Machine

N = 240
SPEEDS = [(10.0, 7.5, 0.0, 0.0), (7.0, 5.25, 0.0, 0.0)]
POWERS = [(190.0, 120.3, 95.1, 9.75), (150.5, 99.9, 80.25, 7.1)]


def machines(kinds: list[int], arrays: bool) -> tuple[Machine, Machine]:
    """The same machine twice, keeping each host's energy; the second applies every batch
    host by host (the reference)."""
    speeds = [SPEEDS[k] for k in kinds]
    powers = [POWERS[k] for k in kinds]
    limit = machine_module.ARRAY_MIN_HOSTS
    machine_module.ARRAY_MIN_HOSTS = 0 if arrays else len(kinds) + 1
    try:
        fast = Machine(speeds, powers, 3, compact=True)
    finally:
        machine_module.ARRAY_MIN_HOSTS = limit
    slow = Machine(speeds, powers, 3)
    slow._apply_free_runs = lambda runs: False
    slow._apply_uniform = lambda changes: False
    slow._apply_free_hosts = lambda changes: False
    return fast, slow


def observe(m: Machine) -> tuple:
    jobs = sorted((k, j.power_w, j.energy_j, j.min_speed, j.at_min, j.end_s, j.remaining)
                  for k, j in m._jobs.items())
    return (list(m.state), list(m._factor), list(m.job_on), m.power_w, m.energy_j(),
            [m.host_energy_j(h) for h in range(m.nb_hosts)], jobs)


def by_host(m: Machine, runs) -> None:
    changes: dict[int, tuple[int, float]] = {}
    for lo, hi, change in runs:
        changes.update(dict.fromkeys(range(lo, hi), change))
    m.apply_states(changes)


CHANGES = [(0, 1.0), (1, 1.0), (1, 0.5), (2, 1.0), (3, 1.0), (0, 0.75)]


@settings(max_examples=150, deadline=None)
@given(st.booleans(), st.lists(st.integers(0, 1), min_size=N, max_size=N),
       st.lists(st.tuples(st.integers(0, N - 1), st.integers(1, 90), st.integers(0, 5),
                          st.integers(0, 2)), min_size=1, max_size=25))
def test_mixed_batches_equal_host_by_host(arrays, kinds, steps):
    """Jobs (delay and parallel) start on free hosts between batches of disjoint runs of
    changes laid over free and busy hosts alike, in a shuffled order."""
    fast, slow = machines(sorted(kinds), arrays)
    t = 0.0
    for i, (lo, n, change, what) in enumerate(steps):
        hi = min(N, lo + n)
        t += 1.5
        for m in (fast, slow):
            m.advance(t)
        free = [c for c in range(lo, hi) if fast.job_on[c] == -1]
        if what and free and fast.state[free[0]] in (0, 1):
            cores = CoreRuns.of(free) if len(free) > 64 else free
            for m in (fast, slow):
                if what == 1:
                    m.start(i, cores, delay_s=7.0)
                else:
                    m.start(i, cores, ops_gflop=40.0)
        cut = sorted({lo, hi, (lo + hi) // 2, max(lo, hi - 3)})
        runs = [(a, b, CHANGES[(change + k) % len(CHANGES)])
                for k, (a, b) in enumerate(zip(cut, cut[1:])) if a < b]
        runs = runs[1::2] + runs[0::2]
        fast.apply_runs(runs)
        by_host(slow, runs)
        assert observe(fast) == observe(slow)
    for m in (fast, slow):
        m.advance(t + 100.0)
    assert observe(fast) == observe(slow)


def test_slowest_host_run_by_run():
    """The slowest speed and how many hosts have it, as set_min_speed finds them core by core:
    runs of one state count whole, a run of mixed states host by host."""
    m = Machine([SPEEDS[0]] * 100 + [SPEEDS[1]] * 100, [POWERS[0]] * 200, 0, compact=True)
    m.apply_states({c: (1, 1.0) for c in range(10, 20)} | {150: (0, 0.5)})
    for hosts in (CoreRuns([(0, 100)]), CoreRuns([(0, 30), (90, 200)]), (150, 3, 160),
                  CoreRuns([(140, 160)])):
        speeds = [m._speeds[c][m.state[c]] * m._factor[c] for c in hosts]
        low = min(speeds)
        assert m._slowest(hosts) == (low, speeds.count(low))
    assert m._slowest(CoreRuns([(0, 100)])) == (7.5, 10)
    assert m._slowest(()) == (math.inf, 0)
    big = Machine([SPEEDS[0]] * 2000, [POWERS[0]] * 2000, 0, compact=True)  # arrays: numpy
    big.apply_states({c: (1, 1.0) for c in range(300, 1700, 7)} | {999: (0, 0.7)})
    for hosts in (CoreRuns([(0, 2000)]), CoreRuns([(0, 300), (301, 1300)])):
        speeds = [big._speeds[c][big.state[c]] * big._factor[c] for c in hosts]
        low = min(speeds)
        assert big._slowest(hosts) == (low, speeds.count(low)) == (7.0, 1)
    big.apply_states({999: (0, 1.0)})
    assert big._slowest(CoreRuns([(0, 2000)])) == (7.5, 200)


def test_a_few_busy_hosts_leave_the_free_runs_to_runs(monkeypatch):
    """300 free hosts wake and 3 hosts of a running job slow down in one batch: the 3 go host
    by host, the 300 as one run (the whole batch went host by host before)."""
    fast, slow = machines([0] * N, True)
    for m in (fast, slow):
        m.apply_runs([(0, 10, (0, 1.0))])
        m.start(1, range(0, 10), ops_gflop=100.0)
    seen: list[int] = []
    change_hosts = fast._change_hosts

    def count(changes, *rest):
        changes = list(changes)
        seen.extend(c for c, _ in changes)
        return change_hosts(changes, *rest)

    monkeypatch.setattr(fast, "_change_hosts", count)
    runs = [(10, 200, (2, 1.0)), (7, 10, (1, 0.5)), (200, 240, (0, 1.0))]
    fast.apply_runs(runs)
    by_host(slow, runs)
    assert seen == [7, 8, 9]
    assert observe(fast) == observe(slow) and fast._jobs[1].min_speed == 7.5 * 0.5
