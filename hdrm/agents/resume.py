"""What an agent needs beyond its weights and optimizer to resume training where it stopped.

:func:`agent_resume_state` collects the state of every random generator the agent holds (numpy
``Generator`` objects and ``torch.Generator`` objects, found among its attributes and one level
below, e.g. a replay buffer's) and the integer counters its class names in ``resume_counters``
(PPO's number of updates, which anneals the learning rate of ``agents/ppo.py``) and the arrays
and numbers of the objects it names in ``resume_objects`` (PPO's partly filled rollout buffer,
which spans episodes).
:func:`restore_agent_resume_state` puts them back, by attribute path, into a freshly built agent of
the same class, so the resumed run draws the same random numbers the uninterrupted one would have.

The process-wide generators (python's ``random``, numpy's global one, torch's default one) that a
user's agent.py might use are handled by :func:`global_rng_state` and :func:`restore_global_rng`.
"""

from __future__ import annotations

import logging
import random
from typing import Any, Iterator, Mapping

import numpy as np
import torch

from hdrm.agents.base import Agent

logger = logging.getLogger(__name__)


def _generators(agent: Agent) -> Iterator[tuple[str, Any]]:
    """``(attribute path, generator)`` for every numpy or torch generator of ``agent``."""
    for name, value in sorted(vars(agent).items()):
        if isinstance(value, (np.random.Generator, torch.Generator)):
            yield name, value
        elif hasattr(value, "__dict__") and not isinstance(value, (torch.nn.Module, type)):
            for sub, inner in sorted(vars(value).items()):
                if isinstance(inner, (np.random.Generator, torch.Generator)):
                    yield f"{name}.{sub}", inner


def agent_resume_state(agent: Agent) -> dict[str, Any]:
    """The agent's generator states and counters (values ``torch.load(weights_only=True)`` reads).

    Returns:
        ``{"numpy": {path: bit-generator state}, "torch": {path: byte tensor},
        "counters": {name: int}, "objects": {name: {attribute: tensor or number}}}``.
    """
    state: dict[str, Any] = {"numpy": {}, "torch": {}, "counters": {}}
    for path, generator in _generators(agent):
        if isinstance(generator, torch.Generator):
            state["torch"][path] = generator.get_state()
        else:
            state["numpy"][path] = dict(generator.bit_generator.state)
    for name in getattr(type(agent), "resume_counters", ()):
        state["counters"][name] = int(getattr(agent, name))
    state["objects"] = {name: _object_state(getattr(agent, name))
                        for name in getattr(type(agent), "resume_objects", ())}
    return state


def _object_state(obj: Any) -> dict[str, Any]:
    """The numpy arrays (as tensors) and plain numbers of ``obj``'s attributes."""
    out: dict[str, Any] = {}
    for key, value in vars(obj).items():
        if isinstance(value, np.ndarray):
            out[key] = torch.from_numpy(value.copy())
        elif isinstance(value, (bool, int, float)):
            out[key] = value
    return out


def _restore_object(obj: Any, state: Mapping[str, Any]) -> None:
    for key, value in state.items():
        current = getattr(obj, key, None)
        if isinstance(current, np.ndarray):
            saved = value.numpy()
            if saved.shape != current.shape:
                logger.warning("resume: %s has shape %s, the saved one %s; not restored",
                               key, current.shape, saved.shape)
                continue
            current[...] = saved
        elif isinstance(value, (bool, int, float)):
            setattr(obj, key, value)


def restore_agent_resume_state(agent: Agent, state: Mapping[str, Any]) -> None:
    """Put back the states :func:`agent_resume_state` took; paths the agent lacks are skipped."""
    found = dict(_generators(agent))
    for kind in ("numpy", "torch"):
        for path, saved in state.get(kind, {}).items():
            generator = found.get(path)
            if generator is None:
                logger.info("resume: the agent has no generator %s; not restored", path)
            elif isinstance(generator, torch.Generator):
                generator.set_state(saved)
            else:
                generator.bit_generator.state = dict(saved)
    for name, value in state.get("counters", {}).items():
        if hasattr(agent, name):
            setattr(agent, name, int(value))
    for name, saved in state.get("objects", {}).items():
        if hasattr(agent, name):
            _restore_object(getattr(agent, name), saved)


def global_rng_state() -> dict[str, Any]:
    """The states of python's ``random``, numpy's global generator and torch's default one."""
    kind, keys, pos, gauss_next, gauss = np.random.get_state()
    version, internal, python_gauss = random.getstate()
    return {
        "python": [list(internal), version, python_gauss],
        "numpy_global": {"keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)), "pos": int(pos),
                         "has_gauss": int(gauss_next), "gauss": float(gauss), "kind": str(kind)},
        "torch": torch.get_rng_state(),
    }


def restore_global_rng(state: Mapping[str, Any]) -> None:
    """Put back what :func:`global_rng_state` took (missing parts are left alone)."""
    if "python" in state:
        internal, version, gauss = state["python"]
        random.setstate((int(version), tuple(int(v) for v in internal), gauss))
    if "numpy_global" in state:
        g = state["numpy_global"]
        keys = np.asarray(g["keys"].numpy(), dtype=np.uint32)
        np.random.set_state((g["kind"], keys, int(g["pos"]), int(g["has_gauss"]), float(g["gauss"])))
    if "torch" in state:
        torch.set_rng_state(state["torch"])


__all__ = ["agent_resume_state", "global_rng_state", "restore_agent_resume_state",
           "restore_global_rng"]
