"""Stop signals: the first one is a request, one during a save is held back, a second one outside
a save stops at once; the previous handlers come back."""

from __future__ import annotations

import os
import signal

import pytest

from hdrm.launch.signals import StopSignals


def test_the_first_signal_is_a_request_and_a_second_one_stops_at_once():
    before = signal.getsignal(signal.SIGINT)
    with StopSignals() as stops:
        assert not stops.requested() and stops.exit_status == 0
        os.kill(os.getpid(), signal.SIGTERM)
        assert stops.requested() and stops.received == signal.SIGTERM and stops.exit_status == 143
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_signals_during_a_save_are_held_back():
    with StopSignals() as stops:
        with stops.shielded():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C: the save goes on
            os.kill(os.getpid(), signal.SIGTERM)
        assert stops.during_save == 3 and stops.received == signal.SIGINT
        assert stops.exit_status == 130
