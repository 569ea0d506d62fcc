"""Speed of MAPPO's place encoder on a large platform: distinct feasible nodes, or every node.

The place actor (and the critic's node encoder) attend over the distinct feasible node rows only,
each with the log of its count as attention key bias (:func:`hdrm.agents.mappo_encoders.dedup`),
with a pooled summary of every node in the summary token. This script measures what that buys
against attending over every node with the infeasible ones' keys masked (the same logits, as
tests/agents/test_mappo.py checks): it plays ``--decisions`` phases of the multi-agent env on
the openb GPU nodes (1,213) and default trace, training MAPPO, and prints the CPU time per
decision and per update of ``--rollout`` records, for both, one torch thread.

Usage::

    python benchmarks/bench_mappo.py [--traces DIR] [--decisions 400] [--rollout 256]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.agents import mappo_networks  # noqa: E402
from hdrm.agents.mappo_rollout import make_agent  # noqa: E402
from hdrm.agents.mappo_networks import PHASES  # noqa: E402
from hdrm.env.gpu_multiagent import GpuMultiAgentEnv  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DEFAULT_TRACES = ROOT.parent / "shared" / "traces" / "gpu"


def keep_all(rows: torch.Tensor, valid: torch.Tensor):
    """No deduplication: every node is a key, the infeasible ones masked out of the attention."""
    inverse = torch.arange(rows.shape[1]).expand(rows.shape[0], -1)
    return rows, valid, inverse


def measure(env: GpuMultiAgentEnv, decisions: int, rollout: int) -> dict[str, float]:
    """CPU seconds per decision (order, place) and per update, and the feasible node counts."""
    agent = make_agent(env, {"params": {"rollout_steps": rollout, "minibatch": 64, "epochs": 1,
                                        "target_kl": 0.0}}, seed=0)
    times = {"order": [], "place": []}
    feasible, distinct = [], []
    observations, infos = env.reset(seed=1)
    while len(times["order"]) + len(times["place"]) < decisions and env.agents:
        active = next(a for a in PHASES if infos[a]["active"])
        mask = observations[active]["action_mask"]
        start = time.process_time()
        action = agent.decide({**observations, "phase": PHASES.index(active)}, mask)
        times[active].append(time.process_time() - start)
        if active == "place":
            feasible.append(int(np.count_nonzero(mask)))
            nodes = observations["place"]["nodes"][mask != 0]
            distinct.append(len(np.unique(nodes, axis=0)))
        actions = {a: (action if a == active else 0) for a in env.agents}
        observations, rewards, _, _, infos = env.step(actions)
        agent.rewarded(float(rewards[active]), not env.agents)
    start = time.process_time()
    agent._learn(0.0)
    return {"order_ms": 1e3 * float(np.mean(times["order"])),
            "place_ms": 1e3 * float(np.mean(times["place"])),
            "update_s": time.process_time() - start, "records": len(times["order"]) +
            len(times["place"]), "feasible_mean": float(np.mean(feasible)),
            "feasible_max": float(np.max(feasible)), "distinct_mean": float(np.mean(distinct))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--decisions", type=cli.count(1), default=400)
    parser.add_argument("--rollout", type=cli.count(1), default=256)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    env = GpuMultiAgentEnv(platform_file=str(args.traces / "openb_node_list_gpu_node.csv"),
                           workload_file=str(args.traces / "openb_pod_list_default.csv"),
                           nb_jobs=2000, window=16)
    print(f"{env.nb_nodes} nodes, window {env.window}")
    dedup = mappo_networks.dedup
    for name, function in (("distinct", dedup), ("all nodes", keep_all)):
        mappo_networks.dedup = function
        try:
            r = measure(env, args.decisions, args.rollout)
        finally:
            mappo_networks.dedup = dedup
        print(f"{name:>9}: order {r['order_ms']:.2f} ms, place {r['place_ms']:.2f} ms per "
              f"decision; update of {r['records']} records (1 epoch) {r['update_s']:.2f} s; "
              f"feasible nodes mean {r['feasible_mean']:.0f}, max {r['feasible_max']:.0f}, "
              f"distinct feasible rows mean {r['distinct_mean']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
