"""Finding the real Batsim 4.x binary for the tests that run it (skipped cleanly without one).

Looked up, in order: ``$HDRM_BATSIM``, ``../shared/batsim/bin/batsim`` next to the repository (the
project's reference build), then ``batsim`` on the PATH. A candidate counts only when
``batsim --version`` answers a 4.x version within a few seconds, so a binary whose runtime
libraries are missing (``../shared/batsim/bin/install-runtime`` installs them) is a skip with the
reason, not a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_BATSIM = REPO.parent / "shared" / "batsim" / "bin" / "batsim"
PROBE_TIMEOUT_S = 20.0


def _candidates() -> list[str]:
    found = [os.environ.get("HDRM_BATSIM", ""), str(SHARED_BATSIM), shutil.which("batsim") or ""]
    return list(dict.fromkeys(c for c in found if c))


def _probe(exe: str) -> str | None:
    """None when ``exe --version`` says 4.x, else why not."""
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{exe}: {exc}"
    text = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        return f"{exe} --version failed ({done.returncode}): {text.splitlines()[-1] if text else ''}"
    if not text.startswith("4.") or "fake" in text:
        return f"{exe} --version says {text!r}, not a real Batsim 4.x"
    return None


@lru_cache(maxsize=1)
def real_batsim() -> tuple[str | None, str]:
    """``(absolute path, "")`` of a working real Batsim 4.x, or ``(None, reason)``."""
    reasons = []
    for exe in _candidates():
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            reasons.append(f"{exe}: not an executable file")
            continue
        reason = _probe(exe)
        if reason is None:
            return os.path.abspath(exe), ""
        reasons.append(reason)
    hint = "run ../shared/batsim/bin/install-runtime as root, or set HDRM_BATSIM"
    return None, f"no runnable Batsim 4.x ({'; '.join(reasons) or 'none found'}); {hint}"
