"""Learning on periodic DAG pipelines against list-scheduling rules (issue 22's learning target).

Set-up (the constants below; docs/dags.rst, "Learning on periodic pipelines", shows the table):

* platform :data:`PLATFORM`: one node with 4 cores and one T4 GPU (tasks with a GPU time run on
  the GPU, the others on a core: :mod:`hdrm.dag.periodic_devices`);
* task sets of :data:`SPEC` (:mod:`hdrm.dag.periodic_gen`): 4 layered DAGs (depth 4, width 3,
  density 0.5, CCR 0.1), total CPU utilisation 6.0 cores (1.5 x the cores: the GPU must take a
  share, and at times cannot), periods log-uniform in [10, 100] s, implicit deadlines (deadline =
  period), half the tasks with a GPU time 2-10 x shorter, horizon 5 longest periods;
* training sets: seeds :data:`TRAIN_SEEDS`; held-out test sets: seeds :data:`TEST_SEEDS`;
* baselines: the rules ``heft_edf``, ``cpop_edf``, ``peft_edf`` and ``llf`` through the engine
  (what ``hdrm dag periodic --policy RULE`` runs), and, as references, their deferring variants
  (lost instances last; :mod:`hdrm.dag.periodic_rules`), which are among the learner's actions;
* learner: the built-in DQN (``agents/dqn.py``: dueling, double, 3-step, prioritized replay) in
  ``policy_pair`` mode (a rule per decision among the 8), trained by ``hdeeprm-launch`` under
  ``nice -n 10`` for :data:`EPISODES` episodes per seed (checkpointed every 5 episodes; a rerun
  resumes), seeds :data:`LEARNER_SEEDS`; the models go to ``models/dag/``.

Figures per row on the test sets, pooled over all of their instances: deadline miss ratio (missed
/ instances) and mean response time (s). ``target met``: the best learner's miss ratio is at most
0.9 x the best baseline's.

Usage::

    python benchmarks/compare_dag.py                   # train what is missing, then evaluate
    python benchmarks/compare_dag.py --evaluate-only --json dag.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hdrm.dag.periodic import TaskSet  # noqa: E402
from hdrm.dag.periodic_devices import RULES  # noqa: E402
from hdrm.dag.periodic_gen import PeriodicSpec, generate  # noqa: E402
from hdrm.dag.periodic_io import write_taskset  # noqa: E402
from hdrm.dag.periodic_rules import DEFER_RULES  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

PLATFORM = {
    "name": "pipeline4c1g",
    "description": "1 node: 4 cores (8 GFLOP/s each) and one T4 GPU, for periodic pipelines",
    "processor_types": {"cpu4": {"vendor": "hdrm", "model": "pipeline cpu", "year": 2024,
                                 "cores": 4, "clock_ghz": 2.0, "flops_per_cycle": 4,
                                 "mem_bw_gbps": 20, "tdp_w": 80}},
    "node_types": {"edge": {"processors": [{"type": "cpu4", "count": 1}], "memory_gb": 16,
                            "accelerators": [{"type": "T4", "count": 1}]}},
    "clusters": [{"name": "car", "network": "ethernet_10g",
                  "nodes": [{"type": "edge", "count": 1}]}]}
SPEC = PeriodicSpec(graphs=4, utilisation=6.0, depth=4, width=3, density=0.5, ccr=0.1,
                    period_min_s=10.0, period_max_s=100.0, deadline_ratio=1.0,
                    gpu_fraction=0.5, gpu_speedup_min=2.0, gpu_speedup_max=10.0,
                    horizon_periods=5.0)
TRAIN_SEEDS = tuple(range(32))
TEST_SEEDS = tuple(range(1000, 1020))
LEARNER_SEEDS = (1, 2, 3)
EPISODES = 120
MODEL_DIR = ROOT / "models" / "dag"
AGENT = ROOT / "agents" / "dqn.py"
#: The DQN's settings (options.json's agent block).
AGENT_BLOCK = {"type": "learning", "run": "train", "episodes": EPISODES, "lr": 0.0005,
               "gamma": 0.99,
               "params": {"n_step": 3, "buffer_size": 20000, "batch_size": 64,
                          "learning_starts": 500, "target_update": 500, "epsilon_steps": 8000,
                          "epsilon_end": 0.02, "reward_scale": 1.0, "train_freq": 2,
                          "layers": 2, "torch_threads": 1}}


@dataclass
class Row:
    """One line of the table."""

    name: str
    kind: str
    miss_ratio: float
    mean_response_s: float
    instances: int


def prepare(model_dir: Path, train_seeds: tuple[int, ...], episodes: int, seed: int) -> Path:
    """Write the platform, the training sets, their list, ``options.json`` (the example: the
    first learner seed) and the options of ``seed``; returns the latter."""
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "platform.json").write_text(json.dumps(PLATFORM, indent=1) + "\n")
    sets = model_dir / "tasksets"
    sets.mkdir(exist_ok=True)
    names = []
    for s in train_seeds:
        write_taskset(generate(SPEC, s), sets / f"train_{s:03d}.json")
        names.append(f"tasksets/train_{s:03d}.json")
    (model_dir / "train_sets.json").write_text(json.dumps({"tasksets": names}, indent=1) + "\n")
    agent = dict(AGENT_BLOCK, episodes=episodes)
    for s, name in ((LEARNER_SEEDS[0], "options.json"), (seed, f"options_seed{seed}.json")):
        options = {"seed": s, "workload_file_path": "train_sets.json",
                   "platform_file_path": "platform.json", "workload": {"start_index": "random"},
                   "pybatsim": {"log_level": "WARNING",
                                "env": {"actions": {"mode": "policy_pair", "window": 8}},
                                "agent": agent}}
        (model_dir / name).write_text(json.dumps(options, indent=1) + "\n")
    return model_dir / f"options_seed{seed}.json"


def train(model_dir: Path, seed: int, episodes: int, train_seeds: tuple[int, ...]) -> Path:
    """Train the DQN of one seed through hdeeprm-launch, or resume an interrupted training from
    its last checkpoint; a finished one (``dqn_seedN.done`` beside it) is kept. Returns the
    model."""
    options = prepare(model_dir, train_seeds, episodes, seed)
    model, done = model_dir / f"dqn_seed{seed}.pt", model_dir / f"dqn_seed{seed}.done"
    if model.exists() and done.exists():
        return model
    with tempfile.TemporaryDirectory() as out:
        cmd = ["nice", "-n", "10", sys.executable, "-m", "hdrm.launcher", str(AGENT),
               str(options), "--outmodel", str(model), "--outdir", out, "--overwrite",
               "--save-every-episodes", "5", "--quiet"]
        if model.exists():
            cmd += ["--inmodel", str(model)]
        subprocess.run(cmd, check=True, cwd=ROOT)
    done.write_text(f"{episodes} episodes\n")
    return model


def play(tasksets: list[TaskSet], choose, options: Path) -> tuple[int, int, list[float]]:
    """Play every set with ``choose(env, obs, info) -> action``; (missed, instances, responses)."""
    from hdrm.env.dag_env import DagEnv
    from hdrm.options import load_options

    missed = instances = 0
    responses: list[float] = []
    for taskset in tasksets:
        env = DagEnv(load_options(options), tasksets=[taskset])
        obs, info = env.reset()
        done = env.sim.done
        while not done:
            obs, _, done, _, info = env.step(choose(env, obs, info))
        missed, instances = missed + env.missed, instances + env.ended
        responses += env.responses
    return missed, instances, responses


def row(name: str, kind: str, played: tuple[int, int, list[float]]) -> Row:
    missed, instances, responses = played
    mean = statistics.fmean(responses) if responses else math.nan
    return Row(name, kind, missed / max(instances, 1), mean, instances)


def model_chooser(options: Path, model: Path):
    """``choose`` of a trained DQN, greedy."""
    from hdrm.agents.checkpoint import load_checkpoint
    from hdrm.launch.experiment import build_experiment
    from hdrm.options import load_options

    agent = build_experiment(load_options(options), AGENT).agent
    load_checkpoint(agent, model, optimizer=False)
    agent.train_mode(False)
    return lambda env, obs, info: agent.decide(obs, info["action_mask"])


def evaluate(model_dir: Path, test_seeds: tuple[int, ...], seeds: tuple[int, ...]) -> dict:
    """Every row of the table and the target's verdict."""
    options = model_dir / "options.json"
    tests = [generate(SPEC, s) for s in test_seeds]
    names = list(RULES + DEFER_RULES)
    rows = []
    for rule in names:
        kind = "baseline" if rule in RULES else "reference"
        choose = (lambda i: lambda env, obs, info: i)(names.index(rule))
        rows.append(row(rule, kind, play(tests, choose, options)))
    learners = []
    for seed in seeds:
        model = model_dir / f"dqn_seed{seed}.pt"
        if model.exists():
            learners.append(row(f"dqn seed {seed}", "learner",
                                play(tests, model_chooser(options, model), options)))
    rows += learners
    best_base = min((r for r in rows if r.kind == "baseline"), key=lambda r: r.miss_ratio)
    result = {"rows": [asdict(r) for r in rows], "best_baseline": best_base.name,
              "test_seeds": list(test_seeds), "spec": asdict(SPEC)}
    if learners:
        ratios = [r.miss_ratio for r in learners]
        best = min(learners, key=lambda r: r.miss_ratio)
        result.update(learner_mean=statistics.fmean(ratios),
                      learner_std=statistics.pstdev(ratios), best_learner=best.name,
                      ratio=(best.miss_ratio / best_base.miss_ratio if best_base.miss_ratio
                             else None),
                      target_met=best.miss_ratio <= 0.9 * best_base.miss_ratio)
    return result


def print_table(result: dict) -> None:
    print(f"{'policy':<18} {'kind':<9} {'miss ratio':>10} {'mean response s':>16} "
          f"{'instances':>9}")
    for r in result["rows"]:
        print(f"{r['name']:<18} {r['kind']:<9} {r['miss_ratio']:>10.4f} "
              f"{r['mean_response_s']:>16.3f} {r['instances']:>9}")
    if "best_learner" in result:
        ratio = "n/a" if result["ratio"] is None else f"{result['ratio']:.3f}"
        print(f"learners: miss ratio mean {result['learner_mean']:.4f}, std "
              f"{result['learner_std']:.4f}; best {result['best_learner']} = {ratio} x best "
              f"baseline {result['best_baseline']}; target met "
              f"(<= 0.9 x): {'yes' if result['target_met'] else 'no'}")
    else:
        print("no trained model: run without --evaluate-only")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluate-only", action="store_true", help="use the shipped models")
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON")
    parser.add_argument("--model-dir", default=str(MODEL_DIR), help="models and inputs")
    parser.add_argument("--episodes", type=cli.count(1), default=EPISODES, help="training episodes")
    parser.add_argument("--seeds", type=cli.seed, nargs="+", default=list(LEARNER_SEEDS))
    parser.add_argument("--train-sets", type=cli.count(1), default=len(TRAIN_SEEDS),
                        help="the first N training seeds")
    parser.add_argument("--test-sets", type=cli.count(1), default=len(TEST_SEEDS),
                        help="the first N test seeds")
    args = parser.parse_args(argv)
    model_dir = Path(args.model_dir).resolve()
    train_seeds, test_seeds = TRAIN_SEEDS[:args.train_sets], TEST_SEEDS[:args.test_sets]
    if not args.evaluate_only:
        for seed in args.seeds:
            train(model_dir, seed, args.episodes, train_seeds)
    elif not (model_dir / "options.json").exists():
        print(f"compare_dag: {model_dir}/options.json missing: run without --evaluate-only",
              file=sys.stderr)
        return 2
    result = evaluate(model_dir, test_seeds, tuple(args.seeds))
    print_table(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
