"""hdrm.cli.script: argparse types that refuse bad numbers in one line, and the guard that turns a
script's bad input into one line and exit 2."""

from __future__ import annotations

import argparse

import pytest

from hdrm.cli import script
from hdrm.errors import ConfigError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="x.py")
    p.add_argument("--repeat", type=script.count(1), default=3)
    p.add_argument("--seed", type=script.seed, default=0)
    p.add_argument("--minutes", type=script.positive, default=1.0)
    return p


def test_good_values_pass():
    a = _parser().parse_args(["--repeat", "2", "--seed", "0", "--minutes", "0.5"])
    assert (a.repeat, a.seed, a.minutes) == (2, 0, 0.5)


@pytest.mark.parametrize("argv, says", [
    (["--repeat", "0"], "argument --repeat: expected an integer >= 1, got '0'"),
    (["--repeat", "x"], "argument --repeat: expected an integer >= 1, got 'x'"),
    (["--repeat", "1.5"], "argument --repeat: expected an integer >= 1, got '1.5'"),
    (["--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (["--minutes", "0"], "argument --minutes: expected a number > 0, got '0'"),
    (["--minutes", "nan"], "argument --minutes: expected a number > 0, got 'nan'"),
    (["--minutes", "inf"], "argument --minutes: expected a number > 0, got 'inf'"),
])
def test_bad_values_are_argparse_one_line_errors(capsys, argv, says):
    with pytest.raises(SystemExit) as stop:
        _parser().parse_args(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"x.py: error: {says}"


def test_the_guard_turns_bad_input_into_one_line(capsys):
    def bad() -> int:
        raise ConfigError("--cases: unknown case 'zz'; choose among: a, b")

    assert script.guarded(bad, "bench_x.py") == 2
    assert capsys.readouterr().err == "bench_x.py: error: --cases: unknown case 'zz'; choose " \
                                      "among: a, b\n"
    assert script.guarded(lambda: None, "x") == 0 and script.guarded(lambda: 1, "x") == 1

    def interrupted() -> int:
        raise KeyboardInterrupt

    assert script.guarded(interrupted, "bench_x.py") == 130
    assert capsys.readouterr().err == "bench_x.py: interrupted\n"


def test_a_bug_is_not_hidden():
    def broken() -> int:
        raise ZeroDivisionError("a defect, not bad input")

    with pytest.raises(ZeroDivisionError):
        script.guarded(broken, "x")


def _wait_for(path, proc, seconds=8.0):
    import time

    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, "never got ready"
        time.sleep(0.05)


def test_sigterm_stops_a_guarded_script_as_ctrl_c_does_one_line_143_clean_up_run(tmp_path):
    # SIGTERM killed the script on the spot (status -15, no message, no finally: temporary files
    # and worker pools left behind); now it is raised where the script is, like Ctrl-C
    import os
    import signal
    import subprocess
    import sys

    ready, cleaned = tmp_path / "ready", tmp_path / "cleaned"
    code = ("import pathlib, sys, time\n"
            "from hdrm.cli.script import guarded\n"
            "def main():\n"
            "    try:\n"
            f"        pathlib.Path({str(ready)!r}).write_text('1')\n"
            "        time.sleep(60)\n"
            "    finally:\n"
            f"        pathlib.Path({str(cleaned)!r}).touch()\n"
            "sys.exit(guarded(main, 'job.py'))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(ready, proc)
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 143
    assert err == "job.py: interrupted (SIGTERM)\n"
    assert cleaned.exists()


def test_sigterm_raises_only_inside_the_guard_and_a_handler_of_the_scripts_own_is_kept():
    import signal

    def mine(*_):
        pass

    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        raising = script.guarded(lambda: signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        assert raising == 1 and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        signal.signal(signal.SIGTERM, mine)
        assert script.guarded(lambda: signal.getsignal(signal.SIGTERM) is mine) == 1
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_interrupted_run_command_stops_its_child_and_waits_for_it(tmp_path):
    # Ctrl-C sent to the parent alone: the child (which did not get it) is sent SIGTERM after
    # its grace and waited for; the parent then stops in one line with 130
    import os
    import signal
    import subprocess
    import sys

    pid_file = tmp_path / "child.pid"
    child = (f"import os, pathlib, time; pathlib.Path({str(pid_file)!r})"
             ".write_text(str(os.getpid())); time.sleep(60)")
    code = ("import signal, sys\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)  # ignored under '&'\n"
            "from hdrm.cli import script\n"
            "script.CHILD_GRACE_S['ctrl-c'] = 0.2\n"
            f"sys.exit(script.guarded(lambda: script.run_command([sys.executable, '-c', "
            f"{child!r}]), 'seeds.py'))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(pid_file, proc)
        trainer = int(pid_file.read_text())
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        assert (proc.returncode, err) == (130, "seeds.py: interrupted\n")
        try:
            os.kill(trainer, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
