"""Speed of the Gymnasium environment, alone and under PPO training.

Cases (all on 1,024-job sequences of the SDSC-SP2 trace with a seeded random start):

* ``pick-sdsc``: ``job_pick`` mode as RLScheduler runs it (rlscheduler conventions, hence commit
  decisions; 128 identical processors, no contention, window 128), random valid actions;
* ``pick-reservation``: as ``pick-sdsc`` with the ``job_window_reservation`` observation (EASY's
  view of the queue under WFP3's order), random valid actions;
* ``pick-predicted``: as ``pick-sdsc`` with the ``job_window_predicted`` observation (the same
  plus run times predicted from the users' ended jobs, reservations in ``wfp3_pred`` order);
* ``pick-easy``: as ``pick-predicted`` with event decisions and ``pick_limit="easy"`` (only the
  picks EASY would make in ``sjf_pred`` order, the reservation's order), random valid actions;
* ``pick-hetero4096``: ``job_pick`` mode (default conventions, hence event decisions and walltime
  kills; HDeepRM's contention model, window 128) on ``benchmarks/hetero4096.json``, the 4,096-core
  platform of ``platforms/hetero.json``'s 4 processor generations at scale (86 nodes), with the
  same SDSC-SP2 sequences, processor counts x 32 (the trace's 128 processors fill 4,096 cores),
  random valid actions;
* ``pair-normal``, ``pair-small``: ``policy_pair`` mode (36 pairs) on ``platforms/hetero.json``
  (384 cores of 4 processor generations, HDeepRM's contention model) with the ``normal`` and
  ``small`` observations, random valid actions;
* ``ppo-pick``, ``ppo-pair``: the launcher's loop (:func:`hdrm.launch.loop.run_episodes`) training
  the built-in PPO agent (default settings: 2,048-step rollouts, 4 epochs of 256-step minibatches)
  on the ``pick-sdsc`` and ``pair-small`` environments, updates included.

Targets (issue 4): at least 5,000 environment steps per second for the environment alone and
1,000 for PPO training, on 2 cores. Every case also times a baseline in the same process: the bare
engine (:meth:`hdrm.sim.engine.Simulation.run` with FCFS) on the same sequences with the same
settings, so figures compare across machines as ratios (``ratio`` = case wall time / baseline
wall time for the same jobs).

Usage::

    python benchmarks/bench_env.py [--traces DIR] [--cases pick-sdsc,ppo-pick] [--episodes N]
                                   [--repeat N] [--threads N] [--json OUT.json]

Each case runs ``--repeat`` times (default 3) and the fastest repetition is reported, as
``timeit`` does: on a shared machine the slower ones measure the neighbours, not hdrm. The
episodes' CPU seconds (``cpu_s``, ``time.process_time`` of this process, the episodes and any
PPO updates) and steps per CPU second are reported beside the wall figures: under load the wall
clock counts the time other processes hold the cores.

Without the full trace in ``--traces`` (default ``../shared/traces``) the 468-job slice in
``workloads/`` is used instead (sequences are then shorter than 1,024 jobs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.sim.engine import Simulation, SimulationConfig  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
TRACE = "SDSC-SP2-1998-4.2-cln.swf.gz"
SLICE = ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
HETERO = str(ROOT / "platforms" / "hetero.json")
HETERO4096 = str(ROOT / "benchmarks" / "hetero4096.json")
#: SDSC-SP2 has 128 processors: x 32 fills the 4,096 cores of ``hetero4096.json``.
SCALE_4096 = 32
CASES = ("pick-sdsc", "pick-reservation", "pick-predicted", "pick-easy", "pick-hetero4096",
         "pair-normal", "pair-small", "ppo-pick", "ppo-pair")
TARGETS = {"pick-sdsc": 5000, "pick-reservation": 5000, "pick-predicted": 5000, "pick-easy": 5000,
           "pick-hetero4096": 5000, "pair-normal": 5000, "pair-small": 5000, "ppo-pick": 1000,
           "ppo-pair": 1000}
NB_JOBS = 1024


def env_settings(case: str, workload: str, nb_jobs: int) -> dict[str, Any]:
    """Keyword arguments of :class:`SchedulingEnv` for ``case``."""
    common = dict(workload_file=workload, nb_jobs=nb_jobs, start_index="random", seed=0)
    if case in ("pick-sdsc", "pick-reservation", "pick-predicted", "pick-easy", "ppo-pick"):
        pick = dict(common, platform_file=None, homogeneous_procs=128, conventions="rlscheduler",
                    mode="job_pick", window=128, contention="none")
        if case == "pick-reservation":
            pick.update(observation="job_window_reservation", reservation="wfp3")
        elif case == "pick-predicted":
            pick.update(observation="job_window_predicted", reservation="wfp3_pred")
        elif case == "pick-easy":
            pick.update(observation="job_window_predicted", reservation="sjf_pred",
                        decision="event", pick_limit="easy")
        return pick
    if case == "pick-hetero4096":
        return dict(common, platform_file=HETERO4096, mode="job_pick", window=128)
    observation = "normal" if case == "pair-normal" else "small"
    return dict(common, platform_file=HETERO, observation=observation)


def scaled_swf(source: Path, factor: int, target: Path) -> Path:
    """Write ``source`` (SWF, gzip or not) to ``target``, every processor count times ``factor``.

    The allocated and requested processors of each job (fields 5 and 8, when positive) and the
    header's ``MaxNodes`` and ``MaxProcs`` are multiplied; everything else is copied as is.
    """
    opener = gzip.open if source.suffix == ".gz" else open
    out = []
    with opener(source, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith(";"):
                key, sep, value = line[1:].partition(":")
                if key.strip() in ("MaxNodes", "MaxProcs") and value.strip().isdigit():
                    line = f";{key}{sep} {int(value) * factor}\n"
                out.append(line)
                continue
            fields = line.split()
            for i in (4, 7):
                if len(fields) > i and fields[i].isdigit() and int(fields[i]) > 0:
                    fields[i] = str(int(fields[i]) * factor)
            out.append(" ".join(fields) + "\n")
    target.write_text("".join(out), encoding="utf-8")
    return target


def random_valid(rng: np.random.Generator, mask: np.ndarray) -> int:
    """A uniformly random valid action of ``mask``: the draw ``rng.choice`` makes of the valid
    actions (one ``integers`` draw of an index), without ``choice``'s argument handling, which
    cost the benchmark's random agent ~9 us a step, ~5 % of an environment step on
    ``pick-hetero4096`` (``tests/env/test_bench_env_hetero4096.py`` checks the draws agree)."""
    valid = mask.nonzero()[0]
    return int(valid[rng.integers(len(valid))])


def random_episodes(env: SchedulingEnv, episodes: int) -> tuple[int, float, list]:
    """Play ``episodes`` with random valid actions: (steps, wall seconds, the episodes' inputs)."""
    rng = np.random.default_rng(0)
    steps, wall_s, inputs = 0, 0.0, []
    for episode in range(episodes):
        t0 = time.perf_counter()
        _, info = env.reset(seed=episode)
        done = env.sim.done
        while not done:
            action = random_valid(rng, info["action_mask"])
            _, _, done, _, info = env.step(action)
            steps += 1
        wall_s += time.perf_counter() - t0
        inputs.append((env.platform, env.sim.workload))
    return steps, wall_s, inputs


def ppo_episodes(env: SchedulingEnv, episodes: int, threads: int) -> tuple[int, float, list, int]:
    """Train PPO for ``episodes``: (steps, wall seconds, the episodes' inputs, updates)."""
    from hdrm.agents.ppo import PPOAgent
    from hdrm.launch.loop import Hooks, run_episodes

    inputs: list = []

    class Keep(Hooks):
        def episode_ended(self, record, actions) -> None:
            inputs.append((env.platform, env.sim.workload))

    agent = PPOAgent({"run": "train", "lr": 3e-4, "params": {"torch_threads": threads}},
                     env.observation_space, env.action_space, env.action_names, seed=0)
    t0 = time.perf_counter()
    records = run_episodes(env, agent, episodes, seed=0, hooks=Keep())
    wall_s = time.perf_counter() - t0
    return sum(r.steps for r in records), wall_s, inputs, agent.updates


def baseline_s(env: SchedulingEnv, inputs: list) -> tuple[float, int]:
    """Wall seconds and decisions of the bare engine with FCFS on the same episodes."""
    c = env.config
    config = SimulationConfig(c.contention, c.backfilling, c.decision, c.kill_on_walltime,
                              record_timeline=True, seed=c.seed)
    wall_s, decisions = 0.0, 0
    for platform, workload in inputs:
        t0 = time.perf_counter()
        result = Simulation(platform, workload, config).run("fcfs")
        wall_s += time.perf_counter() - t0
        decisions += result.decisions
    return wall_s, decisions


def run_case(case: str, workload: str, nb_jobs: int, episodes: int, threads: int) -> dict[str, Any]:
    """Run one case and return its figures."""
    t0 = time.perf_counter()
    env = SchedulingEnv(**env_settings(case, workload, nb_jobs))
    load_s = time.perf_counter() - t0
    updates = 0
    cpu0 = time.process_time()
    if case.startswith("ppo"):
        steps, wall_s, inputs, updates = ppo_episodes(env, episodes, threads)
    else:
        steps, wall_s, inputs = random_episodes(env, episodes)
    cpu_s = time.process_time() - cpu0
    jobs = sum(len(w) for _, w in inputs)
    base_s, base_decisions = baseline_s(env, inputs)
    return {
        "case": case, "episodes": episodes, "jobs": jobs, "steps": steps, "updates": updates,
        "load_s": round(load_s, 2), "wall_s": round(wall_s, 2),
        "steps_per_s": round(steps / wall_s), "target": TARGETS[case],
        "cpu_s": round(cpu_s, 2), "steps_per_cpu_s": round(steps / cpu_s),
        "jobs_per_s": round(jobs / wall_s), "baseline_s": round(base_s, 3),
        "baseline_jobs_per_s": round(jobs / base_s), "baseline_decisions": base_decisions,
        "ratio": round(wall_s / base_s, 2),
    }


COLUMNS = ("case", "episodes", "jobs", "steps", "updates", "wall_s", "steps_per_s", "target",
           "cpu_s", "steps_per_cpu_s",
           "jobs_per_s", "baseline_s", "baseline_jobs_per_s", "ratio")


def print_table(rows: list[dict[str, Any]]) -> None:
    """The figures as a Markdown table."""
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in COLUMNS) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Speed of the environment and of PPO training.")
    parser.add_argument("--traces", default=str(DEFAULT_TRACES), help="folder holding " + TRACE)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--episodes", type=cli.count(1), default=4,
                        help="episodes per case (default 4)")
    parser.add_argument("--repeat", type=cli.count(1), default=3,
                        help="repetitions, the best is kept (3)")
    parser.add_argument("--threads", type=cli.count(1), default=1,
                        help="torch threads for PPO (default 1)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    trace = Path(args.traces) / TRACE
    workload, nb_jobs = (str(trace), NB_JOBS) if trace.is_file() else (str(SLICE), 256)
    if not trace.is_file():
        print(f"note: {trace} not found; using {SLICE.name} with {nb_jobs}-job sequences")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-env-") as tmp:
        for case in args.cases.split(","):
            if case not in CASES:
                parser.error(f"unknown case {case!r}; choose among {', '.join(CASES)}")
            source = workload
            if case == "pick-hetero4096":
                scaled = Path(tmp) / f"x{SCALE_4096}.swf"
                source = str(scaled_swf(Path(workload), SCALE_4096, scaled))
            runs = [run_case(case, source, nb_jobs, args.episodes, args.threads)
                    for _ in range(max(1, args.repeat))]
            rows.append(min(runs, key=lambda row: row["wall_s"]))
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
