"""Heavy modules imported on first use, so that commands that never need them do not pay for them.

A short ``hdrm replay`` on a CPU platform runs without numpy (its import alone costs about a
tenth of a second of CPU, a sixth of such a run's budget): modules on that path import numpy as

    from hdrm.lazy import numpy as np

and use ``np`` as usual; numpy is imported at the first ``np.<name>`` that runs. Each name read
is then kept on the stand-in, so later reads cost what a module attribute costs. Module-level
code (constants, default arguments) that reads ``np.<name>`` imports numpy at once: keep such
values as plain Python (dtype codes as strings, say) in modules on a light path.

:class:`LazyGenerator` is the same idea for a run's ``np.random.default_rng(seed)``: most
policies never draw a random number.

Layer L0: standard library only (numpy is named, and imported only when used, by callers in
layers that may use it; ``tests/test_layering.py`` counts ``from hdrm.lazy import numpy`` as an
import of numpy).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LazyGenerator", "LazyModule", "numpy"]


class LazyModule:
    """Stand-in for the module ``name``, imported at the first attribute read.

    Args:
        name: the module's dotted name (``"numpy"``).
    """

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        # called only for names not yet kept in __dict__
        module = importlib.import_module(self.__dict__["_lazy_name"])
        value = getattr(module, attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


#: numpy, imported at the first ``numpy.<name>`` read (``from hdrm.lazy import numpy as np``).
numpy = LazyModule("numpy")


class LazyGenerator:
    """``numpy.random.default_rng(seed)``, made at the first use of one of its methods.

    Draws are those of the generator itself (same seed, same numbers); copies and pickles carry
    the generator once made (or the seed before).

    Args:
        seed: the seed given to ``default_rng``.
    """

    def __init__(self, seed: Any = None) -> None:
        self.seed = seed
        self.generator = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("seed", "generator"):
            raise AttributeError(attr)  # copy and pickle probes, an instance not yet set up
        generator = self.generator
        if generator is None:
            generator = self.generator = numpy.random.default_rng(self.seed)
        return getattr(generator, attr)

    def __repr__(self) -> str:
        made = "made" if self.generator is not None else "not made yet"
        return f"LazyGenerator(seed={self.seed!r}, {made})"
