"""GPU commands' bad input: one line naming the file, line, column and value, offering only a way
out the command has (issue 19: readers' errors; issue 25, point 17: the CLI's own terms), and
engine batsim refused on GPU inputs in Batsim's terms (not read as SWF)."""

from __future__ import annotations

import pytest

from hdrm.cli.main import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\ngpu-node,4000,16384,2,T4\ncpu-node,8000,16384,0,\n"
BAD_NODES = NODES.replace("8000,16384,0,", "8000,16384,zero,")
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "train,1000,1024,1,1000,T4,LS,Running,0,100,0\n"
        "infer,1000,1024,1,250,,BE,Running,10,40,10\n")
BAD_PODS = PODS.replace("1,250,,BE", "1,x,,BE")
NODE_ERROR = "{}:3: column 'gpu': expected an integer, got 'zero' (value 'zero'); fix the row\n"


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in (("nodes", NODES), ("bad_nodes", BAD_NODES), ("pods", PODS),
                       ("bad_pods", BAD_PODS)):
        paths[name] = tmp_path / f"{name}.csv"
        paths[name].write_text(text)
    return paths


def _error(capsys, prog: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"hdrm {prog}: error: ") and err.count("\n") == 1, err
    return err.removeprefix(f"hdrm {prog}: error: ")


def test_a_bad_node_row_of_from_openb_offers_no_skip(files, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["platform", "from-openb", str(files["bad_nodes"]), "-o", str(out)]) == 2
    assert _error(capsys, "platform") == NODE_ERROR.format(files["bad_nodes"])
    assert not out.exists()


def test_a_bad_node_row_of_a_replay_is_not_skipped_by_no_strict(files, tmp_path, capsys):
    args = ["replay", "--platform", str(files["bad_nodes"]), "--workload", str(files["pods"]),
            "--outdir", str(tmp_path / "r")]
    for extra in ([], ["--no-strict"]):  # the old message offered --no-strict, which failed again
        assert main(args + extra) == 2
        assert _error(capsys, "replay") == NODE_ERROR.format(files["bad_nodes"])
    # the pod list's rows are still skipped and counted with --no-strict
    args = ["replay", "--platform", str(files["nodes"]), "--workload", str(files["bad_pods"]),
            "--outdir", str(tmp_path / "r2")]
    assert main(args) == 2
    assert _error(capsys, "replay").endswith(
        "'x' (value 'x'); fix the row, or rerun with --no-strict to skip bad rows (counted)\n")
    assert main(args + ["--no-strict"]) == 0
    assert "tasks finished / rejected  1 / 0" in capsys.readouterr().out


@pytest.mark.parametrize("which", ["bad_nodes", "bad_pods"])
def test_fragmentation_reads_both_lists_whole_and_says_so(files, tmp_path, capsys, which):
    nodes = files["bad_nodes" if which == "bad_nodes" else "nodes"]
    pods = files["bad_pods" if which == "bad_pods" else "pods"]
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd",
                 "--seeds", "1", "--workload-tuning-ratio", "0",
                 "--outdir", str(tmp_path / "f")]) == 2
    err = _error(capsys, "fragmentation")
    assert err.startswith(f"{files[which]}:3: column ") and err.endswith("; fix the row\n")
    assert "strict" not in err  # the Python argument strict=False was named before


@pytest.mark.parametrize("platform", ["nodes", "json"])
def test_engine_batsim_on_gpu_inputs_says_batsim_cannot_express_gpus(files, tmp_path, capsys,
                                                                      platform):
    path = files["nodes"]
    if platform == "json":
        path = tmp_path / "gpu.json"
        assert main(["platform", "from-openb", str(files["nodes"]), "-o", str(path)]) == 0
        capsys.readouterr()
    assert main(["replay", "--platform", str(path), "--workload", str(files["pods"]),
                 "--policy", "fifo", "--engine", "batsim", "--outdir", str(tmp_path / "r")]) == 2
    # the pod list was read as an SWF trace before ("found 1 fields, SWF needs 18")
    assert _error(capsys, "replay") == (
        f"{path}: 2 GPUs (2 T4); Batsim cannot express GPUs (its platforms have compute hosts "
        "only), so engine 'batsim' cannot run this platform: use engine 'builtin', or 'hdrm "
        "fragmentation' to place GPU tasks\n")
    assert not (tmp_path / "r").exists()


def test_engine_batsim_with_a_gpu_workload_on_a_cpu_platform_names_the_platform(files, tmp_path,
                                                                                 capsys):
    cpu = tmp_path / "cpu.json"
    cpu.write_text('{"name": "c", "clusters": [{"name": "c", "network": "infiniband_edr", '
                   '"nodes": [{"type": "dell_r640_gold6148", "count": 1}]}]}')
    assert main(["replay", "--platform", str(cpu), "--workload", str(files["pods"]),
                 "--engine", "batsim", "--outdir", str(tmp_path / "r")]) == 2
    assert _error(capsys, "replay") == (
        f"{cpu}: the platform has no GPU; an openb or Gavel workload needs a GPU platform "
        "(hdrm platform from-openb NODES.csv -o P.json)\n")
