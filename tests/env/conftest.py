"""Shared helpers of the environment tests: small workloads written to disk and rollouts.

Workloads are synthetic (seeded :func:`hdrm.workload.generate.generate_workload`) or hand-written
SWF lines, so every test is fast and its figures can be checked by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.workload.generate import generate_workload, write_swf

ROOT = Path(__file__).resolve().parents[2]
TINY4 = str(ROOT / "platforms" / "tiny4.json")
TINY_HETERO = str(ROOT / "platforms" / "tiny_hetero.json")
SDSC = str(ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf")
LUBLIN = str(ROOT / "workloads" / "lublin_256_first500.swf")


def swf_line(number: int, submit_s: float, run_s: float, procs: int, req_s: float) -> str:
    """One SWF job line (18 fields) with the given figures and -1 for the unknown ones."""
    fields = [number, submit_s, -1, run_s, procs, -1, -1, procs, req_s, -1, 1, 1, -1, -1, -1, -1,
              -1, -1]
    return " ".join(str(f) for f in fields)


def write_jobs(path: Path, jobs: list[tuple[float, float, int, float]], max_procs: int = 4) -> str:
    """Write ``[(submit_s, run_s, procs, requested_s), ...]`` as an SWF file; returns its path."""
    lines = ["; Version: 2.2", f"; MaxJobs: {len(jobs)}", f"; MaxProcs: {max_procs}"]
    lines += [swf_line(i + 1, *job) for i, job in enumerate(jobs)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def small_swf(tmp_path_factory) -> str:
    """60 synthetic jobs of 1-4 cores at an offered load of 1.5 on 4 cores (queues build up)."""
    path = tmp_path_factory.mktemp("workloads") / "small.swf"
    workload = generate_workload(60, 4, np.random.default_rng(7), load=1.5,
                                 run_time_range_s=(5.0, 3600.0))
    write_swf(workload, path)
    return str(path)


#: Platform settings of the fixtures: a platform file, or homogeneous one-core resources.
PLATFORMS = {
    "tiny4": {"platform_file": TINY4},
    "tiny_hetero": {"platform_file": TINY_HETERO},
    "homogeneous": {"platform_file": None, "homogeneous_procs": 4},
}


class Rollout(NamedTuple):
    """Everything an episode produced."""

    observations: list[np.ndarray]
    rewards: list[float]
    actions: list[int]
    infos: list[dict[str, Any]]


def random_valid(rng: np.random.Generator) -> Callable[[np.ndarray, dict], int]:
    """A policy choosing uniformly among the valid actions, from a seeded generator."""
    return lambda obs, info: int(rng.choice(np.flatnonzero(info["action_mask"])))


def rollout(env: SchedulingEnv, policy: Callable[[np.ndarray, dict], int], seed: int | None = None,
            options: dict | None = None, max_steps: int = 100_000) -> Rollout:
    """Play one episode with ``policy(obs, info)``."""
    obs, info = env.reset(seed=seed, options=options)
    out = Rollout([obs], [], [], [info])
    done = env.unwrapped.sim.done
    while not done and len(out.actions) < max_steps:
        action = policy(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        out.observations.append(obs)
        out.rewards.append(reward)
        out.actions.append(action)
        out.infos.append(info)
        done = terminated or truncated
    return out
