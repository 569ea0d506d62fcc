"""Named registries with "did you mean" suggestions.

Policies, heuristics, contention models, observations, rewards and agents register under a name;
looking up a missing name raises :class:`~hdrm.errors.ConfigError` naming the closest valid names.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from hdrm.errors import ConfigError

T = TypeVar("T")


def suggest(name: str, choices: list[str] | tuple[str, ...]) -> str:
    """Return a human hint naming the closest choices to ``name``, or an empty string."""
    import difflib  # only when a name is wrong: a run with good names never loads it

    close = difflib.get_close_matches(str(name), list(choices), n=3, cutoff=0.5)
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(c) for c in close) + "? "


class Registry(Generic[T]):
    """A mapping from lower-case names to objects of one kind.

    Args:
        kind: what the registry holds, used in error messages ("job selection policy").
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        """Decorator that registers an object under ``name`` and any ``aliases``."""

        def decorator(obj: T) -> T:
            self.add(name, obj, *aliases)
            return obj

        return decorator

    def add(self, name: str, obj: T, *aliases: str) -> None:
        """Register ``obj`` under ``name`` (and ``aliases``); a name may be registered once."""
        for key in (name, *aliases):
            key = key.lower()
            if key in self._items:
                raise ValueError(f"{self.kind} {key!r} is registered twice")
            self._items[key] = obj

    def remove(self, name: str) -> T:
        """Unregister ``name`` (not its aliases) and return what it named.

        Raises:
            ConfigError: the name is not registered.
        """
        obj = self.get(name)
        del self._items[str(name).lower()]
        return obj

    def get(self, name: str, where: str = "") -> T:
        """Return the object registered as ``name``.

        Args:
            name: the name to look up (case-insensitive).
            where: where the name came from (a JSON path or an option), for the error message.

        Raises:
            ConfigError: the name is unknown; the message suggests close names and lists the choices.
        """
        try:
            return self._items[str(name).lower()]
        except KeyError:
            prefix = f"{where}: " if where else ""
            raise ConfigError(
                f"{prefix}unknown {self.kind} {name!r}; {suggest(str(name).lower(), self.names())}"
                f"choose one of: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        """All registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
