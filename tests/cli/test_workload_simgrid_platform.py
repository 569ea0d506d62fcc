"""``hdrm workload TRACE --platform P.xml``: the load refers to a SimGrid platform's compute hosts,
as ``hdrm replay`` reads them (session 24; it was 'P.xml:1:1: invalid JSON')."""

from __future__ import annotations

from pathlib import Path

from hdrm.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def test_workload_load_on_a_simgrid_platform(tmp_path, capsys):
    platform = tmp_path / "p.xml"
    platform.write_text(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n"
        '<host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/><host id="b" speed="2Gf"/>'
        "\n</zone></platform>\n")
    trace = REPO / "workloads" / "lublin_256_first500.swf"
    assert main(["workload", str(trace), "--platform", str(platform)]) == 0
    out = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines()
               if line.startswith(("cores", "core-seconds", "span")))
    assert out["cores"].strip() == "2"
