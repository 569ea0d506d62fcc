"""Every real trace of ../shared/traces loads, with job counts that add up and honest skip counts.

Expected figures: the job-line counts are those of PROVENANCE.md; the skip counts were computed
independently (numpy on the raw columns: run time < 0, run time == 0, no processors) and checked
against the PROVENANCE notes (e.g. about 5,700 SDSC-SP2 jobs with run time -1 or 0).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.policies.backfill import estimated_duration_s
from hdrm.workload.swf import read_swf

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"no traces folder at {TRACES}")

#: file -> (job lines, MaxRecords, nb_res, default skip counts)
EXPECTED = {
    "CTC-SP2-1996-3.1-cln.swf.gz": (77_222, 79_302, 338, {"run time 0": 17}),
    "KTH-SP2-1996-2.1-cln.swf.gz": (28_476, 28_476, 100, {"no processors": 1, "run time 0": 8}),
    "LLNL-Atlas-2006-2.1-cln.swf.gz": (
        43_778, 60_332, 9_216, {"no processors": 4_571, "run time 0": 2_607}),
    "NASA-iPSC-1993-3.1-cln.swf.gz": (18_239, 42_264, 128, {"run time 0": 173}),
    "SDSC-Par-1996-3.1-cln.swf.gz": (32_135, 38_719, 400, {"run time 0": 7}),
    "SDSC-SP2-1998-4.2-cln.swf.gz": (
        59_715, 59_715, 128, {"run time unknown (< 0)": 5_671, "run time 0": 10}),
    "lublin_256.swf.gz": (10_000, 10_000, 256, {}),
}


def test_every_trace_in_the_folder_is_covered():
    assert sorted(p.name for p in TRACES.glob("*.swf.gz")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_trace_loads_with_honest_counts(name):
    lines, max_records, nb_res, skipped = EXPECTED[name]
    workload = read_swf(TRACES / name)
    assert workload.skipped == skipped
    assert len(workload) + sum(workload.skipped.values()) == lines
    assert workload.header.max_records == max_records
    assert workload.nb_res == nb_res
    submits = [job.submit_s for job in workload.jobs]
    assert submits == sorted(submits)
    assert all(job.res >= 1 and job.run_time_s > 0 and job.walltime_s > 0
               for job in workload.jobs)


def test_cleaned_logs_remove_what_their_notes_say():
    # CTC: "(2080 jobs removed)" from 79,302 records leaves the 77,222 job lines.
    header = read_swf(TRACES / "CTC-SP2-1996-3.1-cln.swf.gz").header
    assert header.max_records - 2080 == EXPECTED["CTC-SP2-1996-3.1-cln.swf.gz"][0]
    assert any("2080 jobs removed" in note for note in header.notes)
    assert header.max_nodes == 338
    assert header.raw["MaxNodes"] == ["338 (batch partition; 512 total)"]


def test_sdsc_par_parenthetical_max_nodes():
    header = read_swf(TRACES / "SDSC-Par-1996-3.1-cln.swf.gz").header
    assert (header.max_nodes, header.max_nodes_parts) == (400, (48, 352, 6, 10))
    assert header.max_procs == 400 and len(header.queues) == 34


def test_rlscheduler_loader_counts():
    sdsc = read_swf(TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz", "rlscheduler")
    assert len(sdsc) == 59_705 and sdsc.skipped == {"run time 0": 10}
    assert sum(job.run_time_s == 10.0 for job in sdsc.jobs) >= 5_671
    lublin = read_swf(TRACES / "lublin_256.swf.gz", "rlscheduler")
    assert len(lublin) == 10_000
    assert [job.id for job in lublin.jobs[:3]] == [1, 2, 3]
    assert lublin.jobs[0].run_time_s == 12072.0
    assert estimated_duration_s(lublin.jobs[0]) == 12072.0
    assert not any(job.has_walltime for job in lublin.jobs)  # the Lublin model has no requests
