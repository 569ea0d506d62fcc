"""hdrm serve -m/--master-host and -r/--add-role-to-hosts against the real Batsim 4.2.1: the same
messages and out_jobs.csv rows where the binary runs (a file of clusters only, its master a node;
storage hosts listed in SIMULATION_BEGINS), a one-line refusal where the binary aborts."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, fcfs
from real_batsim import real_batsim
from test_serve_workloads import fcfs_with_calls, seeded_workload
from test_serve_workloads_latency import _assert_same

from hdrm.cli.main import main

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1">')


def cluster_only(path: Path) -> Path:
    """Eight nodes h0..h7 and nothing else: Batsim runs it only with -m (or -r NODE:master)."""
    path.write_text(f'{HEAD}<cluster id="c" prefix="h" suffix="" radical="0-7" speed="1Gf" '
                    'bw="125MBps" lat="50us" bb_bw="2.25GBps" bb_lat="20us"/></platform>\n')
    return path


def hosts_with_storage(path: Path) -> Path:
    """master_host, a, c, d and b (role=storage), each pair over its own link."""
    names = ["master_host", "a", "b", "c", "d"]
    hosts = "".join(f'<host id="{n}" speed="1Gf">'
                    + ('<prop id="role" value="storage"/>' if n == "b" else "") + "</host>"
                    for n in names)
    pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1:]]
    links = "".join(f'<link id="{x}-{y}" bandwidth="1GBps" latency="{10 * (i + 1)}us"/>'
                    for i, (x, y) in enumerate(pairs))
    routes = "".join(f'<route src="{x}" dst="{y}"><link_ctn id="{x}-{y}"/></route>'
                     for x, y in pairs)
    path.write_text(f'{HEAD}<zone id="z" routing="Full">{hosts}{links}{routes}</zone></platform>\n')
    return path


def _session(platform: Path, workload: Path, prefix: Path, args: list[str], nb_compute: int,
             real: bool) -> list[dict]:
    base = fcfs(nb_compute)
    scheduler = RawScheduler(lambda doc: fcfs_with_calls(doc, base))
    scheduler.start()
    common = ["-p", str(platform), "-w", str(workload), "-e", str(prefix),
              "-s", scheduler.endpoint.replace("localhost", "127.0.0.1"), *args]
    try:
        if real:
            done = subprocess.run([BATSIM, "-q", *common], capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr[-3000:]
        else:
            assert main(["serve", *common]) == 0
    finally:
        scheduler.stop()
    assert scheduler.error is None, scheduler.error
    return [json.loads(text) for text in scheduler.received]


@pytest.mark.parametrize(("args", "nb_compute", "nb_storage"), [
    (["-m", "h0"], 7, 0),
    (["-m", "h3", "-r", "h5,h6:compute_node"], 7, 0),
    (["-r", "h7:master", "-r", "h1,h2:storage"], 5, 2),
    (["-m", "h0", "-r", "nohost:storage"], 7, 0),
], ids=["m", "m-r-compute", "r-master-storage", "r-unknown-host"])
def test_a_file_of_clusters_only_runs_as_the_binary_runs_it(tmp_path, args, nb_compute,
                                                            nb_storage):
    platform = cluster_only(tmp_path / "platform.xml")
    for seed in (1, 2):
        workload = seeded_workload(tmp_path / "w.json", seed)
        theirs = _session(platform, workload, tmp_path / "real", args, nb_compute, True)
        ours = _session(platform, workload, tmp_path / "ours", args, nb_compute, False)
        begins = theirs[0]["events"][0]["data"]
        assert (begins["nb_compute_resources"], begins["nb_storage_resources"]) \
            == (nb_compute, nb_storage)
        _assert_same(tmp_path, ours, theirs)


@pytest.mark.parametrize("args", [[], ["-m", "c", "-r", "master_host:compute_node"]],
                         ids=["file-role", "m-swap"])
def test_a_storage_host_is_listed_as_the_binary_lists_it(tmp_path, args):
    platform = hosts_with_storage(tmp_path / "platform.xml")
    workload = seeded_workload(tmp_path / "w.json", 3)
    theirs = _session(platform, workload, tmp_path / "real", args, 3, True)
    ours = _session(platform, workload, tmp_path / "ours", args, 3, False)
    assert [r["name"] for r in theirs[0]["events"][0]["data"]["storage_resources"]] == ["b"]
    _assert_same(tmp_path, ours, theirs)


@pytest.mark.parametrize(("platform_of", "args", "binary_says", "we_say"), [
    (cluster_only, ["-m", "nohost"], 'Cannot find the "master" role',
     r"-m/--master-host nohost: no master host \(no host is named 'nohost'\)"),
    (cluster_only, ["-m", "h0", "-r", "h1:master"], "There are two master hosts",
     r"2 master hosts \(h0, h1:"),
    (cluster_only, ["-m", "h0", "-r", "h1:boss"],
     "Cannot create any role from string description 'boss'",
     r"-r/--add-role-to-hosts 'h1:boss': role 'boss', which Batsim 4 refuses"),
    (cluster_only, ["-m", "h0", "-r", "h1"], "should only contain one ':' character",
     r"-r/--add-role-to-hosts 'h1': 0 ':' characters"),
    (hosts_with_storage, ["-m", "b", "-r", "master_host:compute_node"],
     "Cannot create any role from string description 'storage,master'",
     r"-m/--master-host b: host 'b' already has the property role='storage', so Batsim 4 "
     r"reads the role 'storage,master'"),
], ids=["m-no-host", "two-masters", "bad-role", "no-colon", "role-on-a-role"])
def test_what_the_binary_aborts_on_is_refused_in_one_line(tmp_path, capsys, platform_of, args,
                                                          binary_says, we_say):
    platform = platform_of(tmp_path / "platform.xml")
    workload = seeded_workload(tmp_path / "w.json", 1)
    common = ["-p", str(platform), "-w", str(workload), "-e", str(tmp_path / "x"),
              "-s", "tcp://127.0.0.1:9", *args]
    done = subprocess.run([BATSIM, *common], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and binary_says in done.stderr
    assert main(["serve", *common]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.search(we_say, err), err
