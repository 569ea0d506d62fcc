"""Durable file replacement: what an atomic save needs beyond ``os.replace``.

A save writes a temporary file in the target's folder, flushes and fsyncs it, renames it over the
target, then fsyncs the folder so the rename itself survives a crash. Checkpoints and sweep runs
share this last step.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_folder(folder: str | Path) -> None:
    """Make the entries of ``folder`` (a rename into it) durable; a no-op where folders cannot be
    opened or synced (some file systems and platforms)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
