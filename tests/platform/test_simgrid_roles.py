"""Batsim 4.2.1's -m/--master-host and -r/--add-role-to-hosts, as hdrm serve reads them
(hdrm.platform.simgrid_roles), and storage hosts in SIMULATION_BEGINS; the binary's answers are
in tests/batsim/test_real_batsim_roles.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.batsim.latency import route_latencies
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.platform_hosts import load_hosts, load_served_hosts
from hdrm.batsim.simulator import BatsimSimulation, ServerConfig
from hdrm.cli.main import main
from hdrm.errors import ConfigError, PlatformError
from hdrm.platform.simgrid_roles import HostRoles, parse_role_option

DECL = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"


def write_triangle(path: Path, b_role: str = "") -> Path:
    """master_host, a and b, each pair joined by its own link: 10 us (master_host-a),
    20 us (master_host-b), 30 us (a-b)."""
    prop = f'<prop id="role" value="{b_role}"/>' if b_role else ""
    path.write_text(
        f'{DECL}<platform version="4.1"><zone id="z" routing="Full">'
        '<host id="master_host" speed="1Gf"/><host id="a" speed="2Gf"/>'
        f'<host id="b" speed="3Gf">{prop}</host>'
        '<link id="ma" bandwidth="1GBps" latency="10us"/>'
        '<link id="mb" bandwidth="1GBps" latency="20us"/>'
        '<link id="ab" bandwidth="1GBps" latency="30us"/>'
        '<route src="master_host" dst="a"><link_ctn id="ma"/></route>'
        '<route src="master_host" dst="b"><link_ctn id="mb"/></route>'
        '<route src="a" dst="b"><link_ctn id="ab"/></route>'
        "</zone></platform>\n")
    return path


def test_a_role_option_gives_each_host_its_role():
    assert parse_role_option("a,b:storage") == (("a", "storage"), ("b", "storage"))
    assert parse_role_option("a:") == (("a", ""),)  # Batsim: no role, a compute node


@pytest.mark.parametrize(("text", "match"), [
    ("a", "0 ':' characters, which Batsim 4 refuses"),
    ("a:b:master", "2 ':' characters"),
    ("a:bogus", "role 'bogus', which Batsim 4 refuses .* give one of compute_node, master, "
                "storage"),
    ("a,,b:storage", "an empty host name"),
])
def test_a_malformed_role_option_is_refused_in_one_line(text, match):
    with pytest.raises(ConfigError, match=f"^-r/--add-role-to-hosts {text!r}: {match}") as info:
        parse_role_option(text)
    assert "\n" not in str(info.value)


def test_a_later_role_replaces_the_master_role_as_in_batsim():
    roles = HostRoles("a", (("a", "storage"), ("b", "master")))
    assert {k: v[0] for k, v in roles.role_map().items()} == {"a": "storage", "b": "master"}
    assert HostRoles().default and not HostRoles("a").default


def test_another_master_makes_master_host_a_compute_host(tmp_path):
    platform = write_triangle(tmp_path / "p.xml")
    served = load_served_hosts(platform, roles=HostRoles("a"))
    hosts, master = served.compute, served.master
    assert master == "a"
    assert [(h.name, h.gflops) for h in hosts] == [("b", 3.0), ("master_host", 1.0)]
    assert "role" not in hosts[1].properties  # SIMULATION_BEGINS lists role "" for it
    # towards a: b over ab (30 us), master_host over ma (10 us), a to itself 0
    latencies = route_latencies(platform, hosts, master)
    assert (latencies.master_s, latencies.host_s) == (0.0, (30e-6, 10e-6))
    default = route_latencies(platform, load_hosts(platform))  # towards master_host
    assert default.host_s == (10e-6, 20e-6)


def test_roles_of_r_reach_the_hosts_properties(tmp_path):
    platform = write_triangle(tmp_path / "p.xml")
    hosts = load_hosts(platform, roles=HostRoles(added=(("a", "compute_node"), ("b", "storage"))))
    assert [(h.name, h.properties.get("role")) for h in hosts] == [("a", "compute_node")]


def test_a_role_that_only_names_no_host_is_ignored_as_batsim_does(tmp_path, caplog):
    platform = write_triangle(tmp_path / "p.xml")
    hosts = load_hosts(platform, roles=HostRoles(added=(("nohost", "storage"),)))
    assert [h.name for h in hosts] == ["a", "b"]
    assert "no host named 'nohost'; Batsim ignores the role given to it" in caplog.text


@pytest.mark.parametrize(("roles", "b_role", "match"), [
    (HostRoles("nohost"), "", r"-m/--master-host nohost: no master host \(no host is named "
     r"'nohost'\), which Batsim 4 refuses \('Cannot find the \"master\" role'\)"),
    (HostRoles(added=(("master_host", "storage"),)), "", "lost its master role to -r"),
    (HostRoles(added=(("a", "master"),)), "", r"2 master hosts \(master_host, a: .*'There are "
     "two master hosts'"),
    (HostRoles("b"), "storage", "-m/--master-host b: host 'b' already has the property "
     "role='storage', so Batsim 4 reads the role 'storage,master' and refuses it"),
    (HostRoles(added=(("b", "compute_node"),)), "master", "-r/--add-role-to-hosts "
     "b:compute_node: host 'b' already has the property role='master'"),
])
def test_roles_batsim_refuses_are_refused_in_one_line(tmp_path, roles, b_role, match):
    platform = write_triangle(tmp_path / "p.xml", b_role)
    with pytest.raises(PlatformError, match=match) as info:
        load_hosts(platform, roles=roles)
    assert "\n" not in str(info.value) and str(info.value).startswith(str(platform))


def test_roles_with_an_hdrm_json_platform_are_refused(tmp_path):
    platform = tmp_path / "p.json"
    platform.write_text("{}")
    with pytest.raises(ConfigError, match="SimGrid XML platform only"):
        load_hosts(platform, roles=HostRoles("a"))


def test_hdrm_serve_refuses_a_bad_role_option_before_serving(tmp_path, capsys):
    platform = write_triangle(tmp_path / "p.xml")
    code = main(["serve", "-p", str(platform), "-w", str(tmp_path / "w.json"),
                 "-e", str(tmp_path / "out"), "-r", "a:boss"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "-r/--add-role-to-hosts 'a:boss': role 'boss'" in err


def test_another_master_in_a_vivaldi_zone_of_peers(tmp_path):
    """Routes through RouteTable (no <route> to read): towards p1, Vivaldi's
    (sqrt(dx^2 + dy^2) + |h0| + |h1|) / 1000 = (5 + 1 + 2) / 1000 s; the master's message to
    itself 2 |h1| / 1000 s."""
    platform = tmp_path / "p.xml"
    platform.write_text(
        f'{DECL}<platform version="4.1"><zone id="z" routing="Vivaldi">'
        '<peer id="p0" coordinates="0 0 1" speed="1Gf" bw_in="1GBps" bw_out="1GBps"/>'
        '<peer id="p1" coordinates="3 4 2" speed="1Gf" bw_in="1GBps" bw_out="1GBps"/>'
        "</zone></platform>\n")
    served = load_served_hosts(platform, roles=HostRoles("p1"))
    assert ([h.name for h in served.compute], served.master) == (["p0"], "p1")
    latencies = route_latencies(platform, served.compute, served.master)
    assert (latencies.master_s, latencies.host_s) == (0.004, (0.008,))


def test_storage_hosts_are_listed_after_the_compute_hosts(tmp_path):
    """As Batsim 4.2.1 lists cluster512_pfs.xml's pfs0: ids after the compute hosts', by name,
    idle, with their properties; nb_resources counts them."""
    platform = tmp_path / "q.xml"
    platform.write_text(write_triangle(tmp_path / "t.xml").read_text().replace(
        '<host id="b" speed="3Gf">', '<host id="c" speed="1Gf"/><host id="b" speed="3Gf">'))
    served = load_served_hosts(platform, roles=HostRoles(added=(("b", "storage"),)))
    assert [h.name for h in served.compute] == ["a", "c"]
    workload = tmp_path / "w.json"
    workload.write_text('{"nb_res": 2, "jobs": [{"id": "1", "subtime": 0, "res": 1, '
                        '"walltime": 10, "profile": "d"}], "profiles": {"d": {"type": "delay", '
                        '"delay": 1}}}')
    sim = BatsimSimulation(served.compute, read_job_table(workload),
                           ServerConfig(storage=tuple(served.storage)))
    data = sim.begin().events[0].data
    assert (data["nb_resources"], data["nb_compute_resources"], data["nb_storage_resources"]) \
        == (3, 2, 1)
    assert data["storage_resources"] == [{"id": 2, "name": "b", "state": "idle",
                                          "properties": {"role": "storage"},
                                          "zone_properties": {}}]


def test_storage_hosts_with_energy_accounting_are_refused(tmp_path):
    platform = write_triangle(tmp_path / "p.xml", "storage")
    with pytest.raises(PlatformError, match="storage host 'b' .* with energy accounting"):
        load_served_hosts(platform, energy=True)


def test_the_default_master_name_is_not_warned_about(tmp_path, caplog):
    """The master is the file's role=master host b; -r names a and b's neighbour only."""
    text = write_triangle(tmp_path / "t.xml", "master").read_text()
    platform = tmp_path / "p.xml"
    platform.write_text(text.replace('"master_host"', '"m0"'))
    hosts = load_hosts(platform, roles=HostRoles(added=(("a", "compute_node"),)))
    assert [(h.name, h.properties.get("role")) for h in hosts] == [("a", "compute_node"),
                                                                    ("m0", None)]
    assert "Batsim ignores" not in caplog.text
