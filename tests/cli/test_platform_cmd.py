"""``hdrm platform``: summary, XML export, JSON summary, type listing and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import defusedxml.ElementTree as SafeET
import pytest

from hdrm.cli.main import main

REPO = Path(__file__).resolve().parents[2]
PLATFORMS = REPO / "platforms"
BATSIM = REPO.parent / "shared" / "batsim"


def test_summary_of_tiny_hetero(capsys):
    assert main(["platform", str(PLATFORMS / "tiny_hetero.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("platform 'tiny_hetero' (")
    for line in (
        "  clusters         1",
        "  nodes            2",
        "  processors       3",
        "  cores            8",
        "  total speed      256.0 GFLOP/s",
        "  reference speed  32.000 GFLOP/s per core (mean)",
        "  memory           12.0 GB (12,288 MB)",
        "  power            140.0 W at full load, 42.0 W idle, 7.0 W asleep",
    ):
        assert line in out.splitlines()
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ")}
    assert rows["fast_cpu"][1:6] == ["1", "4", "48.00", "192.0", "20.0"]
    assert rows["slow_cpu"][1:6] == ["2", "4", "16.00", "64.0", "8.0"]
    assert rows["c0"][1:] == ["ethernet_25g", "2", "8", "256.0", "12.0"]


@pytest.mark.parametrize("path", sorted(PLATFORMS.glob("*.json")), ids=lambda p: p.name)
def test_every_platform_exports(path, tmp_path, capsys):
    out_xml = tmp_path / "out.xml"
    assert main(["platform", str(path), "--xml", str(out_xml)]) == 0
    root = SafeET.parse(str(out_xml)).getroot()
    nb_hosts = len(root.findall("zone/host"))
    out = capsys.readouterr().out
    nb_cores = int(next(line for line in out.splitlines() if "  cores " in line).split()[-1])
    assert nb_hosts == nb_cores + 1
    assert f"wrote {out_xml}: {nb_hosts} hosts ({nb_cores} cores + master_host)" in out


def test_json_summary(capsys):
    assert main(["platform", str(PLATFORMS / "tiny4.json"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["nb_cores"] == 4 and data["total_gflops"] == 32.0
    assert data["processor_types"][0]["name"] == "tiny_cpu"


def test_list_types(capsys):
    assert main(["platform", "--list-types"]) == 0
    out = capsys.readouterr().out
    assert "processor types (22):" in out and "node types (19):" in out
    assert "network types (7):" in out
    assert any(line.split()[:2] == ["xeon_gold_6148", "Intel"] for line in out.splitlines())
    # the GPU models too (they were missing): a node list's model column names one of these
    gpus = out[out.index("accelerator types ("):].splitlines()
    assert gpus[1].split()[:4] == ["name", "vendor", "year", "memory"]
    rows = {line.split()[0]: line.split() for line in gpus[2:]}
    assert rows["V100M32"][1:5] == ["NVIDIA", "2018", "32", "15.7"]
    assert rows["G1"][1:3] == ["undisclosed", "-"] and "H100" in rows and "A100M80" in rows


@pytest.mark.skipif(not BATSIM.is_dir(), reason="../shared/batsim is not here")
def test_simgrid_input_is_summarised(capsys):
    assert main(["platform", str(BATSIM / "golden/pstate_slowdown/platform.xml")]) == 0
    out = capsys.readouterr().out
    assert "  cores            4" in out.splitlines()
    assert "  memory           unbounded" in out.splitlines()
    assert "  total speed      40.0 GFLOP/s" in out.splitlines()


def _error_of(argv, capsys) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1  # one line
    return captured.err


def test_bad_platform_file_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"clusters": [
        {"name": "c0", "network": "infiniband_edr", "nodes": [{"type": "dell_r64", "count": 1}]}]}))
    err = _error_of(["platform", str(bad)], capsys)
    assert err.startswith(f"hdrm platform: error: {bad}: clusters[0].nodes[0].type: unknown node "
                          "type 'dell_r64'; did you mean")


def test_missing_file_and_missing_argument(tmp_path, capsys):
    err = _error_of(["platform", str(tmp_path / "nope.json")], capsys)
    assert "nope.json: no such platform file" in err
    err = _error_of(["platform"], capsys)
    assert err == "hdrm platform: error: give a platform FILE (e.g. platforms/tiny4.json) or " \
                  "--list-types\n"


def test_unwritable_xml_is_one_line_exit_2(tmp_path, capsys):
    target = tmp_path / "no" / "x.xml"
    assert main(["platform", str(PLATFORMS / "tiny4.json"), "--xml", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"hdrm platform: error: {target}: cannot write the SimGrid platform")
    assert not target.exists()


def test_help_mentions_the_options(capsys):
    with pytest.raises(SystemExit) as info:
        main(["platform", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--xml OUT.xml", "--json", "--list-types", "FILE"):
        assert option in out
