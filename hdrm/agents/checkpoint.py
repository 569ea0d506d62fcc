"""Model checkpoints: ``{model_state_dict, optimizer_state_dict, options, version, agent_class}``
plus, since format 2, ``agent_lineage``, ``progress`` and a ``sha256`` content checksum.

Tensors are always saved on the CPU (a model trained on a GPU loads on a machine without one).
Saving is atomic: the checkpoint is written to a temporary file in the destination folder
(``.NAME.PID.XXXX.tmp``), flushed to disk (``fsync``) and renamed over the destination
(``os.replace``), so a crash or a kill never leaves a half-written model; a temporary file left by
a ``kill -9`` names the dead process, so the launcher can remove it later.

Loading uses ``torch.load(..., weights_only=True)`` (no arbitrary code runs), then refuses:

* a file whose content no longer matches its ``sha256`` (a flipped bit, a truncated copy);
* a checkpoint of another agent class (a REINFORCE model loaded into PPO): a class and the
  classes it derives from are compatible, others only with ``allow_other_class`` (the launcher's
  ``--allow-other-class``), which loads matching weights and leaves the optimizer fresh;
* parameters whose names or shapes differ from the agent's (the first one is named).

Checkpoints written before format 2 (the shipped ``models/*.pt``) have no checksum: they load,
and :func:`read_checkpoint` marks them ``checked: False`` so callers can say so.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import logging
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from hdrm import __version__
from hdrm.agents.base import Agent
from hdrm.agents.devices import to_cpu
from hdrm.agents.loader import USER_MODULE_PREFIX
from hdrm.durable import fsync_folder
from hdrm.errors import AgentLoadError

logger = logging.getLogger(__name__)

#: The keys every checkpoint holds.
CHECKPOINT_KEYS = ("model_state_dict", "optimizer_state_dict", "options", "version", "agent_class")
#: The checkpoint format :func:`save_checkpoint` writes (1: no format key, no checksum).
FORMAT = 2
#: The key of the content checksum (sha256 of everything else, see :func:`content_digest`).
CHECKSUM_KEY = "sha256"


def class_name(cls: type) -> str:
    """``module.QualifiedName`` of a class; ``file.py:QualifiedName`` for a class of an agent.py."""
    module = sys.modules.get(cls.__module__)
    if cls.__module__.startswith(USER_MODULE_PREFIX) and getattr(module, "__file__", None):
        return f"{Path(module.__file__).name}:{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def agent_class_name(agent: Agent) -> str:
    """:func:`class_name` of the agent's class."""
    return class_name(type(agent))


def agent_lineage(agent: Agent) -> list[str]:
    """The agent's class and every Agent class it derives from, most derived first."""
    return [class_name(c) for c in type(agent).__mro__ if isinstance(c, type) and issubclass(c, Agent)]


def plain(value: Any) -> Any:
    """``value`` as JSON-like data that ``torch.load(weights_only=True)`` accepts.

    Mappings become dicts, tuples and lists lists, dataclasses dicts, numpy scalars Python numbers;
    tensors stay tensors; anything else that is not a str, number, bool or None becomes its
    ``str()``.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool, torch.Tensor)):
        return value
    return str(value)


def content_digest(checkpoint: Mapping[str, Any]) -> str:
    """sha256 of a checkpoint's content, the checksum itself left out.

    The digest is taken over the loaded values (tensor dtypes, shapes and bytes, numbers, strings,
    in key order), not over the file's bytes, so it does not depend on how torch lays out the file
    and is checked after ``torch.load``.
    """
    digest = hashlib.sha256()
    _feed(digest, {k: v for k, v in checkpoint.items() if k != CHECKSUM_KEY})
    return digest.hexdigest()


def _feed(digest: Any, value: Any) -> None:
    """Add one value to ``digest``, tagged by its type so that different values never collide."""
    if isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous().reshape(-1)
        digest.update(f"T{value.dtype}{tuple(value.shape)};".encode())
        digest.update(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
    elif isinstance(value, Mapping):
        digest.update(f"D{len(value)};".encode())
        for key in sorted(value, key=lambda k: (type(k).__name__, str(k))):
            _feed(digest, key)
            _feed(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"L{len(value)};".encode())
        for item in value:
            _feed(digest, item)
    elif isinstance(value, bytes):
        digest.update(f"Y{len(value)};".encode() + value)
    elif isinstance(value, float):
        digest.update(f"F{value.hex()};".encode())
    else:  # str, int, bool, None: their type and repr are exact
        text = f"{type(value).__name__}:{value!r}"
        digest.update(f"V{len(text)};{text}".encode())


def snapshot(agent: Agent) -> dict[str, Any]:
    """A copy of what a checkpoint holds of ``agent`` now (weights, optimizer state, class), which
    later training does not change; :func:`save_snapshot` writes it."""
    return {
        "model_state_dict": copy.deepcopy(to_cpu(agent.state_dict())),
        "optimizer_state_dict": copy.deepcopy(to_cpu(agent.optimizer_state_dict())),
        "agent_class": agent_class_name(agent),
        "agent_lineage": agent_lineage(agent),
    }


def save_checkpoint(agent: Agent, path: str | Path, options: Mapping[str, Any],
                    progress: Mapping[str, Any] | None = None) -> Path:
    """Write the agent's model and optimizer state with the run's options to ``path``, atomically.

    Args:
        agent: the agent to save.
        path: destination file (its folder is created when missing).
        options: the run's options (plain JSON-like values), stored for reference.
        progress: where training stands (episode counter, random generator states), for a
            resumed run; stored as ``progress`` (tensors and plain values).

    Returns:
        The path written.

    Raises:
        AgentLoadError: the folder cannot be created or the file cannot be written.
    """
    state = {
        "model_state_dict": agent.state_dict(),
        "optimizer_state_dict": agent.optimizer_state_dict(),
        "agent_class": agent_class_name(agent),
        "agent_lineage": agent_lineage(agent),
    }
    return save_snapshot(state, path, options, progress)


def save_snapshot(state: Mapping[str, Any], path: str | Path, options: Mapping[str, Any],
                  progress: Mapping[str, Any] | None = None) -> Path:
    """Write a :func:`snapshot` as a checkpoint (see :func:`save_checkpoint`)."""
    path = Path(path)
    checkpoint = {
        "model_state_dict": to_cpu(state["model_state_dict"]),
        "optimizer_state_dict": to_cpu(state["optimizer_state_dict"]),
        "options": plain(options),
        "version": __version__,
        "agent_class": state["agent_class"],
        "agent_lineage": list(state["agent_lineage"]),
        "format": FORMAT,
        "progress": plain(progress or {}),
    }
    checkpoint[CHECKSUM_KEY] = content_digest(checkpoint)
    write_atomically(path, lambda handle: torch.save(checkpoint, handle))
    logger.info("saved checkpoint %s (%s)", path, checkpoint["agent_class"])
    return path


def write_atomically(path: Path, write: Any) -> None:
    """Call ``write(handle)`` on a temporary file next to ``path``, fsync it, rename it over ``path``.

    Raises:
        AgentLoadError: the folder cannot be created or the file cannot be written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError as exc:
        raise AgentLoadError(f"checkpoint {path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's file is private; a checkpoint is not
        os.replace(tmp, path)
        fsync_folder(path.parent)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise AgentLoadError(f"checkpoint {path}: cannot write: {exc.strerror or exc}") from None
        raise


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read and check a checkpoint file without loading it into an agent.

    The returned dict has one key more, ``checked``: whether a content checksum was verified
    (False for checkpoints written before format 2).

    Raises:
        AgentLoadError: missing file, not a torch checkpoint (or one needing unsafe unpickling),
            a checkpoint lacking one of :data:`CHECKPOINT_KEYS`, or one whose content does not
            match its checksum.
    """
    path = Path(path)
    if not path.is_file():
        raise AgentLoadError(f"checkpoint {path}: no such file; check --inmodel")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for corrupt files
        raise AgentLoadError(f"checkpoint {path}: not a readable hdrm checkpoint "
                             f"({_load_failure(exc)})") from None
    if not isinstance(checkpoint, dict):
        raise AgentLoadError(
            f"checkpoint {path}: not an hdrm checkpoint (holds a {type(checkpoint).__name__})"
        )
    missing = [key for key in CHECKPOINT_KEYS if key not in checkpoint]
    if missing:
        raise AgentLoadError(f"checkpoint {path}: not an hdrm checkpoint, missing {', '.join(missing)}")
    _verify(path, checkpoint)
    return checkpoint


def _verify(path: Path, checkpoint: dict[str, Any]) -> None:
    stored = checkpoint.get(CHECKSUM_KEY)
    if stored is None and checkpoint.get("format", 1) != 1:
        raise AgentLoadError(f"checkpoint {path}: format {checkpoint.get('format')} but no sha256 "
                             "checksum: the file is corrupt; use another copy or retrain")
    if stored is None:
        checkpoint["checked"] = False
        logger.info("checkpoint %s has no checksum (written before format %d); not verified",
                    path, FORMAT)
        return
    actual = content_digest(checkpoint)
    if stored != actual:
        raise AgentLoadError(
            f"checkpoint {path}: content does not match its sha256 checksum (stored "
            f"{str(stored)[:12]}..., content gives {actual[:12]}...): the file is corrupt; "
            "use another copy or retrain"
        )
    checkpoint["checked"] = True


def check_class(agent: Agent, checkpoint: Mapping[str, Any]) -> bool:
    """Whether the checkpoint's agent class fits ``agent``: the same class, or one derives from
    the other (a drop-in ``AnnealedPPO`` loads a ``PPOAgent`` model and the reverse).

    Returns:
        True when it fits, False when it does not.
    """
    saved = checkpoint["agent_class"]
    saved_lineage = checkpoint.get("agent_lineage") or [saved]
    mine = agent_lineage(agent)
    return saved in mine or mine[0] in saved_lineage


#: torch's safe loader's refusals: "Weights only load failed. ... WeightsUnpickler error: WHY".
_SAFE_LOADER_FAILED = "Weights only load failed"
_SAFE_LOADER_WHY = "WeightsUnpickler error:"


def _load_failure(exc: Exception) -> str:
    """Why ``torch.load`` failed, in one line without terminal escapes.

    Its safe loader's refusal says re-running it with ``weights_only=False`` "will likely
    succeed", of any file (an SWF trace, random bytes); hdrm never does that, so only the
    unpickler's own reason is kept.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    if text.startswith(_SAFE_LOADER_FAILED) and _SAFE_LOADER_WHY in text:
        why = text.split(_SAFE_LOADER_WHY, 1)[1].strip().splitlines()[0].strip()
        why = why.split(". ")[0].rstrip(".")
        return (f"torch's safe loader refused it: {why}; give a model written by hdeeprm-launch, "
                "hdrm loads only tensors and plain data")
    return text.splitlines()[0] if text else type(exc).__name__


def load_checkpoint(agent: Agent, path: str | Path, *, optimizer: bool = True,
                    allow_other_class: bool = False) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into ``agent``.

    Args:
        agent: an agent built with the same architecture as the saved one.
        path: the checkpoint file.
        optimizer: also restore the optimizer state (to resume training).
        allow_other_class: load the weights of a checkpoint of another agent class when every
            parameter matches (the optimizer state is then not restored).

    Returns:
        The checkpoint (its ``options``, ``version``, ``agent_class``, ``progress`` and
        ``checked`` may be of use).

    Raises:
        AgentLoadError: see :func:`read_checkpoint`; a checkpoint of another agent class (unless
            ``allow_other_class``); or saved parameters that do not match the agent's (a missing,
            unexpected or differently shaped parameter is named).
    """
    path = Path(path)
    checkpoint = read_checkpoint(path)
    if not check_class(agent, checkpoint):
        if not allow_other_class:
            raise AgentLoadError(
                f"checkpoint {path}: saved by agent class {checkpoint['agent_class']}, expected "
                f"{agent_class_name(agent)} (or a class it derives from); give a checkpoint of "
                "this agent, or --allow-other-class to load matching weights anyway"
            )
        logger.warning("checkpoint %s was saved by %s; loading its weights into %s",
                       path, checkpoint["agent_class"], agent_class_name(agent))
        optimizer = False
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
    checkpoint["optimizer_loaded"] = optimizer
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
