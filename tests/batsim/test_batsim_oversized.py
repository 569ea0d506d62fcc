"""Engine 'batsim' refuses, before starting Batsim, a platform whose run cannot fit in memory.

Since session 29 the export is a star zone whose memory grows with the hosts, so the limit is
the memory per core of Batsim and the decision process (:data:`BYTES_PER_CORE`), not SimGrid's
route table (hosts x hosts pointers, which refused a CEA-Curie-sized machine of 93,312 cores
for its 69.7 GB). Batsim 4.2.1's start still grows with the square of the hosts, so the first
message gets more time on big platforms (:func:`startup_allowance_s`).
"""

from __future__ import annotations

import time

import pytest

from hdrm.batsim import accelerators
from hdrm.batsim.accelerators import (BASE_BYTES, BYTES_PER_CORE, refuse_oversized,
                                      startup_allowance_s)
from hdrm.batsim.adapter import HdrmScheduler
from hdrm.cli.main import main
from hdrm.errors import ConfigError, ProtocolError
from hdrm.platform.model import Platform


def test_the_need_is_linear_in_the_cores():
    platform = Platform.homogeneous(1000)
    need = BASE_BYTES + 1000 * BYTES_PER_CORE
    refuse_oversized(platform, memory_bytes=need)
    with pytest.raises(ConfigError, match=r": 1000 cores; engine 'batsim' makes one SimGrid host "
                       r"of each, and Batsim with the decision process needs about [0-9.]+ GB "
                       r"for them \([0-9.]+ GB \+ [0-9]+ kB a core\), more than this machine's "
                       r"[0-9.]+ GB of memory: use engine 'builtin' \(the same decisions\) or "
                       r"fewer processors$"):
        refuse_oversized(platform, memory_bytes=need - 1)


def test_a_curie_sized_machine_fits_in_a_few_gigabytes():
    refuse_oversized(Platform.homogeneous(93_312), memory_bytes=4 * 10**9)  # was 69.7 GB
    with pytest.raises(ConfigError, match=r": 1000000 cores; .* needs about 16\.4 GB for them "
                       r"\(0\.4 GB \+ 16 kB a core\), more than this machine's 12\.0 GB"):
        refuse_oversized(Platform.homogeneous(1_000_000), memory_bytes=12 * 10**9)


def test_the_first_message_waits_longer_on_big_platforms():
    assert startup_allowance_s(2_511) == pytest.approx(0.0631, abs=1e-4)  # 2,512^2 x 1e-8 s
    assert startup_allowance_s(93_312) == pytest.approx(87.07, abs=0.01)
    assert startup_allowance_s(186_624) == pytest.approx(4 * startup_allowance_s(93_312),
                                                         rel=1e-4)


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


class _SilentNetwork:
    """pybatsim's network object with a socket on which Batsim never speaks."""

    timeout = 0

    class connection:  # noqa: N801 (pybatsim's attribute)
        @staticmethod
        def poll(ms: int) -> bool:
            return False


def _silence(scheduler: HdrmScheduler) -> tuple[float, str]:
    """Seconds the decision process waited on a silent Batsim, and what it raised."""
    recv = scheduler._guarded_recv(_SilentNetwork())
    start = time.monotonic()
    with pytest.raises(ProtocolError) as caught:
        recv()
    return time.monotonic() - start, str(caught.value)


def test_the_first_wait_grows_with_the_platform_then_the_timeout_holds():
    scheduler = HdrmScheduler(platform=Platform.homogeneous(14_141), policy="fcfs")
    scheduler.timeout_s = 0.1  # 14,142^2 x 1e-8 = 2.0 s more for Batsim's start
    waited, message = _silence(scheduler)
    assert 2.1 <= waited < 4.0
    assert message == ("Batsim sent nothing for 0.1 s beyond the 2 s its start may take on "
                       "14,141 cores; it stopped answering")
    scheduler._heard = True  # once Batsim has spoken, every wait is the timeout
    waited, message = _silence(scheduler)
    assert 0.1 <= waited < 1.0
    assert message == "Batsim sent nothing for 0.1 s; it stopped answering"
