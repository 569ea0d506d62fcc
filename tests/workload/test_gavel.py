"""The Gavel reader: run time = total steps / throughput(model, scale factor), errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.gavel import read_gavel
from hdrm.workload.job import AcceleratorDemand

THROUGHPUTS = {
    "k80": {"('LM (batch size 5)', 1)": {"null": 2.0}, "('LM (batch size 5)', 2)": {"null": 3.0}},
    "v100": {"('LM (batch size 5)', 1)": {"null": 10.0},
             "('LM (batch size 5)', 2)": {"null": 16.0}},
    "v100_unconsolidated": {"('LM (batch size 5)', 1)": {"null": 99.0}},
}


def _files(tmp_path, lines):
    trace, tput = tmp_path / "t.trace", tmp_path / "tput.json"
    trace.write_text("\n".join(lines) + "\n")
    tput.write_text(json.dumps(THROUGHPUTS))
    return trace, tput


def test_run_time_per_model_is_steps_over_throughput(tmp_path):
    trace, tput = _files(tmp_path, [
        "LM (batch size 5)\tcd x && python main.py\t--steps\t1\t1000\t60.0\t2",
        "LM (batch size 5)\tcd y && python main.py\t/work\t--steps\t0\t500\t0.0\t1",  # 8 fields
    ])
    work = read_gavel(trace, tput)
    first, second = work.jobs  # sorted by arrival
    assert (first.submit_s, second.submit_s) == (0.0, 60.0)
    assert first.extra["gavel"]["run_time_s"] == {"K80": 250.0, "V100M16": 50.0}
    assert second.extra["gavel"]["run_time_s"] == {"K80": 1000 / 3, "V100M16": 62.5}
    assert second.run_time_s == 62.5  # the fastest model
    assert second.accel == AcceleratorDemand(2, 1000, ("K80", "V100M16"))


def test_an_unmeasured_scale_factor_assumes_ideal_scaling(tmp_path):
    trace, tput = _files(tmp_path, ["LM (batch size 5)\tc\t--steps\t1\t800\t0\t4"])
    work = read_gavel(trace, tput)
    assert work.jobs[0].extra["gavel"]["run_time_s"] == {"K80": 100.0, "V100M16": 20.0}
    assert work.header["scaling_assumed"] == 1


@pytest.mark.parametrize("line, message", [
    ("LM (batch size 5)\tc\t--steps\t1\tmany\t0\t1", r"t\.trace:2: field 5 \(total steps\): "
                                                    r"expected a number, got 'many'"),
    ("LM (batch size 5)\tc\t1\t800\t0\t1", "found 6 tab-separated fields"),
    ("GAN\tc\t--steps\t1\t800\t0\t1", "no throughput measured for job type 'GAN'"),
    # a nan arrival hung `hdrm replay` (never arrives), an inf one lost the job silently
    ("LM (batch size 5)\tc\t--steps\t1\t800\tnan\t1", r"t\.trace:2: field 6 \(arrival time\): "
                                                       r"expected a finite number, got 'nan'; "),
    ("LM (batch size 5)\tc\t--steps\t1\t800\tinf\t1", "field 6 .arrival time.: expected a finite"),
    ("LM (batch size 5)\tc\t--steps\t1\tinf\t0\t1", "field 5 .total steps.: expected a finite"),
    # a share of a GPU is not a worker count (was 'expected a number, got '0.5'')
    ("LM (batch size 5)\tc\t--steps\t1\t800\t0\t0.5", r"t\.trace:2: field 7 \(scale factor\): "
                                                       r"expected a whole number of workers \(one "
                                                       r"GPU each\), got '0\.5'; fix the line"),
    ("LM (batch size 5)\tc\t--steps\t1\t800\t0\t0",
     "scale factor >= 1 expected, got 800, 0, 0; fix"),
])
def test_a_malformed_line_is_one_line_error_or_counted_skip(tmp_path, line, message):
    trace, tput = _files(tmp_path, ["LM (batch size 5)\tc\t--steps\t1\t800\t0\t1", line])
    with pytest.raises(WorkloadError, match=message):
        read_gavel(trace, tput)
    work = read_gavel(trace, tput, strict=False)
    assert len(work) == 1 and sum(work.skipped.values()) == 1


def test_skipped_lines_are_counted_under_a_reason_without_their_values(tmp_path):
    trace, tput = _files(tmp_path, ["LM (batch size 5)\tc\t--steps\t1\t800\t0\t1",
                                    "LM (batch size 5)\tc\t--steps\t1\t800\t0\t0",
                                    "LM (batch size 5)\tc\t--steps\t1\t-5\t0\t1",
                                    "LM (batch size 5)\tc\t--steps\t1\t800\t0\t1.5"])
    work = read_gavel(trace, tput, strict=False)
    assert len(work) == 1
    assert work.skipped == {"out of range": 2, "field 7 (scale factor)": 1}


def test_a_scale_factor_written_as_a_float_is_its_whole_number(tmp_path):
    trace, tput = _files(tmp_path, ["LM (batch size 5)\tc\t--steps\t1\t1000\t0\t2.0"])
    job = read_gavel(trace, tput).jobs[0]
    assert job.accel == AcceleratorDemand(2, 1000, ("K80", "V100M16"))
    assert job.extra["gavel"]["run_time_s"] == {"K80": 1000 / 3, "V100M16": 62.5}


def test_the_shared_trace():
    gavel = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gpu" / "gavel"
    work = read_gavel(gavel / "msr_seed0.trace", gavel / "simulation_throughputs.json")
    assert len(work) == 1181 and not work.skipped
    job = work.jobs[0]  # Transformer (batch size 128), 95,121 steps, one worker
    assert job.extra["gavel"]["run_time_s"]["V100M16"] == pytest.approx(17465.876, rel=1e-6)


def test_byte_order_marks_are_dropped(tmp_path):
    trace, tput = _files(tmp_path, ["LM (batch size 5)\tc\t--steps\t1\t800\t0\t1"])
    trace.write_bytes(b"\xef\xbb\xbf" + trace.read_bytes())
    tput.write_bytes(b"\xef\xbb\xbf" + tput.read_bytes())
    work = read_gavel(trace, tput)
    assert work.jobs[0].extra["gavel"]["job_type"] == "LM (batch size 5)"
    assert work.jobs[0].run_time_s == 80.0


@pytest.mark.parametrize("what, content, message", [
    ("trace", None, r"nope\.trace: no such file; give the path of the Gavel trace$"),
    ("trace", "LM (batch size 5)\tcaf\xe9\t--steps\t1\t800\t0\t1\n".encode("latin-1"),
     r"t\.trace:1: not UTF-8 text \(byte 0xe9\); save the file as UTF-8$"),
    ("tput", b"[1, 2]", r"tput\.json: expected a JSON object of GPU types \(k80, p100, v100\), "
                        r"got a list"),
    ("tput", b'{"k80": [1]}', r"tput\.json: k80: expected an object of \"\('job type', scale\)\" "
                              r"keys, got a list$"),
])
def test_unreadable_files_are_one_line_errors(tmp_path, what, content, message):
    # each was a traceback (FileNotFoundError, UnicodeDecodeError, AttributeError)
    trace, tput = _files(tmp_path, ["LM (batch size 5)\tc\t--steps\t1\t800\t0\t1"])
    if content is None:
        trace = tmp_path / "nope.trace"
    else:
        (trace if what == "trace" else tput).write_bytes(content)
    with pytest.raises(WorkloadError, match=message):
        read_gavel(trace, tput)
