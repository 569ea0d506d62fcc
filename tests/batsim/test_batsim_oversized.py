"""Engine 'batsim' refuses, before starting Batsim, a platform whose SimGrid route table cannot
fit in memory (hosts x hosts pointers): a CEA-Curie-sized machine (93,312 cores) ran Batsim for
its whole timeout and was reported as 'Batsim sent nothing for 60 s; it stopped answering'."""

from __future__ import annotations

import pytest

from hdrm.batsim import accelerators
from hdrm.batsim.accelerators import refuse_oversized
from hdrm.cli.main import main
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform


def test_the_table_is_hosts_squared_pointers():
    platform = Platform.homogeneous(99)  # 100 hosts with master_host: 80,000 bytes
    refuse_oversized(platform, memory_bytes=80_000)
    with pytest.raises(ConfigError, match=r": 99 cores; engine 'batsim' makes one SimGrid host "
                       r"of each in one Full-routing zone, whose route table SimGrid allocates "
                       r"hosts x hosts \(100\^2 x 8 bytes = 0\.0 GB\), more than this machine's "
                       r"0\.0 GB of memory: use engine 'builtin' \(the same decisions\) or fewer "
                       r"processors$"):
        refuse_oversized(platform, memory_bytes=79_999)


def test_a_curie_sized_machine_needs_70_gb():
    with pytest.raises(ConfigError, match=r"93313\^2 x 8 bytes = 69\.7 GB\), more than this "
                       r"machine's 64\.0 GB"):
        refuse_oversized(Platform.homogeneous(93_312), memory_bytes=64 * 10**9)
    refuse_oversized(Platform.homogeneous(20_000), memory_bytes=64 * 10**9)  # 3.2 GB


def test_hdrm_replay_refuses_before_starting_batsim(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(accelerators, "physical_memory_bytes", lambda: 1000)
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 16\n1 0 0 50 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1\n")
    status = main(["replay", "--homogeneous-procs", "0", "--workload", str(trace), "--engine",
                   "batsim", "--batsim", str(tmp_path / "no-batsim"), "--outdir",
                   str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "16 cores; engine 'batsim' makes one SimGrid host of each" in err
    assert not (tmp_path / "out" / "platform.xml").exists()
