"""The multi-agent GPU environment's masks never allow an infeasible placement and never hide a
feasible one (hypothesis over small random clusters and task sets, random masked actions),
checked against a brute-force recount of what the running tasks hold; the incremental node
table (with or without the ``fgd_score`` column) equals one built from scratch."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdrm.env.gpu_multiagent import parallel_env
from hdrm.env.gpu_multiagent_obs import NodeFeatures
from hdrm.policies.gpu_price import platform_prices
from hdrm.policies.placement import make_placement

MODELS = ("T4", "V100M16")
PLACEMENTS = ("fgd", "best_fit", "first_fit", "random")


@st.composite
def clusters(draw) -> list[tuple[int, int, int, str]]:
    """1-4 nodes of (milli-CPU, memory MiB, GPUs, model), the first with GPUs (a GPU platform
    has some)."""
    return [(draw(st.integers(1, 8)) * 1000, draw(st.integers(1024, 16384)),
             draw(st.integers(1 if i == 0 else 0, 4)), draw(st.sampled_from(MODELS)))
            for i in range(draw(st.integers(1, 4)))]


@st.composite
def tasks(draw) -> list[tuple]:
    """1-12 tasks of (submit, run, milli-CPU, memory, GPUs, milli-GPU each, allowed models)."""
    out = []
    for _ in range(draw(st.integers(1, 12))):
        gpus = draw(st.integers(0, 3))
        milli = draw(st.sampled_from((100, 250, 500, 1000))) if gpus == 1 else 1000 * (gpus > 0)
        models = "|".join(draw(st.lists(st.sampled_from(MODELS), max_size=2, unique=True)))
        out.append((draw(st.integers(0, 50)), draw(st.integers(1, 40)),
                    draw(st.integers(1, 60)) * 100, draw(st.integers(0, 8192)), gpus, milli,
                    models if gpus else ""))
    return out


def write_inputs(folder: Path, nodes, jobs) -> dict:
    """The nodes and tasks as an openb node list and pod list."""
    lines = ["sn,cpu_milli,memory_mib,gpu,model"]
    lines += [f"n{i},{c},{m},{g},{model if g else ''}" for i, (c, m, g, model) in enumerate(nodes)]
    (folder / "nodes.csv").write_text("\n".join(lines) + "\n")
    pods = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
            "deletion_time,scheduled_time"]
    pods += [f"t{i},{c},{m},{g},{gm},{spec},LS,Succeeded,{s},{s + r},{s}"
             for i, (s, r, c, m, g, gm, spec) in enumerate(jobs)]
    (folder / "pods.csv").write_text("\n".join(pods) + "\n")
    return dict(platform_file=str(folder / "nodes.csv"), workload_file=str(folder / "pods.csv"))


def fits_by_hand(core, node: int, shape) -> bool:
    """Whether ``shape`` fits on ``node`` now, recounted from the running tasks' placements and
    the platform's capacities (not from the cluster's free arrays)."""
    cluster = core.cluster
    cpu, mem = int(cluster.cpu_cap[node]), int(cluster.mem_cap[node])
    gpus = [1000] * int(cluster.nb_gpus[node])
    for placed in core.running.values():
        if placed.node == node:
            cpu -= placed.shape.cpu_milli
            mem -= placed.shape.memory_mib
            for g in placed.gpus:
                gpus[g] -= placed.shape.milli
    if shape.cpu_milli > cpu or shape.memory_mib > mem:
        return False
    if not shape.gpus:
        return True
    model = cluster.model_names[cluster.model[node]] if cluster.model[node] >= 0 else None
    if model is None or (shape.models and model not in shape.models):
        return False
    return sum(left >= shape.milli for left in gpus) >= shape.gpus


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), tasks(), st.sampled_from(PLACEMENTS), st.sampled_from(("none", "greedy")),
       st.integers(0, 2**16), st.booleans())
def test_masks_are_exactly_the_feasible_choices(nodes, jobs, placement, backfilling, seed, fgd):
    with tempfile.TemporaryDirectory() as folder:
        env = parallel_env(placement=placement, backfilling=backfilling, window=4,
                           fgd_features=fgd, **write_inputs(Path(folder), nodes, jobs))
        obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    core = env.core.sim.core
    while env.agents:
        if env.phase == "order":
            window = env.core.window_jobs()
            mask = obs["order"]["action_mask"]
            by_hand = [any(fits_by_hand(core, n, core.shape(j)) for n in range(env.nb_nodes))
                       for j in window]
            assert mask[:len(window)].astype(bool).tolist() == by_hand
            assert not mask[len(window):env.window].any() and mask.any()
            assert obs["place"]["action_mask"].tolist() == [1] + [0] * (env.nb_nodes - 1)
            action = {"order": int(rng.choice(np.flatnonzero(mask))), "place": 0}
        else:
            shape = core.shape(env.core.chosen)
            mask = obs["place"]["action_mask"]
            assert mask.astype(bool).tolist() == [fits_by_hand(core, n, shape)
                                                  for n in range(env.nb_nodes)]
            assert obs["order"]["action_mask"].tolist() == [1] + [0] * env.window
            scorer = make_placement("fgd", core.cluster, core.types) if fgd else None
            fresh = NodeFeatures(core.cluster, platform_prices(env.core.platform),
                                 scorer).for_task(shape)
            assert np.array_equal(obs["place"]["nodes"], fresh)
            action = {"order": 0, "place": int(rng.choice(np.flatnonzero(mask)))}
        for agent, o in obs.items():
            assert env.observation_space(agent).contains(o)
        obs, _, _, _, _ = env.step(action)
    ran = sum(o.start_s >= 0 for o in env.core.sim.outcomes.values())
    assert ran == len(core.placements) and len(env.core.sim.outcomes) == len(jobs)
