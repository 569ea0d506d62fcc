"""The single-file writers of ``hdrm platform`` and ``hdrm workload``: a stop leaves the previous
file (or none), never a file cut short under the final name, and never a temporary file.

A stop is simulated at the last moment of a write (the new bytes written, not yet renamed into
place): before these writers went through :mod:`hdrm.durable` the new bytes were already in the
destination by then, and a stop earlier in the write left it cut short.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm import durable
from hdrm.cli import inference_workload
from hdrm.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "hdrm" / "data" / "inference_tenants.json")
NODES = ("sn,cpu_milli,memory_mib,gpu,model\n"
         "n0,32000,131072,2,T4\n"
         "n1,64000,262144,0,\n")


def _stop_before_rename(monkeypatch):
    def stop(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(durable.os, "replace", stop)


def _folder(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def test_platform_xml_stopped_keeps_the_previous_file(tmp_path, monkeypatch, capsys):
    target = tmp_path / "p.xml"
    target.write_text("previous")
    _stop_before_rename(monkeypatch)
    assert main(["platform", str(ROOT / "platforms" / "tiny4.json"), "--xml", str(target)]) == 130
    assert capsys.readouterr().err.endswith("hdrm platform: interrupted\n")
    assert _folder(tmp_path) == {"p.xml": "previous"}


def test_from_openb_stopped_keeps_the_previous_file(tmp_path, monkeypatch, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES)
    target = tmp_path / "gpu.json"
    target.write_text("previous")
    _stop_before_rename(monkeypatch)
    assert main(["platform", "from-openb", str(nodes), "-o", str(target)]) == 130
    assert _folder(tmp_path) == {"gpu.json": "previous", "nodes.csv": NODES}


def test_inference_files_are_written_together(tmp_path, monkeypatch, capsys):
    # a stop while writing tenants.json kept the new workload.json beside the previous
    # tenants.json (two runs' halves, which a replay reads as one scenario)
    out = tmp_path / "inf"
    argv = ["workload", "inference", "--tenants", SPEC, "--requests", "50", "-o", str(out)]
    assert main(argv) == 0
    before = _folder(out)
    assert sorted(before) == ["tenants.json", "workload.json"]

    def stop(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(inference_workload, "tenants_document", stop)
    assert main([*argv[:-4], "--requests", "60", "-o", str(out)]) == 130
    assert _folder(out) == before


@pytest.mark.parametrize("argv", [["workload", "{swf}", "--json", "{out}"]])
def test_workload_json_stopped_keeps_the_previous_file(tmp_path, monkeypatch, capsys, argv):
    swf = next(iter(sorted((ROOT / "workloads").glob("*.swf"))))
    target = tmp_path / "w.json"
    target.write_text("previous")
    _stop_before_rename(monkeypatch)
    assert main([a.format(swf=swf, out=target) for a in argv]) == 130
    assert _folder(tmp_path) == {"w.json": "previous"}
