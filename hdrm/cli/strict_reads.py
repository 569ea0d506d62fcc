"""Errors of files a command reads strictly only.

The openb readers raise :class:`~hdrm.workload.swf.SkippableLineError`, whose message ends with a
way to skip the bad row. A command that has no such way for a file (an openb node list is a
platform: a node is never skipped; ``hdrm fragmentation`` reads its pod list whole) must not
offer one, so the message keeps the problem and how to mend it.
"""

from __future__ import annotations

from hdrm.errors import WorkloadError
from hdrm.workload.swf import SkippableLineError


def unskippable(exc: SkippableLineError) -> WorkloadError:
    """The same one-line error without a way to skip: ``FILE:LINE: problem; fix the row``."""
    return WorkloadError(f"{exc.problem}; {exc.fix}")
