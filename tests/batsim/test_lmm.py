"""hdrm.batsim.lmm: SimGrid 3.32's fair-bottleneck sharing, values checked by hand."""

from __future__ import annotations

from hdrm.batsim.lmm import Constraint, System


def flow(system: System, links: list, weight: float = 1.0, bound: float = -1.0):
    var = system.variable(1.0, bound)
    for link in links:
        system.expand(link, var, weight)
    return var


def test_two_flows_share_one_link_equally():
    system, link = System(), Constraint(100.0)
    a, b = flow(system, [link]), flow(system, [link])
    system.solve()
    assert (a.value, b.value) == (50.0, 50.0)


def test_a_flow_bottlenecked_elsewhere_leaves_the_rest_to_the_other():
    """a crosses a 10-B/s link and the 100-B/s one, b only the latter: a gets 10 in the first
    round (its own link spent), b 50 then the 40 left... less a's 10 subtracted again (SimGrid
    keeps a's last growth): b ends with 90 and the link is spent."""
    system, slow, fast = System(), Constraint(10.0), Constraint(100.0)
    a, b = flow(system, [slow, fast]), flow(system, [fast])
    system.solve()
    assert (a.value, b.value) == (10.0, 90.0)


def test_weights_divide_the_share():
    """A ptask sending 4 bytes per unit of work and a 1-byte message on a 100-B/s link: each
    element gets 50 B/s: the ptask 12.5 units/s, the message 50 bytes/s."""
    system, link = System(), Constraint(100.0)
    ptask, message = flow(system, [link], 4.0), flow(system, [link])
    system.solve()
    assert (ptask.value, message.value) == (12.5, 50.0)


def test_a_fatpipe_gives_every_flow_its_whole_bandwidth():
    system, link = System(), Constraint(100.0, fatpipe=True)
    a, b = flow(system, [link]), flow(system, [link], 2.0)
    system.solve()
    assert (a.value, b.value) == (100.0, 50.0)


def test_a_fatpipe_crossed_twice_counts_once_and_a_shared_link_twice():
    system, pipe, shared = System(), Constraint(100.0, fatpipe=True), Constraint(100.0)
    a, b = flow(system, [pipe, pipe]), flow(system, [shared, shared])
    system.solve()
    assert (a.value, b.value) == (100.0, 50.0)
    assert [e.weight for e in a.elements] == [1.0] and [e.weight for e in b.elements] == [2.0]


def test_split_duplex_directions_do_not_contend():
    """A split-duplex link is two constraints (UP and DOWN): flows in opposite directions get
    the whole bandwidth each, two in one direction share it."""
    system, up, down = System(), Constraint(100.0, name="l_UP"), Constraint(100.0, name="l_DOWN")
    a, b, c = flow(system, [up]), flow(system, [down]), flow(system, [down])
    system.solve()
    assert (a.value, b.value, c.value) == (100.0, 50.0, 50.0)


def test_a_bound_caps_a_variable_and_the_cpu_shares_between_executors():
    """A ptask with two executors on one 1e9-flop/s host (two elements: L07 forces one per
    executor), 1e9 flops each, bound 1 by the host's speed: 0.5 units/s."""
    system, cpu = System(), Constraint(1e9)
    var = system.variable(1.0, 1.0)
    system.expand(cpu, var, 1e9, force=True)
    system.expand(cpu, var, 1e9, force=True)
    system.solve()
    assert var.value == 0.5
    system.set_constraint_bound(cpu, 4e9)
    system.solve()
    assert var.value == 1.0  # now its bound


def test_disabled_variables_take_nothing_and_come_back_first():
    system, link = System(), Constraint(100.0)
    a, b = flow(system, [link]), flow(system, [link])
    system.set_penalty(a, 0.0)
    system.solve()
    assert (a.value, b.value) == (0.0, 100.0)
    assert [e.variable for e in link.enabled] == [b] and link.disabled[0].variable is a
    system.set_penalty(a, 1.0)
    assert [e.variable for e in link.enabled] == [a, b]
    system.solve()
    assert (a.value, b.value) == (50.0, 50.0)


def test_a_variable_without_weight_gets_one_and_a_freed_one_leaves():
    system, link = System(), Constraint(100.0)
    empty = system.variable()
    a, b = flow(system, [link]), flow(system, [link])
    system.free(b)
    system.solve()
    assert (empty.value, a.value) == (1.0, 100.0)
    assert link.enabled == [a.elements[0]]


def test_subtraction_follows_the_element_order_newest_first():
    """Three flows on a 1-B/s link: shares of 1/3; the link subtracts each 1/3 from 1 newest
    first; the rounding leaves less than the precision, so one round saturates all three."""
    system, link = System(), Constraint(1.0)
    flows = [flow(system, [link]) for _ in range(3)]
    system.solve()
    assert [f.value for f in flows] == [1.0 / 3] * 3
    assert [e.variable for e in link.enabled] == flows[::-1]
    assert link.remaining == 0.0


def test_solve_does_nothing_until_something_changes():
    system, link = System(), Constraint(100.0)
    a = flow(system, [link])
    system.solve()
    a.value = -1.0
    system.solve()
    assert a.value == -1.0
    system.set_bound(a, 30.0)
    system.solve()
    assert a.value == 30.0
