"""Where the waiting of the best GPU pair comes from, and what an oracle could gain (issue 20).

Usage::

    python benchmarks/gpu_analysis.py [--workload openb] [--windows validation] [--seeds 0,1,2]
        [--pair sjf-first_fit] [--json OUT]

Under a work-conserving (``greedy``) pair every queued task that fits somewhere starts at each
decision, so a task waits only while it fits on no node. This tool replays the pair on the
windows and, from its placements, rebuilds the free CPU, memory and GPU shares of every node
between consecutive starts and ends. Each second a task waits is put in one class:

* ``fragmented``: the nodes its GPU model allows hold, in all, enough free CPU, memory and GPUs
  (GPUs with a free share of at least its share) for it, but no single node does: a placement
  that had packed differently could have started it (an upper bound of what placement can win);
* ``capacity``: even pooled, those nodes lack the resources (the order decides who waits);
* ``fits``: it fits on a node (only between a submission and its decision: should be ~0).

Waiting is also broken down by the task's demand (no GPU, a share of one GPU, one whole GPU,
several GPUs; pinned to a GPU model or not). Two counterfactuals bound what a scheduler could win:

* ``oracle best pair``: per window, the best of every queue order x placement pair in both
  backfilling modes (an oracle choosing the pair after seeing the window);
* ``pooled cluster``: the same pair on the cluster whose nodes of one GPU model are merged into
  one node (no cross-node fragmentation at all): no placement can do better than that.

And one measure of the learners' environment (``--views``): the pair played by the heuristic
drivers through the multi-agent environment (:func:`benchmarks.gpu_learners.make_env`, ``pick
fitting``) under each view (window size, ``fitting_first``, the within-node GPU rule), against
the engine's own greedy pair: a learner that clones the pair perfectly scores what its view lets
the pair score.

Only the validation windows are used by default (``--windows test`` is for reporting, never for
choosing a setting).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks import cli_lists, gpu_protocol  # noqa: E402
from benchmarks.gpu_protocol import PAIR_BACKFILLS, Setting  # noqa: E402
from hdrm.core.gpu_scheduler import GpuPlacement, gpu_pairs  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402
from hdrm.policies.gpu_state import MILLI  # noqa: E402
from hdrm.sim.engine import Simulation, SimulationConfig  # noqa: E402

#: Classes of a waiting second (module docstring).
CAUSES = ("fits", "fragmented", "capacity")


def demand_class(p: GpuPlacement) -> str:
    """``cpu only``, ``shared``, ``1 gpu`` or ``N gpus`` (2 and more), with ``, pinned`` when
    the task asks for given GPU models."""
    s = p.shape
    base = ("cpu only" if s.gpus == 0 else "shared" if s.is_shared
            else "1 gpu" if s.gpus == 1 else "2+ gpus")
    return base + (", pinned" if s.models else "")


class Nodes:
    """Per-node capacities of a node list (openb's CSV format, as the protocol writes it)."""

    def __init__(self, path: str) -> None:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        self.cpu = np.array([int(r["cpu_milli"]) for r in rows], dtype=np.int64)
        self.mem = np.array([int(r["memory_mib"]) for r in rows], dtype=np.int64)
        self.gpus = np.array([int(r["gpu"]) for r in rows], dtype=np.int64)
        self.model = [r["model"] if int(r["gpu"]) else "" for r in rows]
        width = max(1, int(self.gpus.max()))
        self.gpu_cap = (np.arange(width)[None, :] < self.gpus[:, None]) * MILLI

    def allowed(self, models: tuple[str, ...], gpus: int) -> np.ndarray:
        """The nodes a task may use (its models, or any; a GPU node when it asks GPUs)."""
        ok = np.array([(not models or m in models) and (gpus == 0 or m != "")
                       for m in self.model])
        return ok


def _free_at(nodes: Nodes, running: list[GpuPlacement]) -> tuple[np.ndarray, ...]:
    cpu, mem, gpu = nodes.cpu.copy(), nodes.mem.copy(), nodes.gpu_cap.astype(np.int64).copy()
    for p in running:
        cpu[p.node] -= p.shape.cpu_milli
        mem[p.node] -= p.shape.memory_mib
        for g in p.gpus:
            gpu[p.node, g] -= p.shape.milli
    return cpu, mem, gpu


def cause(nodes: Nodes, free: tuple[np.ndarray, ...], p: GpuPlacement) -> str:
    """The class (:data:`CAUSES`) of a waiting task ``p`` on the free resources ``free``."""
    cpu, mem, gpu = free
    s = p.shape
    ok = nodes.allowed(s.models, s.gpus)
    usable = (gpu >= s.milli).sum(axis=1) if s.gpus else np.zeros(len(cpu), dtype=np.int64)
    single = ok & (cpu >= s.cpu_milli) & (mem >= s.memory_mib) & (usable >= s.gpus)
    if single.any():
        return "fits"
    pooled = (cpu[ok].sum() >= s.cpu_milli and mem[ok].sum() >= s.memory_mib
              and usable[ok].sum() >= s.gpus)
    return "fragmented" if pooled else "capacity"


def wait_causes(nodes: Nodes, placements: dict[int, GpuPlacement], submit: dict[int, float]
                ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Waiting seconds per cause, and per demand class (total, and per cause)."""
    by_cause: dict[str, float] = defaultdict(float)
    by_class: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    events = sorted({t for p in placements.values() for t in (p.start_s, p.start_s + p.run_s)}
                    | set(submit.values()))
    order = sorted(placements.values(), key=lambda p: p.start_s)
    for t0, t1 in zip(events, events[1:]):
        waiting = [i for i, p in placements.items() if submit[i] <= t0 and p.start_s >= t1]
        if not waiting:
            continue
        running = [p for p in order if p.start_s <= t0 < p.start_s + p.run_s]
        free = _free_at(nodes, running)
        for i in waiting:
            why = cause(nodes, free, placements[i])
            by_cause[why] += t1 - t0
            klass = by_class[demand_class(placements[i])]
            klass[why] += t1 - t0
            klass["total"] += t1 - t0
    return dict(by_cause), {k: dict(v) for k, v in by_class.items()}


def replay(setting: Setting, start: int, pair: str, seed: int, platform: str | None = None
           ) -> tuple[Any, dict[int, float]]:
    """Run ``pair`` (greedy backfilling) on a window; its result and the tasks' submissions."""
    config = SimulationConfig(backfilling="greedy", decision="event", record_timeline=False,
                              seed=seed)
    window = setting.window(start)
    plat = gpu_protocol.load_platform(platform or setting.platform)
    result = Simulation(plat, window, config).run(pair)
    return result, {j.idx: j.submit_s for j in window.jobs}


def pooled_platform(path: str, folder: str) -> str:
    """A node list with the nodes of each GPU model (and the GPU-less nodes) merged into one."""
    nodes = Nodes(path)
    merged: dict[str, list[int]] = {}
    for k, model in enumerate(nodes.model):
        row = merged.setdefault(model, [0, 0, 0])
        row[0] += int(nodes.cpu[k])
        row[1] += int(nodes.mem[k])
        row[2] += int(nodes.gpus[k])
    out = Path(folder) / ("pooled_" + Path(path).name)
    with open(out, "w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        w.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
        for model, (cpu, mem, gpus) in merged.items():
            w.writerow([f"pooled-{model or 'cpu'}", cpu, mem, gpus, model])
    return str(out)


def oracle(setting: Setting, starts: tuple[int, ...], seeds: list[int]) -> dict[str, Any]:
    """Mean JCT of every pair (both modes) per window; the best single pair and the per-window
    best (oracle)."""
    table: dict[str, list[float]] = {}
    for pair in gpu_pairs():
        for mode in PAIR_BACKFILLS:
            name = pair + (" (greedy)" if mode == "greedy" else "")
            table[name] = [float(np.mean([gpu_protocol.run_pair(setting, s, pair, seed, mode)
                                          .avg_jct for seed in seeds])) for s in starts]
    best = min(table, key=lambda n: np.mean(table[n]))
    per_window = [min(table, key=lambda n: table[n][w]) for w in range(len(starts))]
    oracle_jct = [table[n][w] for w, n in enumerate(per_window)]
    return {"best_pair": best, "best_pair_jct": table[best], "oracle_pairs": per_window,
            "oracle_jct": oracle_jct,
            "oracle_ratio": float(np.mean(oracle_jct) / np.mean(table[best]))}


def analyse(setting: Setting, starts: tuple[int, ...], pair: str, seeds: list[int]
            ) -> dict[str, Any]:
    """The figures of the module docstring for ``pair`` on the windows ``starts``."""
    nodes = Nodes(setting.platform)
    out: dict[str, Any] = {"pair": pair, "windows": list(starts), "per_window": []}
    with tempfile.TemporaryDirectory() as folder:
        pooled = pooled_platform(setting.platform, folder)
        for start in starts:
            for seed in seeds:
                result, submit = replay(setting, start, pair, seed)
                score = gpu_protocol.score_result(result)
                causes, classes = wait_causes(nodes, result.gpu.placements, submit)
                pooled_score = gpu_protocol.score_result(
                    replay(setting, start, pair, seed, pooled)[0])
                out["per_window"].append({
                    "start": start, "seed": seed, "avg_jct": score.avg_jct,
                    "mean_wait": score.mean_wait, "mean_run": score.mean_run,
                    "tasks": len(result.gpu.placements), "wait_s": causes,
                    "wait_by_class": classes, "pooled_avg_jct": pooled_score.avg_jct,
                    "pooled_mean_wait": pooled_score.mean_wait})
    rows = out["per_window"]
    out["avg_jct"] = float(np.mean([r["avg_jct"] for r in rows]))
    out["mean_wait"] = float(np.mean([r["mean_wait"] for r in rows]))
    out["pooled_avg_jct"] = float(np.mean([r["pooled_avg_jct"] for r in rows]))
    total = defaultdict(float)
    for r in rows:
        for k, v in r["wait_s"].items():
            total[k] += v
    whole = sum(total.values()) or 1.0
    out["wait_share"] = {k: total[k] / whole for k in CAUSES}
    return out


#: The views ``--views`` compares: (window, fitting_first, within-node rule).
VIEWS = ((32, False, "fgd"), (32, True, "fgd"), (32, False, "first_fit"), (32, True, "first_fit"),
         (64, True, "first_fit"))


def view_gap(setting: Setting, starts: tuple[int, ...], pair: str, seed: int = 0
             ) -> list[dict[str, Any]]:
    """Mean JCT of ``pair`` driven through the environment under each of :data:`VIEWS`, and
    its ratio to the engine's greedy pair on the same windows."""
    from benchmarks.gpu_learners import make_env, play_pair

    order, _, placement = pair.partition("-")
    engine = np.mean([gpu_protocol.run_pair(setting, s, pair, seed, "greedy").avg_jct
                      for s in starts])
    rows = []
    for window, fitting_first, rule in VIEWS:
        jct = []
        for start in starts:
            env = make_env(setting, window, seed, start, "fitting",
                           {"fitting_first": fitting_first, "placement": rule})
            jct.append(play_pair(env, order, placement, seed).avg_jct)
        rows.append({"window": window, "fitting_first": fitting_first, "node_rule": rule,
                     "avg_jct": float(np.mean(jct)), "ratio": float(np.mean(jct) / engine)})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", default="openb", choices=tuple(gpu_protocol.WORKLOADS))
    p.add_argument("--windows", default="validation", choices=("validation", "test"))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--pair", default="sjf-first_fit")
    p.add_argument("--no-oracle", action="store_true", help="skip the every-pair oracle")
    p.add_argument("--views", action="store_true",
                   help="also the pair through the learners' environment under each view")
    p.add_argument("--traces", default=str(gpu_protocol.DEFAULT_TRACES))
    p.add_argument("--cache", default=str(gpu_protocol.CACHE_DIR))
    p.add_argument("--json", default="", help="write the figures here too")
    a = p.parse_args(argv)
    try:
        seeds = cli_lists.ints(a.seeds, "--seeds", distinct=True, minimum=0)
    except ConfigError as exc:
        p.error(str(exc))
    setting = gpu_protocol.resolve(gpu_protocol.workload_spec(a.workload), a.traces, a.cache)
    starts = setting.validation_starts if a.windows == "validation" else setting.test_starts
    figures = analyse(setting, starts, a.pair, seeds)
    if not a.no_oracle:
        figures["oracle"] = oracle(setting, starts, seeds)
    if a.views:
        figures["views"] = view_gap(setting, starts, a.pair, seeds[0])
    text = json.dumps(figures, indent=1, default=float)
    if a.json:
        Path(a.json).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
