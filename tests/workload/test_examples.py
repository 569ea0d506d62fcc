"""The example workloads of workloads/: small, attributed, and loadable."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.workload.batsim_json import check_supported, read_batsim_json
from hdrm.workload.swf import read_swf

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads"

#: file -> (jobs kept, skipped, nb_res)
SLICES = {
    "lublin_256_first500.swf": (500, {}, 256),
    "SDSC-SP2-1998-4.2-cln_first500.swf": (468, {"run time unknown (< 0)": 32}, 128),
    "KTH-SP2-1996-2.1-cln_27200-27399.swf": (199, {"no processors": 1}, 100),
}


@pytest.mark.parametrize("name", sorted(SLICES))
def test_swf_slices_load_and_carry_attribution(name):
    kept, skipped, nb_res = SLICES[name]
    workload = read_swf(EXAMPLES / name)
    assert (len(workload), workload.skipped, workload.nb_res) == (kept, skipped, nb_res)
    header = workload.header
    assert header.max_jobs == header.max_records == kept + sum(skipped.values())
    assert any(note.startswith("slice of ") for note in header.notes)
    assert any("Feitelson" in note for note in header.notes)


def test_json_example():
    workload = read_batsim_json(EXAMPLES / "sdsc_sp2_100_hetero.json")
    assert len(workload) == 100 and workload.nb_res == 384
    check_supported(workload)
    assert all(j.profile_type == "parallel_homogeneous" for j in workload.jobs)
    assert all(j.ops_gflop == pytest.approx(j.run_time_s * 56.2) for j in workload.jobs)
    assert {j.mem_bw_gbps for j in workload.jobs} <= {4.0, 8.0, 12.0, 16.0, 20.0, 24.0}


def test_examples_are_small():
    files = [p for p in EXAMPLES.iterdir() if p.suffix in (".swf", ".json")]
    assert len(files) == 4
    assert all(p.stat().st_size < 100_000 for p in files)
