"""Checks of command-line values shared by sub-commands (not a sub-command itself)."""

from __future__ import annotations

from hdrm.errors import ConfigError
from hdrm.workload.requirements import parse_bandwidth


def check_seed_and_bandwidth(seed: int | None, bandwidth: str, flag: str) -> None:
    """Refuse a negative ``--seed`` (numpy's ValueError traceback where a draw used it) and a
    bad bandwidth spec ``flag`` (before the inputs are read, and also where no bandwidth is
    drawn: on homogeneous processors, or without ``--json``).

    Raises:
        ConfigError: naming the flag and the value.
    """
    if seed is not None and seed < 0:
        raise ConfigError(f"--seed: expected an integer >= 0, got {seed}")
    try:
        parse_bandwidth(bandwidth)
    except ConfigError as exc:
        raise ConfigError(f"{flag}: {exc}") from None
