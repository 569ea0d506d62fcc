"""Energy readings stepped by the maestro (READ, hdrm.batsim.energy_reads) against the per-host
generator they replace (one simcall per stale host, all at once when alone), and the vector
operations of TraceAccounts against their scalar formulas."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hdrm.batsim.energy_reads import EnergyReads
from hdrm.batsim.maestro import ANSWERED, READ, Maestro
from hdrm.batsim.outputs_energy import TraceAccounts
from hdrm.batsim.outputs_machines import SessionTraces
from hdrm.platform.simgrid import HostSpec

NOW = 5.0


def session(plan: list[tuple], nb_hosts: int, fresh0: list[float], native: bool) -> tuple:
    """Run ``plan``'s actors on a maestro at time NOW: ``("read", wait, lists)`` waits ``wait``
    rounds, then reads each list of hosts; ``("other", steps)`` runs ``steps`` rounds. Returns
    what the actors did, in order, and the hosts charged (in order)."""
    maestro = Maestro()
    maestro.now = NOW
    log: list[tuple] = []
    charged: list[int] = []
    state = {"all": 0.0}
    reads = EnergyReads(nb_hosts, lambda: maestro.now, maestro.alone,
                        lambda h: touch(h), lambda hosts, first, whole: charge(hosts[first:]))
    reads.fresh[:] = fresh0
    fresh = reads.fresh

    def touch(h: int) -> None:
        charge([h])
        fresh[h] = NOW

    def charge(hosts) -> None:  # (an account up to date, or charged already, gets 0 J more)
        for h in hosts:
            if fresh0[h] < NOW and h not in charged:
                charged.append(h)

    def old_read(hosts):  # the generator hdrm's actors ran before READ
        for i, h in enumerate(hosts):
            if fresh[h] < NOW and state["all"] < NOW:
                if maestro.alone():
                    if len(hosts) == nb_hosts:
                        state["all"] = NOW
                    else:
                        for other in hosts[i:]:
                            fresh[other] = NOW
                    charge(hosts[i:])
                    yield (ANSWERED, None)
                    return
                yield (ANSWERED, lambda h=h: touch(h))

    def reader(name, wait, lists):
        for k in range(wait):
            log.append((name, "step", k))
            yield (ANSWERED, None)
        for k, hosts in enumerate(lists):
            if native:
                yield (READ, hosts)
            else:
                yield from old_read(hosts)
            log.append((name, "read", k))
        log.append((name, "end"))

    def other(name, steps):
        for k in range(steps):
            log.append((name, "step", k))
            yield (ANSWERED, None)

    if native:
        maestro.reads = reads
    for i, (kind, *args) in enumerate(plan):
        maestro.spawn(reader(i, *args) if kind == "read" else other(i, *args))
    assert maestro.run() is None
    return log, charged


def random_plan(rng: random.Random, nb_hosts: int) -> list[tuple]:
    plan = []
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.7:
            lists = [range(nb_hosts) if rng.random() < 0.5 else
                     sorted(rng.sample(range(nb_hosts), rng.randint(1, nb_hosts)))
                     for _ in range(rng.randint(1, 3))]
            plan.append(("read", rng.choice([0, 0, 1, 2, 3]), lists))
        else:
            plan.append(("other", rng.randint(0, 6)))
    return plan


@pytest.mark.parametrize("seed", range(300))
def test_readings_interleave_with_the_other_actors_as_one_simcall_per_host(seed):
    rng = random.Random(seed)
    nb_hosts = rng.randint(1, 9)
    fresh0 = [rng.choice([0.0, 1.0, NOW]) for _ in range(nb_hosts)]
    plan = random_plan(rng, nb_hosts)
    log, charged = session(plan, nb_hosts, fresh0, native=True)
    old_log, old_charged = session(plan, nb_hosts, fresh0, native=False)
    assert log == old_log
    assert set(charged) == set(old_charged)  # (the hosts stale at the start that were read)


def test_two_readings_in_step_take_a_round_per_stale_host():
    # hand-checked: readers 0 and 1 read hosts 0-3 (host 2 fresh), 'other' runs 4 rounds;
    # rounds 1-3: the readers touch hosts 0, 1, 3; round 4: they end, 'other' steps a 4th time
    plan = [("read", 0, [range(4)]), ("read", 0, [range(4)]), ("other", 4)]
    log, charged = session(plan, 4, [0.0, 0.0, NOW, 0.0], native=True)
    assert log == [(2, "step", 0), (2, "step", 1), (2, "step", 2), (0, "read", 0), (0, "end"),
                   (1, "read", 0), (1, "end"), (2, "step", 3)]
    assert charged == [0, 1, 3]


def test_alone_a_reading_charges_every_stale_host_at_once():
    log, charged = session([("read", 0, [[3, 1], range(4)])], 4, [0.0] * 4, native=True)
    assert log == [(0, "read", 0), (0, "read", 1), (0, "end")] and charged == [3, 1, 0, 2]


def test_a_reading_killed_between_two_rounds_touches_nothing_more():
    maestro = Maestro()
    maestro.now = NOW
    touched: list[int] = []
    reads = EnergyReads(4, lambda: maestro.now, maestro.alone, touched.append,
                        lambda hosts, first, whole: None)
    maestro.reads = reads

    def reader():
        yield (READ, range(4))

    def killer(victim):
        yield (ANSWERED, lambda: maestro.cancel(victim))  # answered after the first round

    victim = reader()
    maestro.spawn(killer(victim))  # its kill answered before the reading's first touch
    maestro.spawn(victim)
    assert maestro.run() is None
    assert touched == [0]


# ---------------------------------------------------------------- TraceAccounts' vectors
def host(name: str, pstate: int = 0) -> HostSpec:
    """Three power states (idle:epsilon:full), the last at speed 0 (its load is 1)."""
    watts = "100:120:200,95:100:150,10:12:30"
    pairs = tuple((float(w.split(":")[0]), float(w.split(":")[-1])) for w in watts.split(","))
    return HostSpec(name, (1.0, 0.5, 0.0), pstate, pairs, properties={"wattage_per_state": watts})


def accounts(rng: random.Random, n: int) -> TraceAccounts:
    acc = TraceAccounts([host(f"h{i}", rng.randrange(3)) for i in range(n)])
    acc.update_many(list(range(n)), rng.uniform(0, 3), 0.0)
    return acc


@pytest.mark.parametrize("seed", range(20))
def test_the_vector_updates_give_the_doubles_of_one_host_after_the_other(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    usage = np.array([rng.choice([0.0, 0.25e9, 2e9]) for _ in range(n)])
    hosts = [rng.randrange(n) for _ in range(rng.randint(1, 2 * n))]  # repeats included
    now = rng.uniform(3, 1e6)
    a, b, c, d = (accounts(random.Random(seed), n) for _ in range(4))
    a.usage_of = lambda h: float(usage[h])
    a.update_many(hosts, now, None)
    b.update_hosts(hosts, now, usage)
    assert a.energy_j == b.energy_j and a.updated_s == b.updated_s
    for h in hosts:
        c.touch(h, now, idle=True)
        d.update_many((h,), now, 0.0)
    c.update_all(now + 1.5, None)
    c.update_all(now + 1.5, None)  # (up to date: charged 0 J)
    d.update_many(range(n), now + 1.5, 0.0)
    assert c.energy_j == d.energy_j and c.updated_s == d.updated_s == [now + 1.5] * n


def test_snapshots_are_the_long_double_sums_of_their_time():
    acc = TraceAccounts([host("a"), host("b", 1)])
    first = acc.snapshot()
    acc.update_all(2.0, None)  # 100 W and 95 W for 2 s
    second = acc.snapshot()
    assert acc.snapshot().index == second.index  # (nothing changed)
    acc.update_many([0], 3.0, 0.0)
    third = acc.snapshot()
    assert (first.value(), second.value(), third.value()) == (0.0, 390.0, 490.0)
    assert third.value() == acc.total_j()


def test_energy_rows_fractions_of_a_nanosecond_apart_keep_the_long_double_power():
    t = SessionTraces([host("a")], energy=True)
    t.energy_row(1.0, 100.0, "s")
    t.energy_row(1.0, 100.0, "e")  # no time passed: NA
    t.energy_row(1.0 + 1e-10, np.longdouble(100.0) + np.longdouble(2e-8), "e")
    rows = t.energy_rows
    last_t, last_j = np.longdouble(1.0), np.longdouble(100.0)
    power = float((np.longdouble(100.0) + np.longdouble(2e-8) - last_j)
                  / (np.longdouble(1.0 + 1e-10) - last_t))
    assert rows == ["1.000000,100.000000,s,120.000000,100.000000\n",
                    "1.000000,100.000000,e,120.000000,NA\n",
                    f"1.000000,100.000000,e,120.000000,{power:f}\n"]
    assert round(power) == 200 and t.energy_rows == rows  # (rows written once)


def test_the_watts_of_the_same_usages_are_worked_out_again_once_a_state_is_saved():
    acc = TraceAccounts([host("a"), host("b")])
    usage = np.array([0.5e9, 0.0])
    acc.update_all(1.0, usage)  # a half loaded in state 0: 120 + 0.5 x 80 = 160 W; b idle 100 W
    acc.pstate[0] = 1
    acc.update_all(2.0, usage)  # charged at the saved state 0, then state 1 saved
    acc.update_all(3.0, usage)  # state 1 at 0.5 Gflop/s: fully loaded, 100 + 1 x 50 = 150 W
    assert acc.energy_j == [160.0 + 160.0 + 150.0, 300.0]


@pytest.mark.parametrize("seed", range(10))
def test_watts_worked_out_for_the_changed_hosts_only_are_those_of_every_host(seed):
    """Usages changing on a few hosts (up to 8: the changed ones get the scalar formula) or on
    many, with saved states changing between: after each update of every host, the accounts
    are bit for bit those of accounts that work out every host's watts afresh each time."""
    rng = random.Random(seed)
    n = rng.randint(1, 20)
    a, b = accounts(random.Random(seed), n), accounts(random.Random(seed), n)
    levels = [0.0, 0.1e9, 0.37e9, 0.5e9, 1e9, 3e9]
    usage = np.array([rng.choice(levels) for _ in range(n)])
    now, incremental = 3.0, 0
    for _ in range(60):
        usage = usage.copy()  # (a usage vector is never written to once passed)
        for h in rng.sample(range(n), rng.choice([0, 1, 2, min(n, 8), min(n, 9), n])):
            usage[h] = rng.choice(levels)
        if rng.random() < 0.15:
            h = rng.randrange(n)
            a.pstate[h] = b.pstate[h] = rng.randrange(3)
        now += rng.uniform(0, 50)
        before = a._watts_at
        a.update_all(now, usage)
        incremental += before[0] is not None and a._watts_at[1] == before[1] \
            and 0 < int(np.count_nonzero(usage != before[0])) <= 8
        b._watts_at = (None, -1, None)  # (every host's watts worked out afresh)
        b.update_all(now, usage)
        assert a.energy_j == b.energy_j and a._watts_at[2].tolist() == b._watts_at[2].tolist()
    assert incremental >= 10
