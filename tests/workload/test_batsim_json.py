"""Batsim JSON workloads: the real Batsim files, round trips, unit conversion, error messages."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import WorkloadError
from hdrm.workload import batsim_jobs
from hdrm.workload.batsim_json import (
    check_supported,
    read_batsim_json,
    unsupported_profiles,
    workload_from_dict,
    workload_to_dict,
    write_batsim_json,
)
from hdrm.workload.job import Job, Workload
from hdrm.workload.requirements import attach_requirements
from hdrm.workload.select import first_jobs
from hdrm.workload.swf import read_swf

BATSIM = Path(__file__).resolve().parents[3] / "shared" / "batsim"
EXAMPLES = Path(__file__).resolve().parents[2] / "workloads"
needs_batsim = pytest.mark.skipif(not BATSIM.is_dir(), reason=f"no Batsim material at {BATSIM}")


@needs_batsim
def test_every_batsim_workload_reads():
    paths = sorted(BATSIM.glob("golden/*/workload.json")) + sorted(BATSIM.glob("sessions/*/*.json"))
    assert len(paths) == 7
    counts = {p.parent.name: len(read_batsim_json(p)) for p in paths}
    assert counts == {"cluster256_1k": 1000, "small_delays": 10, "small_various": 9,
                      "pstate_slowdown": 4, "protocol_demo": 4,
                      "pstate_lockstep": 1, "sdsc1024_1k": 1000}


@needs_batsim
def test_small_delays_fields():
    workload = read_batsim_json(BATSIM / "golden/small_delays/workload.json")
    assert workload.nb_res == 2 and workload.name == "workload"
    job = workload.jobs[3]
    assert (job.idx, job.id, job.submit_s, job.res, job.walltime_s) == (3, 3, 9.0, 1, 100.0)
    assert (job.profile, job.profile_type, job.run_time_s, job.ops_gflop) == ("delay10", "delay",
                                                                             10.0, 0.0)
    assert (job.trace_submit_s, job.user_id, job.extra) == (9.0, -1, {})


@needs_batsim
def test_small_various_flags_unsupported_profiles_and_sorts_by_subtime():
    workload = read_batsim_json(BATSIM / "golden/small_various/workload.json")
    assert [j.id for j in workload.jobs] == [
        "delay", "simple", "homo", "2_resources", "4_resources", "homo_no_cpu", "homo_no_com",
        "reach_walltime", "seq"]
    assert unsupported_profiles(workload) == {
        "parallel": 2, "parallel_homogeneous_total": 2, "composed": 1}
    homo = workload.jobs[2]
    assert homo.profile_type == "parallel_homogeneous" and homo.ops_gflop == pytest.approx(0.01)
    assert homo.extra["profile_data"]["com"] == 1e6  # network part kept, not simulated
    simple = workload.jobs[1]
    assert simple.profile_type == "parallel" and math.isnan(simple.run_time_s)
    # every one of them communicates: no hdrm engine runs them (not even the batsim engine)
    with pytest.raises(WorkloadError, match=r"workload\.json: profile type 'parallel' with com > 0 "
                                            r"\(2 jobs: 'simple', 'reach_walltime'\); profile type "
                                            r"'parallel_homogeneous' with com > 0 \(2 jobs: 'homo', "
                                            r"'homo_no_cpu'\); .*profile 'sequence' has a part "
                                            r"'simple' .*\(1 jobs: 'seq'\): "
                                            r"hdrm's engines do not model the platform's network"):
        check_supported(workload)
    # its parallel_homogeneous_total profile has com > 0, its sequence 'parallel' parts
    assert [j.id for j in workload.jobs if j.parts] == ["2_resources", "4_resources", "seq"]
    sequence = workload.jobs[-1]
    assert [p.profile for p in sequence.parts] == ["simple", "homogeneous", "simple"] * 4


@needs_batsim
def test_pstate_work_in_gflop_and_run_time_from_the_reference_speed():
    path = BATSIM / "golden/pstate_slowdown/workload.json"
    unknown = read_batsim_json(path)
    assert unknown.jobs[0].ops_gflop == 100.0 and math.isnan(unknown.jobs[0].run_time_s)
    known = read_batsim_json(path, reference_gflops=10.0)
    assert [j.run_time_s for j in known.jobs] == [10.0] * 4
    assert [j.req_ops_gflop for j in known.jobs] == [1000.0, 1000.0, 1000.0, 50.0]
    check_supported(known)


@needs_batsim
def test_string_ids_are_kept():
    workload = read_batsim_json(BATSIM / "sessions/protocol_demo/demo_workload.json")
    assert [j.id for j in workload.jobs] == ["normal", "kill_me", "reject_me", "too_long"]


@needs_batsim
def test_foreign_workload_round_trip_keeps_every_profile(tmp_path, values):
    source = BATSIM / "golden/small_various/workload.json"
    workload = read_batsim_json(source)
    out = tmp_path / "again.json"
    write_batsim_json(workload, out)
    again = read_batsim_json(out)
    assert values(again.jobs) == values(workload.jobs)
    original = json.loads(source.read_text())["profiles"]
    written = json.loads(out.read_text())["profiles"]
    assert written == original


def test_swf_selection_with_requirements_round_trips(tmp_path, values):
    swf = read_swf(EXAMPLES / "SDSC-SP2-1998-4.2-cln_first500.swf", keep_fields=True)
    workload = attach_requirements(first_jobs(swf, 60), 56.2, np.random.default_rng(3))
    out = tmp_path / "w.json"
    write_batsim_json(workload, out)
    again = read_batsim_json(out)
    assert values(again.jobs) == values(workload.jobs)
    assert again.nb_res == workload.nb_res == 128
    assert isinstance(again.jobs[0].extra["swf"], tuple)
    write_batsim_json(workload, tmp_path / "lean.json", swf_fields=False)
    assert "swf" not in read_batsim_json(tmp_path / "lean.json").jobs[0].extra


def test_written_profiles_are_in_flop():
    jobs = [Job(0, 5, 1.5, 2, 60.0, 20.0, ops_gflop=2.5, profile="a",
                profile_type="parallel_homogeneous"),
            Job(1, 6, 3.0, 1, math.inf, 7.25, profile="b")]
    document = workload_to_dict(Workload(jobs, nb_res=None))
    assert document["profiles"] == {
        "a": {"type": "parallel_homogeneous", "cpu": 2_500_000_000, "com": 0},
        "b": {"type": "delay", "delay": 7.25}}
    assert document["nb_res"] == 2  # widest job when the workload has no nb_res
    assert document["jobs"][0] == {"id": 5, "subtime": 1.5, "res": 2, "walltime": 60,
                                   "profile": "a", "trace_submit_s": 0, "run_time_s": 20,
                                   "ops_gflop": 2.5}
    assert "walltime" not in document["jobs"][1]


def test_profile_name_conflicts_are_renamed(tmp_path):
    jobs = [Job(0, 1, 0.0, 1, 10.0, 5.0, profile="same"),
            Job(1, 2, 0.0, 1, 10.0, 6.0, profile="same")]
    document = workload_to_dict(Workload(jobs, nb_res=1))
    assert [j["profile"] for j in document["jobs"]] == ["same", "same.2"]
    assert document["profiles"]["same.2"] == {"type": "delay", "delay": 6}


def test_unknown_type_without_data_cannot_be_written(tmp_path):
    jobs = [Job(0, 1, 0.0, 1, 10.0, 5.0, profile_type="composed")]
    with pytest.raises(WorkloadError, match=r"job 1: profile type 'composed' has no profile data"):
        write_batsim_json(Workload(jobs, nb_res=1), tmp_path / "x.json")


finite = st.floats(0.001, 1e7, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(finite, st.integers(1, 64), finite, finite, finite, finite,
                          st.sampled_from(["delay", "parallel_homogeneous"])),
                min_size=1, max_size=8))
def test_round_trip_is_exact(tmp_path_factory, rows):
    jobs = [Job(i, i, sub, res, wall, run, mem, bw, run * 3.7 if kind != "delay" else 0.0,
                wall * 3.7, sub + 1.0, f"p{i}", kind, 3)
            for i, (sub, res, wall, run, mem, bw, kind) in enumerate(sorted(rows))]
    workload = Workload(jobs, "h", nb_res=64)
    path = tmp_path_factory.mktemp("rt") / "h.json"
    write_batsim_json(workload, path)
    again = read_batsim_json(path)
    fields = ("id", "submit_s", "res", "walltime_s", "run_time_s", "mem_mb", "mem_bw_gbps",
              "ops_gflop", "req_ops_gflop", "trace_submit_s", "profile", "profile_type",
              "user_id", "extra")
    for a, b in zip(jobs, again.jobs):
        assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]


def write_json(tmp_path: Path, document) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


GOOD_JOB = {"id": 1, "subtime": 0, "res": 1, "walltime": 10, "profile": "d"}
GOOD_PROFILES = {"d": {"type": "delay", "delay": 5}}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{"nb_res": 1,\n "jobs": [,]}', r"bad\.json:2:11: invalid JSON: Expecting value; fix the syntax there"),
        ([1, 2], r"the top level must be a JSON object, got a list"),
        ({"jobs": [], "profiles": {}}, r"has no 'nb_res'; add the field 'nb_res'"),
        ({"nb_res": 0, "jobs": [], "profiles": {}}, r"nb_res must be an integer >= 1, got 0"),
        ({"nb_res": 1, "jobs": {}, "profiles": {}}, r"jobs must be a list of jobs, got an object"),
        ({"nb_res": 1, "jobs": [dict(GOOD_JOB, res=1.5)], "profiles": GOOD_PROFILES},
         r"jobs\[0\]\.res must be an integer >= 1, got 1\.5"),
        ({"nb_res": 1, "jobs": [dict(GOOD_JOB, subtime="0")], "profiles": GOOD_PROFILES},
         r"jobs\[0\]\.subtime must be a finite number, got '0'"),
        ({"nb_res": 1, "jobs": [dict(GOOD_JOB, profile="dd")], "profiles": GOOD_PROFILES},
         r"jobs\[0\]\.profile 'dd' is not in profiles; did you mean 'd'\? defined profiles: d"),
        ({"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profil": "d"}],
          "profiles": GOOD_PROFILES}, r"jobs\[0\] has no 'profile'; did you mean 'profil'\?"),
        ({"nb_res": 1, "jobs": [GOOD_JOB, GOOD_JOB], "profiles": GOOD_PROFILES},
         r"jobs\[1\]\.id 1 is already used by jobs\[0\]; job ids must be unique"),
        # 1 and "1" were read as two jobs, both written "1" in out_jobs.csv
        ({"nb_res": 1, "jobs": [GOOD_JOB, dict(GOOD_JOB, id="1")], "profiles": GOOD_PROFILES},
         r"jobs\[1\]\.id '1' is already used by jobs\[0\] \(as text, the id 1 is\); job ids "
         r"must be unique$"),
        ({"nb_res": 1, "jobs": [dict(GOOD_JOB, id=1.0)], "profiles": GOOD_PROFILES},
         r"jobs\[0\]\.id must be an integer or a string, got 1\.0"),
        ({"nb_res": 1, "jobs": [GOOD_JOB], "profiles": {"d": {"type": "delay"}}},
         r"profiles\.d has no 'delay'"),
        ({"nb_res": 1, "jobs": [dict(GOOD_JOB, ops_gflop=3.0)],
          "profiles": {"d": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}},
         r"jobs\[0\]\.ops_gflop 3\.0 disagrees with profiles\.d\.cpu 1000000000\.0 FLOP"),
    ],
)
def test_errors_name_the_json_path_and_the_value(tmp_path, document, message):
    with pytest.raises(WorkloadError, match=message):
        read_batsim_json(write_json(tmp_path, document))


def test_missing_file(tmp_path):
    with pytest.raises(WorkloadError, match=r"nope\.json: no such Batsim workload file; give the path"):
        read_batsim_json(tmp_path / "nope.json")


def test_swf_workloads_have_no_unsupported_profiles():
    workload = read_swf(EXAMPLES / "lublin_256_first500.swf")
    assert unsupported_profiles(workload) == {}
    check_supported(workload)


def test_a_key_given_twice_is_refused_not_silently_dropped(tmp_path):
    path = tmp_path / "twice.json"
    path.write_text('{"nb_res": 4, "jobs": [], "profiles": {}, "nb_res": 8}')
    with pytest.raises(WorkloadError, match=r"twice\.json: key 'nb_res' is given twice in one object"):
        read_batsim_json(path)


def test_a_wfcommons_workflow_given_as_a_workload_points_to_hdrm_dag(tmp_path):
    path = tmp_path / "montage.json"
    path.write_text('{"name": "m", "schemaVersion": "1.5", '
                    '"workflow": {"specification": {"tasks": []}, "execution": {}}}')
    with pytest.raises(WorkloadError) as caught:
        read_batsim_json(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: a WfCommons workflow (wfformat), not a Batsim workload")
    assert f"'hdrm dag replay {path} --platform P.json'" in message
    assert "\n" not in message


class _Int(int):
    pass


class _Str(str):
    pass


def _job_values(workload):
    import dataclasses
    return [dataclasses.astuple(j) for j in workload.jobs]


def test_plain_and_unusual_values_read_the_same():
    # plain JSON values take one type test each; int and str subclasses (a caller's own dict)
    # go through the checks that name the field: both must give the same jobs
    plain = {"nb_res": 8, "profiles": {"d": {"type": "delay", "delay": 5},
                                       "h": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 0}},
             "jobs": [{"id": 1, "subtime": 0, "res": 2, "walltime": 60, "profile": "d",
                       "trace_submit_s": 7, "user_id": 3},
                      {"id": "b", "subtime": 1.5, "res": 4, "profile": "h", "mem_mb": 10,
                       "swf": [1, 2], "note": "x"},
                      {"id": 3, "subtime": 2, "res": 1, "walltime": -1, "profile": "d"}]}
    odd = json.loads(json.dumps(plain))
    for job in odd["jobs"]:
        job["id"] = _Str(job["id"]) if isinstance(job["id"], str) else _Int(job["id"])
        job["res"] = _Int(job["res"])
        job["profile"] = _Str(job["profile"])
        if "user_id" in job:
            job["user_id"] = _Int(job["user_id"])
    expected = _job_values(workload_from_dict(plain, "w.json", 2.0))
    assert _job_values(workload_from_dict(odd, "w.json", 2.0)) == expected
    assert expected[1][11:14] == ("h", "parallel_homogeneous", -1)  # profile, type, user
    assert expected[1][14] == {"swf": (1, 2), "note": "x"}


def test_each_profile_is_checked_once(monkeypatch):
    calls = []
    real = batsim_jobs._profile_facts
    monkeypatch.setattr(batsim_jobs, "_profile_facts", lambda *a: calls.append(a[1]) or real(*a))
    doc = {"nb_res": 4, "profiles": {"p": {"type": "delay", "delay": 3, "com": 0}},
           "jobs": [{"id": i, "subtime": i, "res": 1, "profile": "p"} for i in range(50)]}
    assert len(workload_from_dict(doc, "w.json")) == 50  # by column, one profile check
    doc["jobs"][0]["note"] = "x"
    assert len(workload_from_dict(doc, "w.json")) == 50  # job by job, one check too
    assert calls == ["p", "p"]


_PLAIN_DOC = {"nb_res": 8, "profiles": {"d": {"type": "delay", "delay": 5},
                                        "h": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 0},
                                        "x": {"type": "delay", "delay": 1.5, "note": "kept"}},
              "jobs": [{"id": 1, "subtime": 0, "res": 2, "walltime": 60, "profile": "d",
                        "trace_submit_s": 7, "user_id": 3},
                       {"id": "b", "subtime": 1.5, "res": 4, "profile": "h"},
                       {"id": 3, "subtime": 2, "res": 1, "walltime": -1.0, "profile": "x",
                        "trace_submit_s": 9.5}]}


@pytest.mark.parametrize("ref", [None, 2.0])
def test_plain_files_are_read_by_column_as_job_by_job(monkeypatch, ref):
    by_column = _job_values(workload_from_dict(json.loads(json.dumps(_PLAIN_DOC)), "w.json", ref))
    monkeypatch.setattr(batsim_jobs, "_plain_jobs", lambda *args: None)  # job by job
    assert _job_values(workload_from_dict(_PLAIN_DOC, "w.json", ref)) == by_column
    assert by_column[2][14] == {"profile_data": {"type": "delay", "delay": 1.5, "note": "kept"}}


def test_a_plain_file_checks_each_column_once(monkeypatch):
    monkeypatch.setattr(batsim_jobs, "read_job", None)  # the job-by-job path is not taken
    assert len(workload_from_dict(_PLAIN_DOC, "w.json")) == 3


def test_usual_delay_profiles_are_checked_as_one_column():
    doc = json.loads(json.dumps(_PLAIN_DOC))
    doc["profiles"]["x"] = {"type": "delay", "delay": 1.5}
    doc["profiles"]["h"] = {"type": "delay", "delay": -2}  # the second job's: named
    with pytest.raises(WorkloadError, match=r"w\.json: profiles\.h\.delay must be >= 0, got -2"):
        workload_from_dict(doc, "w.json")
    doc["profiles"]["h"] = {"type": "delay", "delay": 2}
    for ref in (None, 3.0):
        jobs = workload_from_dict(doc, "w.json", ref).jobs
        assert [j.run_time_s for j in jobs] == [5.0, 2.0, 1.5] and not any(j.extra for j in jobs)
        by_job = json.loads(json.dumps(doc))
        by_job["jobs"][1]["note"] = "x"  # one unusual job: the file is read job by job
        expected = _job_values(workload_from_dict(by_job, "w.json", ref))
        expected[1] = expected[1][:14] + ({},) + expected[1][15:]
        assert _job_values(workload_from_dict(doc, "w.json", ref)) == expected


@pytest.mark.parametrize("field, value, message", [
    ("trace_submit_s", None, r"jobs\[2\]\.trace_submit_s must be a finite number, got None"),
    ("user_id", True, r"jobs\[2\]\.user_id must be an integer, got True"),
    ("subtime", -1, r"jobs\[2\]\.subtime must be >= 0, got -1"),
    ("walltime", float("nan"), r"jobs\[2\]\.walltime must be a finite number, got nan"),
    ("res", 0, r"jobs\[2\]\.res must be an integer >= 1, got 0"),
    ("profile", "y", r"jobs\[2\]\.profile 'y' is not in profiles"),
    ("subtime", 10**400, r"int too large to convert to float"),
])
def test_a_bad_column_value_is_named_by_job(field, value, message):
    doc = json.loads(json.dumps(_PLAIN_DOC))
    doc["jobs"][2][field] = value
    with pytest.raises((WorkloadError, OverflowError), match=message):
        workload_from_dict(doc, "w.json")


def test_jobs_without_extra_fields_leave_the_dependencies_module_unloaded(tmp_path):
    # only a job with fields beyond Batsim's and hdrm's can name preceding jobs
    import subprocess
    import sys

    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"nb_res": 2, "profiles": {"p": {"type": "delay", "delay": 5}},
                                 "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"},
                                          {"id": 2, "subtime": 1, "res": 2, "profile": "p"}]}))
    linked = tmp_path / "linked.json"
    linked.write_text(json.dumps({"nb_res": 2, "profiles": {"p": {"type": "delay", "delay": 5}},
                                  "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"},
                                           {"id": 2, "subtime": 1, "res": 2, "profile": "p",
                                            "dependencies": [1], "think_time": 3}]}))
    code = ("import sys; from hdrm.workload.batsim_json import read_batsim_json\n"
            "w = read_batsim_json(sys.argv[1])\n"
            "deps = w.dependencies\n"
            "print('hdrm.workload.dependencies' in sys.modules, None if deps is None else\n"
            "      (deps.job.tolist(), deps.pred.tolist(), deps.think_s.tolist()))")
    runs = [subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                           text=True, check=True).stdout.strip() for path in (plain, linked)]
    assert runs == ["False None", "True ([1], [0], [3.0])"]


def test_a_field_that_is_nearly_one_hdrm_reads_is_warned_about_once(caplog):
    # "walltme" was kept as an extra field without a word: the job had no walltime at all
    jobs = [{"id": 1, "subtime": 0, "res": 1, "walltme": 10, "profile": "d"},
            {"id": 2, "subtime": 0, "res": 1, "walltme": 10, "wall_time": 9, "profile": "d",
             "user": 3, "queue": "batch"}]
    with caplog.at_level("WARNING", logger="hdrm.workload.batsim_jobs"):
        work = workload_from_dict({"nb_res": 1, "jobs": jobs, "profiles": GOOD_PROFILES}, "w.json")
    assert [math.isinf(j.walltime_s) for j in work.jobs] == [True, True]  # read as Batsim does
    assert work.jobs[1].extra == {"walltme": 10, "wall_time": 9, "user": 3, "queue": "batch"}
    assert [r.getMessage() for r in caplog.records] == [
        f"w.json: jobs have a field {key!r}, which hdrm does not read (kept as an extra field); "
        "did you mean 'walltime'?" for key in ("wall_time", "walltme")]
