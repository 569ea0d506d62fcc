"""``hdrm replay --tenants``: SLA summary lines and out_sla.csv on a three-job case by hand, EDF
against FCFS, and one-line errors for SLA policies without tenants and for bad tenant inputs.

One processor, no contention, SLA relative:3. Job 1 (user 1) submits at 0, runs 100 s, deadline
300; job 2 (user 2) at 10, 50 s, deadline 160; job 3 (user 2) at 20, 10 s, deadline 50.
FCFS runs 1, 2, 3 (ends 100, 150, 160): job 3 misses by 110 s; NTT 1, 2.8, 14.
EDF runs 1, 3, 2 (ends 100, 110, 160): job 3 misses by 60 s; NTT 1, 3, 9.
Fairness: user 1's progress is 1; user 2's (1/2.8 + 1/14) / 2 = 0.2143 under FCFS, Jain
1.2143^2 / (2 (1 + 0.2143^2)) = 0.7049, max/min 4.667; (1/3 + 1/9) / 2 = 0.2222 under EDF,
Jain 0.7118, max/min 4.5.
"""

from __future__ import annotations

import pytest

from hdrm.cli.main import main

LINES = ["1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 -1 -1 -1 -1",
         "2 10 0 50 1 -1 -1 1 100 -1 1 2 1 -1 -1 -1 -1 -1",
         "3 20 0 10 1 -1 -1 1 20 -1 1 2 1 -1 -1 -1 -1 -1"]


@pytest.fixture
def swf(tmp_path):
    path = tmp_path / "three.swf"
    path.write_text("; MaxProcs: 1\n" + "\n".join(LINES) + "\n")
    return str(path)


def _replay(swf, tmp_path, capsys, *argv):
    status = main(["replay", "--workload", swf, "--homogeneous-procs", "1", "--contention", "none",
                   "--outdir", str(tmp_path / "out"), *argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("policy,tardiness,antt,overall", [
    ("fcfs", "36.7 s / 110.0 s", "5.933 / 1.429",
     "overall,,,3,3,0.6666666667,0.3333333333,36.66666667,110,5.933333333,1.428571429,0.4761904762,"
     "0.7048780488,4.666666667"),
    ("edf", "20.0 s / 60.0 s", "4.333 / 1.444",
     "overall,,,3,3,0.6666666667,0.3333333333,20,60,4.333333333,1.444444444,0.4814814815,"
     "0.7117647059,4.5"),
])
def test_sla_lines_and_out_sla_csv_by_hand(swf, tmp_path, capsys, policy, tardiness, antt, overall):
    status, out, err = _replay(swf, tmp_path, capsys, "--policy", policy, "--tenants", "user")
    assert status == 0 and err == ""
    lines = {line.split("  ")[1].strip(): line.split("  ")[-1].strip()
             for line in out.splitlines()[1:]}
    assert lines["tenants"] == "2"
    assert lines["SLA satisfaction / deadline misses"] == "66.7% / 33.3% of 3 jobs"
    assert lines["tardiness mean / p99"] == tardiness
    assert lines["ANTT / STP"] == antt
    rows = (tmp_path / "out" / "out_sla.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["tenant", "user 1", "user 2", "overall"]
    assert rows[-1] == overall


def test_no_tenants_no_sla_lines(swf, tmp_path, capsys):
    status, out, _ = _replay(swf, tmp_path, capsys)
    assert status == 0 and "SLA" not in out and not (tmp_path / "out" / "out_sla.csv").exists()


@pytest.mark.parametrize("argv,message", [
    (["--policy", "edf"], "--policy: edf orders jobs by tenant and SLA; give --tenants"),
    (["--policy", "fair_share-high_gflops"], "--policy: fair_share orders jobs by tenant"),
    (["--tenants", "nowhere.csv"], "--tenants: no such file 'nowhere.csv'"),
    (["--tenants", "user", "--sla", "relative:0"],
     "--sla (relative): expected a positive number, got '0'"),
    (["--tenants", "user", "--policy", "sla_class"], "policy 'sla_class': no tenant has an SLA class"),
])
def test_one_line_errors(swf, tmp_path, capsys, argv, message):
    status, _, err = _replay(swf, tmp_path, capsys, *argv)
    assert status == 2 and err.count("\n") == 1 and message in err


def test_compare_shows_the_sla_columns_of_runs_with_tenants(swf, tmp_path, capsys):
    for policy, tenants in (("fcfs", ["--tenants", "user"]), ("edf", ["--tenants", "user"]),
                            ("sjf", [])):
        assert main(["replay", "--workload", swf, "--homogeneous-procs", "1", "--contention",
                     "none", "--policy", policy, *tenants, "--outdir",
                     str(tmp_path / policy)]) == 0
    capsys.readouterr()
    assert main(["compare", *(str(tmp_path / p) for p in ("fcfs", "edf", "sjf")), "--format",
                 "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    header = rows[0].split(",")
    assert header[-8:] == ["sla_satisfaction", "deadline_miss_rate", "tardiness_mean_s",
                           "tardiness_p99_s", "antt", "stp", "jain_fairness", "max_min_ratio"]
    assert rows[1].split(",")[-8:] == ["0.666667", "0.333333", "36.666667", "110.000000",
                                       "5.933333", "1.428571", "0.704878", "4.666667"]
    assert rows[2].split(",")[-6:-4] == ["20.000000", "60.000000"]  # EDF's tardiness
    assert rows[3].split(",")[-8:] == [""] * 8  # no tenants: empty


def test_gpu_replay_with_qos_tenants(tmp_path, capsys):
    import csv
    from collections import Counter
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "workloads"
    out = tmp_path / "gpu"
    assert main(["replay", "--platform", str(root / "openb_nodes_41.csv"), "--workload",
                 str(root / "openb_pods_400.csv"), "--policy", "fifo-fgd", "--tenants", "qos",
                 "--sla", "relative:1", "--outdir", str(out)]) == 0
    assert "SLA satisfaction / deadline misses" in capsys.readouterr().out
    pods = Counter(row["qos"] for row in csv.DictReader((root / "openb_pods_400.csv").open()))
    sla = {r["tenant"]: r for r in csv.DictReader((out / "out_sla.csv").open())}
    assert {t: int(r["jobs"]) for t, r in sla.items() if t != "overall"} == dict(pods)
    # deadline = submit + run time alone: met exactly by the tasks that completed without waiting
    jobs = list(csv.DictReader((out / "out_jobs.csv").open()))
    met = sum(1 for j in jobs if j["final_state"] == "COMPLETED_SUCCESSFULLY"
              and float(j["waiting_time"]) == 0)
    assert 0 < met < len(jobs) == 400
    assert float(sla["overall"]["sla_satisfaction"]) == met / 400
