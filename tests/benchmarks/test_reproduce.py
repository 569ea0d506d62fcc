"""The reproduction script against PROVENANCE.md's reference values on the real SDSC-SP2 trace.

Uses ../shared/traces (beside the repository, as in CI); skipped when it is absent. One cell per
backfilling variant keeps the test near two seconds; the script itself prints every cell.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import reproduce_rlscheduler as rep  # noqa: E402
from hdrm.workload.select import RLSCHEDULER_START_INDICES, sequences  # noqa: E402
from hdrm.workload.swf import read_swf  # noqa: E402

TRACE = ROOT.parent / "shared" / "traces" / rep.TRACES["SDSC-SP2"]


@pytest.fixture(scope="module")
def sdsc():
    if not TRACE.exists():
        pytest.skip(f"{TRACE} not found")
    workload = read_swf(TRACE, conventions="rlscheduler")
    nb_procs = workload.nb_res
    workload.jobs = workload.jobs[:10000]
    return sequences(workload, RLSCHEDULER_START_INDICES, 1024), nb_procs


def test_event_easy_first_sjf_is_the_reference_value(sdsc):
    seqs, nb_procs = sdsc
    reference = rep.REFERENCE[("SDSC-SP2", "event", "easy_first")][1]
    assert rep.mean_bsld(seqs, nb_procs, "sjf", "event", "easy_first") == pytest.approx(
        reference, abs=0.005)


def test_textbook_easy_counts_more_extra_cores_and_differs_on_this_trace(sdsc):
    seqs, nb_procs = sdsc
    assert rep.mean_bsld(seqs, nb_procs, "sjf", "event", "easy") == pytest.approx(1892.57, abs=0.005)
