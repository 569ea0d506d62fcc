"""``hdrm sweep`` on the folder's shared local Ray (2 CPUs, conftest.py; shut down after use):
the same outputs as in-process, resume after an interruption, run errors as themselves, and a
local Ray that listens on the loopback interface only. Skipped when Ray is not installed."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest

pytest.importorskip("ray")

from hdrm.distributed import ray_backend  # noqa: E402
from hdrm.distributed.runner import DONE_FILE  # noqa: E402
from hdrm.distributed.sweep import run_sweep  # noqa: E402
from hdrm.errors import ConfigError, HdrmError, WorkloadError  # noqa: E402

from .helpers import outputs, write_sweep  # noqa: E402


def test_ray_gives_the_same_results_as_in_process(ray, tmp_path):
    path = write_sweep(tmp_path)
    on_ray = run_sweep(path, tmp_path / "ray", progress=False)
    serial = run_sweep(path, tmp_path / "serial", backend="serial", progress=False)
    assert (on_ray.backend, on_ray.parallel, on_ray.nb_run) == ("ray", 2, 8)
    assert (serial.backend, serial.nb_run) == ("serial", 8)
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "serial")
    assert ray.is_initialized()  # a Ray the caller started is left running


def test_an_interrupted_ray_sweep_resumes(ray, tmp_path, monkeypatch):
    path = write_sweep(tmp_path)
    out = tmp_path / "out"
    seen = []

    def stop_after_two(ray_module, runs, runs_dir, on_done, max_parallel):
        def counting(info):
            seen.append(info["name"])
            on_done(info)
            if len(seen) == 2:
                raise KeyboardInterrupt
        real_run_ray(ray_module, runs, runs_dir, counting, max_parallel)

    real_run_ray = ray_backend.run_ray
    monkeypatch.setattr(ray_backend, "run_ray", stop_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(path, out, max_parallel=1, progress=False)
    monkeypatch.undo()
    assert {p.name for p in (out / "runs").iterdir() if (p / DONE_FILE).is_file()} >= set(seen)
    report = run_sweep(path, out, progress=False)
    assert report.nb_skipped >= 2 and report.nb_skipped + report.nb_run == 8
    run_sweep(path, tmp_path / "clean", backend="serial", progress=False)
    assert outputs(out) == outputs(tmp_path / "clean")


def test_a_worker_killed_mid_run_is_replaced_and_the_run_retried(ray, tmp_path):
    from hdrm.distributed.runner import execute_reporting
    from hdrm.distributed.spec import expand, load_sweep

    path = write_sweep(tmp_path, policies=["fcfs"], seeds=[0])
    runs = expand(load_sweep(path))
    killed = tmp_path / "killed"
    killed.mkdir()

    def dies_once(run, runs_dir):  # pickled by value into the workers
        import os
        import signal
        from pathlib import Path

        marker = Path(killed) / run.name
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9 of the worker, mid-run
        return execute_reporting(run, runs_dir)

    runs_dir = tmp_path / "out" / "runs"
    runs_dir.mkdir(parents=True)
    done = []
    ray_backend.run_ray(ray, runs, runs_dir, done.append, 2, function=dies_once)
    assert sorted(info["name"] for info in done) == sorted(run.name for run in runs)
    assert len({p.read_text() for p in killed.iterdir()}) == len(runs)  # each worker died once
    run_sweep(path, tmp_path / "clean", backend="serial", progress=False)
    for run in runs:
        assert ((runs_dir / run.name / "out_jobs.csv").read_bytes()
                == (tmp_path / "clean" / "runs" / run.name / "out_jobs.csv").read_bytes())


def test_a_worker_that_always_dies_is_one_line_naming_the_run(ray, tmp_path):
    from hdrm.distributed.spec import expand, load_sweep

    path = write_sweep(tmp_path, policies=["fcfs"], backfill=["none"], seeds=[0])
    (run,) = expand(load_sweep(path))

    def always_dies(run, runs_dir):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(HdrmError, match=rf"^run {run.name}: Ray could not run it "
                                        r"\(\w+: .*\); its worker was retried 2 times; run the "
                                        r"same command again to resume$"):
        ray_backend.run_ray(ray, [run], tmp_path, lambda info: None, 1, function=always_dies)


def test_a_failing_run_raises_its_own_error(ray, tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 0 10 4 -1 -1 4 10 -1 1 1 1 1 1 1 -1\n", encoding="utf-8")  # 17 fields
    path = write_sweep(tmp_path, traces=[str(bad)], policies=["fcfs"], backfill=["none"])
    with pytest.raises(WorkloadError, match=r"bad.swf:1: found 17 fields, SWF needs 18: .*; fix "
                       r"the line, or set \"strict\": false in the sweep file") as info:
        run_sweep(path, tmp_path / "out", progress=False)
    assert "Traceback" not in str(info.value) and "\n" not in str(info.value)
    assert not [p for p in (tmp_path / "out" / "runs").iterdir()]  # nothing half-written left


def _listening_ports() -> dict[int, str]:
    """Port -> local address of every listening TCP socket of this machine (/proc/net)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state != "0A":  # LISTEN
                continue
            address, port = local.split(":")
            raw = bytes.fromhex(address)
            if len(raw) == 16:  # four little-endian 32-bit words
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                ip = ipaddress.IPv6Address(raw)
                ip = ip.ipv4_mapped or ip
            else:
                ip = ipaddress.IPv4Address(raw[::-1])
            found[int(port, 16)] = str(ip)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").is_file(), reason="needs Linux's /proc/net")
def test_a_local_ray_listens_on_the_loopback_interface_only(ray):
    context = ray.get_runtime_context()
    gcs_host, gcs_port = context.gcs_address.rsplit(":", 1)
    node = next(n for n in ray.nodes() if n["Alive"])
    ports = {int(gcs_port), node["NodeManagerPort"], node["ObjectManagerPort"]}
    listening = _listening_ports()
    assert gcs_host == "127.0.0.1" and node["NodeManagerAddress"] == "127.0.0.1"
    assert {port: listening.get(port) for port in ports} == {port: "127.0.0.1" for port in ports}
    assert ray_backend.LOCAL_NODE_ENV not in os.environ  # the start's setting is not left behind


def test_an_address_where_no_head_answers_fails_fast_in_one_line(tmp_path):
    import socket
    import time

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = write_sweep(tmp_path)
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=rf"^--address: no Ray head answers at 127.0.0.1:{port} "
                                          r"\(Connection refused\); start one with 'ray start "
                                          r"--head' there"):
        run_sweep(path, tmp_path / "out", address=f"127.0.0.1:{port}", progress=False)
    assert time.perf_counter() - start < 5
    with pytest.raises(ConfigError, match=r"--address: expected 'auto' or HOST:PORT of a Ray "
                                          r"head \(ray start --head prints it\), got 'head:x'"):
        ray_backend.check_reachable("head:x")



def test_a_local_rays_workers_run_at_this_processs_priority(ray):
    """Ray's default would add 15 to its workers' niceness, so that on a machine shared with
    other work a rollout worker or a sweep's task got a fraction of a core while the same work in
    this process got a whole one; a local Ray started by hdrm leaves their priority as this
    process's (RAY_worker_niceness, when set, is Ray's to apply)."""
    expected = os.nice(0) + int(os.environ.get(ray_backend.NICENESS_ENV, "0"))

    @ray.remote(num_cpus=1)
    def task_niceness() -> int:
        return os.nice(0)

    @ray.remote(num_cpus=1)
    class Actor:
        def niceness(self) -> int:
            return os.nice(0)

    actor = Actor.remote()
    try:
        assert ray.get([task_niceness.remote(), actor.niceness.remote()]) == [expected] * 2
    finally:
        ray.kill(actor)


def test_runs_go_to_ray_in_chunks_with_the_outputs_of_single_runs(ray, tmp_path):
    from hdrm.distributed.runner import execute_reporting
    from hdrm.distributed.spec import expand, load_sweep

    path = write_sweep(tmp_path, seeds=list(range(10)), nb_jobs=10)
    runs = expand(load_sweep(path))  # 40 runs

    def tagged(run, runs_dir):  # pickled by value into the workers
        import ray as module

        info = execute_reporting(run, runs_dir)
        return {**info, "task": module.get_runtime_context().get_task_id()}

    runs_dir = tmp_path / "out" / "runs"
    runs_dir.mkdir(parents=True)
    done = []
    ray_backend.run_ray(ray, runs, runs_dir, done.append, 2, function=tagged)
    assert sorted(info["name"] for info in done) == sorted(run.name for run in runs)
    # by hand (2 at a time): chunks of 5, 4, 3, 3, 3, 2, 2, 2, 2 runs, then 14 of one
    assert len({info["task"] for info in done}) == 23
    run_sweep(path, tmp_path / "clean", backend="serial", progress=False)
    for run in runs:
        assert ((runs_dir / run.name / "out_jobs.csv").read_bytes()
                == (tmp_path / "clean" / "runs" / run.name / "out_jobs.csv").read_bytes())
