"""Distributed PPO throughput: 1 and 2 rollout workers against the single-process learner.

Usage::

    python benchmarks/bench_distributed.py [--env-steps 6144] [--jobs 100] [--rollout 1024]
        [--workers 1,2] [--repeat 3] [--json out.json]

The same PPO training (``examples/ppo/options.json``: HDeepRM's 36 policy pairs on the
heterogeneous platform, episodes of ``--jobs`` SDSC-SP2 jobs, ``--rollout`` steps per update) is
run for ``--env-steps`` environment steps:

* in one process (``hdeeprm-launch`` without workers): the single-process learner;
* with N rollout workers on a local Ray (N in ``--workers``), the learner in this process.

For each it prints the load average (``os.getloadavg``) before and after, and

* ``collect steps/s``: environment steps over the wall-clock time of the collection phases
  (workers stepping their environments in parallel; for one process, the time outside updates);
* ``updates/s``: learner updates over the time spent in them;
* ``end-to-end steps/s``: environment steps over the whole training's wall time (Ray's start
  and the workers' creation are timed apart, as ``start s``);
* ratios against the single-process learner, measured in the same round;
* where the collection time goes: the CPU seconds spent collecting (all workers / the slowest),
  steps per collect CPU second over the whole run and after the first rollout (``steady``: a
  fresh worker's first fragment costs more), the share of a core the collecting processes got
  (CPU over wall: below 1 on a loaded machine), the milliseconds per fragment spent outside the
  workers' collect calls (sending weights and fragments through Ray, scheduling) and the share
  of the collection the learner waited for the slowest worker after the others had finished.

After the setups of a round, the control: as many processes as workers, without Ray, each
collecting its share with fixed weights, started together (what the machine gives that many
processes now: on a machine shared per login session, two processes of one session split its
share instead of getting a core each).

The setups run one after the other, ``--repeat`` rounds (the machine's load moves between them);
each round's table is printed, then the best round of each setup and the spread over the rounds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cli_lists  # noqa: E402
from hdrm.distributed.learners import WorkerPlan  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "agents" / "ppo.py"


def write_options(folder: Path, jobs: int, rollout: int) -> Path:
    """examples/ppo/options.json with absolute input paths, ``jobs`` jobs, ``rollout`` steps."""
    source = ROOT / "examples" / "ppo" / "options.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    for key in ("workload_file_path", "platform_file_path"):
        data[key] = str((source.parent / data[key]).resolve())
    data["nb_jobs"] = jobs
    data["pybatsim"]["agent"]["params"].update(
        {"rollout_steps": rollout, "minibatch": 128, "epochs": 4, "torch_threads": 1,
         "rollout_device": "cpu", "update_device": "cpu"})
    path = folder / "bench_options.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def learner(options: Path) -> tuple[Any, Any]:
    """The launch's PPO agent and the task its workers use."""
    from hdrm.launch.experiment import build_experiment
    from hdrm.launch.workers import LaunchTask
    from hdrm.options import load_options

    opts = load_options(options)
    exp = build_experiment(opts, AGENT)
    return exp.agent, LaunchTask(options, AGENT, opts.seed)


class Timed:
    """Wall-clock and CPU seconds (of this process) spent in a callable, summed; with
    ``workers``, also what the rollout workers report of each call (:class:`Collected`)."""

    def __init__(self, function: Any, workers: bool = False) -> None:
        self.function, self.seconds, self.cpu_s, self.calls = function, 0.0, 0.0, 0
        self.first_cpu: float | None = None  # process_time() when first called
        self.workers, self.worker_cpu_s, self.slowest_cpu_s = workers, 0.0, 0.0
        self.worker_wall_s, self.slowest_wall_s, self.wait_s = 0.0, 0.0, 0.0
        self.first_steps, self.first_worker_cpu_s = 0, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        t0, cpu0 = time.perf_counter(), time.process_time()
        if self.first_cpu is None:
            self.first_cpu = cpu0
        try:
            result = self.function(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0
            self.cpu_s += time.process_time() - cpu0
            self.calls += 1
        if self.workers:
            self._worker_figures(result)
        return result

    def _worker_figures(self, result: list[Any]) -> None:
        """One rollout from every worker: the slowest sets the pace."""
        walls = [c.wall_s for c in result]
        self.worker_cpu_s += sum(c.cpu_s for c in result)
        self.slowest_cpu_s += max(c.cpu_s for c in result)
        self.worker_wall_s += sum(walls)
        self.slowest_wall_s += max(walls)
        self.wait_s += max(walls) - sum(walls) / len(walls)
        if self.calls == 1:  # a fresh worker's first fragment
            self.first_steps = sum(c.env_steps for c in result)
            self.first_worker_cpu_s = sum(c.cpu_s for c in result)


def single_process(options: Path, env_steps: int) -> dict[str, Any]:
    """The single-process learner: the launcher's episode loop, whole episodes until
    ``env_steps`` steps are made."""
    from hdrm.launch.experiment import build_experiment
    from hdrm.launch.loop import run_episode
    from hdrm.options import load_options

    opts = load_options(options)
    exp = build_experiment(opts, AGENT)
    update = Timed(exp.agent.update)
    exp.agent.update = update
    load = os.getloadavg()[0]
    t0, cpu0 = time.perf_counter(), time.process_time()
    steps, episode = 0, 0
    while steps < env_steps:
        seed = opts.seed if episode == 0 else None
        record, _ = run_episode(exp.env, exp.agent, episode, seed=seed)
        steps, episode = steps + record.steps, episode + 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    row = _row("1 process", steps, update.calls, wall - update.seconds, update.seconds, wall,
               0.0, load)
    collect_cpu = cpu - update.cpu_s
    first = (update.first_cpu or cpu0 + cpu) - cpu0  # the first rollout, until its update
    rollout = load_rollout(options)
    return {**row, "collect_cpu_s": collect_cpu, "slowest_collect_cpu_s": collect_cpu,
            "update_cpu_s": update.cpu_s,
            "steady_steps_per_cpu_s": (steps - rollout) / (collect_cpu - first),
            "cpu_share": collect_cpu / (wall - update.seconds), "overhead_ms": 0.0,
            "wait_share": 0.0}


def load_rollout(options: Path) -> int:
    """The PPO ``rollout_steps`` of the options file."""
    data = json.loads(options.read_text(encoding="utf-8"))
    return int(data["pybatsim"]["agent"]["params"]["rollout_steps"])


def with_workers(ray: Any, options: Path, workers: int, env_steps: int) -> dict[str, Any]:
    """N rollout workers on ``ray``, the learner in this process."""
    from hdrm.distributed.ppo import PPOWorkers

    agent, task = learner(options)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    trainer = PPOWorkers(ray, agent, task, WorkerPlan(workers, 1, env_steps=env_steps))
    start = time.perf_counter() - t0
    collect, learn = Timed(trainer.collect, workers=True), Timed(trainer.learn)
    trainer.collect, trainer.learn = collect, learn
    t1 = time.perf_counter()
    try:
        run = trainer.run(lambda e: None, lambda: False)
    finally:
        trainer.close()
    wall = time.perf_counter() - t1
    row = _row(f"{workers} worker{'s' * (workers > 1)}", run.env_steps, run.updates,
               collect.seconds, learn.seconds, wall, start, load)
    steady = (run.env_steps - collect.first_steps) / (collect.worker_cpu_s
                                                      - collect.first_worker_cpu_s)
    return {**row, "collect_cpu_s": collect.worker_cpu_s,
            "slowest_collect_cpu_s": collect.slowest_cpu_s, "update_cpu_s": learn.cpu_s,
            "steady_steps_per_cpu_s": steady,
            "cpu_share": collect.worker_cpu_s / collect.worker_wall_s,
            "overhead_ms": 1000 * (collect.seconds - collect.slowest_wall_s) / collect.calls,
            "wait_share": collect.wait_s / collect.seconds}


def plain_processes(options: Path, count: int, env_steps: int) -> dict[str, Any]:
    """The control: ``count`` processes without Ray (spawned from this one), each collecting
    ``env_steps / count`` steps with fixed weights after one warm-up rollout, started together.
    What this machine gives that many processes of this session now: the ceiling of the workers'
    collection speed, with no Ray, transfer or learner."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    barrier, queue = context.Barrier(count), context.Queue()
    args = [(str(options), w, env_steps // count, barrier, queue) for w in range(count)]
    processes = [context.Process(target=_collect_alone, args=a) for a in args]
    for process in processes:
        process.start()
    figures = [queue.get(timeout=600) for _ in processes]
    for process in processes:
        process.join()
    wall = max(f["end"] for f in figures) - min(f["start"] for f in figures)
    steps, cpu = sum(f["steps"] for f in figures), sum(f["cpu_s"] for f in figures)
    return {"processes": count, "collect_steps_per_s": steps / wall,
            "steps_per_cpu_s": steps / cpu, "cpu_share": cpu / sum(f["wall_s"] for f in figures)}


def _collect_alone(options: str, worker: int, steps: int, barrier: Any, queue: Any) -> None:
    import torch

    from hdrm.distributed.heap import freeze_setup
    from hdrm.distributed.ppo_rollout import RolloutCollector

    torch.set_num_threads(1)
    agent, task = learner(Path(options))
    collector = RolloutCollector(task, worker, 1, agent.settings.rollout_steps, agent.seed)
    freeze_setup("control")  # as a rollout worker does
    weights = agent.state_dict()
    collector.collect(weights)  # warm-up
    barrier.wait()
    done, cpu, start = 0, 0.0, time.perf_counter()
    while done < steps:
        collected = collector.collect(weights)
        done, cpu = done + collected.env_steps, cpu + collected.cpu_s
    end = time.perf_counter()
    queue.put({"steps": done, "cpu_s": cpu, "wall_s": end - start, "start": start, "end": end})


def _row(name: str, steps: int, updates: int, collect_s: float, update_s: float, wall_s: float,
         start_s: float, load: float) -> dict[str, Any]:
    return {"setup": name, "env_steps": steps, "updates": updates,
            "collect_steps_per_s": steps / collect_s, "updates_per_s": updates / update_s,
            "end_to_end_steps_per_s": steps / wall_s, "wall_s": wall_s, "start_s": start_s,
            "collect_s": collect_s, "update_s": update_s, "load_before": load,
            "load_after": os.getloadavg()[0]}


def table(rows: list[dict[str, Any]]) -> str:
    """The figures as a Markdown table, with ratios to the first row."""
    base = rows[0]
    lines = ["| setup | env steps | updates | collect steps/s | updates/s | end-to-end steps/s "
             "| start s | CPU s: collect (all / slowest worker) / updates | steps per collect "
             "CPU s (steady) | core share | overhead ms/fragment | slowest-worker wait "
             "| load (1 min) before/after |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---|"]
    for r in rows:
        c = r["collect_steps_per_s"] / base["collect_steps_per_s"]
        e = r["end_to_end_steps_per_s"] / base["end_to_end_steps_per_s"]
        lines.append(f"| {r['setup']} | {r['env_steps']} | {r['updates']} | "
                     f"{r['collect_steps_per_s']:,.0f} ({c:.2f}x) | {r['updates_per_s']:.2f} | "
                     f"{r['end_to_end_steps_per_s']:,.0f} ({e:.2f}x) | {r['start_s']:.1f} | "
                     f"{r['collect_cpu_s']:.2f} / {r['slowest_collect_cpu_s']:.2f} / "
                     f"{r['update_cpu_s']:.2f} | {r['env_steps'] / r['collect_cpu_s']:,.0f} "
                     f"({r['steady_steps_per_cpu_s']:,.0f}) | {r['cpu_share']:.2f} | "
                     f"{r['overhead_ms']:.1f} | {100 * r['wait_share']:.0f}% | "
                     f"{r['load_before']:.1f} / {r['load_after']:.1f} |")
    return "\n".join(lines)


def spread(rounds: list[list[dict[str, Any]]]) -> str:
    """Min, median and max over the rounds of each setup's collect and end-to-end ratios to
    the single process of the same round, and of its steady steps per collect CPU second."""
    lines = ["| setup | collect ratio min / median / max | end-to-end ratio min / median / max "
             "| steady steps per collect CPU s min / median / max |", "|---|---|---|---|"]
    for i, first in enumerate(rounds[0]):
        collect = [r[i]["collect_steps_per_s"] / r[0]["collect_steps_per_s"] for r in rounds]
        end = [r[i]["end_to_end_steps_per_s"] / r[0]["end_to_end_steps_per_s"] for r in rounds]
        cpu = [r[i]["steady_steps_per_cpu_s"] for r in rounds]
        lines.append(f"| {first['setup']} | {_three(collect, '.2f')} | {_three(end, '.2f')} | "
                     f"{_three(cpu, ',.0f')} |")
    return "\n".join(lines)


def _three(values: list[float], spec: str) -> str:
    return " / ".join(format(v, spec) for v in (min(values), statistics.median(values),
                                                max(values)))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    import tempfile

    import torch

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env-steps", type=cli.count(1), default=6144)
    p.add_argument("--jobs", type=cli.count(1), default=100, help="jobs per episode")
    p.add_argument("--rollout", type=cli.count(1), default=1024, help="PPO rollout_steps")
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    p.add_argument("--repeat", type=cli.count(1), default=3,
                   help="rounds of every setup (default 3)")
    p.add_argument("--json", help="also write the figures to this file")
    a = p.parse_args(argv)
    try:
        counts = cli_lists.ints(a.workers, "--workers", "1,2", minimum=1)
    except ConfigError as exc:
        p.error(str(exc))
    torch.set_num_threads(1)
    from hdrm.distributed import ray_backend

    rounds: list[list[dict[str, Any]]] = []
    controls: list[list[dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as folder:
        options = write_options(Path(folder), a.jobs, a.rollout)
        with ray_backend.connect(None, num_cpus=max(counts)) as ray:
            for _ in range(a.repeat):  # the setups one after the other, round after round
                rows = [single_process(options, a.env_steps)]
                rows += [with_workers(ray, options, n, a.env_steps) for n in counts]
                rounds.append(rows)
                controls.append([plain_processes(options, n, a.env_steps) for n in counts])
    print(f"PPO, {a.jobs}-job episodes, rollout {a.rollout} steps, {a.env_steps} env steps; "
          f"{os.cpu_count()} CPUs; {a.repeat} round(s)")
    for number, rows in enumerate(rounds, 1):
        print(f"round {number}:")
        print(table(rows))
        print("control, processes without Ray collecting with fixed weights (no learner): "
              + "; ".join(f"{c['processes']}: {c['collect_steps_per_s']:,.0f} steps/s, "
                          f"{c['steps_per_cpu_s']:,.0f} steps per CPU s, core share "
                          f"{c['cpu_share']:.2f}" for c in controls[number - 1]))
    best = [max((rows[i] for rows in rounds), key=lambda r: r["end_to_end_steps_per_s"])
            for i in range(len(rounds[0]))]
    print("best of the rounds, per setup:")
    print(table(best))
    print(f"spread over the {a.repeat} round(s), ratios to the single process of each round:")
    print(spread(rounds))
    if a.json:
        Path(a.json).write_text(json.dumps({"rounds": rounds, "controls": controls}, indent=1),
                                encoding="utf-8")
    return 0 if all(math.isfinite(r["end_to_end_steps_per_s"]) for r in best) else 1


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
