"""The check of the open names of ``options.json`` against the registries of higher layers.

:mod:`hdrm.options` checks closed choices (engine, decision ...) itself; names that other parts of
the package register (objectives, observations, policies, contention models ...) are only known
above layer L0, so those layers pass their valid names to :func:`check_names`, which raises a
one-line :class:`~hdrm.errors.ConfigError` naming the file, the JSON path, the closest valid name
and the choices. Layer L0: standard library only. :func:`check_names` and :data:`SELECTION_PATH`
stay importable from :mod:`hdrm.options`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hdrm.errors import ConfigError
from hdrm.registry import suggest
from hdrm.typedjson import show

if TYPE_CHECKING:  # pragma: no cover
    from hdrm.options import Options

#: JSON path of the policy-pair selection, checked by :func:`check_names` against pair names.
SELECTION_PATH = "pybatsim.env.actions.selection"


def check_names(options: Options, choices: Mapping[str, Iterable[str]]) -> None:
    """Check open names (registered by higher layers) against their valid names.

    Args:
        options: the parsed options.
        choices: JSON path (``"pybatsim.env.objective"``, ``"simulation.contention"`` ...) to the
            valid names, compared case-insensitively. For ``"pybatsim.env.actions.selection"`` give
            the valid pair names ``"job-core"`` (e.g. ``"shortest-high_gflops"``): each job and core
            name of each entry is checked.

    Raises:
        ConfigError: a name is unknown; the message names the file, the JSON path, the closest
            valid name and the choices.
        ValueError: a path of ``choices`` is not a string option.
    """
    for path, names in choices.items():
        valid = sorted(set(names))
        if path == SELECTION_PATH:
            _check_selection(options, valid)
            continue
        value: Any = options
        for key in path.split("."):
            value = getattr(value, key, None)
        if not isinstance(value, str):
            raise ValueError(f"check_names: {path!r} is not a string option")
        _check_name(options.source, path, value, valid, path.rsplit(".", 1)[-1])


def _check_name(source: str, path: str, value: str, valid: list[str], kind: str) -> None:
    """Raise ConfigError when ``value`` is not one of ``valid`` (case-insensitively)."""
    lowered = [v.lower() for v in valid]
    if value.lower() not in lowered:
        raise ConfigError(
            f"{source}: {path}: unknown {kind} {show(value)}; {suggest(value.lower(), lowered)}"
            f"valid choices: {', '.join(valid)}"
        )


def _check_selection(options: Options, pairs: list[str]) -> None:
    """Check each job, core and pair name of ``actions.selection`` against pair names."""
    selection = options.pybatsim.env.actions.selection or ()
    split = [p.split("-", 1) for p in pairs if "-" in p]
    jobs, cores = sorted({j for j, _ in split}), sorted({c for _, c in split})
    for i, entry in enumerate(selection):
        for job, core_names in entry.items():
            where = f"{SELECTION_PATH}[{i}].{job}"
            _check_name(options.source, where, job, jobs, "job selection")
            for k, core in enumerate(core_names):
                _check_name(options.source, f"{where}[{k}]", core, cores, "core selection")
                _check_name(options.source, f"{where}[{k}]", f"{job}-{core}", pairs, "policy pair")
