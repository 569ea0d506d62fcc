"""Same inputs and seed, byte-identical results; a different seed changes random policies' runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import Proc, job, make_platform, workload

from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.outputs import write_outputs


def platform():
    """Two heterogeneous nodes with finite memory and bandwidth (9 cores)."""
    return make_platform([
        (4000.0, [Proc(2, 4.0, 200.0, 8.0, "fast"), Proc(3, 2.0, 100.0, 6.0, "mid")]),
        (3000.0, [Proc(4, 1.0, 50.0, 4.0, "slow")]),
    ])


def jobs(n: int = 150, seed: int = 7):
    """``n`` jobs drawn from a seeded generator: delay and parallel jobs, some over walltime."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        walltime = float(rng.integers(1, 50))
        run = float(rng.integers(1, 60))
        parallel = bool(rng.integers(2))
        out.append(job(i, float(rng.integers(0, 400)), int(rng.integers(1, 7)), walltime, run,
                       mem_mb=float(rng.choice([0, 200, 600])),
                       mem_bw_gbps=float(rng.choice([0.0, 1.0, 3.0])),
                       ops_gflop=run * 2.0 if parallel else None))
    return workload(out)


def signature(result) -> bytes:
    rows = [(o.job.idx, o.state, o.start_s, o.finish_s, o.cores, o.energy_j, o.reason)
            for o in result.outcomes]
    timeline = [(r.time_s, r.queue_size, r.busy_cores, r.contended_cores, r.power_w, r.energy_j)
                for r in result.timeline]
    spans = [(s.processor_id, s.start_s, s.end_s, s.max_demand_gbps)
             for s in result.overutilizations.bandwidth]
    return repr((rows, timeline, spans, result.energy_j)).encode()


def run(policy: str, seed: int, **config):
    return Simulation(platform(), jobs(), SimulationConfig(seed=seed, **config)).run(policy)


@pytest.mark.parametrize("policy,config", [
    ("random-random", {"backfilling": "easy"}),
    ("wfp3-high_mem_bw", {"backfilling": "conservative", "contention": "smooth"}),
    ("random-low_power", {"decision": "commit", "backfilling": "easy"}),
])
def test_same_seed_byte_identical(policy, config):
    first, second = run(policy, 3, **config), run(policy, 3, **config)
    assert signature(first) == signature(second)
    assert len(first.outcomes) == 150
    assert math.isfinite(first.energy_j)


def test_different_seed_changes_random_runs():
    assert signature(run("random-random", 3)) != signature(run("random-random", 4))


def test_deterministic_policy_ignores_the_seed():
    assert signature(run("sjf-high_gflops", 3)) == signature(run("sjf-high_gflops", 4))


def test_written_job_files_are_byte_identical(tmp_path):
    paths = [write_outputs(run("random-random", 11, backfilling="easy"), tmp_path / name)
             for name in ("a", "b")]
    for kind in ("jobs", "overutilizations"):
        assert paths[0][kind].read_bytes() == paths[1][kind].read_bytes()
