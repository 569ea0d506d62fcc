"""<config> keys under the real Batsim 4.2.1: what it aborts on (an undeclared key, a value of
the wrong type) hdrm refuses in one line; keys ptask_L07 ignores change no message (hdrm serve
reads and ignores them); a key L07 reads changes the messages (hdrm serve refuses it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from real_batsim import real_batsim
from test_serve_workloads import NB_HOSTS, seeded_workload, write_platform
from test_serve_workloads_latency import _assert_same, _session

from hdrm.batsim.platform_hosts import load_hosts
from hdrm.errors import PlatformError
from hdrm.platform.simgrid import read_simgrid_hosts

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]


def configured(tmp_path: Path, props: dict[str, str]) -> Path:
    """NB_HOSTS hosts each linked to master_host (100 us), with a <config> of ``props``."""
    platform = write_platform(tmp_path / "platform.xml", NB_HOSTS, "100us")
    config = "".join(f'<prop id="{k}" value="{v}"/>' for k, v in props.items())
    text = platform.read_text().replace('<platform version="4.1">',
                                        f'<platform version="4.1">\n<config>{config}</config>')
    platform.write_text(text)
    return platform


def _binary_fails(tmp_path: Path, platform: Path) -> str:
    args = [BATSIM, "-p", str(platform), "-w", str(seeded_workload(tmp_path / "w.json", 1)),
            "-e", str(tmp_path / "real"), "-s", "tcp://127.0.0.1:9"]
    done = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=60)
    assert done.returncode != 0
    return done.stderr


@pytest.mark.parametrize(("props", "binary_says", "we_say"), [
    ({"network/TCP_gamma": "4194304"}, "Bad config key: network/TCP_gamma",
     "key 'network/TCP_gamma', which SimGrid 3.32 does not declare.*write 'network/TCP-gamma'"),
    ({"network/coordinates": "yes"}, "Bad config key: network/coordinates",
     "key 'network/coordinates', which SimGrid 3.32 does not declare.*remove it"),
    ({"tracing": "maybe"}, "not a boolean", "value 'maybe' is not a boolean"),
    ({"tracing/precision": "1.5"}, "invalid integer", "value '1.5' is not a int"),
], ids=["snake-case", "unknown", "boolean", "int"])
def test_what_the_binary_aborts_on_is_refused(tmp_path, props, binary_says, we_say):
    platform = configured(tmp_path, props)
    assert binary_says in _binary_fails(tmp_path, platform)
    with pytest.raises(PlatformError, match=we_say):
        read_simgrid_hosts(platform)


def test_keys_ptask_l07_ignores_change_no_message(tmp_path):
    platform = configured(tmp_path, {
        "host/model": "compound", "network/model": "SMPI", "cpu/model": "Cas01",
        "network/latency-factor": "5", "network/bandwidth-factor": "0.5",
        "network/weight-S": "0", "network/crosstraffic": "no", "cpu/optim": "TI",
        "network/optim": "Full", "tracing/precision": "3", "path": "~/"})
    for seed in (1, 2):
        workload = [seeded_workload(tmp_path / "w.json", seed)]
        theirs = _session(platform, workload, tmp_path / "real", True)
        ours = _session(platform, workload, tmp_path / "ours", False)
        _assert_same(tmp_path, ours, theirs)


def test_a_loopback_latency_changes_the_binarys_messages_and_hdrm_serve_refuses_it(tmp_path):
    workload = [seeded_workload(tmp_path / "w.json", 1)]
    plain = _session(configured(tmp_path, {}), workload, tmp_path / "real", True)
    platform = configured(tmp_path, {"network/loopback-lat": "0.001"})
    looped = _session(platform, workload, tmp_path / "real", True)
    assert [m["now"] for m in looped] != [m["now"] for m in plain]
    with pytest.raises(PlatformError, match="'network/loopback-lat' = '0.001', which changes "
                       "what Batsim 4.2.1 simulates and hdrm serve does not model"):
        load_hosts(platform)
