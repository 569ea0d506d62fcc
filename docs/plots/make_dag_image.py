"""Render docs/plots/dag.png, the DAG gantt chart of docs/dags.rst, from a real periodic run.

Usage, from the repository root (a few seconds)::

    python docs/plots/make_dag_image.py

It writes the page's ``perception.json`` task set (read from the page itself, so the picture
follows the page) to a temporary folder, runs ``hdrm dag periodic`` with ``dag_edf`` on
``platforms/tiny4.json`` and draws ``hdrm plot dag`` into ``docs/plots/dag.png`` at a small
resolution. Nothing is random: the same code gives the same picture.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
PAGE = ROOT / "docs" / "dags.rst"
#: Resolution of the image, in dots per inch (the figure is 10 inches wide).
DPI = 64


def caption_block(text: str, caption: str) -> str:
    """The body of the page's code block captioned ``caption`` (indentation removed)."""
    lines = text.splitlines()
    start = lines.index(f"   :caption: {caption}") + 1
    body = []
    for line in lines[start:]:
        if line and not line.startswith("   "):
            break
        body.append(line[3:])
    return "\n".join(body).strip() + "\n"


def main() -> int:
    """Run the example and write the picture; returns the exit status."""
    sys.path.insert(0, str(ROOT))
    from hdrm.cli.main import main as hdrm
    from hdrm.viz.dag import plot_dag

    with tempfile.TemporaryDirectory() as tmp:
        taskset = Path(tmp) / "perception.json"
        taskset.write_text(caption_block(PAGE.read_text(encoding="utf-8"), "perception.json"))
        status = hdrm(["dag", "periodic", str(taskset), "--platform",
                       str(ROOT / "platforms" / "tiny4.json"), "--policy", "dag_edf",
                       "-o", str(Path(tmp) / "periodic_out")])
        if status:
            return status
        fig = plot_dag(Path(tmp) / "periodic_out", graph=taskset)
        fig.savefig(OUT / "dag.png", dpi=DPI)
    print(f"wrote {OUT / 'dag.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
