"""Model files of the comparisons: a checkpoint and its metadata, and reading a folder of them.

The CPU comparison (:mod:`benchmarks.compare_models`) and the GPU one
(:mod:`benchmarks.gpu_learners`) keep their models as ``*.pt`` checkpoints whose options carry the
learner, the training setting and the training figures; each subclasses :class:`ModelFile` with
what its own metadata adds, and reads its folder with :func:`read_models`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class ModelFile:
    """A model file and what its metadata says."""

    path: str
    column: str
    meta: dict[str, Any]

    @property
    def setting(self) -> dict[str, Any]:
        """The training setting (the workload and its options)."""
        return self.meta["setting"]


def read_models(models_dir: str | Path, kind: str, described: Callable[[dict], bool],
                learner_class: Callable[[str, str], Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(path, metadata)`` of the ``*.pt`` files in ``models_dir``, in name order.

    Files whose metadata ``described`` refuses, unfinished models (``training.final`` False: a
    training running or stopped, whose seed would otherwise be averaged into its setting's
    column), or whose learner ``learner_class`` does not know (it raises
    :class:`~hdrm.errors.ConfigError`), are left out with a note on stderr naming the file; an
    absent folder holds no model.

    Args:
        models_dir: the folder.
        kind: what metadata is looked for (``benchmark``), named in the note.
        described: whether a checkpoint's options are such metadata.
        learner_class: the agent class of a learner name, given the name and where it was read.
    """
    folder = Path(models_dir)
    if not folder.is_dir():
        return []
    from hdrm.agents.checkpoint import read_checkpoint
    from hdrm.errors import ConfigError

    found = []
    for path in sorted(folder.glob("*.pt")):
        meta = read_checkpoint(path)["options"]
        if not isinstance(meta, dict) or not described(meta):
            print(f"note: {path} has no {kind} metadata; skipped", file=sys.stderr)
            continue
        if (meta.get("training") or {}).get("final", True) is False:
            print(f"note: skipped {path}: an unfinished model (its training is running, or was "
                  "stopped: rerun its command; train.py resumes, gpu_train.py starts again)",
                  file=sys.stderr)
            continue
        try:
            learner_class(meta["learner"], f"{path}: learner")
        except ConfigError as exc:
            print(f"note: skipped {path}: {exc}", file=sys.stderr)
            continue
        found.append((str(path), meta))
    return found
