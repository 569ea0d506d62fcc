"""The document type of a SimGrid file under the REAL Batsim 4.2.1: the prologs SimGrid 3.32's
parser accepts run, the others make the binary stop at its start with the parse error hdrm's
refusal quotes; hdrm reads and refuses the same ones (``tests/builders.py`` lists them,
``tests/platform/test_simgrid_user_files.py`` checks hdrm's messages).

Skipped, with the reason, when no real Batsim can run (``real_batsim.py``); ``-m slow`` runs them.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from batsim_helpers import binary_run
from builders import SIMGRID_PROLOGS_READ, SIMGRID_PROLOGS_REFUSED
from real_batsim import real_batsim

from hdrm.batsim.hosts import load_hosts
from hdrm.errors import PlatformError

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

BODY = ('<platform version="4.1"><zone id="z" routing="Full"><host id="master_host" speed="1Gf"/>'
        '<host id="h0" speed="1Gf"/></zone></platform>\n')


def _run(tmp_path, prolog: str) -> subprocess.CompletedProcess:
    platform = tmp_path / "p.xml"
    platform.write_text(prolog + BODY)
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 1, "jobs": [
        {"id": "1", "subtime": 0, "res": 1, "profile": "d"}],
        "profiles": {"d": {"type": "delay", "delay": 5}}}))

    def reply(doc: dict) -> str:
        out = [{"timestamp": doc["now"], "type": "EXECUTE_JOB",
                "data": {"job_id": e["data"]["job_id"], "alloc": "0"}}
               for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
        return json.dumps({"now": doc["now"], "events": out})

    return binary_run(BATSIM, reply, platform, workload, tmp_path / "out")


@pytest.mark.parametrize("name", sorted(SIMGRID_PROLOGS_READ))
def test_the_binary_runs_what_hdrm_reads(name, tmp_path):
    done = _run(tmp_path, SIMGRID_PROLOGS_READ[name])
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out_jobs.csv").read_text().count("\n") == 2  # header and the job
    assert [h.name for h in load_hosts(tmp_path / "p.xml")] == ["h0"]


@pytest.mark.parametrize("name", sorted(SIMGRID_PROLOGS_REFUSED))
def test_the_binary_stops_on_what_hdrm_refuses(name, tmp_path):
    prolog, words = SIMGRID_PROLOGS_REFUSED[name]
    done = _run(tmp_path, prolog)
    assert "Parse error" in done.stderr and words in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "out_jobs.csv").exists()
    with pytest.raises(PlatformError, match=r'SimGrid .*<!DOCTYPE platform SYSTEM '
                                            r'"https://simgrid\.org/simgrid\.dtd">'):
        load_hosts(tmp_path / "p.xml")
