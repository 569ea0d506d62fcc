"""Render the images of docs/plots.rst from real runs of the shipped examples.

Usage, from the repository root (about half a minute)::

    python docs/plots/make_images.py

It runs, in a temporary folder:

* ``hdrm replay`` of the shipped SDSC-SP2 slice (``workloads/SDSC-SP2-1998-4.2-cln_first500.swf``,
  468 jobs kept) on ``platforms/hetero.json`` with ``shortest-high_gflops``, EASY backfilling and
  HDeepRM's contention model: the gantt (by user), utilisation, queue, energy and contention
  images;
* the same replay with ``fcfs`` and with ``sjf-low_power``: with the first, the compare image;
* ``hdeeprm-launch agents/reinforce.py examples/reinforce/options.json`` (the shipped REINFORCE
  example, 30 episodes): the learning and actions images;

and writes ``docs/plots/<kind>.png`` at a small resolution (the pages show them scaled down;
they stay small files). The runs are seeded: the same code gives the same pictures.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
#: Resolution of the images, in dots per inch (the figures are 9-11 inches wide).
DPI = 64
#: Every image the plots page shows, by the name of its file (without .png).
IMAGES = ("gantt", "utilisation", "queue", "energy", "contention", "learning", "actions",
          "compare")


def _replay(policy: str, outdir: Path) -> Path:
    from hdrm.cli.main import main

    status = main(["replay", "--platform", str(ROOT / "platforms" / "hetero.json"),
                   "--workload", str(ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"),
                   "--policy", policy, "--backfill", "easy", "--outdir", str(outdir), "--quiet"])
    if status:
        raise SystemExit(f"hdrm replay --policy {policy} failed ({status})")
    return outdir


def _train(outdir: Path) -> Path:
    from hdrm.launcher import main as launch

    status = launch([str(ROOT / "agents" / "reinforce.py"),
                     str(ROOT / "examples" / "reinforce" / "options.json"),
                     "--outdir", str(outdir), "--quiet"])
    if status:
        raise SystemExit(f"hdeeprm-launch of the REINFORCE example failed ({status})")
    return outdir


def _save(fig, name: str) -> None:
    path = OUT / f"{name}.png"
    fig.savefig(path, format="png", dpi=DPI)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KB)")


def main() -> int:
    """Run the examples and write every image of :data:`IMAGES`."""
    from hdrm.viz import PLOTS, plot_compare

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        replay = _replay("shortest-high_gflops", tmp_path / "shortest-high_gflops")
        others = [_replay(p, tmp_path / p) for p in ("fcfs", "sjf-low_power")]
        training = _train(tmp_path / "reinforce")
        _save(PLOTS.get("gantt")(replay, color_by="user"), "gantt")
        for kind in ("utilisation", "queue", "energy", "contention"):
            _save(PLOTS.get(kind)(replay), kind)
        for kind in ("learning", "actions"):
            _save(PLOTS.get(kind)(training), kind)
        _save(plot_compare([others[0], replay, others[1]]), "compare")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
