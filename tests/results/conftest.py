"""Fixtures of the results tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.results.example import write_example_run


@pytest.fixture
def example_run(tmp_path: Path) -> Path:
    """A fresh copy of the example run folder (every result file)."""
    return write_example_run(tmp_path / "example")
