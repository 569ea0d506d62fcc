"""Parallel tasks on :mod:`hdrm.batsim.maestro` (SimGrid 3.32's ptask_L07 action, waited for
with a timeout): hand-checked times and outcomes, no binary needed. The rule, checked against
Batsim 4.2.1 (runs/s24l/exp.py): the timeout is a sleep that ends at the first step within 1e-9 s
of it; the wait is DONE there only if less than 1e-14 of the work is left, else TIMEOUT."""

from __future__ import annotations

from hdrm.batsim.maestro import (DONE, PTASK, RECV, SEND, SLEEP, TIMEOUT, WAIT, WAIT_FOR, Exec,
                                 Maestro)


def worker(log: list, maestro: Maestro, name: str, hosts: tuple, rate: float, timeout: float,
           start_after_s: float = 0.0):
    if start_after_s:
        yield (SLEEP, start_after_s, hosts[0])
    exec_ = Exec(hosts)
    log.append((name, "exec", exec_))
    yield (PTASK, exec_, rate)
    state = yield (WAIT_FOR, exec_, timeout, hosts[0])
    log.append((name, state, maestro.now))


def sleeper(log: list, maestro: Maestro, name: str, sleep_s: float):
    yield (SLEEP, sleep_s, -1)
    log.append((name, "woke", maestro.now))


def outcomes(log: list) -> list:
    return [entry for entry in log if entry[1] != "exec"]


def test_a_tie_alone_is_done_at_its_walltime():
    maestro, log = Maestro(), []
    maestro.spawn(worker(log, maestro, "w", (0,), 1e10 / 3e10, 3.0))  # 3e10 flops at 10 Gf/s
    assert maestro.run() is None
    assert outcomes(log) == [("w", DONE, 3.0)]


def test_a_tie_started_late_times_out_at_an_earlier_step():
    """The ptask starts 0.2 ns late; a sleep due at 3 s exactly is the step that fires its
    timer (0.2 ns < 1e-9 s left) with work left: TIMEOUT in that step, woken after the sleeper
    (whose sleep was created first)."""
    maestro, log = Maestro(), []
    maestro.spawn(worker(log, maestro, "w", (0,), 1 / 3, 3.0, start_after_s=2e-10))
    maestro.spawn(sleeper(log, maestro, "s", 3.0))
    assert maestro.run() is None
    assert outcomes(log) == [("s", "woke", 3.0), ("w", TIMEOUT, 3.0)]


def test_work_done_before_the_timeout_drops_the_timer():
    """2 s of work, walltime 10: DONE at 2 s and no later step (the timer is gone)."""
    maestro, log = Maestro(), []
    maestro.spawn(worker(log, maestro, "w", (0, 1), 0.5, 10.0))
    assert maestro.run() is None
    assert outcomes(log) == [("w", DONE, 2.0)]
    assert maestro.now == 2.0


def test_a_slower_speed_stretches_the_rest_of_the_work():
    """Half the work done at 1 s, then half the rate: the other half takes 2 s (end at 3 s)."""
    maestro, log = Maestro(), []
    maestro.spawn(worker(log, maestro, "w", (0,), 0.5, -1.0))

    def slow_down():
        yield (SLEEP, 1.0, -1)
        maestro.set_rate(log[0][2], 0.25)
    maestro.spawn(slow_down())
    assert maestro.run() is None
    assert outcomes(log) == [("w", DONE, 3.0)]


def test_a_timeout_with_work_left_leaves_the_work_running_until_it_is_done():
    """SimGrid 3.32's wait_for times out alone (a SynchroImpl on the issuer's host): the wait
    is TIMEOUT at 1 s, only the timer's host updated then; the work runs on to 4 s, where it
    ends and updates every host of the task (its on_end called once)."""
    touched, ended = [], []
    maestro, log = Maestro(lambda h: touched.append((h, maestro.now))), []
    maestro.spawn(worker(log, maestro, "w", (2, 5, 7), 0.25, 1.0))  # 4 s of work, walltime 1

    def watch():
        yield (SLEEP, 2.0, -1)
        log[0][2].on_end = lambda: ended.append(maestro.now)
    maestro.spawn(watch())
    assert maestro.run() is None
    assert outcomes(log) == [("w", TIMEOUT, 1.0)]
    assert maestro.now == 4.0
    assert touched == [(2, 1.0), (-1, 2.0), (2, 4.0), (5, 4.0), (7, 4.0)]  # -1: the sleep
    assert ended == [4.0]


def test_a_task_run_on_is_stopped_by_its_cancel_once():
    """The same task cancelled at 2 s (Batsim's executor ends): every host updated at 2 s,
    on_end called then, no step at 4 s; a second cancel changes nothing."""
    touched, ended = [], []
    maestro, log = Maestro(lambda h: touched.append((h, maestro.now))), []
    maestro.spawn(worker(log, maestro, "w", (2, 5, 7), 0.25, 1.0))

    def cancel():
        yield (SLEEP, 2.0, -1)
        exec_ = log[0][2]
        exec_.on_end = lambda: ended.append(maestro.now)
        maestro.cancel_exec(exec_)
        maestro.cancel_exec(exec_)
    maestro.spawn(cancel())
    assert maestro.run() is None
    assert maestro.now == 2.0
    assert touched == [(2, 1.0), (-1, 2.0), (2, 2.0), (5, 2.0), (7, 2.0)]
    assert ended == [2.0]


def test_a_message_over_an_empty_route_ends_at_the_next_step_without_time():
    """A Full zone's missing route is empty: the 1-byte transfer has nothing to cross and ends
    at the next step, 0 s later (SimGrid's L07: no link, no flops, nothing remains)."""
    maestro, log = Maestro(), []

    def send():
        transfer = yield (SEND, "hi", float("inf"), 3)
        yield (WAIT, transfer)
        log.append(("sent", maestro.now))

    def receive():
        yield (SLEEP, 1.0, -1)
        transfer = yield (RECV,)
        payload = yield (WAIT, transfer)
        log.append((payload, maestro.now))
    maestro.spawn(send())
    maestro.spawn(receive())
    assert maestro.run() is None
    assert log == [("sent", 1.0), ("hi", 1.0)]
