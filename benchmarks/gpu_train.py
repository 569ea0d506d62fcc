"""Train a learner of the GPU comparison on a workload's training windows (issue 20).

Usage::

    python benchmarks/gpu_train.py --workload openb --role mappo --minutes 15 --seed 0 \\
        --out models/gpu/mappo_openb_seed0.pt [--freeze-order sjf] [--freeze-place fgd]
        [--window 32] [--fitting-first] [--node-rule first_fit] [--node-rank]
        [--validate-every 10]
        [--agent-json '{"lr": 3e-4}'] [--rollout-device cpu] [--update-device cuda]
        [--imitate sjf-first_fit --imitate-episodes 20 --imitate-epochs 10 --imitate-lr 1e-3]

Roles (:data:`benchmarks.gpu_learners.ROLE_COLUMNS`): ``mappo`` (two agents, centralised critic),
``factored`` (one PPO policy over the joint action), ``learned_order`` (the place agent frozen to
``--freeze-place``) and ``learned_place`` (the order agent frozen to ``--freeze-order``).

Episodes are windows of the workload's window size whose first task is drawn uniformly from the
training range of the split (:func:`benchmarks.gpu_protocol.time_split`), so an episode never
holds a validation or test task, under the workload's load factor. Every ``--validate-every``
episodes the greedy policy is scored on the validation windows (mean JCT) and the best one so far
is saved to ``--out`` with the setting and the training figures (at once, so a run stopped early
keeps its best policy). The budget is wall-clock minutes (``--minutes``, the warm start included)
or episodes (``--episodes``), whichever ends first; the figures record the wall and the CPU
minutes the run got. ``--imitate PAIR`` first clones the pair's decisions on training episodes
(:mod:`hdrm.agents.mappo_imitation`); the clone is validated as episode 0. ``--fitting-first``,
``--node-rule`` and ``--node-rank`` set the environment's view
(:func:`benchmarks.gpu_learners.view_of`): the order agent's window shows the queued tasks that
fit now first, the GPUs within the node the place agent chose follow that placement's rule, and
the place agent sees each node's position in platform order; the model records them and is
evaluated so.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks import gpu_protocol  # noqa: E402
from benchmarks.gpu_learners import drivers, episode_score, make_env  # noqa: E402
from benchmarks.gpu_protocol import GpuScore, Setting  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

#: Start indices drawn for the training episodes (they cycle beyond).
MAX_DRAWS = 10_000
ROLES = ("mappo", "factored", "learned_order", "learned_place")
#: The documented training runs of ``compare_gpu.py`` without ``--evaluate-only`` (file -> argv).
#: The frozen heuristics are the best pair's order and placement on openb (sjf-first_fit); the
#: warm-started runs clone the best greedy pair of their workload (openb sjf-first_fit, Gavel
#: sjf-price_aware), then fine-tune at a learning rate of 3e-5.
GPU_MODEL_COMMANDS: dict[str, list[str]] = {
    # seed 0 stopped at 25 minutes after 47 episodes, the episode budget of seeds 1 and 2
    # (session 18)
    **{f"mappo_openb_seed{k}.pt": ["--workload", "openb", "--role", "mappo", "--minutes", "25",
                                   "--episodes", "47", "--seed", str(k)] for k in (0, 1, 2)},
    # seed 0 of the two ablations below stopped at 25 minutes after 68 and 97 episodes, the
    # episode budgets of seeds 1 and 2 (session 18)
    **{f"factored_openb_seed{k}.pt": ["--workload", "openb", "--role", "factored", "--minutes",
                                      "25", "--episodes", "68", "--seed", str(k)]
       for k in (0, 1, 2)},
    **{f"learned_order_openb_seed{k}.pt": ["--workload", "openb", "--role", "learned_order",
                                           "--freeze-place", "first_fit", "--minutes", "25",
                                           "--episodes", "97", "--seed", str(k)]
       for k in (0, 1, 2)},
    **{f"learned_place_openb_seed{k}.pt": ["--workload", "openb", "--role", "learned_place",
                                           "--freeze-order", "sjf", "--minutes", "25",
                                           "--episodes", "70", "--seed", str(k)]
       for k in (0, 1, 2)},
    **{f"mappo_ws_openb_seed{k}.pt": ["--workload", "openb", "--role", "mappo", "--minutes", "45",
                                      "--imitate", "sjf-first_fit", "--imitate-episodes", "30",
                                      "--agent-json", '{"lr": 3e-5}', "--seed", str(k)]
       for k in (0, 1, 2)},
    **{f"mappo_ws_gavel_seed{k}.pt": ["--workload", "gavel", "--role", "mappo", "--minutes",
                                      minutes, "--imitate", "sjf-price_aware",
                                      "--imitate-episodes", "30", "--agent-json",
                                      '{"lr": 3e-5}', "--seed", str(k)]
       for k, minutes in ((0, "25"), (1, "9"), (2, "9"))},
    # the ablations of mappo_ws_gavel (session 18): its warm start, learning rate and view,
    # 500 episodes each (--minutes only a cap)
    **{f"{name}_ws_gavel_seed{k}.pt": ["--workload", "gavel", *role, "--minutes", "10",
                                       "--episodes", "500", "--imitate", "sjf-price_aware",
                                       "--imitate-episodes", "30", "--agent-json",
                                       '{"lr": 3e-5}', "--seed", str(k)]
       for name, role in (("learned_place", ("--role", "learned_place", "--freeze-order", "sjf")),
                          ("learned_order", ("--role", "learned_order", "--freeze-place",
                                             "price_aware")),
                          ("factored", ("--role", "factored")))
       for k in (0, 1, 2)},
    # the view of benchmarks/gpu_analysis.py's finding (session 16): the order agent's window
    # shows the tasks that fit first (64 of them), GPUs within the chosen node follow
    # first_fit's rule and the place agent sees each node's rank, so that the pair is played
    # exactly and can be cloned exactly
    **{f"learned_place_ws_openb_seed{k}.pt": ["--workload", "openb", "--role", "learned_place",
                                              "--freeze-order", "sjf", "--fitting-first",
                                              "--node-rule", "first_fit", "--node-rank",
                                              "--window", "64",
                                              "--minutes", "25", "--imitate", "sjf-first_fit",
                                              "--imitate-episodes", "30", "--agent-json",
                                              '{"lr": 3e-5}', "--seed", str(k)]
       for k in (0, 1, 2)},
    **{f"mappo_ws_view_openb_seed{k}.pt": ["--workload", "openb", "--role", "mappo",
                                           "--fitting-first", "--node-rule", "first_fit",
                                           "--node-rank", "--window", "64", "--minutes", "22",
                                           "--imitate", "sjf-first_fit", "--imitate-episodes",
                                           "30", "--agent-json", '{"lr": 3e-5}', "--seed", str(k)]
       for k in (0, 1, 2)},
}


def agent_config(role: str, freeze_order: str, freeze_place: str, extra: dict[str, Any],
                 devices: dict[str, str | None] | None = None) -> dict[str, Any]:
    """The MAPPO agent block of a role; ``devices`` (``rollout_device``, ``update_device``)
    go into its params where set (None: the agent's default), before ``extra``."""
    params: dict[str, Any] = {"mode": "factored" if role == "factored" else "mappo",
                              "torch_threads": 1}
    if role == "learned_order":
        params["freeze_place"] = freeze_place
    if role == "learned_place":
        params["freeze_order"] = freeze_order
    params.update({k: v for k, v in (devices or {}).items() if v is not None})
    config = {"lr": 3e-4, "gamma": 1.0, "run": "train", "params": params}
    config.update({k: v for k, v in extra.items() if k != "params"})
    params.update(extra.get("params", {}))
    return config


def training_starts(setting: Setting, seed: int, episodes: int) -> tuple[int, ...]:
    """First tasks of the training episodes: uniform over the starts whose whole window lies in
    the training range (at most :data:`MAX_DRAWS`; episodes cycle through them).

    Raises:
        ConfigError: the training range is shorter than a window.
    """
    first, end = setting.split[0]
    last_start = end - setting.window_tasks
    if last_start < first:
        raise ConfigError(f"{setting.key}: the training range ({end - first} tasks) is shorter "
                          f"than a window ({setting.window_tasks} tasks)")
    rng = np.random.default_rng(seed)
    draws = max(min(episodes, MAX_DRAWS), 1)
    return tuple(int(s) for s in rng.integers(first, last_start + 1, size=draws))


def validate(agent: Any, setting: Setting, window: int, seed: int, pick: str,
             env_view: dict[str, Any] | None = None) -> float:
    """Mean JCT of the greedy policy over the validation windows."""
    from hdrm.agents.mappo_rollout import play_episode

    agent.train_mode(False)
    scores = []
    for start in setting.validation_starts:
        env = make_env(setting, window, seed, start, pick, env_view)
        play_episode(env, agent, drivers(dict(agent.frozen)), seed=seed)
        scores.append(episode_score(env))
    agent.train_mode(True)
    return GpuScore.mean(scores).avg_jct


def train(a: argparse.Namespace) -> dict[str, Any]:
    """Run the training; returns its figures (also saved with the best model)."""
    import torch

    from hdrm.agents.mappo_rollout import make_agent, play_episode

    torch.set_num_threads(1)
    setting = gpu_protocol.resolve(gpu_protocol.workload_spec(a.workload), a.traces, a.cache,
                                   **(gpu_protocol.QUICK if a.quick else {}))
    starts = training_starts(setting, a.seed, a.episodes)
    # episodes cycle through starts
    env = make_env(setting, a.window, a.seed, starts, a.pick, view(a))
    config = agent_config(a.role, a.freeze_order, a.freeze_place,
                          cli.json_object(a.agent_json, "--agent-json"),
                          {"rollout_device": a.rollout_device,
                           "update_device": a.update_device})
    agent = make_agent(env, config, seed=a.seed)
    meta = _metadata(a, setting, config)
    _keep_aside(a.out)
    clock = (time.perf_counter(), time.process_time())
    episodes, steps = 0, 0
    best: dict[str, Any] = {"value": float("inf")}

    def validated() -> None:  # validate; a better policy is saved at once (a stopped run keeps it)
        value = validate(agent, setting, a.window, a.seed, a.pick, view(a))
        if _keep_best(best, agent, value, episodes):
            _save(best, a.out, meta, clock, episodes, steps, finished=False)

    if a.imitate:
        meta["training"]["imitation"] = warm_start(agent, env, a)
        validated()
    while episodes < a.episodes and time.perf_counter() - clock[0] < 60 * a.minutes:
        stats = play_episode(env, agent, drivers(dict(agent.frozen)), seed=a.seed + episodes)
        episodes, steps = episodes + 1, steps + int(stats.get("steps", 0))
        if episodes % a.validate_every == 0:
            validated()
    if "state" not in best:  # fewer episodes than --validate-every: the last policy
        validated()
    _save(best, a.out, meta, clock, episodes, steps, finished=True)
    return meta["training"]


def view(a: argparse.Namespace) -> dict[str, Any]:
    """The environment view of the run (:func:`benchmarks.gpu_learners.view_of`)."""
    return {"fitting_first": a.fitting_first, "placement": a.node_rule,
            "node_rank": a.node_rank}


def teachers(imitate: str, frozen: dict[str, str]) -> dict[str, Any]:
    """The heuristic drivers of an imitation warm start: the pair ``imitate``'s order and
    placement, an agent frozen to a heuristic keeping its own.

    Raises:
        ConfigError: ``imitate`` is not an ``ORDER-PLACEMENT`` pair.
    """
    from hdrm.core.gpu_scheduler import resolve_gpu_policy

    if "-" not in imitate:
        raise ConfigError(f"--imitate: expected a pair 'ORDER-PLACEMENT' such as sjf-first_fit, "
                          f"got {imitate!r}")
    policy = resolve_gpu_policy(imitate, "--imitate")
    return drivers({"order": policy.order.name, "place": policy.placement, **frozen})


def warm_start(agent: Any, env: Any, a: argparse.Namespace) -> dict[str, Any]:
    """Behaviour cloning of ``--imitate`` on ``--imitate-episodes`` training episodes
    (:mod:`hdrm.agents.mappo_imitation`); its figures."""
    from hdrm.agents.mappo_imitation import behaviour_clone, collect_demonstrations

    wall0, cpu0 = time.perf_counter(), time.process_time()
    demos = collect_demonstrations(env, agent, teachers(a.imitate, dict(agent.frozen)),
                                   a.imitate_episodes, seed=a.seed + 10**6)
    stats = behaviour_clone(agent, demos, a.imitate_epochs, a.imitate_lr)
    figures = {"pair": a.imitate, "episodes": a.imitate_episodes, "epochs": a.imitate_epochs,
               "lr": a.imitate_lr, "skipped": demos.skipped,
               **{k: round(v, 4) for k, v in stats.items()},
               "wall_min": round((time.perf_counter() - wall0) / 60, 1),
               "cpu_min": round((time.process_time() - cpu0) / 60, 1)}
    print(f"imitation of {a.imitate}: {json.dumps(figures)}", flush=True)
    return figures


def _metadata(a: argparse.Namespace, setting: Setting, config: dict[str, Any]) -> dict[str, Any]:
    """What the saved model records: learner, agent settings, setting, training budget."""
    return {"learner": "mappo", "agent": {k: v for k, v in config.items() if k != "run"},
            "setting": {"workload": a.workload, "role": a.role, "window": a.window,
                        "imitate": a.imitate, **view(a),
                        "pick": a.pick, "quick": a.quick, "seed": a.seed,
                        "load_factor": setting.load_factor,
                        "window_tasks": setting.window_tasks,
                        "training_range": list(setting.split[0])},
            "training": {"budget_min": a.minutes, "command": " ".join(sys.argv)}}


def _keep_best(best: dict[str, Any], agent: Any, value: float, episodes: int) -> bool:
    """Keep a copy of the agent when ``value`` (validation mean JCT) is the best so far;
    whether it was."""
    from hdrm.agents.checkpoint import snapshot

    print(f"episode {episodes}: validation mean JCT {value:.1f} s", flush=True)
    if value < best["value"]:
        best.update(value=value, episode=episodes, state=snapshot(agent))
        return True
    return False


def _save(best: dict[str, Any], out: str, meta: dict[str, Any], clock: tuple[float, float],
          episodes: int, steps: int, finished: bool) -> None:
    """Write the best policy with the training figures so far (wall and CPU minutes since
    ``clock``; ``finished`` false while the run goes on)."""
    from hdrm.agents.checkpoint import save_snapshot

    meta["training"].update(episodes=episodes, env_steps=steps, best_episode=best["episode"],
                            best_validation=best["value"], finished=finished, final=finished,
                            wall_min=round((time.perf_counter() - clock[0]) / 60, 1),
                            cpu_min=round((time.process_time() - clock[1]) / 60, 1))
    save_snapshot(best["state"], out, meta)


def _keep_aside(out: str) -> None:
    """Rename an unfinished model at ``out`` (a stopped run's best so far) to
    ``STEM.interrupted.pt`` before this run's first validation replaces it
    (:func:`benchmarks.train_resume.keep_unfinished_aside`), saying so."""
    from benchmarks.train_resume import keep_unfinished_aside

    aside = keep_unfinished_aside(out)
    if aside is not None:
        print(f"note: {out} is the unfinished model of a stopped run; kept as {aside}",
              file=sys.stderr)


def finished_model(path: Path) -> bool:
    """Whether ``path`` is a model whose training ended (``training.final``, or ``finished`` in
    models saved before it; False for a stopped run's best so far, or no file; a file that is
    not a checkpoint counts as ended: it is left as it is)."""
    from hdrm.agents.checkpoint import read_checkpoint
    from hdrm.errors import AgentLoadError

    if not path.is_file():
        return False
    try:  # read_checkpoint refuses a file without "options" (CHECKPOINT_KEYS)
        training = read_checkpoint(path)["options"].get("training") or {}
        return bool(training.get("final", training.get("finished", True)))
    except (AgentLoadError, AttributeError):  # options or training not a mapping: left as is
        return True


def train_missing(models_dir: Path, traces: str, cache: str) -> None:
    """Train the documented models of :data:`GPU_MODEL_COMMANDS` that are missing or unfinished
    (a stopped training starts again; its model is kept aside)."""
    for name, argv in GPU_MODEL_COMMANDS.items():
        out = models_dir / name
        if finished_model(out):
            continue
        print("training:", name, " ".join(argv), flush=True)
        try:
            main([*argv, "--traces", traces, "--cache", cache, "--out", str(out)])
        except (HdrmError, ImportError) as exc:
            print(f"note: training {name} failed ({exc}); its column stays empty", file=sys.stderr)


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", default="openb", choices=tuple(gpu_protocol.WORKLOADS))
    p.add_argument("--role", default="mappo", choices=ROLES)
    p.add_argument("--minutes", type=cli.positive, default=60.0, help="wall-clock budget")
    p.add_argument("--episodes", type=cli.count(1), default=10**9, help="episode budget")
    p.add_argument("--seed", type=cli.seed, default=0)
    p.add_argument("--window", type=cli.count(1), default=32,
                   help="queued tasks the order agent sees")
    p.add_argument("--pick", default="fitting", choices=("fitting", "env"),
                   help="fitting: the order agent waits only when no queued task fits")
    p.add_argument("--validate-every", type=cli.count(1), default=10,
                   help="episodes between validations")
    p.add_argument("--freeze-order", default="sjf", help="order of the learned_place role")
    p.add_argument("--freeze-place", default="fgd", help="placement of the learned_order role")
    p.add_argument("--fitting-first", action="store_true",
                   help="the order agent's window shows the queued tasks that fit now first")
    p.add_argument("--node-rank", action="store_true",
                   help="the place agent sees each node's position in platform order")
    p.add_argument("--node-rule", default="fgd",
                   help="placement whose rule picks the GPUs within the place agent's node")
    p.add_argument("--rollout-device", help="where decisions run: cpu, cuda, cuda:N or auto "
                   "(default: the agent's own, auto)")
    p.add_argument("--update-device", help="where the learner trains: cpu, cuda, cuda:N or auto "
                   "(default: the agent's own, auto)")
    p.add_argument("--agent-json", default="{}", help="agent settings over the role's")
    p.add_argument("--imitate", default="", help="warm start: behaviour cloning of this "
                   "ORDER-PLACEMENT pair's decisions before MAPPO (e.g. sjf-first_fit)")
    p.add_argument("--imitate-episodes", type=cli.count(1), default=20,
                   help="training episodes the pair plays for the warm start")
    p.add_argument("--imitate-epochs", type=cli.count(1), default=10, help="passes over them")
    p.add_argument("--imitate-lr", type=cli.positive, default=1e-3,
                   help="learning rate of the cloning")
    p.add_argument("--traces", default=str(gpu_protocol.DEFAULT_TRACES))
    p.add_argument("--cache", default=str(gpu_protocol.CACHE_DIR))
    p.add_argument("--out", required=True, help="model file to write")
    p.add_argument("--quick", action="store_true", help="smoke run: windows of 3 tasks")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    a = parse(argv)
    cli.json_object(a.agent_json, "--agent-json")  # refused before any work
    figures = train(a)
    print(f"wrote {a.out}: {json.dumps(figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
