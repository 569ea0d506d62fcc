"""Render docs/gpu/fragmentation.png: the FGD paper's figure on the default openb trace.

Usage, from the repository root (about two minutes on 2 cores)::

    python docs/gpu/make_figure.py [TRACES_FOLDER]

It runs ``hdrm fragmentation`` for the six policies of the paper and ``price_aware`` on seeds
42 to 51 (``openb_node_list_gpu_node.csv`` and ``openb_pod_list_default.csv`` of TRACES_FOLDER,
by default ``../shared/traces/gpu``) in a temporary folder, then draws them with
``hdrm plot fragmentation`` at a small resolution. The runs are seeded: the same code gives the
same picture.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "fragmentation.png"
#: Resolution of the image, in dots per inch (the figure is 9 inches wide).
DPI = 64
POLICIES = ("random", "dot_product", "gpu_clustering", "gpu_packing", "best_fit", "fgd",
            "price_aware")


def main(traces: Path) -> None:
    """Run the policies and draw the figure into :data:`OUT`."""
    from hdrm.fragmentation.experiment import run_experiment
    from hdrm.viz.fragmentation import plot_fragmentation

    with tempfile.TemporaryDirectory(prefix="hdrm_gpu_docs_") as tmp:
        folders = []
        for policy in POLICIES:
            folder = Path(tmp) / policy
            summary = run_experiment(traces / "openb_node_list_gpu_node.csv",
                                     traces / "openb_pod_list_default.csv", policy,
                                     range(42, 52), folder, processes=2)
            print(f"{policy}: median {summary['unallocated_gpus_pct']['median']:.2f}%")
            folders.append(folder)
        plot_fragmentation(folders).savefig(OUT, dpi=DPI)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "traces" / "gpu")
