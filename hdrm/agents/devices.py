"""Where the learners compute: the rollout and update devices, weight copies and mixed precision.

Every built-in learner has two device settings (``pybatsim.agent.params``):

- ``rollout_device``: where decisions are computed (one observation, or one batch of them across
  environments, at a time);
- ``update_device``: where the network is trained (forward, backward and the optimizer's step).

Each is ``cpu``, ``cuda``, ``cuda:N`` or ``auto``. ``auto`` puts updates on the first GPU when torch
sees one and rollouts on the CPU: single decisions of small networks are faster on the CPU (a GPU
pays a launch latency per call), updates of large batches much faster on a GPU. When the two
devices differ, the learner keeps a copy of its network on the rollout device and copies the
trained weights into it after each update (:func:`copy_weights`); when they are the same, one
network serves both and nothing is copied.

``precision`` ``"bf16"`` runs the update's forward passes under ``torch.autocast`` with bfloat16
(:func:`update_autocast`); losses are computed in float32 from float32 logits and values.

Network initialisation always happens on the CPU under the learner's seed, then the network moves,
so a seed gives the same initial weights on every device.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import re
from typing import Any, ContextManager, NamedTuple

import torch
from torch import nn

from hdrm.errors import ConfigError

logger = logging.getLogger(__name__)

#: The device names the settings accept (``cuda:N`` stands for any GPU index).
DEVICE_NAMES = ("auto", "cpu", "cuda", "cuda:N")
#: The values of the ``precision`` setting.
PRECISIONS = ("fp32", "bf16")

_DEVICE_RE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


def check_device_name(value: Any, path: str) -> str:
    """Check the spelling of a device setting (not whether the device exists).

    Raises:
        ConfigError: not one of ``auto``, ``cpu``, ``cuda``, ``cuda:N``.
    """
    if not isinstance(value, str) or not _DEVICE_RE.match(value):
        raise ConfigError(
            f"{path}: invalid device {value!r}; choose one of: {', '.join(DEVICE_NAMES)} "
            "(N a GPU index, e.g. cuda:0)"
        )
    return value


def available_devices() -> list[str]:
    """The devices torch can use here: ``cpu`` and one ``cuda:N`` per visible GPU."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return ["cpu", *(f"cuda:{i}" for i in range(gpus))]


def resolve_device(name: str, role: str, path: str) -> torch.device:
    """The torch device a setting names on this machine.

    Args:
        name: a checked device setting (``auto``, ``cpu``, ``cuda``, ``cuda:N``).
        role: ``"rollout"`` or ``"update"``: ``auto`` is the CPU for rollouts and the first GPU
            (when there is one, else the CPU) for updates.
        path: JSON path of the setting, for messages.

    Raises:
        ConfigError: a GPU is asked for that this machine does not have (one line naming the
            setting and the available devices).
    """
    check_device_name(name, path)
    available = available_devices()
    if name == "auto":
        return torch.device("cuda:0" if role == "update" and len(available) > 1 else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    wanted = "cuda:0" if name == "cuda" else name
    if wanted not in available:
        build = "" if torch.version.cuda else ", a CPU-only build"
        why = "no CUDA GPU is visible" if len(available) == 1 else f"{len(available) - 1} GPU(s)"
        raise ConfigError(
            f"{path}: {name!r} asked for but {why} to torch {torch.__version__}{build}; "
            f"available: {', '.join(available)}; use \"auto\" or one of those"
        )
    return torch.device(wanted)


class Devices(NamedTuple):
    """The resolved devices of a learner."""

    rollout: torch.device
    update: torch.device

    @property
    def shared(self) -> bool:
        """One network serves rollouts and updates (same device): no copy is kept."""
        return not separate_networks(self)

    def describe(self) -> str:
        """``rollout cpu, update cuda:0``."""
        return f"rollout {self.rollout}, update {self.update}"


def separate_networks(devices: Devices) -> bool:
    """Whether the learner keeps a rollout copy of its network (the devices differ)."""
    return devices.rollout != devices.update


def resolve_devices(rollout: str, update: str, where: str) -> Devices:
    """Both devices of a learner whose settings live at JSON path ``where``."""
    return Devices(
        resolve_device(rollout, "rollout", f"{where}.rollout_device"),
        resolve_device(update, "update", f"{where}.update_device"),
    )


def make_rollout_network(network: nn.Module, devices: Devices) -> nn.Module:
    """The network decisions use: ``network`` itself when shared, else a frozen copy on the
    rollout device (kept up to date by :func:`copy_weights`)."""
    if not separate_networks(devices):
        return network
    return copy.deepcopy(network).to(devices.rollout).requires_grad_(False)


def copy_weights(source: nn.Module, target: nn.Module) -> None:
    """Copy every parameter and buffer of ``source`` into ``target`` (any devices); no-op when
    they are the same module."""
    if source is target:
        return
    with torch.no_grad():
        targets = dict(target.state_dict(keep_vars=True))
        for name, value in source.state_dict(keep_vars=True).items():
            targets[name].copy_(value)


def update_autocast(device: torch.device, precision: str) -> ContextManager[Any]:
    """The context the update's forward passes run in: bf16 autocast on ``device`` for
    ``precision`` ``"bf16"``, nothing for ``"fp32"``."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def check_precision(precision: str, device: torch.device, path: str) -> None:
    """Refuse bf16 where torch cannot autocast to it.

    Raises:
        ConfigError: bf16 on a GPU without bfloat16 support.
    """
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ConfigError(
            f"{path}: 'bf16' asked for but {torch.cuda.get_device_name(device)} has no bfloat16 "
            'support; use "fp32"'
        )


def to_cpu(value: Any) -> Any:
    """``value`` with every tensor (in nested dicts, lists and tuples) moved to the CPU.

    Tensors already on the CPU are kept (not copied); a dict keeps its type and the
    ``_metadata`` torch attaches to state dicts (module versions, read when loading).
    """
    if isinstance(value, torch.Tensor):
        return value.detach().cpu() if value.device.type != "cpu" else value
    if isinstance(value, dict):
        out = type(value)((k, to_cpu(v)) for k, v in value.items())
        if hasattr(value, "_metadata"):
            out._metadata = value._metadata  # type: ignore[attr-defined]
        return out
    if isinstance(value, list):
        return [to_cpu(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_cpu(v) for v in value)
    return value


__all__ = [
    "DEVICE_NAMES",
    "PRECISIONS",
    "Devices",
    "available_devices",
    "check_device_name",
    "check_precision",
    "copy_weights",
    "resolve_device",
    "resolve_devices",
    "make_rollout_network",
    "separate_networks",
    "to_cpu",
    "update_autocast",
]
