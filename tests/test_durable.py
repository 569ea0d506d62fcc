"""hdrm.durable: files written whole or not at all, sets of files published together, and
SIGINT/SIGTERM held back while they are renamed into place."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from hdrm.durable import replacing, signals_deferred, staged, temp_name, write_text_atomically
from hdrm.launch.outdir import TEMP_PATTERN


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_temporary_name_sits_beside_the_file_and_matches_the_launchers_pattern(tmp_path):
    name = temp_name(tmp_path / "out_jobs.csv")
    assert name.parent == tmp_path
    match = TEMP_PATTERN.match(name.name)
    assert match and int(match["pid"]) == os.getpid()  # a dead process's are removed by claims
    assert name != temp_name(tmp_path / "out_jobs.csv")


def test_a_write_stopped_midway_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        with replacing(path) as scratch:
            scratch.write_text("new, half", encoding="utf-8")
            raise KeyboardInterrupt
    assert path.read_text(encoding="utf-8") == "old\n"
    assert _names(tmp_path) == ["table.csv"]
    write_text_atomically(path, "new\n")
    assert path.read_text(encoding="utf-8") == "new\n"
    assert _names(tmp_path) == ["table.csv"]


def test_staged_files_are_published_together_or_not_at_all(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("a1", encoding="utf-8")
    b.write_text("b1", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        with staged() as stage:
            stage.path(a).write_text("a2", encoding="utf-8")
            raise KeyboardInterrupt  # stopped before b.csv was written
    assert (a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8")) == ("a1", "b1")
    assert _names(tmp_path) == ["a.csv", "b.csv"]
    with staged() as stage:
        stage.path(a).write_text("a2", encoding="utf-8")
        stage.path(b).write_text("b2", encoding="utf-8")
        assert a.read_text(encoding="utf-8") == "a1"  # nothing published before the end
    assert (a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8")) == ("a2", "b2")
    assert _names(tmp_path) == ["a.csv", "b.csv"]


def _python_sigint_handler():
    """Python's own Ctrl-C handler for the test's duration (a shell's '&' starts with it
    ignored); the caller restores what it returns."""
    return signal.signal(signal.SIGINT, signal.default_int_handler)


def test_a_sigint_during_the_renames_is_delivered_after_them():
    reached = False
    previous = _python_sigint_handler()
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_deferred():
                signal.raise_signal(signal.SIGINT)
                for _ in range(1000):  # bytecodes at which an undeferred signal would be raised
                    pass
                reached = True
    finally:
        signal.signal(signal.SIGINT, previous)
    assert reached
    assert signal.getsignal(signal.SIGINT) is previous


def test_a_sigint_given_to_another_thread_is_held_back_too():
    """The system may hand a process's signal to any thread that does not block it (a test
    suite's process has torch's and others' threads): the deferral must hold whichever thread
    receives it."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    reached = False
    previous = _python_sigint_handler()
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_deferred():
                signal.pthread_kill(other.ident, signal.SIGINT)
                time.sleep(0.2)  # the other thread takes it; Python's handler runs here
                reached = True
    finally:
        signal.signal(signal.SIGINT, previous)
        stop.set()
        other.join()
    assert reached
