"""<config> keys as SimGrid 3.32 reads them under Batsim 4.2.1 (hdrm.platform.simgrid_config):
unknown keys and unparsable values refused by every reader, the keys ptask_L07 reads refused by
hdrm serve unless at the value it models; the binary's answers are in
tests/batsim/test_real_batsim_config.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.batsim.platform_hosts import load_hosts
from hdrm.errors import PlatformError
from hdrm.platform.simgrid import read_simgrid_hosts
from hdrm.platform.simgrid_config import DECLARED, MODELLED

DECL = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"


def with_config(path: Path, props: dict[str, str], comment: str = "") -> Path:
    """Line 3 <platform>, line 4 the comment, line 5 <config>, then one <prop> a line."""
    lines = [f'<prop id="{k}" value="{v}"/>' for k, v in props.items()]
    path.write_text(
        DECL + '<platform version="4.1">\n' + comment + "\n<config>\n" + "\n".join(lines)
        + '\n</config>\n<zone id="z" routing="Full"><host id="master_host" speed="1Gf"/>'
        '<host id="a" speed="1Gf"/><link id="l" bandwidth="1GBps" latency="1us"/>'
        '<route src="master_host" dst="a"><link_ctn id="l"/></route></zone></platform>\n')
    return path


def test_the_declared_keys_are_the_binarys_98():
    assert len(DECLARED) == 98
    assert DECLARED["network/TCP-gamma"] == "double" and DECLARED["tracing"] == "boolean"
    assert "network/coordinates" not in DECLARED and "network/TCP_gamma" not in DECLARED
    assert set(MODELLED) <= set(DECLARED)


def test_an_unknown_key_is_refused_by_every_reader_with_its_line_and_spelling(tmp_path):
    platform = with_config(tmp_path / "p.xml", {"tracing": "no", "network/TCP_gamma": "4194304"},
                           '<!-- <prop id="network/TCP_gamma" value="1"/> -->')
    want = (rf"^{platform}:7: <config> key 'network/TCP_gamma', which SimGrid 3.32 does not "
            r"declare \(Batsim 4 aborts: \"Bad config key: network/TCP_gamma\"\); write "
            "'network/TCP-gamma'$")
    for read in (read_simgrid_hosts, load_hosts):
        with pytest.raises(PlatformError, match=want):
            read(platform)


def test_keys_are_checked_in_simgrids_sorted_order(tmp_path):
    platform = with_config(tmp_path / "p.xml", {"zz/unknown": "1", "network/coordinates": "yes"})
    with pytest.raises(PlatformError, match=r":7: <config> key 'network/coordinates'.*remove it"):
        read_simgrid_hosts(platform)


@pytest.mark.parametrize(("key", "value", "ok"), [
    ("tracing", "yes", True), ("tracing", "off", True), ("tracing", "maybe", False),
    ("tracing/precision", "0x10", True), ("tracing/precision", "1.5", False),
    ("maxmin/precision", "1e-5", True), ("maxmin/precision", "1_0", False),
    ("maxmin/precision", "", False), ("tracing/filename", "", True),
])
def test_a_value_is_parsed_as_its_type(tmp_path, key, value, ok):
    platform = with_config(tmp_path / "p.xml", {key: value})
    if ok:
        assert [h.name for h in read_simgrid_hosts(platform)] == ["a"]
    else:
        with pytest.raises(PlatformError, match=f"value {value!r} is not a {DECLARED[key]}"):
            read_simgrid_hosts(platform)


@pytest.mark.parametrize(("key", "value"), [
    ("network/loopback-lat", "0.001"), ("network/loopback-bw", "1e9"),
    ("network/TCP-gamma", "65536"), ("surf/precision", "1e-5"), ("host/solver", "bmf"),
    ("maxmin/concurrency-limit", "10"), ("plugin", "link_energy"),
])
def test_a_key_l07_reads_is_refused_by_hdrm_serve_unless_modelled(tmp_path, key, value):
    platform = with_config(tmp_path / "p.xml", {key: value})
    assert [h.name for h in read_simgrid_hosts(platform)] == ["a"]  # other readers: read
    with pytest.raises(PlatformError, match=rf"^{platform}:6: <config> key {key!r} = "
                       rf"{value!r}, which changes what Batsim 4.2.1 simulates and hdrm serve "
                       "does not model"):
        load_hosts(platform)


def test_modelled_values_and_keys_l07_ignores_are_read(tmp_path):
    platform = with_config(tmp_path / "p.xml", {
        "network/TCP-gamma": "4194304", "network/loopback-lat": "0", "surf/precision": "1e-9",
        "host/model": "compound", "network/model": "SMPI", "network/latency-factor": "5",
        "cpu/optim": "TI", "contexts/stack-size": "16", "path": "~/"})
    assert [h.name for h in load_hosts(platform)] == ["a"]
