"""hdrm.lazy: numpy and a run's generator, made on first use, behave as the real ones."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import numpy

from hdrm.lazy import LazyGenerator, LazyModule


def test_lazy_module_imports_on_first_read_and_keeps_the_names_read():
    code = ("import sys; from hdrm.lazy import numpy as np; a = 'numpy' in sys.modules; "
            "x = np.arange(3).sum(); print(a, 'numpy' in sys.modules, x, 'arange' in vars(np))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "3", "True"]


def test_lazy_module_gives_the_module_s_own_objects():
    lazy = LazyModule("numpy")
    assert lazy.ndarray is numpy.ndarray and lazy.random is numpy.random
    assert isinstance(numpy.zeros(2), lazy.ndarray)
    assert repr(lazy) == "<lazy module 'numpy'>"


def test_lazy_generator_draws_as_default_rng():
    lazy, real = LazyGenerator(7), numpy.random.default_rng(7)
    assert lazy.generator is None
    assert lazy.permutation(10).tolist() == real.permutation(10).tolist()
    assert lazy.integers(1000, size=5).tolist() == real.integers(1000, size=5).tolist()


def test_lazy_generator_copies_and_pickles_its_state():
    for made in (False, True):
        lazy = LazyGenerator(3)
        if made:
            lazy.random()
        twin, clone = copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))
        expected = lazy.random(4).tolist()
        assert twin.random(4).tolist() == expected == clone.random(4).tolist()
