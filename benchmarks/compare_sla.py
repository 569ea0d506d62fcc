"""The SLA comparison: learned schedulers versus SLA heuristics on multi-tenant DNN inference.

Usage::

    python benchmarks/compare_sla.py --evaluate-only [--json OUT.json] [--rst docs/results_sla.rst]
        [--seeds 3] [--loads low,near saturation,overload] [--learners policy_pair,job_pick]
        [--models models/sla] [--quick] [--scenario poisson|bursty]
    python benchmarks/compare_sla.py        # first trains the missing models (hdeeprm-launch)

At each load level of :mod:`benchmarks.sla_protocol` (low, near saturation, overload: defined
by the best heuristic's measured utilisation), on ``--seeds`` seeded test streams, it runs the
issue's five request orders (FCFS, EDF, least laxity, fair share, SLA class) each with both
accelerator choices of the platform, and the PPO learners of :mod:`benchmarks.sla_learners`
(greedy, one model per learner and load, never trained on a test stream). Rows per load: SLA
satisfaction, energy per request, Jain's fairness, mean tardiness, p99 latency and utilisation,
the mean over the seeds with a ``[spread]`` row (the sample standard deviation). The SLA row
holds the best heuristic, the best learner and ``target met`` (:func:`target_met`). A reference
column, the first request of the ``laxity`` window (the least-laxity request that can still meet
its target), is reported beside the heuristics but is not one of the target's.

``--scenario`` picks the arrival processes (:data:`~benchmarks.sla_protocol.SCENARIOS`):
``poisson``, the default (the shipped spec, ``models/sla``), or ``bursty`` (every tenant a
two-state MMPP of the same mean rate, ``models/sla_bursty``), each with its own load factors.

``--quick`` runs everything on short streams and tiny trainings (a check that the pipeline works,
not a result). ``--json`` writes ``{"row": {"column": value}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cli_lists  # noqa: E402
from benchmarks import sla_learners as sl  # noqa: E402
from benchmarks import sla_protocol as sp  # noqa: E402
from benchmarks import sla_tables  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

#: The rows of each load: (metric key, row label, scale).
METRICS = (("sla_satisfaction", "SLA satisfaction (%)", 100.0),
           ("energy_per_request_j", "energy per request (J)", 1.0),
           ("jain_fairness", "Jain's fairness", 1.0),
           ("tardiness_mean_ms", "tardiness mean (ms)", 1.0),
           ("latency_p99_ms", "p99 latency (ms)", 1.0),
           ("utilisation", "utilisation", 1.0))
REFERENCE = "laxity window, first request (reference)"
TARGET_POINTS = 5.0
ENERGY_FACTOR = 1.05
TARGET_LOADS = ("near saturation", "overload")


def target_met(learner_sla: float, learner_energy: float, heuristic_sla: float,
               heuristic_energy: float) -> bool:
    """The issue's target: SLA satisfaction (in %) at least :data:`TARGET_POINTS` above the
    heuristic's, with energy per request at most :data:`ENERGY_FACTOR` x the heuristic's."""
    return bool(learner_sla >= heuristic_sla + TARGET_POINTS
                and learner_energy <= ENERGY_FACTOR * heuristic_energy)


def best(columns: Sequence[str], sla: dict[str, float], energy: dict[str, float]) -> str:
    """The column with the highest SLA satisfaction (ties: the lower energy per request)."""
    return max(columns, key=lambda c: (sla[c], -energy[c]))


def summarise(load: str, sla: dict[str, Any], energy: dict[str, Any], heuristics: Sequence[str],
              learners: Sequence[str]) -> None:
    """Add the best heuristic, the best learner, the target and ``target met`` to the SLA row
    ``sla`` of ``load`` (``energy``: the same load's energy row)."""
    h = best(heuristics, sla, energy)
    sla["best heuristic"], sla["best heuristic name"] = sla[h], h
    sla["best heuristic energy (J)"] = energy[h]
    applies = load in TARGET_LOADS
    sla["target"] = (f"best learner >= {sla[h] + TARGET_POINTS:.2f} % with <= "
                     f"{ENERGY_FACTOR * energy[h]:.4f} J/request" if applies else "none")
    # no scheduler meets more than 100 % of the targets
    sla["target reachable"] = bool(sla[h] + TARGET_POINTS <= 100.0) if applies else None
    if not learners:
        sla["target met"] = None
        return
    lrn = best(learners, sla, energy)
    sla["best learner"], sla["best learner name"] = sla[lrn], lrn
    sla["best learner energy (J)"] = energy[lrn]
    if REFERENCE in sla:
        sla["best learner beats reference"] = bool(sla[lrn] > sla[REFERENCE])
    sla["target met"] = target_met(sla[lrn], energy[lrn], sla[h], energy[h]) if applies else None


def heuristic_run(pair: str, spec: Any, wl: Any) -> dict[str, float]:
    """One heuristic (``order-accelerator``) on the stream ``wl``."""
    from hdrm.platform.loader import load_platform
    from hdrm.policies.pairs import resolve_policy
    from hdrm.policies.sla_orders import bind_tenants
    from hdrm.sim.engine import Simulation, SimulationConfig
    from hdrm.workload.inference import tenant_spec
    from hdrm.workload.tenants import build_tenants

    platform = load_platform(sp.PLATFORM)
    sim = Simulation(platform, wl, SimulationConfig(contention=sp.CONTENTION,
                                                    record_timeline=False))
    table = build_tenants(wl.jobs, tenant_spec(spec))
    result = sim.run(bind_tenants(resolve_policy(pair, "heuristic"), table, sim.core))
    return sp.metrics(wl, result.outcomes, result.energy_j, platform.nb_cores, spec)


def reference_run(spec: Any, wl: Any, folder: Path) -> dict[str, float]:
    """The first request of the ``laxity`` window at every decision (waiting when none fits)."""
    from hdrm.env import SchedulingEnv

    workload_file, tenants_file = sp.write_scenario(folder, spec, wl)
    env = SchedulingEnv(workload_file=str(workload_file), platform_file=str(sp.PLATFORM),
                        tenants=str(tenants_file), objective="sla_satisfaction", mode="job_pick",
                        window=sl.WINDOW, window_order="laxity", observation="job_window_sla",
                        contention=sp.CONTENTION, nb_jobs=len(wl), seed=0)
    _, info = env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.argmax(info["action_mask"])))
    result = env.result()
    return sp.metrics(result.workload, result.outcomes, result.energy_j, env.platform.nb_cores,
                      spec)


def load_rows(lv: sp.LoadLevel, runs: dict[str, list[dict[str, float]]], offered: float,
              learners: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The rows of one load from the per-seed figures of each column."""
    rows: dict[str, dict[str, Any]] = {}
    for key, label, scale in METRICS:
        name = f"{lv.name}: {label}"
        rows[name] = {c: scale * float(np.mean([r[key] for r in v])) for c, v in runs.items()}
        rows[f"{name} [spread]"] = {c: scale * float(np.std([r[key] for r in v], ddof=1))
                                    if len(v) > 1 else 0.0 for c, v in runs.items()}
    sla = rows[f"{lv.name}: SLA satisfaction (%)"]
    energy = rows[f"{lv.name}: energy per request (J)"]
    heuristics = [c for c in runs if c in sp.HEURISTICS]
    summarise(lv.name, sla, energy, heuristics, list(learners))
    util = rows[f"{lv.name}: utilisation"]
    h = sla["best heuristic name"]
    util.update({"load factor": lv.factor, "offered load (alone)": offered,
                 "utilisation band": f"{lv.utilisation[0]:.2f}-{lv.utilisation[1]:.2f}"
                 + (f", offered > {lv.offered_above:g}" if lv.offered_above else ""),
                 "best heuristic in band": sp.in_band(lv, util[h], offered)})
    return rows


def evaluate_cell(load: str, seed: int, requests: int,
                  models: dict[str, list[tuple[int, str]]],
                  work: str, scenario: str = "poisson") -> dict[str, Any]:
    """Every column of one load level of ``scenario`` on the test stream of ``seed``
    (picklable arguments, so cells run in worker processes); returns column -> figures (a
    learner's column: a list, one per training seed, and a column per training seed), and the
    offered load. ``models``: learner -> [(training seed, model path)]."""
    sc = sp.scenario(scenario)
    spec = sc.spec()
    lv = sc.level(load)
    scaled = sp.scaled_spec(spec, lv.factor)
    wl = sp.stream(spec, lv, seed, requests)
    folder = Path(work) / f"{load.replace(' ', '_')}_{seed}"
    runs = {pair: heuristic_run(pair, scaled, wl) for pair in sp.HEURISTICS}
    runs[REFERENCE] = reference_run(scaled, wl, folder / "reference")
    for learner, found in models.items():
        runs[sl.column(learner)] = []
        for train_seed, model in found:
            figures = sl.evaluate(Path(model), learner, scaled, wl,
                                  folder / f"{learner}_{train_seed}")
            runs[sl.column(learner)].append(figures)
            if len(found) > 1:
                runs[seed_column(learner, train_seed)] = figures
    runs["offered"] = {"offered_load": sp.offered_load(wl, 16)}
    return runs


def evaluate(loads: Sequence[sp.LoadLevel], seeds: Sequence[int], requests: int,
             models: dict[tuple[str, str], list[tuple[int, Path]]], work: Path,
             max_parallel: int = 1, scenario: str = "poisson") -> dict[str, dict[str, Any]]:
    """The rows of every load of ``scenario``: each (load, seed) cell in this process
    (``max_parallel`` 1) or in that many worker processes. A learner's column pools its
    models of every training seed over the test streams (mean and spread over the pairs)."""
    cells = [(lv.name, seed, requests, {lr: [(s, str(p)) for s, p in found]
                                        for (lr, name), found in models.items()
                                        if name == lv.name}, str(work), scenario)
             for lv in loads for seed in seeds]
    if max_parallel <= 1:
        done = [evaluate_cell(*cell) for cell in cells]
    else:
        with ProcessPoolExecutor(max_parallel) as pool:
            done = list(pool.map(evaluate_cell, *zip(*cells)))
    table: dict[str, dict[str, Any]] = {}
    for lv in loads:
        mine = [d for cell, d in zip(cells, done) if cell[0] == lv.name]
        offered = float(np.mean([d.pop("offered")["offered_load"] for d in mine]))
        runs = {col: [f for d in mine for f in (d[col] if isinstance(d[col], list)
                                                 else [d[col]])] for col in mine[0]}
        learners = [sl.column(lr) for lr in sl.LEARNERS if sl.column(lr) in runs]
        table.update(load_rows(lv, runs, offered, learners))
    return table


def seed_column(learner: str, train_seed: int) -> str:
    """The column of one training seed's model (shown beside the learner's pooled column)."""
    return f"{sl.column(learner)} (training seed {train_seed})"


def training_rows(models: dict[tuple[str, str], list[tuple[int, Path]]]
                  ) -> dict[str, dict[str, Any]]:
    """One row per model: its learner, load, budget and wall time (from the JSON beside it)."""
    out = {}
    for _, path in (item for found in models.values() for item in found):
        meta_file = path.with_suffix(".json")
        if not meta_file.is_file():
            continue
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        out[f"training: {path.name}"] = {k: meta[k] for k in (
            "learner", "load", "factor", "episodes", "episode_requests", "train_seed",
            "train_requests", "wall_s", "command")}
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--evaluate-only", action="store_true", help="use the shipped models only")
    p.add_argument("--json", help="write {row: {column: value}} to this file")
    p.add_argument("--rst", default="", help="write the results page here (e.g. "
                   "docs/results_sla.rst)")
    p.add_argument("--seeds", type=cli.count(1), default=len(sp.TEST_SEEDS),
                   help="test streams per load (seeds 101, 102, ...)")
    p.add_argument("--scenario", default="poisson",
                   help=f"arrival processes: {', '.join(sp.SCENARIOS)} (default poisson)")
    p.add_argument("--loads", default="", help="load levels (default: the scenario's three)")
    p.add_argument("--learners", default=",".join(sl.LEARNERS))
    p.add_argument("--train-seeds", default=str(sp.TRAIN_SEED),
                   help="training seeds, one model each per learner and load (e.g. 7,8,9)")
    p.add_argument("--models", default="", help="models folder (default: the scenario's, "
                   "models/sla or models/sla_bursty)")
    p.add_argument("--quick", action="store_true", help="short streams, tiny trainings")
    p.add_argument("--max-parallel", type=cli.count(1), default=1,
                   help="(load, seed) cells evaluated at a time, in worker processes")
    return p.parse_args(argv)


def find_models(a: argparse.Namespace, loads: list[sp.LoadLevel], learners: list[str],
                spec: Any, work: Path, train_seeds: Sequence[int]
                ) -> dict[tuple[str, str], list[tuple[int, Path]]]:
    """The models of each (learner, load), one per training seed: trained first when missing
    (without --evaluate-only)."""
    found: dict[tuple[str, str], list[tuple[int, Path]]] = {}
    for lv in loads:
        for learner in learners:
            for train_seed in train_seeds:
                path = Path(a.models) / sl.model_name(learner, lv, train_seed)
                if not path.is_file() and not a.evaluate_only:
                    print(f"training {path.name} (hdeeprm-launch)", flush=True)
                    sl.train(learner, lv, spec, Path(a.models), work / "train", a.quick,
                             a.scenario, train_seed)
                if path.is_file():
                    found.setdefault((learner, lv.name), []).append((train_seed, path))
                else:
                    print(f"note: no model {path}; its cells stay empty", file=sys.stderr)
    return found


def train_seeds_of(text: str) -> list[int]:
    """``--train-seeds``: distinct non-negative integers separated by commas."""
    return cli_lists.ints(text, "--train-seeds", "7,8,9", distinct=True, minimum=0)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    a = parse(argv)
    try:
        sc = sp.scenario(a.scenario)
        names = a.loads or ",".join(lv.name for lv in sc.levels)
        loads = [sc.level(n.strip()) for n in names.split(",") if n.strip()]
        a.models = a.models or str(sc.models_dir)
        learners = [lr.strip() for lr in a.learners.split(",") if lr.strip()]
        for lr in learners:
            if lr not in sl.LEARNERS:
                raise ConfigError(f"--learners: unknown learner {lr!r}; choose among "
                                  f"{', '.join(sl.LEARNERS)}")
        if a.seeds < 1:
            raise ConfigError(f"--seeds: expected at least 1 test stream, got {a.seeds}")
        seeds = tuple(sp.TEST_SEEDS[0] + i for i in range(a.seeds))
        train_seeds = train_seeds_of(a.train_seeds)
        sp.check_disjoint(train_seeds, seeds)
        spec = sc.spec()
        requests = sp.QUICK_REQUESTS if a.quick else sp.TEST_REQUESTS
        table: dict[str, dict[str, Any]] = {}
        with tempfile.TemporaryDirectory(prefix="compare_sla_") as tmp:
            work = Path(tmp)
            models = find_models(a, loads, learners, spec, work, train_seeds)
            table.update(evaluate(loads, seeds, requests, models, work, a.max_parallel,
                                  a.scenario))
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table.update(training_rows(models))
    print(sla_tables.markdown(table, [lv.name for lv in loads]))
    if a.rst:
        Path(a.rst).write_text(sla_tables.rst(table, [lv.name for lv in loads], seeds, requests,
                                              a.scenario, a.rst, a.max_parallel,
                                              train_seeds),
                               encoding="utf-8")
    if a.json:
        Path(a.json).write_text(json.dumps(table, indent=1, default=_plain) + "\n",
                                encoding="utf-8")
    return 0


def _plain(value: Any) -> Any:
    """JSON for numpy scalars."""
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    raise TypeError(f"not JSON: {value!r}")


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
