"""benchmarks/platform_corpus.py: the runnable copy it makes of a platform, the routing it names,
its skip without a binary, and (slow, with the binary) one platform's sessions."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from benchmarks import platform_corpus as pc

HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1">\n<zone id="z" routing="Full">\n')


def test_the_master_is_kept_or_the_first_host_gets_the_role_in_its_tag():
    named = HEAD + '<host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/>\n</zone>'
    assert pc.runnable_copy(named) == (named, "master_host")
    role = HEAD + '<host id="a" speed="1Gf"><prop id="role" value="master"/></host>\n</zone>'
    assert pc.runnable_copy(role) == (role, "its own role=master")
    plain = HEAD + '<router id="r"/>\n<host id="b" speed="1Gf"/><host id="a" speed="2Gf">\n' \
        '<prop id="x" value="y"/></host>\n</zone>'
    text, how = pc.runnable_copy(plain)
    assert how == "role on b"
    assert text.splitlines()[5] == \
        '<host id="b" speed="1Gf"><prop id="role" value="master"/></host><host id="a" speed="2Gf">'
    assert text.count("\n") == plain.count("\n")  # later lines keep their numbers
    opened = HEAD + '<host id="c" speed="1Gf">\n<prop id="x" value="y"/></host>\n</zone>'
    assert pc.runnable_copy(opened)[0].splitlines()[4] == \
        '<host id="c" speed="1Gf"><prop id="role" value="master"/>'
    clusters = HEAD + '<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" ' \
        'bw="1GBps" lat="0"/>\n</zone>'
    assert pc.runnable_copy(clusters) == (None, "no <host> to mark as master (clusters only)")


def test_the_routing_named_for_a_file():
    text = ('<zone id="a" routing="Full"><zone id="b" routing="Floyd"><cluster id="c" '
            'topology="TORUS"/></zone><zone id="d" routing="Full"/></zone>')
    assert pc.routing_of(text) == "Full+Floyd+TORUS"
    assert pc.routing_of('<AS id="a" routing="Vivaldi"><peer id="p"/></AS>') == "Vivaldi+peer"


def test_without_a_binary_it_says_so_and_compares_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pc, "SHARED_BATSIM", tmp_path / "none")
    monkeypatch.delenv("HDRM_BATSIM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "p.xml").write_text(HEAD + '<host id="a" speed="1Gf"/></zone></platform>')
    assert pc.main([str(tmp_path), "--batsim", str(tmp_path / "missing")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no runnable Batsim 4.x") and "nothing compared" in out


@pytest.mark.slow
def test_a_small_platform_gives_identical_sessions(tmp_path, capsys):
    if pc.find_batsim(None) is None:
        pytest.skip("no runnable Batsim 4.x")
    folder = tmp_path / "p"
    folder.mkdir()
    hosts = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(3))
    links = "".join(f'<link id="l{i}" bandwidth="1GBps" latency="{i + 1}00us"/>' for i in range(3))
    routes = "".join(f'<route src="m" dst="h{i}"><link_ctn id="l{i}"/></route>' for i in range(3))
    (folder / "small.xml").write_text(HEAD + f'<host id="m" speed="1Gf"/>{hosts}{links}{routes}'
                                      '</zone></platform>\n')
    assert pc.main([str(folder), "--outdir", str(tmp_path / "out"), "--seeds", "1", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["p/small.xml", "3", "Full", "2/2"]
    assert "builtin ok (3 hosts)" in lines[0]
    assert lines[-1].startswith("total 2/2 identical sessions on 1 files")


def test_a_master_zone_is_added_to_a_zone_of_clusters_only():
    two = HEAD + ('<cluster id="c1" prefix="a" suffix=".x" radical="0-1" speed="1Gf" bw="1GBps" '
                  'lat="0"/><cluster id="c2" prefix="b" suffix="" radical="0-1" speed="1Gf" '
                  'bw="1GBps" lat="0" router_id="r2"/><link id="bb" bandwidth="1GBps" '
                  'latency="0"/><zoneRoute src="c1" dst="c2" gw_src="ac1_router.x" gw_dst="r2">'
                  '<link_ctn id="bb"/></zoneRoute></zone></platform>')
    text, how = pc.master_cluster_copy(two)
    assert how == "master zone + 2 routes"
    root = ET.fromstring(text.split("\n", 2)[2])
    assert [c.tag for c in root[0]] == ["cluster", "cluster", "link", "zone", "link", "zoneRoute",
                                        "zoneRoute", "zoneRoute"]  # routes last (the DTD)
    assert [(r.get("dst"), r.get("gw_dst")) for r in root[0].findall("zoneRoute")[1:]] == [
        ("c1", "ac1_router.x"), ("c2", "r2")]
    assert root[0].find("zone/host").get("id") == "master_host"
    bare = HEAD.replace('<zone id="z" routing="Full">\n', '') + (
        '<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1GBps" lat="0"/>'
        '</platform>')
    text, how = pc.master_cluster_copy(bare)
    root = ET.fromstring(text.split("\n", 2)[2])
    assert (root[0].get("id"), [c.tag for c in root[0]]) == (
        "corpus_root", ["cluster", "zone", "link", "zoneRoute"])
    torus = bare.replace('<cluster id="c" prefix="n" suffix="" radical="0-3"',
                         '<cluster id="c" prefix="n" suffix="" radical="4-7" topology="TORUS" '
                         'topo_parameters="2,2"')
    root = ET.fromstring(pc.master_cluster_copy(torus)[0].split("\n", 2)[2])
    assert root[0].find("zoneRoute").get("gw_dst") == "n4"  # no router: its first node
    hosts = HEAD + '<host id="a" speed="1Gf"/></zone></platform>'
    assert pc.master_cluster_copy(hosts) == (None, "no master zone added (not a zone of "
                                                   "clusters only)")
