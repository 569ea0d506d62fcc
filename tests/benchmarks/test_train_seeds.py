"""benchmarks/train_seeds.py: an interruption stops the seed being trained too, and each seed
keeps its own logs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import train_seeds

ROOT = Path(__file__).resolve().parents[2]


def test_a_log_dir_becomes_one_folder_per_seed():
    args = ["--trace", "lublin", "--log-dir", "runs/t", "--minutes", "1"]
    assert train_seeds.seed_args(args, 2) == ["--trace", "lublin", "--log-dir",
                                              str(Path("runs/t") / "seed2"), "--minutes", "1"]
    assert train_seeds.seed_args(["--log-dir=runs/t"], 0) == [
        "--log-dir=" + str(Path("runs/t") / "seed0")]
    assert train_seeds.seed_args(["--trace", "sdsc"], 1) == ["--trace", "sdsc"]
    assert args[3] == "runs/t"  # the caller's list is not changed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_of_train_seeds_alone_stops_the_training_it_started(tmp_path):
    # `kill PID` of train_seeds.py killed it and left its train.py running on, unseen, writing
    # the seed's model (a rerun then started a second writer of the same file); now the training
    # is stopped (SIGTERM passed on), waited for, and train_seeds.py says so in one line
    pid_file = tmp_path / "child.pid"
    child = tmp_path / "child.py"
    child.write_text("import os, pathlib, sys, time\n"
                     f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
                     "time.sleep(60)\n", encoding="utf-8")
    code = ("import sys\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "from benchmarks import train_seeds\n"
            "from hdrm.cli.script import guarded\n"
            f"train_seeds.TRAIN_SCRIPT = {str(child)!r}\n"
            f"sys.exit(guarded(lambda: train_seeds.main(['--seeds', '0', '--out', "
            f"{str(tmp_path / 'm.pt')!r}]), 'train_seeds.py'))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 8
        while not pid_file.exists() or not pid_file.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "no training started"
            time.sleep(0.05)
        trainer = int(pid_file.read_text())
        os.kill(proc.pid, signal.SIGTERM)  # this process alone, not its group
        _, err = proc.communicate(timeout=9)
        assert proc.returncode == 143
        assert err.strip().splitlines()[-1] == "train_seeds.py: interrupted (SIGTERM)"
        assert not _alive(trainer)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_seed_interrupted_midway_is_rerun_with_the_same_command_and_resumes(tmp_path,
                                                                             monkeypatch,
                                                                             capsys):
    # train.py continues from OUT.resume only when its command is the same: the rerun of a seed
    # must not change it (no --fresh, the same --log-dir), and it says that it resumes
    commands: list[list[str]] = []
    monkeypatch.setattr(train_seeds, "run_command", lambda cmd: commands.append(cmd) or 0)
    argv = ["--seeds", "0", "--out", str(tmp_path / "m.pt"), "--", "--log-dir", "runs/t"]
    assert train_seeds.main(argv) == 0
    (tmp_path / "m_seed0.pt.resume").write_bytes(b"state")
    assert train_seeds.main(argv) == 0
    assert len(commands) == 2 and commands[0] == commands[1]
    assert "--fresh" not in commands[0]
    out = capsys.readouterr().out
    assert f"seed 0: resuming the interrupted training ({tmp_path / 'm_seed0.pt.resume'})" in out
