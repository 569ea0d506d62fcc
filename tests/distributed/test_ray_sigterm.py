"""A Ray started by :func:`hdrm.distributed.ray_backend.connect` leaves the program's own SIGTERM
handler in place: ``ray.init`` installs one that calls ``sys.exit(15)``, and a
``benchmarks/train.py --workers 2`` run whose process group got SIGTERM exited with status 15
and no line, instead of ``train.py: interrupted (SIGTERM)`` and 143 (runs/D/sigterm_train.sh,
session 23). A fake Ray stands for Ray's ``init`` here (a real one takes seconds to start)."""

from __future__ import annotations

import signal
import sys

import pytest

from hdrm.cli.script import Terminated, sigterm_raises
from hdrm.distributed import ray_backend


class FakeRay:
    """``ray.init`` as Ray's: the main thread's SIGTERM handler becomes ``sys.exit(signum)``."""

    def __init__(self) -> None:
        self.started = False

    def is_initialized(self) -> bool:
        return self.started

    def init(self, **_settings) -> None:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        self.started = True

    def shutdown(self) -> None:
        self.started = False


@pytest.fixture
def fake_ray(monkeypatch):
    ray = FakeRay()
    monkeypatch.setattr(ray_backend, "import_ray", lambda: ray)
    # SIGTERM's default action to start with (a real Ray started earlier in this process left
    # its handler behind)
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield ray
    signal.signal(signal.SIGTERM, previous)


def test_sigterm_still_raises_terminated_after_ray_started(fake_ray):
    with sigterm_raises():
        with pytest.raises(Terminated):
            with ray_backend.connect():
                assert fake_ray.started
                signal.raise_signal(signal.SIGTERM)  # was SystemExit(15)
        assert not fake_ray.started  # the Ray started here stopped as the clean-up unwound


def test_without_a_handler_of_the_programs_own_rays_stays_while_it_runs(fake_ray):
    with ray_backend.connect():
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler) and handler is not signal.SIG_DFL
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # Ray's left with it
