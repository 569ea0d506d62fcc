"""A real ``hdeeprm-launch`` process stopped by SIGINT, SIGTERM and SIGKILL, and two launches into
one output folder: nothing learned is lost, nothing half-written is left, every wait is bounded."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from hdrm.agents.checkpoint import read_checkpoint
from hdrm.launch.outdir import LOCK_NAME, TEMP_PATTERN
from hdrm.launcher import main

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "agents" / "reinforce.py"
#: Seconds any wait of these tests may last.
WAIT_S = 60
#: Runs a launcher whose ``SLOW_SAVE``-th checkpoint write stops half-way (4 MB written) and hangs:
#: a process to kill -9 in the middle of a save.
SLOW_SAVE = """
import sys, time, torch
import hdrm.launcher as launcher
real, calls = torch.save, [0]
def save(obj, handle):
    calls[0] += 1
    if calls[0] == int(sys.argv[1]):
        handle.write(b"x" * 4_000_000)
        handle.flush()
        time.sleep(300)
    real(obj, handle)
torch.save = save
sys.exit(launcher.main(sys.argv[2:]))
"""


def read_episodes_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def options(folder: Path, episodes: int = 100_000, **agent) -> Path:
    """The REINFORCE example on 20-job episodes with ``episodes`` per run (absolute paths)."""
    source = ROOT / "examples" / "reinforce" / "options.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    for key in ("workload_file_path", "platform_file_path"):
        data[key] = str((source.parent / data[key]).resolve())
    data["nb_jobs"] = 20
    data["pybatsim"]["agent"].update({"episodes": episodes, "hidden": 16, **agent})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "options.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def start(args: list, err_path: Path, script: str | None = None) -> subprocess.Popen:
    """A launcher process whose stderr goes to a file (not a terminal) and stdout to a pipe."""
    head = [sys.executable, "-c", script] if script else [sys.executable, "-m", "hdrm.launcher"]
    return subprocess.Popen([*head, *[str(a) for a in args]], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=open(err_path, "w", encoding="utf-8"), text=True)


def wait_for(condition, what: str, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if process is not None and process.poll() is not None:
            pytest.fail(f"the launcher ended (status {process.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {WAIT_S} s")
        time.sleep(0.05)


def episodes_logged(err_path: Path, count: int):
    """A condition: ``count`` episode progress lines are in the stderr file."""
    return lambda: err_path.read_text(encoding="utf-8").count("): return ") >= count


def finish(process: subprocess.Popen) -> tuple[int, str]:
    try:
        out, _ = process.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"the launcher did not end within {WAIT_S} s of the signal")
    return process.returncode, out


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_saves_and_resume_continues_exactly(tmp_path, capsys, sig, status):
    opts = options(tmp_path, save_every_episodes=0, save_every_minutes=0)
    err = tmp_path / "err.txt"
    outdir = tmp_path / "run"
    process = start([AGENT, opts, "--outdir", outdir], err)
    wait_for(episodes_logged(err, 3), "progress line of episode 2", process)
    process.send_signal(sig)
    code, out = finish(process)
    assert code == status
    model = outdir / "model.pt"
    progress = read_checkpoint(model)["progress"]
    done = progress["episode"]
    assert done >= 3 and progress["finished"] is False and progress["reason"] == sig.name
    assert f"stopped by {sig.name}: resume with --inmodel {model}" in out
    assert f"the last after {done} of 100000 episodes" in out
    assert len(read_episodes_csv(outdir / "episodes.csv")) >= done  # the rows of every episode
    assert not (outdir / LOCK_NAME).exists()

    # resumed for two more episodes, it plays what the uninterrupted run plays, to the bit
    more = options(tmp_path / "more", episodes=done + 2, save_every_episodes=0)
    assert main([str(AGENT), str(more), "--inmodel", str(model), "--outdir",
                 str(tmp_path / "resumed")]) == 0
    assert f"resuming the training of {model} at episode {done} of {done + 2}" in capsys.readouterr().err
    assert main([str(AGENT), str(more), "--outdir", str(tmp_path / "straight")]) == 0
    resumed = read_episodes_csv(tmp_path / "resumed" / "episodes.csv")
    straight = read_episodes_csv(tmp_path / "straight" / "episodes.csv")
    assert [int(r["episode"]) for r in resumed] == [done, done + 1]
    for mine, theirs in zip(resumed, straight[-2:]):
        assert {k: v for k, v in mine.items() if k != "wall_s"} == \
            {k: v for k, v in theirs.items() if k != "wall_s"}
    a = read_checkpoint(tmp_path / "resumed" / "model.pt")
    b = read_checkpoint(tmp_path / "straight" / "model.pt")
    for name, tensor in b["model_state_dict"].items():
        assert torch.equal(a["model_state_dict"][name], tensor)
    moments = [(s["exp_avg"], s["exp_avg_sq"]) for s in b["optimizer_state_dict"]["state"].values()]
    got = [(s["exp_avg"], s["exp_avg_sq"]) for s in a["optimizer_state_dict"]["state"].values()]
    assert all(torch.equal(x, y) and torch.equal(u, v) for (x, u), (y, v) in zip(got, moments))


def test_progress_lines_come_while_the_run_goes_on_when_stderr_is_a_file(tmp_path):
    err = tmp_path / "err.txt"
    process = start([AGENT, options(tmp_path), "--outdir", tmp_path / "run"], err)
    try:
        wait_for(episodes_logged(err, 2), "progress line", process)
        assert process.poll() is None  # printed before the end, not at it
        first = err.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("hdeeprm-launch: episode 0 (1/100000): return ")
        assert first.endswith(" s") and "20 decisions" in first
    finally:
        process.send_signal(signal.SIGTERM)
        finish(process)


def test_kill_9_during_a_save_leaves_the_last_checkpoint_and_a_temp_file_the_next_run_removes(
        tmp_path, capsys):
    opts = options(tmp_path, save_every_episodes=2)
    err = tmp_path / "err.txt"
    outdir = tmp_path / "run"
    process = start(["2", AGENT, opts, "--outdir", outdir], err, script=SLOW_SAVE)
    temps = lambda: [p for p in outdir.glob(".model.pt.*.tmp") if p.stat().st_size >= 4_000_000]  # noqa: E731
    wait_for(lambda: bool(temps()), "temporary file of the second save", process)
    process.send_signal(signal.SIGKILL)
    finish(process)
    (temp,) = temps()
    assert TEMP_PATTERN.match(temp.name)["pid"] == str(process.pid)
    assert read_checkpoint(outdir / "model.pt")["progress"]["episode"] == 2  # the first save, intact

    # the next launch into the folder resumes from it, takes the dead run's lock over and cleans up
    more = options(tmp_path / "more", episodes=4, save_every_episodes=0)
    assert main([str(AGENT), str(more), "--outdir", str(outdir), "--overwrite", "--inmodel",
                 str(outdir / "model.pt")]) == 0
    stderr = capsys.readouterr().err
    assert f"took over the lock of pid {process.pid}, which is no longer running" in stderr
    assert f"removed 1 temporary file(s) left by an interrupted save (4.0 MB): {temp}" in stderr
    assert "resuming the training" in stderr and not temp.exists()
    assert sorted(p.name for p in outdir.iterdir() if p.name.startswith(".")) == []


def test_a_second_launch_into_a_busy_folder_is_refused_naming_the_owner(tmp_path, capsys):
    err = tmp_path / "err.txt"
    outdir = tmp_path / "run"
    process = start([AGENT, options(tmp_path), "--outdir", outdir], err)
    try:
        wait_for(episodes_logged(err, 1), "progress line", process)
        assert main([str(AGENT), str(options(tmp_path / "b")), "--outdir", str(outdir)]) == 2
        stderr = capsys.readouterr().err
        assert stderr == (f"hdeeprm-launch: error: --outdir {outdir}: in use by another run "
                          f"(pid {process.pid}, lock file {outdir / LOCK_NAME}); wait for it to "
                          "end or give another folder\n")
    finally:
        process.send_signal(signal.SIGINT)
        assert finish(process)[0] == 130


def test_a_signal_during_the_save_is_held_back_and_the_file_stays_whole(tmp_path, capsys,
                                                                         monkeypatch):
    real = torch.save

    def save_with_ctrl_c(obj, handle):  # a real Ctrl-C (and a SIGTERM) in the middle of a write
        handle.write(b"partial")
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        handle.seek(0)
        handle.truncate()
        real(obj, handle)

    monkeypatch.setattr(torch, "save", save_with_ctrl_c)
    outdir = tmp_path / "run"
    status = main([str(AGENT), str(options(tmp_path, episodes=3, save_every_episodes=1)),
                   "--outdir", str(outdir)])
    out = capsys.readouterr().out
    assert status == 130  # the first signal stops the launch, after the save under way
    checkpoint = read_checkpoint(outdir / "model.pt")  # whole: its checksum verifies
    assert checkpoint["checked"] and checkpoint["progress"]["episode"] == 1
    assert "stopped by SIGINT" in out and "signal(s) during the save were held back" in out
    assert [p.name for p in outdir.glob(".*.tmp")] == []


def _batsim() -> str | None:
    """A Batsim 4 executable that runs here ($HDRM_BATSIM, ../shared, the PATH), or None."""
    import shutil

    for exe in (os.environ.get("HDRM_BATSIM"), str(ROOT.parent / "shared" / "batsim" / "bin" / "batsim"),
                shutil.which("batsim")):
        if exe and Path(exe).is_file():
            try:
                out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if out.returncode == 0 and out.stdout.strip().startswith("4."):
                return exe
    return None


def test_a_terminal_ctrl_c_that_also_kills_batsim_is_a_clean_stop(tmp_path):
    """Ctrl-C in a terminal signals the whole process group, Batsim included: the launch must
    still end as stopped (status 130, model saved), not as a Batsim failure."""
    exe = _batsim()
    if exe is None:
        pytest.skip("no runnable Batsim 4 executable")
    opts = options(tmp_path, save_every_episodes=0, save_every_minutes=0)
    data = json.loads(opts.read_text(encoding="utf-8"))
    data.update(engine="batsim", batsim={"binary": exe})
    opts.write_text(json.dumps(data), encoding="utf-8")
    err = tmp_path / "err.txt"
    outdir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "hdrm.launcher", str(AGENT), str(opts),
                                "--outdir", str(outdir)], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=open(err, "w", encoding="utf-8"), text=True,
                               start_new_session=True)
    wait_for(episodes_logged(err, 2), "progress line of episode 1", process)
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    code, out = finish(process)
    assert code == 130, err.read_text(encoding="utf-8")[-1500:]
    assert "stopped by SIGINT: resume with --inmodel" in out
    assert read_checkpoint(outdir / "model.pt")["progress"]["episode"] >= 2


def test_sigterm_before_the_episodes_is_one_line_and_143(tmp_path):
    # a SIGTERM while the launch was being set up (here: the agent file loading) killed it
    # without a word (status -15); it stops it as Ctrl-C does, in one line
    ready = tmp_path / "ready"
    agent = tmp_path / "slow_agent.py"
    agent.write_text(AGENT.read_text(encoding="utf-8").replace(
        "\nclass ", f"\nimport pathlib as _p, time as _t\n_p.Path({str(ready)!r}).write_text('1')"
        "\n_t.sleep(60)\n\nclass ", 1), encoding="utf-8")
    err = tmp_path / "err.txt"
    process = subprocess.Popen(
        [sys.executable, "-m", "hdrm.launcher", str(agent), str(options(tmp_path)), "--outdir",
         str(tmp_path / "run")], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=open(err, "w", encoding="utf-8"), text=True, start_new_session=True)
    try:
        wait_for(lambda: ready.exists() and ready.read_text(), "agent file loading", process)
        process.send_signal(signal.SIGTERM)
        status, _ = finish(process)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert status == 143
    assert err.read_text(encoding="utf-8") == "hdeeprm-launch: interrupted (SIGTERM)\n"
    assert not (tmp_path / "run").exists()
