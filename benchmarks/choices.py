"""One entry of a benchmark's named table (traces, GPU workloads) by its command-line name.

The CPU and GPU protocols look their tables up the same way, with the same one-line error.
"""

from __future__ import annotations

from typing import Mapping, TypeVar

from hdrm.errors import ConfigError
from hdrm.registry import suggest

V = TypeVar("V")


def named(table: Mapping[str, V], key: str, option: str, what: str) -> V:
    """The entry of ``table`` named ``key``.

    Args:
        table: the entries by name.
        key: the name asked for.
        option: the command-line option that gave it (``--trace``), named in the error.
        what: what the entries are (``trace``), named in the error.

    Raises:
        ConfigError: unknown name: the option, the name, the closest names and the choices.
    """
    if key not in table:
        raise ConfigError(f"{option}: unknown {what} {key!r}; {suggest(key, list(table))}"
                          f"choose among: {', '.join(table)}")
    return table[key]
