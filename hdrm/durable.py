"""Durable file replacement: what an atomic save needs beyond ``os.replace``.

A save writes a temporary file in the target's folder, flushes and fsyncs it, renames it over the
target, then fsyncs the folder so the rename itself survives a crash. Checkpoints and sweep runs
share this last step.

Outputs (out_jobs.csv, tables, plots ...) are written whole or not at all: to a temporary file
beside the target, renamed over it (:func:`replacing`, :func:`write_text_atomically`), so an
interruption never leaves a truncated file that reads as a complete one; a folder's set of outputs
is renamed into place together (:func:`staged`). These renames are not fsynced: they protect
against a stopped process (Ctrl-C, SIGTERM, an error), not against a power loss.
"""

from __future__ import annotations

import os
import secrets
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def fsync_folder(folder: str | Path) -> None:
    """Make the entries of ``folder`` (a rename into it) durable; a no-op where folders cannot be
    opened or synced (some file systems and platforms)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_name(path: str | Path) -> Path:
    """A fresh temporary name beside ``path``: ``.NAME.PID.RANDOM.tmp``.

    The launcher's pattern (:data:`hdrm.launch.outdir.TEMP_PATTERN`): the next launch or replay
    into a run folder removes the ones a killed process left there.
    """
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """Write a file whole or not at all: yields a temporary name beside ``path``, renamed over
    ``path`` when the block ends normally and removed when it raises (an error, Ctrl-C).

    A reader never sees a half-written ``path``: it is the previous file or the new one. (A
    ``kill -9`` leaves the temporary file behind; see :func:`temp_name`.)
    """
    final = Path(path)
    scratch = temp_name(final)
    try:
        yield scratch
        os.replace(scratch, final)
    except BaseException:
        _remove(scratch)
        raise


def write_text_atomically(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, line ends as given) to ``path`` whole or not at all (OSError as
    :func:`open` raises it)."""
    with replacing(path) as scratch:
        with open(scratch, "w", encoding="utf-8", newline="") as out:
            out.write(text)


class Staging:
    """Files written under temporary names (:meth:`path`) and published together
    (:meth:`publish`): a folder of outputs is the previous set or the new one, never a mix."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def path(self, final: str | Path) -> Path:
        """The temporary name to write ``final`` to."""
        scratch = temp_name(final)
        self._pending.append((scratch, Path(final)))
        return scratch

    def publish(self) -> None:
        """Rename every staged file over its final name, SIGINT and SIGTERM held back meanwhile."""
        with signals_deferred():
            for scratch, final in self._pending:
                os.replace(scratch, final)
        self._pending.clear()

    def discard(self) -> None:
        """Remove the staged files not published."""
        for scratch, _ in self._pending:
            _remove(scratch)
        self._pending.clear()


@contextmanager
def staged(into: Staging | None = None) -> Iterator[Staging]:
    """A :class:`Staging` published when the block ends normally, discarded when it raises.

    Args:
        into: a staging of the caller's, which the files join: it is yielded as it is, and the
            caller publishes (or discards) it with the rest of the run's files. A writer of
            several files takes it so that its files and the caller's are one publication.
    """
    if into is not None:
        yield into
        return
    stage = Staging()
    try:
        yield stage
        stage.publish()
    except BaseException:
        stage.discard()
        raise


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the block runs (a few renames); one that came meanwhile
    is raised again when it ends, so it acts as it would have (Ctrl-C's KeyboardInterrupt, a
    program's own handler, SIGTERM's default death).

    The signals' Python handlers are replaced by one that only records them: Python runs its
    handlers in the main thread whichever thread the system gave the signal to, so this holds in a
    process with other threads too (a thread's signal mask would not: the system may hand the
    signal to a thread that does not block it). Only in the main thread (elsewhere the block just
    runs); a signal that is ignored, or handled outside Python, is left as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler is None or handler is signal.SIG_IGN:
            continue
        previous[signum] = handler
        signal.signal(signum, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held:
            signal.raise_signal(held[0])


def _remove(path: Path) -> None:
    """Remove ``path`` if it is there (a clean-up: an error doing so is not raised)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass
