"""Where the real Batsim 4.2.1 outputs live (read in place, never copied)."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden"
#: Every golden run folder (one out_jobs.csv and out_schedule.csv each).
GOLDEN_RUNS = sorted(p.parent for p in GOLDEN.glob("*/*/out_jobs.csv"))
#: Marks a test that reads the golden outputs.
needs_golden = pytest.mark.skipif(not GOLDEN_RUNS, reason=f"no Batsim outputs under {GOLDEN}")


def run_id(path: Path) -> str:
    """A short test id for a golden run folder ("pstate_slowdown/pstateDemo")."""
    return f"{path.parent.name}/{path.name}"
