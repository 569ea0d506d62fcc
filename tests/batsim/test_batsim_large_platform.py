"""The batsim engine on a platform above the old export's limit, with the real Batsim 4.2.1.

Before session 29 hdrm's SimGrid export put every core in one Full-routing zone, whose route
table SimGrid sizes hosts x hosts (8 bytes a cell): a CEA-Curie-sized machine (93,312 cores)
needed 69.7 GB and was refused on any machine with less. The star export
(:mod:`hdrm.platform.simgrid_export`) grows with the hosts: here such a machine runs a job on
every core and a few small ones, each in the run time its trace gives, with Batsim's peak memory
under 2 GB (0.72 GB measured, ``benchmarks/batsim_large_platform.py``).
"""

from __future__ import annotations

import csv
import resource

import pytest
from real_batsim import real_batsim

from hdrm.cli.main import main

BATSIM, WHY_NOT = real_batsim()
CURIE_CORES = 93_312
#: (submit s, run time s, processors) of each job; the second takes the whole machine.
JOBS = [(0, 60, 16), (10, 30, CURIE_CORES), (20, 45, 1), (25, 15, 1024)]


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT or "no real batsim")
def test_a_curie_sized_machine_runs_on_the_batsim_engine(tmp_path, capsys):
    lines = [f"; MaxProcs: {CURIE_CORES}"]
    lines += [f"{i + 1} {sub} 0 {run} {procs} -1 -1 {procs} {run * 2} -1 1 1 1 -1 1 -1 -1 -1"
              for i, (sub, run, procs) in enumerate(JOBS)]
    trace = tmp_path / "curie.swf"
    trace.write_text("\n".join(lines) + "\n")
    status = main(["replay", "--homogeneous-procs", "0", "--workload", str(trace), "--engine",
                   "batsim", "--batsim", str(BATSIM), "--outdir", str(tmp_path / "out"),
                   "--quiet"])
    assert status == 0, capsys.readouterr().err
    with open(tmp_path / "out" / "out_jobs.csv", newline="") as handle:
        rows = {int(r["job_id"]): r for r in csv.DictReader(handle)}
    assert sorted(rows) == [1, 2, 3, 4]
    for i, (sub, run, procs) in enumerate(JOBS):
        row = rows[i + 1]
        assert row["final_state"] == "COMPLETED_SUCCESSFULLY"
        assert int(row["requested_number_of_resources"]) == procs
        assert float(row["execution_time"]) == pytest.approx(run, abs=1e-6)
    assert rows[2]["allocated_resources"] == f"0-{CURIE_CORES - 1}"
    # the whole machine waits for job 1 (ends at 60 s); jobs 3 and 4 wait behind it (FCFS)
    assert float(rows[2]["starting_time"]) == pytest.approx(60.0, abs=1e-6)
    assert float(rows[4]["starting_time"]) == pytest.approx(90.0, abs=1e-6)
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
    assert peak_gb < 2.0  # the Full zone's table alone: 8 x 93,313^2 bytes = 69.7 GB
