"""The output folder of a launch: one run at a time, no stale outputs, no leftover temp files.

* **Lock.** :func:`claim_outdir` takes an advisory lock on ``<outdir>/.hdrm.lock`` (``flock``,
  held until the run ends; the file holds the owner's pid). A second launch into the same folder
  is refused, naming the folder and the owner's pid. The kernel drops the lock of a process that
  dies, even by ``kill -9``, so the lock file such a process leaves behind is taken over (and
  reported as stale).
* **Stale outputs.** A folder holding a previous run's outputs (:data:`OUTPUT_NAMES`: the files
  hdrm writes, plots included) is refused unless ``overwrite`` is given, which deletes those
  files, and only those: files hdrm does not write are never touched.
* **Replays.** :func:`replay_outdir` holds the same lock for ``hdrm replay``, ``hdrm dag
  replay`` and ``hdrm dag periodic``. A previous replay's outputs (:data:`REPLAY_OUTPUTS`) are replaced: those the new
  replay does not rewrite (an ``out_sla.csv`` of a run with tenants, plots made from the old
  outputs) are deleted once the new outputs are written, and reported. Outputs of other kinds (a
  model, training logs) refuse the folder unless ``overwrite`` is given.
* **Temporary files.** A checkpoint is written to ``.NAME.PID.XXXX.tmp`` and renamed
  (:func:`hdrm.agents.checkpoint.write_atomically`); a ``kill -9`` in the middle leaves that file
  behind. :func:`remove_stale_temps` deletes those whose process is gone.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hdrm.errors import ConfigError
from hdrm.results._files import ACTIONS_FILE, EPISODES_FILE
from hdrm.sim.outputs import make_outdir

logger = logging.getLogger(__name__)

#: The lock file of a run folder.
LOCK_NAME = ".hdrm.lock"
#: The model a training launch saves into its folder when no ``--outmodel`` is given.
DEFAULT_MODEL = "model.pt"
#: ``hdrm plot`` kinds, whose default files (``KIND.png``) land in a run folder.
PLOT_KINDS = ("gantt", "utilisation", "queue", "energy", "contention", "learning", "actions")
#: Every file or folder name hdrm writes into a run folder (what ``--overwrite`` may delete).
OUTPUT_NAMES = frozenset(
    (EPISODES_FILE, ACTIONS_FILE, "out_jobs.csv", "out_schedule.csv", "out_timeline.csv",
     "overutilizations.json", "batsim.log", DEFAULT_MODEL, "tensorboard",
     "out_gpu_timeline.csv", "out_gpu_summary.json", "out_sla.csv", "out_preemptions.csv")
    + tuple(f"{kind}.{ext}" for kind in PLOT_KINDS for ext in ("png", "svg", "pdf"))
)
#: What a replay writes into its folder (plots included: they are drawn from these outputs).
REPLAY_OUTPUTS = frozenset(
    ("out_jobs.csv", "out_schedule.csv", "out_timeline.csv", "overutilizations.json",
     "out_preemptions.csv", "out_sla.csv", "out_gpu_timeline.csv", "out_gpu_summary.json",
     "out_instances.csv", "batsim.log")
    + tuple(f"{kind}.{ext}" for kind in PLOT_KINDS for ext in ("png", "svg", "pdf"))
)
#: A checkpoint's temporary file: ``.NAME.PID.RANDOM.tmp``.
TEMP_PATTERN = re.compile(r"^\..+\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")


@dataclass
class Claim:
    """A claimed output folder.

    Attributes:
        path: the folder.
        fd: the open lock file, locked (-1 once released).
        stale_pid: the pid of a dead run whose lock was taken over, or None.
        removed_outputs: a previous run's outputs deleted by ``overwrite``.
        removed_temps: leftover temporary files deleted, with their sizes in bytes.
    """

    path: Path
    fd: int
    stale_pid: int | None = None
    removed_outputs: list[Path] = field(default_factory=list)
    removed_temps: list[tuple[Path, int]] = field(default_factory=list)

    def release(self) -> None:
        """Remove the lock file and drop the lock."""
        if self.fd < 0:
            return
        lock = self.path / LOCK_NAME
        try:
            if os.stat(lock).st_ino == os.fstat(self.fd).st_ino:
                lock.unlink()
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1


def claim_outdir(path: str | Path, *, overwrite: bool = False, keep: tuple[Path, ...] = (),
                 label: str = "--outdir", replaces: frozenset[str] = frozenset()) -> Claim:
    """Create ``path`` if needed, lock it, remove leftover temp files and check for old outputs.

    Args:
        path: the output folder.
        overwrite: delete a previous run's outputs instead of refusing the folder.
        keep: files never deleted (the ``--inmodel`` being resumed from).
        label: the option that gave the folder, for messages.
        replaces: names of previous outputs the run rewrites: neither refused nor deleted here.

    Raises:
        ConfigError: the folder cannot be made, another live run holds it, or it holds a previous
            run's outputs (other than ``replaces``) and ``overwrite`` is false.
    """
    folder = make_outdir(path, label)
    fd, stale = _lock(folder, label)
    claim = Claim(folder, fd, stale)
    try:
        claim.removed_temps = remove_stale_temps(folder)
        previous = [p for p in previous_outputs(folder) if p.resolve() not in
                    {k.resolve() for k in keep} and p.name not in replaces]
        if previous and not overwrite:
            names = ", ".join(p.name for p in previous[:6]) + (", ..." if len(previous) > 6 else "")
            raise ConfigError(
                f"{label} {folder}: holds the outputs of a previous run ({names}); give "
                "--overwrite to replace them (files hdrm does not write are kept) or another folder"
            )
        for item in previous:
            shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
        claim.removed_outputs = previous
    except BaseException:
        claim.release()
        raise
    return claim


@dataclass
class ReplayClaim:
    """A replay's claimed output folder (see :func:`replay_outdir`).

    Attributes:
        claim: the locked folder.
        removed: a previous replay's outputs the new one did not rewrite, deleted at the end.
    """

    claim: Claim
    removed: list[Path] = field(default_factory=list)

    def note(self) -> str | None:
        """The line that tells what was deleted (None: nothing)."""
        if not self.removed:
            return None
        names = ", ".join(p.name for p in self.removed)
        return (f"note: removed a previous replay's outputs that this one does not write, from "
                f"{self.claim.path}: {names}")


@contextmanager
def replay_outdir(path: str | Path, *, overwrite: bool = False,
                  label: str = "--outdir") -> Iterator[ReplayClaim]:
    """Hold ``path`` for a replay: locked while it runs; a previous replay's outputs replaced.

    On a normal exit, every :data:`REPLAY_OUTPUTS` file that was there before and was left
    untouched by the replay (same inode, size and modification time) is deleted and listed in
    :attr:`ReplayClaim.removed`; after an error nothing is deleted, and a folder made here that
    is still empty is removed.

    Raises:
        ConfigError: as :func:`claim_outdir` (another run holds the folder, or it holds outputs
            of another kind, such as a model, and ``overwrite`` is false).
    """
    made = not Path(path).exists()
    claim = claim_outdir(path, overwrite=overwrite, label=label, replaces=REPLAY_OUTPUTS)
    held = ReplayClaim(claim)
    try:
        before = {p: _stamp(p) for p in previous_outputs(claim.path) if p.name in REPLAY_OUTPUTS}
        yield held
        for item, stamp in before.items():
            if _stamp(item) == stamp:
                shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
                held.removed.append(item)
    except BaseException:
        claim.release()
        if made:  # a replay that failed before writing anything leaves no empty folder behind
            try:
                claim.path.rmdir()
            except OSError:
                pass
        raise
    finally:
        claim.release()


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells that ``path`` was rewritten: inode, size, modification time (None: gone)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _lock(folder: Path, label: str) -> tuple[int, int | None]:
    """Lock ``folder``'s lock file; returns its descriptor and the pid of a stale owner."""
    lock = folder / LOCK_NAME
    for _ in range(5):  # another process may remove or replace the file between open and flock
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"{label} {folder}: cannot create the lock file {lock}: "
                              f"{exc.strerror or exc}; give a folder you can write to") from None
        owner = _read_pid(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(
                f"{label} {folder}: in use by another run (pid {owner if owner else 'unknown'}, "
                f"lock file {lock}); wait for it to end or give another folder"
            ) from None
        if _same_file(lock, fd):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd, owner if owner and owner != os.getpid() else None
        os.close(fd)
    raise ConfigError(f"{label} {folder}: could not lock {lock}; try again")


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _same_file(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def previous_outputs(folder: Path) -> list[Path]:
    """The entries of ``folder`` that hdrm writes (:data:`OUTPUT_NAMES`), sorted by name."""
    return sorted(p for p in folder.iterdir() if p.name in OUTPUT_NAMES)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(folder: Path) -> list[tuple[Path, int]]:
    """Delete the checkpoint temp files in ``folder`` whose writing process is gone.

    Returns:
        The files deleted, with their sizes in bytes.
    """
    removed = []
    if not folder.is_dir():
        return removed
    for path in sorted(folder.iterdir()):
        match = TEMP_PATTERN.match(path.name)
        if match is None or not path.is_file() or pid_alive(int(match["pid"])):
            continue
        size = path.stat().st_size
        try:
            path.unlink()
        except OSError as exc:
            logger.warning("cannot remove the stale temporary file %s: %s", path, exc)
            continue
        removed.append((path, size))
    return removed


__all__ = ["Claim", "DEFAULT_MODEL", "LOCK_NAME", "OUTPUT_NAMES", "REPLAY_OUTPUTS", "ReplayClaim",
           "TEMP_PATTERN", "claim_outdir", "pid_alive", "previous_outputs", "remove_stale_temps",
           "replay_outdir"]
