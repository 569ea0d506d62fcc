"""``hdrm serve -E`` refuses the compute hosts the real Batsim 4.2.1 aborts on with energy
accounting (checked with the binary in runs/s24f and ``test_real_batsim_platforms.py``):

* no ``wattage_per_state`` ("No power range properties specified for host h0"; hdrm served them
  at 0 W), or only the old ``watt_per_state`` (hdrm served it at its watts);
* a state that computes at speed 0 ("invalid (non-positive computing speed) computing pstate 1";
  a sleep state of ``sleep_pstates`` may have speed 0).

Without ``-E`` Batsim runs them, and so does hdrm serve.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdrm.batsim.hosts import check_energy, load_hosts
from hdrm.batsim.server import BatsimServer, ServeOptions
from hdrm.batsim.simulator import ServerConfig
from hdrm.errors import PlatformError

HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n"
        '<host id="master_host" speed="1Gf"/>\n')


def platform(tmp_path: Path, host: str) -> Path:
    path = tmp_path / "p.xml"
    path.write_text(HEAD + host + "\n</zone></platform>\n")
    return path


def workload(tmp_path: Path) -> Path:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": 1, "jobs": [
        {"id": "1", "subtime": 0, "res": 1, "walltime": 10, "profile": "d"}],
        "profiles": {"d": {"type": "delay", "delay": 1}}}))
    return path


@pytest.mark.parametrize("host, message", [
    ('<host id="h0" speed="1Gf"/>',
     r"p\.xml: host 'h0': no wattage_per_state property, which Batsim 4 refuses with energy "
     r"accounting \(-E\); give its 'idle:full' watts per power state, or run without -E$"),
    ('<host id="h0" speed="1Gf"><prop id="watt_per_state" value="1:2"/></host>',
     r"no wattage_per_state property \(it has watt_per_state, the name of SimGrid before 3\.32: "
     r"rename it\)"),
    ('<host id="h0" speed="1Gf, 0f"><prop id="wattage_per_state" value="1:2, 1:1"/></host>',
     r"p\.xml: host 'h0': power state 1 computes at 0 flop/s, which Batsim 4 refuses with "
     r"energy accounting \(-E\); give it a positive speed, or declare it a sleep state"),
])
def test_serve_with_energy_refuses_what_batsim_aborts_on(tmp_path, host, message):
    path = platform(tmp_path, host)
    options = ServeOptions(config=ServerConfig(energy=True))
    with pytest.raises(PlatformError, match=message):
        BatsimServer(path, workload(tmp_path), options)
    # without -E the real Batsim runs these files: so does hdrm serve
    assert [h.name for h in BatsimServer(path, workload(tmp_path)).hosts] == ["h0"]


def test_zero_speed_sleep_states_are_fine_with_energy(tmp_path):
    path = platform(tmp_path, '<host id="h0" speed="1Gf, 0f, 1f, 1f"><prop id="wattage_per_state" '
                    'value="100:200, 10:10, 50:50, 50:50"/><prop id="sleep_pstates" '
                    'value="1:2:3"/></host>')
    (host,) = load_hosts(path, energy=True)
    check_energy([host], path)  # state 1 sleeps, 2 and 3 switch: none computes at speed 0


def test_platform_json_always_passes_the_energy_rules(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    assert len(load_hosts(repo / "platforms" / "tiny4.json", energy=True)) == 4


def test_serve_command_with_energy_on_a_platform_without_watts(capsys):
    # Batsim 4.2.1 -E on small_delays (delay jobs only) aborts at the first submission: "No power
    # range properties specified for host Bourassa" (checked with the binary); hdrm serve ran it
    # at 0 W
    from hdrm.cli.main import main

    small = Path(__file__).resolve().parent / "data" / "golden" / "small_delays"
    status = main(["serve", "-p", str(small / "platform.xml"), "-w", str(small / "workload.json"),
                   "-s", "tcp://localhost:1", "-E"])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"hdrm serve: error: {small / 'platform.xml'}: host 'Bourassa': no "
                          "wattage_per_state property")


def test_serve_refuses_a_platform_json_with_gpus(tmp_path):
    # the export behind hdrm serve keeps the CPU part: 8 cores were served, the 8 GPUs dropped
    # in silence (engine batsim refuses such a platform)
    doc = {"node_types": {"g": {"processors": [{"type": "xeon_gold_6148", "count": 1}],
                                "memory_gb": 64, "accelerators": [{"type": "T4", "count": 2}]}},
           "clusters": [{"name": "c", "network": "ethernet_25g",
                         "nodes": [{"type": "g", "count": 2}]}]}
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(PlatformError, match=r"gpus\.json: 4 GPUs, which a Batsim platform cannot "
                       r"express .*'hdrm platform \S+gpus\.json --xml CPU\.xml' and -p CPU\.xml"):
        load_hosts(path)


def test_sleep_states_out_of_range_name_the_file(tmp_path):
    # without -E the message named the host only ("host 'h0': sleep_pstates '1:2:3' names a
    # state outside 0..1"); Batsim -E refuses it too ("the pstate 3 does not exist")
    path = platform(tmp_path, '<host id="h0" speed="1Gf, 1f"><prop id="wattage_per_state" '
                    'value="100:200, 10:10"/><prop id="sleep_pstates" value="1:2:3"/></host>')
    for energy in (False, True):
        with pytest.raises(PlatformError, match=r"p\.xml: host 'h0': sleep_pstates '1:2:3' names "
                           r"a state outside 0\.\.1$"):
            load_hosts(path, energy)
