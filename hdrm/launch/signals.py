"""Ctrl-C and SIGTERM during a launch: a stop request the episode loop polls, and shielded saves.

The first SIGINT or SIGTERM does not kill the run: it is recorded, and the loop ends after the
decision under way (:class:`~hdrm.launch.loop.EpisodeStopped`) so that the launcher can save the
model and write the outputs. A signal that comes while a checkpoint is being written (inside
:meth:`StopSignals.shielded`) is recorded too and never interrupts the write. A second signal
outside a save means "stop now": it raises :class:`KeyboardInterrupt` where the program is.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from types import FrameType
from typing import Any, Iterator

logger = logging.getLogger(__name__)

#: The signals turned into a stop request.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Exit status of a run stopped by each signal (128 + the signal number, as shells report it).
EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}


class StopSignals:
    """A context manager that installs the handlers (main thread only) and restores the old ones.

    Attributes:
        received: the first stop signal received, or None.
        during_save: signals that arrived while a save was shielded (and were held back).
    """

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self.during_save = 0
        self._shielded = 0
        self._previous: dict[signal.Signals, Any] = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def requested(self) -> bool:
        """Whether a stop signal came (the loop's ``stop`` callable)."""
        return self.received is not None

    @property
    def exit_status(self) -> int:
        """The exit status of a run the received signal stopped (130 for SIGINT, 143 for SIGTERM)."""
        return EXIT_STATUS.get(self.received, 130) if self.received is not None else 0

    @contextlib.contextmanager
    def shielded(self) -> Iterator[None]:
        """Hold every stop signal back while the block runs (a checkpoint being written)."""
        self._shielded += 1
        try:
            yield
        finally:
            self._shielded -= 1

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        if self._shielded:
            self.during_save += 1
            self.received = self.received or sig
            logger.warning("%s during a save: the save finishes first", sig.name)
        elif self.received is None:
            self.received = sig
            logger.info("%s: stopping after the current decision", sig.name)
        else:
            raise KeyboardInterrupt


__all__ = ["EXIT_STATUS", "STOP_SIGNALS", "StopSignals"]
