"""The shipped type library, read through hdrm.typedjson like every JSON file of hdrm."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hdrm.errors import PlatformError
from hdrm.platform.library import (
    DATA_DIR,
    ProcessorCountJson,
    ProcessorTypeJson,
    default_library,
    load_library,
    read_json_file,
)
from hdrm.platform.model import ProcessorType
from hdrm.typedjson import Context, convert_block

CTX = Context("f", error=PlatformError)


@pytest.fixture(scope="module")
def library():
    return default_library()


def test_library_sizes_meet_the_issue(library):
    assert len(library.processor_types) >= 15
    assert len(library.node_types) >= 10
    assert len(library.network_types) >= 4


def test_processor_types_span_vendors_generations_and_a_many_core_part(library):
    ptypes = library.processor_types.values()
    vendors = {p.vendor for p in ptypes}
    assert {"Intel", "AMD", "IBM", "Fujitsu", "Ampere"} <= vendors
    years = [p.year for p in ptypes]
    assert min(years) <= 2012 and max(years) >= 2023
    assert any(p.cores >= 64 and p.clock_ghz <= 1.5 for p in ptypes)  # Xeon Phi
    for name in ("xeon_e5_2670", "xeon_platinum_8480p", "epyc_7601", "epyc_9654",
                 "thunderx2_cn9980", "a64fx", "ampere_altra_q80_30", "power9_22c", "xeon_phi_7250"):
        assert name in library.processor_types


@pytest.mark.parametrize(
    "name, core_gflops, core_power_w",
    [
        ("xeon_gold_6148", 2.4 * 32, 150 / 20),  # AVX-512, 2 FMA units
        ("xeon_e5_2670", 2.6 * 8, 115 / 8),  # AVX without FMA
        ("epyc_7742", 2.25 * 16, 225 / 64),
        ("a64fx", 1.8 * 32, 160 / 48),
        ("xeon_phi_7250", 1.4 * 32, 215 / 68),
    ],
)
def test_derived_core_figures_by_hand(library, name, core_gflops, core_power_w):
    ptype = library.processor_types[name]
    assert ptype.core_gflops == pytest.approx(core_gflops)
    assert ptype.core_power_w == pytest.approx(core_power_w)


def test_published_figures_of_a_few_parts(library):
    gold = library.processor_types["xeon_gold_6148"]
    assert (gold.cores, gold.clock_ghz, gold.mem_bw_gbps, gold.tdp_w, gold.year) == (
        20, 2.4, 128.0, 150.0, 2017)
    genoa = library.processor_types["epyc_9654"]
    assert genoa.cores == 96
    assert genoa.mem_bw_gbps == pytest.approx(12 * 4.8 * 8)  # 12 x DDR5-4800


def test_library_numbers_are_floats_and_positive(library):
    for p in library.processor_types.values():
        assert isinstance(p.cores, int) and p.cores > 0
        for value in (p.clock_ghz, p.flops_per_cycle, p.mem_bw_gbps, p.tdp_w):
            assert isinstance(value, float) and value > 0
        assert p.vendor and p.model and p.year >= 2010
    for n in library.network_types.values():
        assert n.bandwidth_gbps > 0 and n.latency_us > 0 and n.description


def test_node_types_name_library_processors(library):
    for node in library.node_types.values():
        assert node.memory_gb > 0 and node.description
        for ptype, count in node.processors:
            assert ptype in library.processor_types
            assert count >= 1


def test_default_library_is_cached_and_read_only(library):
    assert default_library() is library
    with pytest.raises(TypeError):
        library.processor_types["x"] = None  # type: ignore[index]


def test_extended_adds_and_overrides_without_touching_the_original(library):
    mine = ProcessorType("xeon_gold_6148", 4, 1.0, 1.0, 1.0, 4.0)
    extra = ProcessorType("brand_new", 2, 1.0, 2.0, 1.0, 2.0)
    merged = library.extended(processor_types={mine.name: mine, extra.name: extra})
    assert merged.processor_types["xeon_gold_6148"].cores == 4
    assert merged.processor_types["brand_new"] is extra
    assert library.processor_types["xeon_gold_6148"].cores == 20
    assert "brand_new" not in library.processor_types


def test_lookup_suggests_close_names(library):
    with pytest.raises(PlatformError, match=r"^f\.json: n\.type: unknown processor type "
                       r"'xeon_gold_614'; did you mean 'xeon_gold_6148'.*choose one of: a64fx"):
        library.processor_type("xeon_gold_614", Context("f.json", error=PlatformError), "n.type")


def _write_library(folder: Path, processors=None, nodes=None, networks=None) -> Path:
    docs = {
        "processors.json": {"processor_types": processors or {
            "p": {"cores": 2, "clock_ghz": 1, "flops_per_cycle": 4, "mem_bw_gbps": 5, "tdp_w": 10}}},
        "nodes.json": {"node_types": nodes or {
            "n": {"processors": [{"type": "p", "count": 1}], "memory_gb": 1}}},
        "networks.json": {"network_types": networks or {"net": {"bandwidth_gbps": 1}}},
    }
    for name, doc in docs.items():
        (folder / name).write_text(json.dumps(doc))
    return folder


def test_load_library_from_another_folder(tmp_path):
    lib = load_library(_write_library(tmp_path))
    assert lib.processor_types["p"].core_gflops == 4.0
    assert lib.network_types["net"].latency_us == 1.0  # the model's default


def test_library_node_with_unknown_processor_names_the_data_file(tmp_path):
    folder = _write_library(tmp_path, nodes={
        "n": {"processors": [{"type": "q", "count": 1}], "memory_gb": 1}})
    with pytest.raises(PlatformError, match=r"nodes\.json: node_types\.n\.processors\[0\]\.type: "
                       r"unknown processor type 'q'"):
        load_library(folder)


def test_library_missing_file(tmp_path):
    _write_library(tmp_path)
    (tmp_path / "networks.json").unlink()
    with pytest.raises(PlatformError, match=r"networks\.json: no such type library file"):
        load_library(tmp_path)


def test_shipped_data_files_have_descriptions():
    for name in ("processors.json", "nodes.json", "networks.json"):
        doc = json.loads((DATA_DIR / name).read_text())
        assert len(doc["description"]) > 40


def test_read_json_file_reports_line_and_column(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "a": 1,\n  "b" 2\n}\n')
    with pytest.raises(PlatformError, match=r"bad\.json:3:7: invalid JSON: Expecting ':' "
                       r"delimiter; fix the syntax there$"):
        read_json_file(bad)


def test_read_json_file_suggests_a_close_file_name(tmp_path):
    (tmp_path / "hetero.json").write_text("{}")
    with pytest.raises(PlatformError, match=r"heter\.json: no such platform file; "
                       r"did you mean 'hetero\.json'\?"):
        read_json_file(tmp_path / "heter.json")


def test_read_json_file_keeps_repeated_keys_for_the_conversion_to_name(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text('{"a": {"type": "x", "count": 1, "count": 2}}')
    doc = read_json_file(path)
    assert doc["a"].duplicate_keys == ("count",)
    assert doc.duplicate_keys == ()
    with pytest.raises(PlatformError, match=r"^dup\.json: a: duplicate key 'count'; each key may "
                                            r"appear once in an object$"):
        convert_block(doc["a"], ProcessorCountJson, "a", Context("dup.json", error=PlatformError))


@pytest.mark.parametrize(
    "value, message",
    [
        (True, r"expected an integer > 0, got true"),
        (2.0, r"expected an integer > 0, got 2\.0"),
        (-1, r"expected an integer > 0, got -1"),
        (None, r"expected an integer > 0, got null"),
        ([1], r"expected an integer > 0, got \[1\]"),
        ("2", r"expected an integer > 0, got \"2\""),
    ],
)
def test_a_count_rejects(value, message):
    with pytest.raises(PlatformError, match=r"^f: k\.count: " + message + "$"):
        convert_block({"type": "x", "count": value}, ProcessorCountJson, "k", CTX)


def test_numbers_are_converted_to_float_and_must_be_finite():
    fields = {"cores": 2, "clock_ghz": 3, "flops_per_cycle": 4, "mem_bw_gbps": 5, "tdp_w": 6}
    spec = convert_block(fields, ProcessorTypeJson, "", CTX)
    assert isinstance(spec.clock_ghz, float) and spec.build("p").core_gflops == 12.0
    with pytest.raises(PlatformError, match=r"^f: clock_ghz: expected a number > 0, got Infinity$"):
        convert_block(dict(fields, clock_ghz=math.inf), ProcessorTypeJson, "", CTX)


def test_odd_keys_are_quoted_in_json_paths(tmp_path):
    from hdrm.typedjson import join_path

    assert join_path(join_path("a", "b c"), "d") == 'a."b c".d'
