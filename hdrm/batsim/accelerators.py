"""What a Batsim platform cannot hold: accelerators. Checked before anything of Batsim is loaded."""

from __future__ import annotations

from hdrm.errors import ConfigError
from hdrm.platform.model import Platform


def refuse_accelerators(platform: Platform) -> None:
    """Refuse a platform with GPUs: a Batsim platform (SimGrid hosts) has no way to express them.

    Raises:
        ConfigError: one line naming the platform file and its GPUs by model.
    """
    if not platform.accelerators:
        return
    models: dict[str, int] = {}
    for accel in platform.accelerators:
        models[accel.type.name] = models.get(accel.type.name, 0) + 1
    listed = ", ".join(f"{n} {m}" for m, n in sorted(models.items(), key=lambda kv: -kv[1]))
    raise ConfigError(f"{platform.source or platform.name}: {len(platform.accelerators)} GPUs "
                      f"({listed}); Batsim cannot express GPUs (its platforms have compute hosts "
                      "only), so engine 'batsim' cannot run this platform: use engine 'builtin', "
                      "or 'hdrm fragmentation' to place GPU tasks")
