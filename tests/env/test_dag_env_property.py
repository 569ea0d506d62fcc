"""Property of the periodic DAG env: whatever valid (task, processor) picks an agent makes, on
random task sets and platforms with or without GPUs, every task runs once on its device type, no
task starts before its predecessors' ends plus the transfer, no core or GPU runs two tasks at
once, and each task lasts its time on its device."""

from collections import defaultdict

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdrm.dag.periodic_gen import PeriodicSpec, generate
from hdrm.env.dag_env import DagEnv

from dag.periodic_gpu_case import write_case

EPS = 1e-9


def _no_overlap(intervals: dict) -> None:
    for device, spans in intervals.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end - EPS, device


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), graphs=st.integers(1, 3), util=st.floats(0.5, 4.0),
       cores=st.integers(1, 3), gpus=st.integers(0, 2), pick=st.integers(0, 2**31))
def test_random_valid_picks_keep_every_rule(tmp_path_factory, seed, graphs, util, cores, gpus,
                                            pick):
    folder = tmp_path_factory.mktemp("p")
    _, platform = write_case(folder, gpus, cores)
    spec = PeriodicSpec(graphs=graphs, utilisation=util, depth=3, width=2, period_min_s=5.0,
                        period_max_s=20.0, horizon_periods=2.0)
    env = DagEnv(platform_file=str(platform), workload_file="unused.json", mode="job_pick",
                 window=3, tasksets=[generate(spec, seed)])
    rng = np.random.default_rng(pick)
    obs, info = env.reset()
    done = env.sim.done
    while not done:
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    result = env.result()
    jobs = env.sim.workload.jobs
    assert len(result.outcomes) == len(jobs)
    spans = {o.job.idx: (o.start_s, o.finish_s) for o in result.outcomes}
    assert all(o.state == "COMPLETED_SUCCESSFULLY" for o in result.outcomes)
    deps = env.sim.workload.dependencies
    for job, pred, think in zip(deps.job, deps.pred, deps.think_s):
        assert spans[job][0] >= spans[pred][1] + think - EPS
    busy = defaultdict(list)
    for o in result.outcomes:
        assert abs(o.finish_s - o.start_s - o.job.run_time_s) < 1e-6
        if gpus:
            placed = env.sim.core.placements[o.job.idx]
            assert bool(placed.gpus) == (o.job.accel is not None)
            for device in placed.devices:
                busy[("gpu", device)].append(spans[o.job.idx])
        else:
            for core in o.cores:
                busy[("core", core)].append(spans[o.job.idx])
    _no_overlap(busy)
    if gpus:  # CPU tasks share the node's cores by milli-core: never more at once than cores
        events = sorted((t, d) for o in result.outcomes if o.job.accel is None
                        for t, d in ((spans[o.job.idx][0], 1), (spans[o.job.idx][1], -1)))
        running = 0
        for _, delta in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts
            running += delta
            assert running <= cores
    assert env.ended == sum(len(g.releases(env.taskset.horizon_s)) for g in env.taskset.graphs)
