"""Helpers for the workload tests: hand-made SWF lines and files."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

import pytest

from hdrm.workload.job import Job

#: A plain job: id 1, submit 10, wait 5, run 100, 4 procs allocated and requested, 200 s requested.
BASE_FIELDS = [1, 10, 5, 100, 4, -1, -1, 4, 200, -1, 1, 7, 3, -1, 1, -1, -1, -1]


def swf_line(**fields: float) -> str:
    """One SWF job line: BASE_FIELDS with fields overridden by 1-based number, ``f5=8``."""
    values = list(BASE_FIELDS)
    for key, value in fields.items():
        values[int(key[1:]) - 1] = value
    return " ".join(str(v) for v in values)


@pytest.fixture
def write_swf_text(tmp_path: Path) -> Callable[..., Path]:
    """Write SWF text (header lines then job lines) into a file and return its path."""

    def write(lines: list[str], name: str = "trace.swf") -> Path:
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write


@pytest.fixture(name="swf_line")
def swf_line_fixture() -> Callable[..., str]:
    """The :func:`swf_line` helper, as a fixture (test modules do not import conftest)."""
    return swf_line


def job_values(job: Job) -> tuple:
    """Every field of ``job`` (Job compares by identity, so tests compare these tuples)."""
    return tuple(getattr(job, f.name) for f in dataclasses.fields(Job))


@pytest.fixture(name="values")
def values_fixture() -> Callable[[list[Job]], list[tuple]]:
    """Map a list of jobs to the list of their field tuples, for equality checks."""
    return lambda jobs: [job_values(job) for job in jobs]
