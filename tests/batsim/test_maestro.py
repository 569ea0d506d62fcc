"""SimGrid's scheduling rules as :mod:`hdrm.batsim.maestro` applies them (no binary needed).

The rules are those read in SimGrid 3.32's source and seen in Batsim 4.2.1's log with dates to
1e-12 s (``--sg-log 'root.fmt:[%.12d]...'``, seed 13 of test_serve_energy_order): a 1-byte message
on a 10 GBps link takes 0.1 ns; a sleep due within a nanosecond after a step ends in that step
(job w0!19, due at 36.0000000011 s, ended at 36.0000000001 s with the submitter's wake-up).
"""

from __future__ import annotations

import pytest

from hdrm.batsim.maestro import ANSWERED, EXCHANGE, RECV, SEND, SLEEP, WAIT, Maestro

BW = 1e10  # 10 GBps: 0.1 ns per 1-byte message


def sender(log: list, name: str, payload: str, extra_calls: int = 0, sleep_s: float = 0.0):
    """Sleeps, makes ``extra_calls`` answered simcalls, then Batsim's send_message."""
    if sleep_s:
        yield (SLEEP, sleep_s, 0)
    for _ in range(extra_calls):
        yield (ANSWERED, None)
    yield (ANSWERED, None)  # Mailbox::by_name
    transfer = yield (SEND, payload, BW, 0)
    yield (WAIT, transfer)
    log.append((name, "sent"))


def server(maestro: Maestro, log: list, count: int):
    for _ in range(count):
        yield (ANSWERED, None)
        transfer = yield (RECV,)
        payload = yield (WAIT, transfer)
        log.append((payload, maestro.now))


def test_messages_are_taken_one_at_a_time_first_posted_first():
    maestro, log = Maestro(), []
    maestro.spawn(server(maestro, log, 3))
    for name in "abc":
        maestro.spawn(sender(log, name, name))
    assert maestro.run() is None
    received = [(what, round(t * 1e10)) for what, t in log if isinstance(t, float)]
    assert received == [("a", 1), ("b", 2), ("c", 3)]


def test_an_answered_simcall_costs_a_round():
    """Two senders wake together; the one with one more simcall (an energy update under -E)
    posts after the other, whatever their order."""
    maestro, log = Maestro(), []
    maestro.spawn(sender(log, "slow", "slow", extra_calls=1, sleep_s=2.0))
    maestro.spawn(sender(log, "fast", "fast", sleep_s=2.0))
    maestro.spawn(server(maestro, log, 2))
    maestro.run()
    assert [what for what, t in log if isinstance(t, float)] == ["fast", "slow"]


@pytest.mark.parametrize("offset_s, same_step", [(0.5e-9, True), (0.9e-9, True), (1.1e-9, False),
                                               (2e-9, False)])
def test_a_sleep_ends_at_the_first_step_within_a_nanosecond(offset_s, same_step):
    times = {}

    def sleeper(name, start_s):
        if start_s:
            yield (SLEEP, start_s, 0)
        yield (SLEEP, 3.0, 0)
        times[name] = maestro.now

    maestro = Maestro()
    start = 33.0000000001
    maestro.spawn(sleeper("first", start))
    maestro.spawn(sleeper("second", start + offset_s))
    maestro.run()
    assert times["first"] == pytest.approx(36.0000000001, abs=1e-12)
    assert (times["second"] == times["first"]) is same_step


def test_an_exchange_stops_the_run_and_resumes_it():
    maestro = Maestro()
    got = []

    def actor():
        answer = yield (EXCHANGE, "message")
        got.append(answer)
        yield (SLEEP, 1.0, -1)
        got.append(maestro.now)

    maestro.spawn(actor())
    assert maestro.run() == "message"
    assert maestro.resume("reply") is None
    assert got == ["reply", 1.0]


def test_a_cancelled_actor_never_wakes():
    maestro, woke = Maestro(), []

    def sleeper():
        yield (SLEEP, 5.0, 0)
        woke.append(maestro.now)

    victim = sleeper()
    maestro.spawn(victim)

    def killer():
        yield (SLEEP, 1.0, -1)
        yield (ANSWERED, lambda: maestro.cancel(victim))
        woke.append(("killer", maestro.now))

    maestro.spawn(killer())
    maestro.run()
    assert woke == [("killer", 1.0)]
