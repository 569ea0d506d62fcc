"""Loading a user's agent.py from its path.

The file must define exactly one :class:`~hdrm.agents.base.Agent` subclass (classes it imports from
elsewhere do not count). Every failure is an :class:`~hdrm.errors.AgentLoadError` naming the file:
a missing file, a syntax error (``file:line``), an exception raised while importing it (with the
line of the file where it happened), no Agent subclass, several, or an abstract one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import logging
import sys
import traceback
from pathlib import Path
from types import ModuleType

from hdrm.agents.base import Agent
from hdrm.errors import AgentLoadError

logger = logging.getLogger(__name__)

#: Prefix of the module names given to loaded agent.py files.
USER_MODULE_PREFIX = "hdrm_user_agent_"


def load_agent_class(path: str | Path) -> type[Agent]:
    """Import the agent.py at ``path`` and return the one Agent subclass it defines.

    Raises:
        AgentLoadError: the file is missing or unreadable, does not import, or does not define
            exactly one concrete Agent subclass; the message names the file and what was found.
    """
    path = Path(path)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "no such file"
        raise AgentLoadError(f"agent file {path}: {what}; give the path of an agent.py")
    module = _import_file(path)
    return _the_agent_class(path, module)


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"{USER_MODULE_PREFIX}{stem}_{digest}"


def _import_file(path: Path) -> ModuleType:
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentLoadError(f"agent file {path}: cannot be imported as Python (is it a .py file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise AgentLoadError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise AgentLoadError(
            f"{path}{_line_in(path, exc)}: importing the agent failed: {type(exc).__name__}: {exc}"
        ) from exc
    return module


def _line_in(path: Path, exc: BaseException) -> str:
    """``":N"`` for the deepest frame of the traceback that is in ``path``, or ``""``."""
    target = str(path.resolve())
    line = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            same = str(Path(frame.filename).resolve()) == target
        except OSError:  # pragma: no cover - unusual frame file names
            same = False
        if same:
            line = f":{frame.lineno}"
    return line


def _the_agent_class(path: Path, module: ModuleType) -> type[Agent]:
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, Agent) and obj.__module__ == module.__name__
    ]
    if not found:
        imported = sorted(
            n for n, o in vars(module).items() if inspect.isclass(o) and issubclass(o, Agent)
        )
        hint = f" (it imports {', '.join(imported)}; subclass one of them)" if imported else ""
        raise AgentLoadError(
            f"agent file {path}: no Agent subclass defined{hint}; define exactly one class "
            "deriving from hdrm.agents.base.Agent"
        )
    if len(found) > 1:
        names = ", ".join(cls.__name__ for cls in found)
        raise AgentLoadError(
            f"agent file {path}: {len(found)} Agent subclasses: {names}; define exactly one"
        )
    cls = found[0]
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise AgentLoadError(f"agent file {path}: {cls.__name__} does not implement {missing}")
    logger.info("loaded agent class %s from %s", cls.__name__, path)
    return cls
