"""overutilizations.json: round trip, JSON-path errors, tolerant sections."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import ConfigError
from hdrm.results.example import example_overutilizations
from hdrm.results.overutil import (
    BandwidthSpan,
    CoreShortage,
    MemoryShortage,
    Overutilizations,
    read_overutilizations,
    write_overutilizations,
)


def test_round_trip_keeps_every_entry(tmp_path: Path):
    over = example_overutilizations()
    path = write_overutilizations(over, tmp_path / "overutilizations.json")
    data = json.loads(path.read_text())
    assert data["bandwidth"][2] == {"processor_id": 0, "node_id": 0, "start": 22.0, "end": 27.0,
                                    "max_demand_gbps": 40.0, "capacity_gbps": 20.0}
    assert data["core_shortage"][1] == {"time": 7.0, "job_id": "5", "requested": 8, "available": 0}
    assert data["memory_shortage"][0]["requested_mb"] == 4096.0
    back = read_overutilizations(path)
    assert back == over and len(back) == 6


def test_oversubscription():
    assert BandwidthSpan(0, 0, 0.0, 1.0, 30.0, 20.0).oversubscription == 1.5
    assert BandwidthSpan(0, 0, 0.0, 1.0, 30.0, 0.0).oversubscription == math.inf


def test_missing_sections_read_as_empty_and_unknown_ones_are_logged(tmp_path: Path, caplog):
    path = tmp_path / "o.json"
    path.write_text('{"core_shortage": [], "bandwith": []}')
    with caplog.at_level(logging.WARNING, logger="hdrm.results.overutil"):
        over = read_overutilizations(path)
    assert over == Overutilizations()
    assert "$.bandwith: unknown section ignored; did you mean 'bandwidth'?" in caplog.text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"bandwidth": [{"processor_id": 1}]}',
         r"o.json: \$.bandwidth\[0\]: missing key 'node_id'"),
        ('{"core_shortage": [{"time": "late", "job_id": 1, "requested": 2, "available": 1}]}',
         r"o.json: \$.core_shortage\[0\].time: 'late' is not a float"),
        ('{"memory_shortage": {}}', r"o.json: \$.memory_shortage: expected a list, found dict"),
        ('{"bandwidth": [3]}', r"o.json: \$.bandwidth\[0\]: expected an object, found 3"),
        ("[1, 2]", r"o.json: \$: expected an object"),
        ("{nope", r"o.json:1:2: invalid JSON: Expecting property name"),
    ],
)
def test_errors_name_the_json_path(tmp_path: Path, content: str, message: str):
    path = tmp_path / "o.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        read_overutilizations(path)


def test_missing_file(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"overutilizations.json: no such overutilizations file"):
        read_overutilizations(tmp_path / "overutilizations.json")


def test_open_span_is_written_as_null_and_read_as_infinite(tmp_path: Path):
    over = Overutilizations(bandwidth=[BandwidthSpan(2, 1, 5.0, math.inf, 30.0, 20.0)])
    path = write_overutilizations(over, tmp_path / "o.json")
    assert json.loads(path.read_text())["bandwidth"][0]["end"] is None
    assert "Infinity" not in path.read_text()
    (span,) = read_overutilizations(path).bandwidth
    assert span.end_s == math.inf and span.end_or(12.0) == 12.0
    assert BandwidthSpan(0, 0, 0.0, 3.0, 1.0, 1.0).end_or(12.0) == 3.0


def _as_one_text(over) -> str:
    """overutilizations.json as it was written before it was streamed: one json.dumps."""
    import json

    from hdrm.results.overutil import _SCHEMAS, _json_value

    data = {name: [{key: _json_value(getattr(item, attr)) for key, attr, _ in schema
                    if not (key == "cores" and not getattr(item, attr))}
                   for item in getattr(over, name)]
            for name, (_, schema) in _SCHEMAS.items()}
    return json.dumps(data, indent=1, allow_nan=False) + "\n"


_floats = st.floats(allow_nan=True, allow_infinity=True)
_texts = st.text(max_size=6)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.builds(CoreShortage, _floats.filter(math.isfinite), _texts, st.integers(),
                          st.integers()), max_size=3),
       st.lists(st.builds(MemoryShortage, _floats.filter(math.isfinite), _texts, st.integers(),
                          _floats.filter(math.isfinite), _floats.filter(math.isfinite)),
                max_size=3),
       st.lists(st.builds(BandwidthSpan, st.integers(), st.integers(),
                          _floats.filter(math.isfinite), _floats,
                          _floats.filter(math.isfinite), _floats.filter(math.isfinite),
                          _texts), max_size=3))
def test_the_streamed_file_has_the_bytes_of_one_dump(tmp_path_factory, cores, memory, spans):
    """Written entry by entry, the file is byte for byte the single json.dumps it was (open
    spans as null, empty sections, names with quotes, newlines and non-ASCII letters)."""
    over = Overutilizations(cores, memory, spans)
    path = tmp_path_factory.mktemp("o") / "overutilizations.json"
    write_overutilizations(over, path)
    assert path.read_bytes() == _as_one_text(over).encode("utf-8")


def test_writing_holds_one_entry_at_a_time(tmp_path):
    """20,000 bandwidth spans (a platform of 10**6 cores had 144,000): writing peaks at a few
    entries' worth (tracemalloc), where the list of entries and the whole text took ~20 MB, and
    leaves no garbage for the cycle collector (paused while outputs are written: an indented
    dump per entry left ~40 objects in cycles each)."""
    import gc
    import tracemalloc

    spans = [BandwidthSpan(p, p // 2, 1.5 * p, 2.5 * p, 150.25, 128.0, f"{20 * p}-{20 * p + 19}")
             for p in range(20_000)]
    over = Overutilizations(bandwidth=spans)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        write_overutilizations(over, tmp_path / "overutilizations.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        left = gc.collect()
        gc.enable()
    assert peak < 1_000_000 and left < 100, (peak, left)
    assert (tmp_path / "overutilizations.json").read_bytes() == _as_one_text(over).encode()
