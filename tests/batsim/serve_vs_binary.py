"""One raw decision process against the Batsim binary or ``hdrm serve`` with Batsim's command
line, and everything the session leaves: the messages the decision process received, how it
stopped (the binary's CRITICAL line and exit status; hdrm's exception) and the output files
(out_schedule.csv as ``column=value`` lines of Batsim's columns but the wall-clock ones).

:func:`run` takes any number of ``-w`` files (none included) and ``--events`` files, and the
flags ``-E``, ``--enable-dynamic-jobs``, ``--acknowledge-dynamic-jobs``,
``--enable-profile-reuse``, ``--forward-profiles-on-submission`` and
``--forward-unknown-events``.
"""

from __future__ import annotations

import csv
import io
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from batsim_helpers import RawScheduler

from hdrm.results.csvio import BATSIM_SCHEDULE_COLUMNS

#: out_schedule.csv columns that measure wall time (or name the program)
WALL_COLUMNS = ("batsim_version", "scheduling_time", "simulation_time")
#: Batsim's output files, by suffix
SUFFIXES = ("jobs.csv", "schedule.csv", "machine_states.csv", "consumed_energy.csv",
            "pstate_changes.csv")


@dataclass
class Outcome:
    """What one session gave."""

    messages: list[str]
    error: str  # "" when it ended well
    status: int  # the binary's exit status (-6: aborted); hdrm: 0 or 2 (an HdrmError)
    files: dict[str, str] = field(default_factory=dict)  # suffix -> text, of those written


def run(reply: Callable[[dict], str], platform: Path, workloads: Sequence[Path], prefix: Path,
        flags: Sequence[str] = (), events: Sequence[Path] = (),
        binary: str | None = None) -> Outcome:
    """Run ``reply`` against the binary at ``binary`` or, when None, against hdrm serve."""
    from hdrm.batsim.server import ServeOptions, serve
    from hdrm.batsim.simulator import ServerConfig
    from hdrm.errors import HdrmError

    prefix.parent.mkdir(parents=True, exist_ok=True)
    scheduler = RawScheduler(reply)
    scheduler.start()
    error, status = "", 0
    try:
        if binary:
            args = [binary, "-p", str(platform), "-e", str(prefix), "-q", *flags,
                    "-s", scheduler.endpoint.replace("localhost", "127.0.0.1")]
            for path in workloads:
                args += ["-w", str(path)]
            for path in events:
                args += ["--events", str(path)]
            done = subprocess.run(args, capture_output=True, text=True, timeout=60)
            status = done.returncode
            lines = [x for x in done.stderr.splitlines() if "CRITICAL" in x]
            error = lines[0] if lines else ("" if status == 0 else done.stderr[-500:])
        else:
            config = ServerConfig(
                energy="-E" in flags, dynamic_jobs="--enable-dynamic-jobs" in flags,
                ack_dynamic_jobs="--acknowledge-dynamic-jobs" in flags,
                profile_reuse="--enable-profile-reuse" in flags,
                forward_profiles="--forward-profiles-on-submission" in flags,
                events=tuple(map(str, events)),
                forward_unknown_events="--forward-unknown-events" in flags)
            try:
                serve(platform, list(workloads),
                      ServeOptions(scheduler.endpoint, str(prefix), 10.0, config=config))
            except HdrmError as exc:
                error, status = f"{type(exc).__name__}: {exc}", 2
    finally:
        scheduler.stop()
    assert scheduler.error is None, scheduler.error
    return Outcome(scheduler.received, error, status, _files(prefix))


def _files(prefix: Path) -> dict[str, str]:
    files = {}
    for suffix in SUFFIXES:
        path = Path(f"{prefix}_{suffix}")
        if path.exists():
            text = path.read_text()
            if suffix == "schedule.csv":
                rows = list(csv.DictReader(io.StringIO(text)))
                text = "\n".join(f"{k}={v}" for row in rows for k, v in row.items()
                                 if k in BATSIM_SCHEDULE_COLUMNS and k not in WALL_COLUMNS)
            files[suffix] = text
    return files
