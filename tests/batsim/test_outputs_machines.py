"""Batsim's other output files (:mod:`hdrm.batsim.outputs_machines`, :mod:`outputs_paje`), on
hand-checked cases: the rows, their number formats, the long-double sums."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hdrm.batsim.outputs_energy import TraceAccounts
from hdrm.batsim.outputs_machines import (COMPUTING, IDLE, SLEEPING, SWITCHING_OFF,
                                          SWITCHING_ON, SessionTraces)
from hdrm.batsim.outputs_paje import PajeTrace, header, job_colours
from hdrm.platform.simgrid import HostSpec

WATTS = "wattage_per_state"


def host(name: str, pstate: int = 0, watts: str = "100:120:200,90:95:150,5:5:5") -> HostSpec:
    pairs = tuple((float(w.split(":")[0]), float(w.split(":")[-1])) for w in watts.split(","))
    return HostSpec(name, (1.0, 0.5, 1e-9), pstate, pairs, properties={WATTS: watts})


def traces(energy: bool = True, **kwargs) -> SessionTraces:
    return SessionTraces([host("a"), host("b", pstate=1), host("c")], ["disk"], energy, **kwargs)


def test_machine_state_rows_count_each_state_with_g_times():
    t = traces(energy=False)
    t.job_started(6.0008e-05, "w0!1", [2, 0], None)
    t.set_state(1.25, 1, SWITCHING_OFF)
    t.states_row(1.25)
    t.set_state(2.0000451, 1, SLEEPING)
    t.states_row(2.0000451)
    t.job_ended(3.5, "w0!1", [0, 2], killed=False)
    assert t.states_rows == ["6.0008e-05,0,0,0,1,2\n", "1.25,0,0,1,0,2\n",
                             "2.00005,1,0,0,0,2\n", "3.5,1,0,0,2,0\n"]
    assert t.counts[IDLE] == 2 and t.counts[SLEEPING] == 1


def test_time_in_each_state_stops_at_each_machine_s_last_change():
    t = traces(energy=False)
    t.job_started(1.0, "w0!1", [0], None)  # host 0 idle 1 s, computing 3 s
    t.job_ended(4.0, "w0!1", [0], killed=False)
    t.set_state(5.0, 1, SWITCHING_ON)  # host 1 idle 5 s, switching 0.5 s
    t.set_state(5.5, 1, IDLE)
    times = t.state_times()  # host 2 never changes: nothing counted; host 0's idle after 4 s
    assert times == {"time_sleeping": 0.0, "time_switching_on": 0.5, "time_switching_off": 0.0,
                     "time_idle": 6.0, "time_computing": 3.0, "time_unavailable": 0.0}


def test_state_times_are_summed_in_long_doubles():
    """1e8 + 1e-9 + ... in doubles loses the small terms; Batsim's long doubles keep them."""
    t = SessionTraces([host(f"h{i}") for i in range(3)], energy=False)
    t.set_state(1e8, 0, COMPUTING)
    for h in (1, 2):
        t.set_state(1e-8, h, COMPUTING)
    assert t.state_times()["time_idle"] == pytest.approx(1e8 + 2e-8, abs=0) != 1e8


def test_energy_rows_wattmin_and_mean_power():
    t = traces()
    assert t.wattmin_w == 120 + 95 + 120  # epsilon of each host's state (b starts in state 1)
    t.job_started(2.0, "w0!1", [0], 670.0)
    t.job_energy(2.0, 670.0)  # no time since the last row: NA
    t.set_pstate(0, 2)
    t.switch_requested(3.0, [0, 2], 2, True, 1000.0)
    assert t.energy_rows == ["2.000000,670.000000,s,335.000000,335.000000\n",
                             "2.000000,670.000000,e,335.000000,NA\n",
                             "3.000000,1000.000000,p,220.000000,330.000000\n"]


def test_power_state_rows_start_with_every_machine_s_state():
    t = SessionTraces([host("a"), host("b", pstate=1), host("c"), host("d", pstate=1),
                       host("e")], energy=True)
    t.switch_requested(7.5e-05, [0, 2], 2, True, 0.0)
    t.switch_done(0.00136239, [0, 2], 2, 0.0)
    t.switch_requested(2.00005, [0, 2, 3], 0, False, 0.0)
    assert t.pstate_rows == ["0,0 2 4,0\n", "0,1 3,1\n", "7.5e-05,0 2,-2\n",
                             "0.00136239,0 2,2\n", "2.00005,0 2-3,-1\n"]


def test_only_the_files_asked_for_are_written(tmp_path):
    for energy, states, paje, names in [
            (True, True, True, ["machine_states.csv", "schedule.trace", "consumed_energy.csv",
                                "pstate_changes.csv"]),
            (False, True, False, ["machine_states.csv"]),
            (True, False, False, ["consumed_energy.csv", "pstate_changes.csv"]),
            (False, False, False, [])]:
        t = traces(energy, machine_states=states, schedule_trace=paje)
        files = t.write(str(tmp_path / f"o{energy}{states}{paje}"), 1.0)
        assert [f.name.split("_", 1)[1] for f in files] == names
        if states:
            assert files[0].read_text() == ("time,nb_sleeping,nb_switching_on,nb_switching_off,"
                                            "nb_idle,nb_computing\n")


# ---------------------------------------------------------------- Pajé
def test_colours_are_batsim_s_64_hues():
    colours = job_colours(seed=3)
    assert len(set(colours)) == 64 and colours != job_colours(seed=4)
    assert {'"1.000000 0.000000 0.000000"', '"1.000000 0.937500 0.000000"',
            '"0.000000 1.000000 0.156250"', '"0.968750 0.000000 1.000000"'} <= set(colours)


def test_pajé_trace_lines():
    paje = PajeTrace(["a", "b"])
    paje.job_started(0.00006, "w0!0", [1, 0])
    paje.job_killed(3.5047651, "w0!0", [0, 1])
    paje.machines_waiting(3.5047651, [0, 1])
    paje.job_started(4.0, "w0!0", [1])  # declared once
    text = paje.text(127.376011)
    assert text.startswith(header()) and header().startswith(
        "%EventDef PajeDefineContainerType 1\n% Type string\n")
    body = text[len(header()):].splitlines()
    assert body[body.index("# Containers creation") + 1:][:5] == [
        '2 0.000000 root_ct root "Machines" 0', '2 0.000000 machine_ct m0 "a" root',
        '2 0.000000 machine_ct m1 "b" root', '2 0.000000 scheduler_ct sc "Scheduler" 0',
        '2 0.000000 killer_ct k "Killer" sc']
    events = body[body.index("# Begin of events") + 1:]
    assert re.fullmatch(r'5 jw0!0 machine_state "w0!0" "[0-9. ]+"', events[2])
    assert [events[:2], events[3:]] == [
        ["6 0.000000 machine_state m0 w", "6 0.000000 machine_state m1 w"],
        ["6 0.000060 machine_state m0 jw0!0", "6 0.000060 machine_state m1 jw0!0",
         '8 3.504765 kk k "w0!0"', '8 3.504765 km m0 "w0!0"', '8 3.504765 km m1 "w0!0"',
         "6 3.504765 machine_state m0 w", "6 3.504765 machine_state m1 w",
         "6 4.000000 machine_state m1 jw0!0", "",
         "# End of events, containers destruction", "3 127.376011 m0 machine_ct",
         "3 127.376011 m1 machine_ct", "3 127.376011 root root_ct"]]


def test_the_trace_has_a_container_for_storage_hosts_too():
    t = traces()
    assert '2 0.000000 machine_ct m3 "disk" root' in t.paje.text(0.0)


# ---------------------------------------------------------------- SimGrid's accounts
def test_accounts_charge_the_time_since_the_last_update_at_the_power_now():
    acc = TraceAccounts([host("a"), host("b", pstate=1)])
    acc.update_many([0], 2.0, 0.0)  # idle: 100 W for 2 s
    assert acc.energy_j == [200.0, 0.0]
    acc.update_all(4.0, np.array([0.5e9, 0.25e9]))  # a at half load (160 W) for 2 s;
    assert acc.energy_j == [520.0, 4 * (95 + 0.5 * 55)]  # b at 0.25 of 0.5 Gflop/s for 4 s
    acc.pstate[0] = 2  # Host::set_pstate: charged at the saved state 0 until the next update
    acc.update_many([0], 5.0, 0.0)
    acc.update_all(6.0, np.zeros(2))
    assert acc.energy_j[0] == 520.0 + 100.0 + 5.0
    assert acc.total_j() == np.longdouble(625.0) + np.longdouble(acc.energy_j[1])


def test_accounts_read_twice_at_one_time_charge_once():
    acc = TraceAccounts([host("a")])
    acc.update_all(3.0, np.array([1e9]))  # full load: 200 W
    acc.update_many([0], 3.0, 0.0)
    assert acc.energy_j == [600.0] and acc.updated_s == [3.0]
