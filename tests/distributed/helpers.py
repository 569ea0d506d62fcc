"""Small sweep files for the tests of hdrm.distributed (a few dozen jobs on the shipped inputs)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HETERO = ROOT / "platforms" / "hetero.json"
TINY = ROOT / "platforms" / "tiny_hetero.json"
SDSC = ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
KTH = ROOT / "workloads" / "KTH-SP2-1996-2.1-cln_27200-27399.swf"


def write_sweep(folder: Path, **settings) -> Path:
    """A sweep file in ``folder``: 2 policies x 2 backfills x 2 seeds of 30 SDSC jobs on hetero,
    changed by ``settings``."""
    data = {
        "policies": ["fcfs", "shortest-high_gflops"],
        "backfill": ["none", "easy"],
        "platforms": [str(HETERO)],
        "traces": [str(SDSC)],
        "seeds": [0, 1],
        "nb_jobs": 30,
    }
    data.update(settings)
    path = folder / "sweep.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def outputs(outdir: Path) -> dict[str, bytes]:
    """Every run's deterministic outputs (all but done.json and out_schedule.csv, whose
    scheduling_time and simulation_time are wall-clock times), and the sweep's tables."""
    found = {p.relative_to(outdir).as_posix(): p.read_bytes()
             for p in sorted((outdir / "runs").rglob("*"))
             if p.is_file() and p.name not in ("done.json", "out_schedule.csv")}
    for name in ("results.csv", "results.md", "index.csv"):
        found[name] = (outdir / name).read_bytes()
    return found
