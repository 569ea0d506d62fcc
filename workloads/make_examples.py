"""Re-create the example workloads of this folder from the full traces (see README.rst).

Usage: ``python workloads/make_examples.py TRACES_DIR`` (the folder holding the ``*.swf.gz`` logs of
the Parallel Workloads Archive). SWF slices keep the trace's header and its job lines verbatim;
``MaxJobs``/``MaxRecords`` give the slice's counts and ``; Note:`` lines say where the slice comes
from. The Batsim JSON example is written by hdrm's own writer. The openb GPU slice (``gpu/`` of
TRACES_DIR) keeps CSV rows verbatim: every 30th GPU node and the first 400 tasks.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np

from hdrm.workload.batsim_json import write_batsim_json
from hdrm.workload.requirements import attach_requirements
from hdrm.workload.select import first_jobs
from hdrm.workload.swf import read_swf

HERE = Path(__file__).resolve().parent
ARCHIVE = ("the Parallel Workloads Archive, https://www.cs.huji.ac.il/labs/parallel/workload/ "
           "(D. G. Feitelson, D. Tsafrir, D. Krakov, Experience with using the Parallel Workloads "
           "Archive, JPDC 74(10), 2014)")
LUBLIN = ('a synthetic log of the Lublin-Feitelson model ("Lublin-1" in RLScheduler, SC20): '
          "U. Lublin, D. G. Feitelson, The workload on parallel supercomputers: modeling the "
          "characteristics of rigid jobs, JPDC 63(11), 2003")

#: (source trace, output file, first job line (0-based), number of job lines, origin)
SLICES = (
    ("lublin_256.swf.gz", "lublin_256_first500.swf", 0, 500, LUBLIN),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", "SDSC-SP2-1998-4.2-cln_first500.swf", 0, 500, ARCHIVE),
    ("KTH-SP2-1996-2.1-cln.swf.gz", "KTH-SP2-1996-2.1-cln_27200-27399.swf", 27200, 200, ARCHIVE),
)

#: The Batsim JSON example: first 100 kept jobs of the SDSC slice, requirements at this speed.
JSON_REFERENCE_GFLOPS = 56.2
JSON_NB_RES = 384
JSON_SEED = 0

#: The openb slice: every OPENB_NODE_STRIDE-th node of the GPU node list, the first OPENB_PODS tasks.
OPENB_NODE_STRIDE = 30
OPENB_PODS = 400


def slice_openb(gpu_traces: Path) -> None:
    """Write ``openb_nodes_41.csv`` and ``openb_pods_400.csv`` (rows verbatim, header kept)."""
    nodes = (gpu_traces / "openb_node_list_gpu_node.csv").read_text(encoding="utf-8").splitlines()
    pods = (gpu_traces / "openb_pod_list_default.csv").read_text(encoding="utf-8").splitlines()
    kept = nodes[1::OPENB_NODE_STRIDE]
    (HERE / f"openb_nodes_{len(kept)}.csv").write_text("\n".join([nodes[0], *kept]) + "\n",
                                                       encoding="utf-8")
    (HERE / f"openb_pods_{OPENB_PODS}.csv").write_text("\n".join(pods[:OPENB_PODS + 1]) + "\n",
                                                      encoding="utf-8")
    print(f"wrote openb_nodes_{len(kept)}.csv, openb_pods_{OPENB_PODS}.csv")


def slice_swf(source: Path, target: Path, start: int, count: int, origin: str) -> None:
    """Write job lines ``start .. start + count - 1`` of ``source``, with its header, to ``target``.
    """
    lines = gzip.decompress(source.read_bytes()).decode("utf-8").splitlines()
    header = [line for line in lines if line.lstrip().startswith(";")]
    jobs = [line for line in lines if line.strip() and not line.lstrip().startswith(";")]
    selected = jobs[start:start + count]
    out = []
    for line in header:
        key = line.lstrip(" ;").partition(":")[0]
        out.append(f"; {key}: {len(selected)}" if key in ("MaxJobs", "MaxRecords") else line)
    name = source.name.removesuffix(".gz")
    out += [
        f"; Note: slice of {name}: job lines {start + 1} to {start + len(selected)} of "
        f"{len(jobs)}, verbatim; MaxJobs and MaxRecords count the slice",
        f"; Note: from {origin}",
    ]
    target.write_text("\n".join(out + selected) + "\n", encoding="utf-8")


def main(traces: Path) -> None:
    """Write every example of this folder."""
    for source, target, start, count, origin in SLICES:
        slice_swf(traces / source, HERE / target, start, count, origin)
        print(f"wrote {target}")
    sdsc = first_jobs(read_swf(HERE / SLICES[1][1]), 100)
    rng = np.random.default_rng(JSON_SEED)
    example = attach_requirements(sdsc, JSON_REFERENCE_GFLOPS, rng)
    example.nb_res = JSON_NB_RES
    write_batsim_json(example, HERE / "sdsc_sp2_100_hetero.json")
    print("wrote sdsc_sp2_100_hetero.json")
    slice_openb(traces / "gpu")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1
         else Path(__file__).resolve().parents[2] / "shared" / "traces")
