"""One local Ray (2 CPUs, started by :func:`hdrm.distributed.ray_backend.connect`) shared by the
Ray tests of this folder: starting one takes about 3.4 s and stopping it 1.4 s, which every module
with its own Ray paid again.

The modules whose tests ask for the ``ray`` fixture run one after the other, after this folder's
other modules (their order is otherwise kept); the shared Ray starts at the first test that asks
for it and stops after the last test of these modules, so that a module without the fixture runs
without a Ray, as it did. After the stop, Ray must no longer be initialised (a teardown error
otherwise).
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
#: the modules of this folder with a test that asks for ``ray`` (filled at collection)
RAY_MODULES: set[Path] = set()


class SharedRay:
    """A local Ray started on first use and stopped on request."""

    def __init__(self) -> None:
        self._stack: ExitStack | None = None
        self._module: Any = None

    @property
    def running(self) -> bool:
        return self._stack is not None

    def start(self) -> Any:
        """The ``ray`` module, with the shared local Ray started if it is not yet."""
        if self._stack is None:
            from hdrm.distributed import ray_backend

            stack = ExitStack()
            self._module = stack.enter_context(ray_backend.connect(None, num_cpus=2))
            self._stack = stack
        return self._module

    def stop(self) -> None:
        """Shut the shared Ray down (nothing when it is not running)."""
        if self._stack is None:
            return
        stack, self._stack = self._stack, None
        stack.close()
        if self._module.is_initialized():
            raise RuntimeError("the shared local Ray is still initialised after its shutdown")


SHARED = SharedRay()


@pytest.fixture(scope="module")
def ray():
    """A local Ray with 2 CPUs, shared by the Ray modules of this folder (see the module's
    docstring); skipped when Ray is not installed."""
    pytest.importorskip("ray")
    return SHARED.start()


def _in_this_folder(item: pytest.Item) -> bool:
    return HERE in item.path.parents


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run this folder's Ray modules after its other modules, each group in its own order."""
    mine = [i for i, item in enumerate(items) if _in_this_folder(item)]
    RAY_MODULES.clear()
    RAY_MODULES.update(items[i].path for i in mine if "ray" in items[i].fixturenames)
    ordered = ([items[i] for i in mine if items[i].path not in RAY_MODULES]
               + [items[i] for i in mine if items[i].path in RAY_MODULES])
    for position, item in zip(mine, ordered):
        items[position] = item


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """Stop the shared Ray once the next test is not in one of the Ray modules."""
    try:
        return (yield)
    finally:
        if SHARED.running and (nextitem is None or nextitem.path not in RAY_MODULES):
            SHARED.stop()


def pytest_sessionfinish() -> None:
    """A session stopped early (``-x``, Ctrl-C) leaves no Ray behind."""
    SHARED.stop()
