"""PyBatsim's two classes that hdrm uses, imported in one place with a clear error when it is absent.

PyBatsim (import name ``batsim``) drives the real Batsim for the ``batsim`` engine. It is not one of
hdrm's requirements: pybatsim 3.2.1 pins ``pyzmq<23``, which does not build on Python 3.11, so it is
installed on its own, without its pins (README.rst). Where it is missing, importing this module raises
a :class:`~hdrm.errors.ConfigError` of one line that names the engine, the missing package and the
command that installs it, instead of a traceback from deep inside the engine.
"""

from __future__ import annotations

from hdrm.errors import ConfigError

#: How to install PyBatsim without its pyzmq pin (README.rst, "Install").
INSTALL_PYBATSIM = ("python -m pip install pyzmq procset sortedcontainers docopt && "
                    "python -m pip install --no-deps pybatsim==3.2.1")

try:
    from batsim.batsim import Batsim, BatsimScheduler
except ImportError as exc:
    raise ConfigError(
        f"engine 'batsim' needs PyBatsim 3.2.1 (import name 'batsim'), which cannot be imported "
        f"here ({exc}); install it with: {INSTALL_PYBATSIM}; or use engine 'builtin', which needs "
        "neither Batsim nor PyBatsim") from None

__all__ = ["Batsim", "BatsimScheduler", "INSTALL_PYBATSIM"]
