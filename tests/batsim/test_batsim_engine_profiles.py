"""The profiles the batsim engine refuses, and why: it gives Batsim hdrm's export of the platform
(one host per core, speeds and power states, no links between the hosts), so a job whose
profile communicates would run there as if the network were infinitely fast.

The fast tests check the refusals (one line: the file, what the jobs need, a few jobs, the fix);
the slow ones run the real binary: Batsim's own ``small_various`` case (a ``parallel`` job with a
communication matrix) takes 2.08 s on its platform file and 0.10 s on hdrm's export, and both
entry points of the batsim engine now stop with one line instead of running it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from batsim_helpers import binary_run
from real_batsim import real_batsim

from hdrm.batsim.process import run_batsim
from hdrm.errors import WorkloadError
from hdrm.platform.simgrid import platform_from_simgrid, write_simgrid_xml
from hdrm.workload.batsim_json import check_supported, read_batsim_json

HERE = Path(__file__).resolve().parent
SMALL_VARIOUS = HERE / "data" / "golden" / "small_various"
REPO = HERE.parents[1]
BATSIM, WHY_NOT = real_batsim()

#: One profile each, and what the refusal says about it.
REFUSED = {
    "parallel with a communication matrix": (
        {"type": "parallel", "cpu": [1e6, 1e6], "com": [0, 5e6, 0, 0]},
        "profile type 'parallel' with com > 0"),
    "parallel_homogeneous with com": (
        {"type": "parallel_homogeneous", "cpu": 1e6, "com": 1e3},
        "profile type 'parallel_homogeneous' with com > 0"),
    "parallel_homogeneous_total with com": (
        {"type": "parallel_homogeneous_total", "cpu": 1e6, "com": 1e3},
        "profile type 'parallel_homogeneous_total' with com > 0"),
    "smpi": ({"type": "smpi", "trace": "smpi/traces.txt"}, "profile type 'smpi'"),
    "usage_trace": ({"type": "usage_trace", "trace": "u/traces.txt"},
                    "profile type 'usage_trace'"),
    "pfs": ({"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e6, "bytes_to_write": 0,
             "storage": "pfs"}, "profile type 'parallel_homogeneous_pfs'"),
}


def _workload(tmp_path: Path, profile: dict, jobs: int = 4) -> Path:
    doc = {"nb_res": 2, "profiles": {"d": {"type": "delay", "delay": 5}, "p": profile},
           "jobs": [{"id": "d0", "subtime": 0, "res": 1, "profile": "d"}]
           + [{"id": f"j{i}", "subtime": i, "res": 2, "profile": "p"} for i in range(jobs)]}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    return path


def _platform():
    return platform_from_simgrid(SMALL_VARIOUS / "platform.xml")[0]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_run_batsim_refuses_before_looking_for_batsim(case, tmp_path):
    profile, what = REFUSED[case]
    workload = read_batsim_json(_workload(tmp_path, profile))
    with pytest.raises(WorkloadError) as refused:  # the binary need not exist
        run_batsim(_platform(), workload, tmp_path / "run", None,
                   binary=str(tmp_path / "no-batsim"))
    text = str(refused.value)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'w.json'}: {what} (4 jobs: 'j0', 'j1', 'j2', ...): "
                           "hdrm's engines do not model the platform's network")
    assert "'d0'" not in text and "with com 0, or run the workload with Batsim on your own " \
        "platform file" in text
    assert not (tmp_path / "run").exists()


def test_a_composed_job_with_a_communicating_part_names_profile_and_part(tmp_path):
    doc = {"nb_res": 2, "jobs": [{"id": 7, "subtime": 0, "res": 2, "profile": "seq"}],
           "profiles": {"net": {"type": "parallel_homogeneous", "cpu": 1e6, "com": 1},
                        "d": {"type": "delay", "delay": 1},
                        "seq": {"type": "composed", "repeat": 2, "seq": ["d", "net"]}}}
    (tmp_path / "w.json").write_text(json.dumps(doc))
    workload = read_batsim_json(tmp_path / "w.json")
    with pytest.raises(WorkloadError, match=r"w\.json: profile 'seq' has a part 'net' with com > 0 "
                                            r"\(SimGrid's network model\) \(1 jobs: 7\): hdrm's"):
        run_batsim(_platform(), workload, tmp_path / "run", None, binary="no-batsim")


def test_parallel_without_communication_passes_the_check(tmp_path):
    """Batsim computes a ``parallel`` cpu vector without the network: the engine runs it (here
    the next check, finding Batsim, fails)."""
    profile = {"type": "parallel", "cpu": [1e6, 2e6], "com": [0, 0, 0, 0]}
    workload = read_batsim_json(_workload(tmp_path, profile))
    with pytest.raises(Exception, match="no-batsim") as refused:
        run_batsim(_platform(), workload, tmp_path / "run", None,
                   binary=str(tmp_path / "no-batsim"))
    assert not isinstance(refused.value, WorkloadError)


def test_builtin_refusal_names_the_batsim_engine_only_where_it_runs_the_jobs(tmp_path):
    quiet = read_batsim_json(_workload(tmp_path, {"type": "parallel", "cpu": [1e6, 1e6],
                                                  "com": [0, 0, 0, 0]}))
    with pytest.raises(WorkloadError, match=r"unsupported profile type 'parallel' \(4 jobs: "
                                            r"'j0', 'j1', 'j2', \.\.\.\); .*\(use the batsim "
                                            r"engine, 'hdrm replay --engine batsim'"):
        check_supported(quiet)
    talking = read_batsim_json(_workload(tmp_path, REFUSED["parallel with a communication "
                                                           "matrix"][0]))
    with pytest.raises(WorkloadError) as refused:
        check_supported(talking)
    assert "batsim engine gives Batsim hdrm's export" in str(refused.value)
    assert "use the batsim engine" not in str(refused.value)


def test_the_environment_sends_parallel_jobs_to_a_replay(tmp_path):
    """The environment's machine mirror follows no ``parallel`` cpu vector: its refusal sends
    the user to the fixed-policy replay, not to the engine they are on."""
    from hdrm.batsim.engine import check_mirror_profiles

    workload = read_batsim_json(_workload(tmp_path, {"type": "parallel", "cpu": [1e6, 1e6],
                                                     "com": [0, 0, 0, 0]}, jobs=1))
    with pytest.raises(WorkloadError, match=r"w\.json: profile type 'parallel' \(1 jobs: 'j0'\): "
                                            r"the batsim engine's environment follows only .*"
                                            r"\('hdrm replay --engine batsim'\)"):
        check_mirror_profiles(workload)
    check_mirror_profiles(read_batsim_json(_workload(tmp_path, {"type": "delay", "delay": 2})))


# ---------------------------------------------------------------------------- the real binary
def _start_all(doc: dict) -> str:
    """Start every submitted job on resources 0..res-1 (one at a time here)."""
    out = [{"timestamp": doc["now"], "type": "EXECUTE_JOB",
            "data": {"job_id": e["data"]["job_id"], "alloc": f"0-{e['data']['job']['res'] - 1}"}}
           for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
    return json.dumps({"now": doc["now"], "events": out})


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_the_export_drops_the_network_a_parallel_job_needs(tmp_path):
    """Why it is refused: the binary runs Batsim's 'simple' job (4 hosts, 5e6 flops on one, a
    communication matrix) in 2.08 s on small_platform.xml and in 0.10 s on hdrm's export."""
    doc = json.loads((SMALL_VARIOUS / "workload.json").read_text())
    doc["jobs"] = [{"id": "simple", "subtime": 0, "res": 4, "profile": "simple"}]
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(doc))
    times = {}
    export = write_simgrid_xml(_platform(), tmp_path / "export.xml")
    for name, platform in (("file", SMALL_VARIOUS / "platform.xml"), ("export", export)):
        (tmp_path / name).mkdir()
        done = binary_run(BATSIM, _start_all, platform, workload, tmp_path / name / "out")
        assert done.returncode == 0, done.stderr[-2000:]
        row = (tmp_path / name / "out_jobs.csv").read_text().splitlines()[1].split(",")
        times[name] = float(row[9])  # execution_time
    assert times["file"] == pytest.approx(2.083954, abs=1e-5)
    assert times["export"] == pytest.approx(5e6 / 48.492e6, abs=1e-5)  # the cpu part alone


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_replay_and_launch_stop_in_one_line_on_batsims_own_case(tmp_path):
    common = ["--platform", str(SMALL_VARIOUS / "platform.xml"), "--workload",
              str(SMALL_VARIOUS / "workload.json")]
    replay = _cli(tmp_path, "-m", "hdrm.cli.main", "replay", "--engine", "batsim", "--batsim",
                  BATSIM, *common, "--policy", "first-high_gflops", "--outdir", "rp")
    options = {"workload_file_path": str(SMALL_VARIOUS / "workload.json"),
               "platform_file_path": str(SMALL_VARIOUS / "platform.xml"), "engine": "batsim",
               "batsim": {"binary": BATSIM},
               "pybatsim": {"agent": {"type": "classic", "run": "test", "episodes": 1}}}
    (tmp_path / "options.json").write_text(json.dumps(options))
    launch = _cli(tmp_path, "-m", "hdrm.launcher", str(REPO / "agents" / "classic.py"),
                  "options.json", "--outdir", "out", "--quiet")
    for done, prog in ((replay, "hdrm replay"), (launch, "hdeeprm-launch")):
        assert done.returncode == 2, done.stderr[-2000:]
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith(f"{prog}: error: {SMALL_VARIOUS / 'workload.json'}: "
                                      "profile type 'parallel' with com > 0 (2 jobs: 'simple', "
                                      "'reach_walltime'); ")
    assert not (tmp_path / "rp" / "out_jobs.csv").exists()
