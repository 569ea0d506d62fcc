"""The ``pick-hetero4096`` case of ``benchmarks/bench_env.py``: its platform file, its scaled
trace (checked by hand), a few environment steps on them, and the benchmark's random agent."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_env import (  # noqa: E402
    HETERO4096, SCALE_4096, env_settings, random_valid, scaled_swf)
from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.platform.loader import load_platform  # noqa: E402

SWF = """; MaxNodes: 128
; MaxProcs: 128
; Note: kept as is
1 0 5 100 8 -1 -1 8 200 -1 1 3 1 -1 1 -1 -1 -1
2 10 0 50 -1 -1 -1 2 60 -1 1 4 1 -1 1 -1 -1 -1
3 20 0 30 128 -1 -1 128 60 -1 1 4 1 -1 1 -1 -1 -1
"""


def test_platform_has_4096_cores_of_four_generations():
    platform = load_platform(HETERO4096)
    assert platform.nb_cores == 4096
    assert len(platform.nodes) == 22 + 38 + 10 + 16
    assert len({p.type.name for p in platform.processors}) == 4


def test_scaled_swf_multiplies_processor_counts_only(tmp_path):
    source = tmp_path / "in.swf"
    source.write_text(SWF, encoding="utf-8")
    text = scaled_swf(source, 32, tmp_path / "out.swf").read_text(encoding="utf-8").splitlines()
    assert text[:3] == ["; MaxNodes: 4096", "; MaxProcs: 4096", "; Note: kept as is"]
    assert text[3].split()[:9] == ["1", "0", "5", "100", "256", "-1", "-1", "256", "200"]
    assert text[4].split()[4:8] == ["-1", "-1", "-1", "64"]  # an unknown count stays unknown
    assert text[5].split()[4:8] == ["4096", "-1", "-1", "4096"]


def test_env_steps_on_the_scaled_platform(tmp_path):
    source = tmp_path / "in.swf"
    source.write_text(SWF, encoding="utf-8")
    scaled = scaled_swf(source, SCALE_4096, tmp_path / "out.swf")
    env = SchedulingEnv(**dict(env_settings("pick-hetero4096", str(scaled), 3), start_index=None))
    _, info = env.reset(seed=0)
    steps = 0
    while not env.sim.done:
        _, _, done, _, info = env.step(int(info["action_mask"].nonzero()[0][0]))
        steps += 1
    starts = sorted(o.start_s for o in env.result().outcomes)
    assert steps >= 3 and len(starts) == 3
    assert max(len(o.cores) for o in env.result().outcomes) == 4096


def test_random_valid_draws_what_rng_choice_draws():
    """The benchmark's random agent picks the very actions ``rng.choice`` of the valid ones
    picked (the same episodes as before it was made cheaper), from one seeded stream."""
    masks = np.random.default_rng(1).random((3000, 129)) < 0.3
    masks[:, -1] = True  # at least one valid action
    mine, theirs = np.random.default_rng(0), np.random.default_rng(0)
    drawn = [random_valid(mine, m) for m in masks]
    assert drawn == [int(theirs.choice(np.flatnonzero(m))) for m in masks]
    assert all(masks[i, a] for i, a in enumerate(drawn)) and len(set(drawn)) > 100
