"""Server hosts: platform input, P-state switches (immediate and sleep transitions), energy."""

from __future__ import annotations

import pytest
from batsim_helpers import GOLDEN, PLATFORMS, SESSIONS

from hdrm.batsim.hosts import HostBoard, load_hosts, sleep_states
from hdrm.errors import PlatformError, ProtocolError
from hdrm.platform.simgrid import HostSpec

DEMO_PLATFORM = SESSIONS / "protocol_demo" / "energy_platform_8.xml"


def test_xml_hosts_in_batsim_order_without_master():
    assert [h.name for h in load_hosts(GOLDEN / "small_delays" / "platform.xml")] == [
        "Bourassa", "Fafard", "Ginette", "Jupiter"]
    hosts = load_hosts(GOLDEN / "cluster256_1k" / "platform.xml")
    assert len(hosts) == 256 and hosts[0].name == "a0" and hosts[1].name == "a1"


def test_json_platform_is_seen_as_its_exported_xml():
    hosts = load_hosts(PLATFORMS / "tiny4.json")
    assert [h.name for h in hosts] == ["core_0000", "core_0001", "core_0002", "core_0003"]
    h = hosts[0]
    assert h.pstate == 0  # nominal state, as the exported XML says
    assert h.speeds_gflops == pytest.approx((8.0, 6.0, 1e-12, 1e-12))  # 8 GFLOP/s, 0.75 x, idle
    assert h.wattage_per_state_w == ((20.0, 20.0), (20.0, 20.0), (6.0, 6.0), (1.0, 1.0))


def test_unknown_platform_format():
    with pytest.raises(PlatformError, match=r"unknown platform format '\.yaml'"):
        load_hosts("p.yaml")


def _host(speeds=(1.0, 0.5), watts=((10.0, 20.0), (5.0, 5.0)), **props) -> HostSpec:
    return HostSpec("h", tuple(speeds), 0, tuple(watts), None, props)


def test_sleep_states_parse_and_errors():
    host = _host((1.0, 1e-18, 0.5e-9, 0.05e-9), ((1, 1),) * 4, sleep_pstates="1:2:3")
    assert sleep_states(host, "h") == {1: (2, 3)}
    with pytest.raises(PlatformError, match="bad sleep_pstates '1:2'"):
        sleep_states(_host(sleep_pstates="1:2"), "host 'h'")
    with pytest.raises(PlatformError, match="outside 0..1"):
        sleep_states(_host(sleep_pstates="1:2:3"), "host 'h'")


def test_idle_and_computing_power_like_simgrid():
    """A delay job draws the idle watts of its hosts, a computing job the full watts."""
    board = HostBoard([_host(), _host()])
    board.start(0, [0], delay_s=10.0)
    board.start(1, [1], ops_gflop=10.0)  # 10 GFLOP at 1 GFLOP/s: 10 s
    ends = board.advance(20.0)
    assert [(t, e.energy_j) for t, e in ends] == [(10.0, 100.0), (10.0, 200.0)]
    assert board.energy_j() == pytest.approx(100 + 200 + 2 * 10 * 10.0)  # then both idle 10 s


def test_sleep_and_wake_up_take_one_flop_and_draw_power():
    """The protocol demo's host: switch-off 2 s at 200.99 W, switch-on 20 s (Batsim's numbers)."""
    board = HostBoard(load_hosts(DEMO_PLATFORM))
    board.request([6], 1, "SET_RESOURCE_STATE")
    assert board.switching[6] and board.next_time() == pytest.approx(2.0)
    assert board.advance(1.0) == []
    ((t, (hosts, state)),) = board.advance(6.0)
    assert (t, hosts, state) == (pytest.approx(2.0), (6,), 1)
    assert board.is_sleeping(6) and board.state_name(6) == "sleeping"
    assert board.energy_j() == pytest.approx(1520.993443, abs=1e-6)  # ANSWER at t=6 in capture A
    board.advance(30.0)
    board.request([6], 0, "SET_RESOURCE_STATE")
    ((t, (hosts, state)),) = board.advance(60.0)
    assert t == pytest.approx(50.0) and state == 0 and not board.is_sleeping(6)
    assert (board.nb_grouped_switches, board.nb_machine_switches) == (2, 2)


def test_computation_states_switch_immediately_and_retime_jobs():
    board = HostBoard(load_hosts(GOLDEN / "pstate_slowdown" / "platform.xml"))
    board.start(0, [0, 1], ops_gflop=100.0)
    board.advance(2.0)
    board.request([0, 1], 1, "SET_RESOURCE_STATE")
    assert board.pstate[:2] == [1, 1] and not board.switching[0]
    ((t, ack),) = board.advance(2.0)
    assert (t, ack) == (2.0, ((0, 1), 1))
    board.advance(6.0)
    board.request([0, 1], 0, "SET_RESOURCE_STATE")
    ends = [e for _, e in board.advance(20.0) if not isinstance(e, tuple)]
    assert ends[0].finish_s == pytest.approx(11.0)  # golden pstateDemo: job 0 ends at 11.0


@pytest.mark.parametrize("hosts, state, error", [
    ([7], 0, "unknown resource 7; resources are 0..6"),
    ([0], 9, r"resource 0 \(host0\) has no power state 9; its states are 0..3"),
    ([0], 2, "state 2 of resource 0 .* is a virtual switch-on/off state"),
])
def test_bad_switch_requests(hosts, state, error):
    board = HostBoard(load_hosts(DEMO_PLATFORM))
    with pytest.raises(ProtocolError, match=f"SET_RESOURCE_STATE: {error}"):
        board.request(hosts, state, "SET_RESOURCE_STATE")


def test_busy_host_cannot_sleep_and_switching_host_cannot_switch():
    board = HostBoard(load_hosts(DEMO_PLATFORM))
    board.start(0, [0], delay_s=5.0)
    with pytest.raises(ProtocolError,
                       match=r"jobs are running on machine 0 \(host0\), which cannot go to sleep"):
        board.request([0], 1, "SET")
    board.request([1], 1, "SET")
    with pytest.raises(ProtocolError, match="resource 1 .* is still switching"):
        board.request([1], 0, "SET")
