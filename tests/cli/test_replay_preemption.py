"""``hdrm replay --preemption``: block preemption on the inference scenario, and its refusals.

2,000 requests of the shipped tenant spec (seed 1) on the shipped 16-core inference platform with
EDF: under ``block:0.002`` some requests are suspended, each request is still one row of
out_jobs.csv and of out_preemptions.csv, and the SLA satisfaction is no lower than without.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from hdrm.cli.main import main

DATA = Path(__file__).resolve().parents[2] / "hdrm" / "data"


@pytest.fixture(scope="module")
def inference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inf")
    assert main(["workload", "inference", "--tenants", str(DATA / "inference_tenants.json"),
                 "--requests", "2000", "-o", str(folder)]) == 0
    return folder


def _replay(inference, outdir, *argv):
    return main(["replay", "--platform", str(DATA / "inference_platform.json"), "--workload",
                 str(inference / "workload.json"), "--tenants", str(inference / "tenants.json"),
                 "--policy", "edf", "--outdir", str(outdir), *argv])


def _satisfaction(outdir) -> float:
    with open(outdir / "out_sla.csv", newline="") as f:
        return float(next(r for r in csv.DictReader(f) if r["tenant"] == "overall")
                     ["sla_satisfaction"])


def test_block_preemption_on_the_inference_scenario(inference, tmp_path, capsys):
    assert _replay(inference, tmp_path / "none") == 0
    assert not (tmp_path / "none" / "out_preemptions.csv").exists()
    assert _replay(inference, tmp_path / "block", "--preemption", "block:0.002") == 0
    capsys.readouterr()
    with open(tmp_path / "block" / "out_preemptions.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(tmp_path / "block" / "out_jobs.csv", newline="") as f:
        jobs = list(csv.DictReader(f))
    assert len(rows) == len(jobs) == 2000
    assert len({r["job_id"] for r in rows}) == 2000
    suspended = [r for r in rows if int(r["preemptions"]) > 0]
    assert suspended
    for r in suspended:  # a suspended request used less time than its span
        span = float(r["finish_time"]) - float(r["starting_time"])
        assert 0 < float(r["run_time_used"]) < span
    assert _satisfaction(tmp_path / "block") >= _satisfaction(tmp_path / "none")


@pytest.mark.parametrize("argv,message", [
    (["--preemption", "block:0.002", "--engine", "batsim"],
     "--preemption: Batsim cannot suspend a job and resume its remaining work"),
    (["--preemption", "block"], "--preemption: 'block' needs a block size in seconds > 0"),
    (["--preemption", "block:0.002", "--policy", "fcfs"],
     "policy 'first' ranks none above another"),
])
def test_refused_in_one_line(inference, tmp_path, capsys, argv, message):
    status = _replay(inference, tmp_path / "out", *argv)
    err = capsys.readouterr().err
    assert status != 0 and message in err and len(err.strip().splitlines()) == 1


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("stopped_in", ["hdrm.sim.preemptive.write_preemptions",
                                        "hdrm.results.sla.write_sla_csv"])
def test_a_replay_stopped_while_writing_keeps_every_output_of_the_previous_one(
        inference, tmp_path, capsys, monkeypatch, stopped_in):
    # out_sla.csv and out_preemptions.csv are published with out_jobs.csv & co: a replay stopped
    # while writing one of them leaves the previous replay's files, all of them (before: the new
    # out_jobs.csv, out_schedule.csv ... beside the previous out_sla.csv/out_preemptions.csv)
    outdir = tmp_path / "run"
    assert _replay(inference, outdir, "--preemption", "block:0.002", "--nb-jobs", "200") == 0
    before = _files(outdir)
    assert {"out_jobs.csv", "out_sla.csv", "out_preemptions.csv"} <= set(before)

    def stop(*_args, **_kwargs):
        raise KeyboardInterrupt

    module, name = stopped_in.rsplit(".", 1)
    monkeypatch.setattr(f"{module}.{name}", stop)
    assert _replay(inference, outdir, "--preemption", "block:0.002", "--nb-jobs", "300") == 130
    assert "interrupted" in capsys.readouterr().err
    assert _files(outdir) == before
    assert not [p.name for p in outdir.iterdir() if p.name.endswith(".tmp")]
