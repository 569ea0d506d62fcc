"""Model checkpoints: ``{model_state_dict, optimizer_state_dict, options, version, agent_class}``.

Saving is atomic: the checkpoint is written to a temporary file in the destination folder and then
renamed over the destination, so a crash never leaves a half-written model. Loading uses
``torch.load(..., weights_only=True)`` (no arbitrary code runs) and checks every parameter's name
and shape against the agent before loading, so a checkpoint of another architecture is an
:class:`~hdrm.errors.AgentLoadError` naming the file and the first parameter that differs.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from hdrm import __version__
from hdrm.agents.base import Agent
from hdrm.agents.loader import USER_MODULE_PREFIX
from hdrm.errors import AgentLoadError

logger = logging.getLogger(__name__)

#: The keys every checkpoint holds.
CHECKPOINT_KEYS = ("model_state_dict", "optimizer_state_dict", "options", "version", "agent_class")


def agent_class_name(agent: Agent) -> str:
    """``module.QualifiedName`` of the agent's class; ``file.py:QualifiedName`` for an agent.py."""
    cls = type(agent)
    module = sys.modules.get(cls.__module__)
    if cls.__module__.startswith(USER_MODULE_PREFIX) and getattr(module, "__file__", None):
        return f"{Path(module.__file__).name}:{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def plain(value: Any) -> Any:
    """``value`` as JSON-like data that ``torch.load(weights_only=True)`` accepts.

    Mappings become dicts, tuples and lists lists, dataclasses dicts, numpy scalars Python numbers;
    anything else that is not a str, number, bool or None becomes its ``str()``.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def save_checkpoint(agent: Agent, path: str | Path, options: Mapping[str, Any]) -> Path:
    """Write the agent's model and optimizer state with the run's options to ``path``, atomically.

    Args:
        agent: the agent to save.
        path: destination file (its folder is created when missing).
        options: the run's options (plain JSON-like values), stored for reference.

    Returns:
        The path written.

    Raises:
        AgentLoadError: the folder cannot be created or the file cannot be written.
    """
    path = Path(path)
    checkpoint = {
        "model_state_dict": agent.state_dict(),
        "optimizer_state_dict": agent.optimizer_state_dict(),
        "options": plain(options),
        "version": __version__,
        "agent_class": agent_class_name(agent),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise AgentLoadError(f"checkpoint {path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            torch.save(checkpoint, handle)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's file is private; a checkpoint is not
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise AgentLoadError(f"checkpoint {path}: cannot write: {exc.strerror or exc}") from None
        raise
    logger.info("saved checkpoint %s (%s)", path, checkpoint["agent_class"])
    return path


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read and check a checkpoint file without loading it into an agent.

    Raises:
        AgentLoadError: missing file, not a torch checkpoint (or one needing unsafe unpickling),
            or a checkpoint lacking one of :data:`CHECKPOINT_KEYS`.
    """
    path = Path(path)
    if not path.is_file():
        raise AgentLoadError(f"checkpoint {path}: no such file; check --inmodel")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for corrupt files
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AgentLoadError(f"checkpoint {path}: not a readable hdrm checkpoint ({reason})") from None
    if not isinstance(checkpoint, dict):
        raise AgentLoadError(
            f"checkpoint {path}: not an hdrm checkpoint (holds a {type(checkpoint).__name__})"
        )
    missing = [key for key in CHECKPOINT_KEYS if key not in checkpoint]
    if missing:
        raise AgentLoadError(f"checkpoint {path}: not an hdrm checkpoint, missing {', '.join(missing)}")
    return checkpoint


def load_checkpoint(agent: Agent, path: str | Path, *, optimizer: bool = True) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into ``agent``.

    Args:
        agent: an agent built with the same architecture as the saved one.
        path: the checkpoint file.
        optimizer: also restore the optimizer state (to resume training).

    Returns:
        The checkpoint (its ``options``, ``version`` and ``agent_class`` may be of use).

    Raises:
        AgentLoadError: see :func:`read_checkpoint`, or the saved parameters do not match the
            agent's (a missing, unexpected or differently shaped parameter is named).
    """
    path = Path(path)
    checkpoint = read_checkpoint(path)
    if checkpoint["agent_class"] != agent_class_name(agent):
        logger.warning(
            "checkpoint %s was saved by %s, loading into %s",
            path,
            checkpoint["agent_class"],
            agent_class_name(agent),
        )
    check_compatible(path, agent.state_dict(), checkpoint["model_state_dict"], checkpoint["agent_class"])
    try:
        agent.load_state_dict(checkpoint["model_state_dict"])
        if optimizer:
            agent.load_optimizer_state_dict(checkpoint["optimizer_state_dict"])
    except (RuntimeError, ValueError, KeyError) as exc:
        reason = str(exc).strip().splitlines()[0]
        raise AgentLoadError(
            f"checkpoint {path}: does not match {type(agent).__name__}: {reason}"
        ) from None
    logger.info("loaded checkpoint %s into %s", path, type(agent).__name__)
    return checkpoint


def check_compatible(
    path: Path, expected: Mapping[str, Any], saved: Mapping[str, Any], saved_by: str
) -> None:
    """Raise :class:`AgentLoadError` naming the first parameter whose name or shape differs."""
    origin = f"saved by {saved_by}"
    for name, tensor in expected.items():
        if name not in saved:
            raise AgentLoadError(
                f"checkpoint {path}: parameter {name!r} is missing ({origin}); "
                "it was trained with another network"
            )
        got = tuple(getattr(saved[name], "shape", ()))
        want = tuple(getattr(tensor, "shape", ()))
        if got != want:
            raise AgentLoadError(
                f"checkpoint {path}: parameter {name!r} has shape {list(got)} but this agent's has "
                f"{list(want)} ({origin}); check hidden, params.network and the observation and "
                "actions options"
            )
    extra = [name for name in saved if name not in expected]
    if extra:
        raise AgentLoadError(
            f"checkpoint {path}: unexpected parameter {extra[0]!r} ({origin}); "
            "it was trained with another network"
        )


def _umask() -> int:
    """The process's file-creation mask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
