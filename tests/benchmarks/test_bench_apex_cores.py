"""benchmarks/bench_apex_cores.py: the runs of bench_apex.py at the same time, each pinned to cores
that no other run uses; the Ape-X seeds beyond the core sets wait for one to free up."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks import bench_apex_cores
from hdrm.errors import ConfigError

# A stand-in for bench_apex.py: writes the --json a one-seed run writes, with the cores it ran
# on and its start and end times; Ape-X seed 1 stops at once, the others take 1.5 s, seed 3 fails.
FAKE = '''
import json, os, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
apex = args["--apex-seeds"] != "none"
seed = int(args["--apex-seeds"] if apex else args["--peer-seeds"])
t0 = time.time()
if apex and seed == 3:
    sys.exit(1)
time.sleep(0.1 if apex and seed == 1 else 1.5)
row = {"seed": seed, "wall_s_to_target": 10.0 * (seed + 1), "best_validation": 30.0,
       "updates": 1, "updates_per_s": 1.0, "env_steps": 1, "decisions_per_s": 1.0,
       "load_1min_before": 0.0, "source": "peer run", "argv": sys.argv[1:],
       "affinity": sorted(os.sched_getaffinity(0)), "threads": os.environ["OMP_NUM_THREADS"],
       "t": [t0, time.time()]}
json.dump({"single_process": [] if apex else [row], "apex": [row] if apex else []},
          open(args["--json"], "w"))
'''


def test_core_lists_and_their_mistakes():
    assert bench_apex_cores.core_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    for text, says in [("0-3,2", "a core is named twice"), ("a-b", "'a-b' is not a core"),
                       ("5-2", "'5-2' is not a range low-high")]:
        with pytest.raises(ConfigError, match=says):
            bench_apex_cores.core_list(text)


def test_each_peer_gets_a_core_and_ape_x_the_sets_the_rest_holds():
    peers, apex = bench_apex_cores.plan(list(range(16)), 3, 4)
    assert peers == [(0,), (1,), (2,)]
    assert apex == [(3, 4, 5, 6), (7, 8, 9, 10), (11, 12, 13, 14)]  # core 15 left over
    with pytest.raises(ConfigError) as err:
        bench_apex_cores.plan([0, 1], 3, 4)
    assert str(err.value).startswith("2 cores: 3 single-process runs and one Ape-X run of 4 "
                                     "cores need 7;")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores to pin runs apart")
def test_runs_go_at_once_on_cores_of_their_own(tmp_path, monkeypatch, capsys):
    fake = tmp_path / "fake_bench.py"
    fake.write_text(FAKE, encoding="utf-8")
    monkeypatch.setattr(bench_apex_cores, "BENCH", fake)
    cores = sorted(os.sched_getaffinity(0))[:2]
    out = tmp_path / "out"
    code = bench_apex_cores.main(["--target", "30", "--peer-seeds", "0", "--apex-seeds", "0,1,2,3",
                                  "--cores-per-apex", "1", "--cores", f"{cores[0]},{cores[1]}",
                                  "--outdir", str(out), "--", "--validate-updates", "9"])
    assert code == 1  # seed 3 wrote no figures
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    peer, = summary["single_process"]
    apex = {r["seed"]: r for r in summary["apex"]}
    assert summary["failed_or_stopped"] == ["apex_3"] and sorted(apex) == [0, 1, 2]
    assert peer["affinity"] == [cores[0]] and peer["threads"] == "1"
    assert all(r["affinity"] == [cores[1]] == r["cores"] for r in apex.values())
    # the peer ran beside the Ape-X runs; these ran one after the other on their one core set
    assert peer["t"][0] < apex[0]["t"][1] and apex[0]["t"][1] <= apex[1]["t"][0]
    assert apex[1]["t"][1] <= apex[2]["t"][0]
    # every Ape-X run is given the options after "--" and its core set's CPUs; the peer is not
    assert all(r["argv"][-2:] == ["--validate-updates", "9"] for r in apex.values())
    assert "--validate-updates" not in peer["argv"]
    assert apex[0]["argv"][apex[0]["argv"].index("--cpus") + 1] == "1"
    assert summary["median_s"] == {"single_process": 10.0, "apex": 20.0}
    assert summary["met"] is False and summary["cpus"] == 2
    assert "apex_3" in capsys.readouterr().err
    assert (out / "apex_3.log").exists()
