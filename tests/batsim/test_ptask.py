"""hdrm.batsim.ptask on hdrm.batsim.maestro: ptask_L07 actions that communicate, times checked
by hand (no binary)."""

from __future__ import annotations

import pytest

from hdrm.batsim.maestro import PTASK, SEND, SLEEP, TIMEOUT, WAIT, WAIT_FOR, Exec, Maestro
from hdrm.batsim.ptask import TCP_GAMMA, Network
from hdrm.platform.simgrid_routes import Link, Route

LINK = Link("l", 1e9, 0.0)


def network(latency_s: float = 0.0, link: Link = LINK, speed: float = 1e9) -> Network:
    """Hosts of ``speed`` flop/s; every route between two of them crosses ``link``."""
    return Network([speed] * 4, [1] * 4, lambda i, j: Route((link,), latency_s, True))


def job(log: list, maestro: Maestro, name: str, hosts: tuple, cpu: float, com: float,
        walltime: float = -1.0, start_after_s: float = 0.0):
    if start_after_s:
        yield (SLEEP, start_after_s, -1)
    n = len(hosts)
    exec_ = Exec(hosts)
    exec_.task = maestro.network.ptask(hosts, [cpu] * n,
                                       [0.0 if i == j else com for i in range(n)
                                        for j in range(n)])
    yield (PTASK, exec_, 0.0)
    state = yield (WAIT_FOR, exec_, walltime, hosts[0])
    log.append((name, state, maestro.now))


def run(net: Network, *jobs) -> list:
    maestro, log = Maestro(network=net), []
    for args in jobs:
        maestro.spawn(job(log, maestro, *args))
    assert maestro.run() is None
    return log


def test_both_directions_on_one_shared_link_add_up():
    """1e9 bytes each way over one 1 GBps link (weight 2e9): rate 0.5, 2 s."""
    assert run(network(), ("a", (0, 1), 0.0, 1e9)) == [("a", "DONE", 2.0)]


def test_the_slower_of_cpu_and_network_sets_the_rate():
    """4e9 flops at 1 Gflop/s (4 s) and 2 s of communication: 4 s."""
    assert run(network(), ("a", (0, 1), 4e9, 1e9)) == [("a", "DONE", 4.0)]


def test_latency_first_then_the_rate_bounded_by_tcp_gamma():
    """A 10 ms latency, then at most TCP_GAMMA / (2 x 10 ms x 1e9 bytes) of the work per
    second (0.2097152 < the link's 0.5)."""
    got = run(network(0.01), ("a", (0, 1), 0.0, 1e9))
    rate = TCP_GAMMA / (2.0 * (0.01 * 1e9))
    assert got == [("a", "DONE", 0.01 + 1.0 / rate)]


def test_two_jobs_share_the_link_until_one_ends():
    """a (1e9 bytes each way) and b (5e8) together on the link: 0.25 and 0.5 of their work
    per second (each element gets 0.5 GBps); b ends at 2 s with a half done, which then takes
    the whole link: 1 s more."""
    got = run(network(), ("a", (0, 1), 0.0, 1e9), ("b", (2, 3), 0.0, 5e8))
    assert got == [("b", "DONE", 2.0), ("a", "DONE", 3.0)]


def test_a_fatpipe_link_is_not_shared():
    fat = Link("f", 1e9, 0.0, "FATPIPE")
    got = run(network(link=fat), ("a", (0, 1), 0.0, 1e9), ("b", (2, 3), 0.0, 5e8))
    assert got == [("b", "DONE", 0.5), ("a", "DONE", 1.0)]


def test_a_single_host_job_with_communication_only_has_no_work():
    assert run(network(), ("a", (2,), 0.0, 1e9)) == [("a", "DONE", 0.0)]


def test_a_timed_out_job_keeps_loading_the_link_until_cancelled():
    """a times out at 1 s (walltime) with half its work left; its action runs on (SimGrid
    3.32's wait_for) until cancelled, here never: b (2.5e8 bytes each way), started at 1 s,
    shares the link with it (1 unit/s instead of 2): done at 2 s; a's work ends at 2.5 s."""
    net = network()
    maestro, log = Maestro(network=net), []
    maestro.spawn(job(log, maestro, "a", (0, 1), 0.0, 1e9, walltime=1.0))
    maestro.spawn(job(log, maestro, "b", (2, 3), 0.0, 2.5e8, start_after_s=1.0))
    assert maestro.run() is None
    assert log == [("a", TIMEOUT, 1.0), ("b", "DONE", 2.0)]
    assert maestro.now == 2.5 and net.tasks == []


def test_a_message_shares_a_link_with_a_job():
    """A 1-byte message over the link a job's 1e9 bytes each way cross: one element each,
    0.5 GBps each: the byte takes 2 ns."""
    net = network()
    maestro, log = Maestro(network=net), []
    maestro.spawn(job(log, maestro, "a", (0, 1), 0.0, 1e9))

    def receiver():
        transfer = yield (SEND, "hi", 1e9, 0, 0.0, (LINK,))
        yield (WAIT, transfer)
        log.append(("sent", maestro.now))

    from hdrm.batsim.maestro import RECV

    def server():
        transfer = yield (RECV,)
        yield (WAIT, transfer)

    maestro.spawn(receiver())
    maestro.spawn(server())
    assert maestro.run() is None
    assert log[0] == ("sent", pytest.approx(2e-9, rel=1e-12))
    assert log[1][0] == "a" and log[1][2] > 2.0  # slowed by the message, a little


def test_a_speed_change_sets_the_cpu_bound_again():
    """4e9 flops at 1 Gflop/s, no communication: half done at 2 s, then 0.5 Gflop/s: 4 s
    more (the host's constraint and the task's bound both follow the new speed)."""
    net = network()
    maestro, log = Maestro(network=net), []
    maestro.spawn(job(log, maestro, "a", (0,), 4e9, 0.0))

    def slow_down():
        yield (SLEEP, 2.0, -1)
        net.set_speed(0, 5e8)
    maestro.spawn(slow_down())
    assert maestro.run() is None
    assert log == [("a", "DONE", 6.0)]
    assert net.cpus[0].bound == 5e8


def test_two_executors_on_one_host_share_its_cpu():
    """L07 gives each executor its own element: 2 x 1e9 flops on one 1 Gflop/s host: 2 s."""
    assert run(network(), ("a", (1, 1), 1e9, 0.0)) == [("a", "DONE", 2.0)]
