"""The learners of the SLA comparison: their hdeeprm-launch options, training and evaluation.

Two PPO learners on the inference scenario, one model per learner and load level, both with
the ``sla_energy`` objective at :data:`~benchmarks.sla_protocol.SLA_ENERGY_WEIGHT_PER_J` per joule:

``policy_pair``
    at each decision, one of the 10 (request order x accelerator choice) pairs of
    :data:`~benchmarks.sla_protocol.HEURISTICS`, observation ``small``;
``job_pick``
    at each decision, one of the first 32 queued requests in the ``laxity`` window order (those
    that can still meet their target, least laxity first, then the lost ones), observation
    ``job_window_sla`` (:mod:`hdrm.env.tenants`), the kernel network, work-conserving (it does not
    wait while a request fits: :mod:`benchmarks.sla_agent`); requests go to the first free
    partition (``high_gflops``).

Training is ``hdeeprm-launch AGENT options.json --outmodel models/sla/NAME.pt`` (the learner's
agent file, :data:`AGENTS`) on the training stream (seed
:data:`~benchmarks.sla_protocol.TRAIN_SEED`), episodes of
:data:`~benchmarks.sla_protocol.TRAIN_EPISODE_JOBS` requests from random starts, for a stated
number of episodes; evaluation loads the model into the same agent class, greedy, on a whole
test stream.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import sla_protocol as sp
from hdrm.workload.inference import InferenceSpec
from hdrm.workload.job import Workload

#: The agent file of each learner: ``agents/ppo.py`` (PPO, here with a constant learning rate)
#: and its work-conserving variant for ``job_pick`` (:mod:`benchmarks.sla_agent`).
AGENTS = {"policy_pair": sp.ROOT / "agents" / "ppo.py",
          "job_pick": sp.ROOT / "benchmarks" / "sla_agent.py"}
LEARNERS = ("policy_pair", "job_pick")
#: Training episodes per model (the budget; ``--quick``: 2).
EPISODES = {"policy_pair": 40, "job_pick": 40}
WINDOW = 32


def model_name(learner: str, lv: sp.LoadLevel, train_seed: int = sp.TRAIN_SEED) -> str:
    """``ppo_job_pick_overload.pt`` (training seed :data:`~benchmarks.sla_protocol.TRAIN_SEED`),
    ``ppo_job_pick_overload_seed8.pt`` (another training seed)."""
    suffix = "" if train_seed == sp.TRAIN_SEED else f"_seed{train_seed}"
    return f"ppo_{learner}_{lv.name.replace(' ', '_')}{suffix}.pt"


def column(learner: str) -> str:
    """The learner's column in the table."""
    return f"PPO {learner}"


def options(learner: str, workload_file: Path, tenants_file: Path, nb_jobs: int, run: str,
            episodes: int, start: Any = "random", seed: int = sp.TRAIN_SEED) -> dict[str, Any]:
    """The options.json of a training (``run`` "train") or test ("test") launch; ``seed``:
    the run's seed (a training's: its training seed)."""
    if learner == "policy_pair":
        env = {"observation": "small",
               "actions": {"mode": "policy_pair",
                           "selection": [{o: list(sp.ACCELERATOR_CHOICES)} for o in sp.ORDERS]}}
        params = {"rollout_steps": 1024, "epochs": 4, "minibatch": 256, "clip": 0.2,
                  "gae_lambda": 0.95, "reward_scale": 1.0, "torch_threads": 1}
        hidden: Any = 64
    else:
        env = {"observation": "job_window_sla",
               "actions": {"mode": "job_pick", "window": WINDOW, "window_order": "laxity"}}
        params = {"network": "kernel", "rollout_steps": 2048, "epochs": 4, "minibatch": 256,
                  "clip": 0.2, "gae_lambda": 0.97, "reward_scale": 1.0, "torch_threads": 1}
        hidden = None
    env.update({"objective": "sla_energy", "sla_energy_weight_per_j": sp.SLA_ENERGY_WEIGHT_PER_J})
    agent = {"type": "learning", "run": run, "episodes": episodes, "lr": 0.0003, "gamma": 1.0,
             "save_every_episodes": 1, "params": params}
    if hidden is not None:
        agent["hidden"] = hidden
    return {"seed": seed, "workload_file_path": str(workload_file),
            "platform_file_path": str(sp.PLATFORM), "nb_jobs": nb_jobs,
            "workload": {"start_index": start, "tenants": str(tenants_file)},
            "simulation": {"contention": sp.CONTENTION, "backfilling": "none"},
            "pybatsim": {"log_level": "WARNING", "env": env, "agent": agent}}


def train(learner: str, lv: sp.LoadLevel, spec: InferenceSpec, models_dir: Path, work: Path,
          quick: bool = False, scenario: str = "poisson", train_seed: int = sp.TRAIN_SEED
          ) -> Path:
    """Train one model with hdeeprm-launch (niced) on the training stream of ``train_seed``
    (also the run's seed); writes the model and, beside it, a JSON file with the command, the
    episodes and the wall time. Returns the model's path."""
    requests = sp.QUICK_TRAIN_REQUESTS if quick else sp.TRAIN_REQUESTS
    episode_jobs = sp.QUICK_EPISODE_JOBS if quick else sp.TRAIN_EPISODE_JOBS
    episodes = 2 if quick else EPISODES[learner]
    folder = work / model_name(learner, lv, train_seed)[:-3]
    wl = sp.stream(spec, lv, train_seed, requests)
    workload_file, tenants_file = sp.write_scenario(folder, sp.scaled_spec(spec, lv.factor), wl)
    opts = folder / "options.json"
    data = options(learner, Path(workload_file.name), Path(tenants_file.name), episode_jobs,
                   "train", episodes, seed=train_seed)  # the inputs beside options.json
    opts.write_text(json.dumps(data, indent=1), encoding="utf-8")
    model = models_dir / model_name(learner, lv, train_seed)
    models_dir.mkdir(parents=True, exist_ok=True)
    cmd = ["nice", "-n", "10", sys.executable, "-m", "hdrm.launcher", str(AGENTS[learner]),
           str(opts), "--outmodel", str(model), "--outdir", str(folder / "run"), "--overwrite",
           "--quiet"]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=sp.ROOT, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"training {model.name} failed: {done.stderr.strip()[-500:]}")
    meta = {"learner": learner, "scenario": scenario, "load": lv.name, "factor": lv.factor,
            "episodes": episodes,
            "episode_requests": episode_jobs, "train_seed": train_seed,
            "train_requests": requests, "wall_s": round(time.perf_counter() - start, 1),
            "command": _command(learner, model),
            "options": {**data, "platform_file_path": str(sp.PLATFORM.relative_to(sp.ROOT))}}
    model.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return model


def _command(learner: str, model: Path) -> str:
    """The training command that ran, from the repository root (``python -m hdrm.launcher`` is
    ``hdeeprm-launch``'s main; ``options.json``: the ``options`` recorded beside the model)."""
    def shown(path: Path) -> str:
        return str(path.relative_to(sp.ROOT)) if path.is_relative_to(sp.ROOT) else str(path)
    return shlex.join(["nice", "-n", "10", "python", "-m", "hdrm.launcher", shown(AGENTS[learner]),
                       "options.json", "--outmodel", shown(model)])


def evaluate(model: Path, learner: str, spec: InferenceSpec, wl: Workload, work: Path
             ) -> dict[str, float]:
    """The greedy policy of ``model`` on the whole stream ``wl``; the row figures."""
    from hdrm.agents.checkpoint import load_checkpoint
    from hdrm.launch.experiment import build_experiment
    from hdrm.options import options_from_dict

    workload_file, tenants_file = sp.write_scenario(work, spec, wl)
    data = options(learner, workload_file, tenants_file, len(wl), "test", 1, start=0)
    exp = build_experiment(options_from_dict(data, str(work / "options.json")), AGENTS[learner])
    load_checkpoint(exp.agent, model, optimizer=False)
    exp.agent.train_mode(False)
    env, agent = exp.env, exp.agent
    obs, info = env.reset(seed=0)
    agent.start_episode()
    done = False
    while not done:
        obs, reward, done, _, info = env.step(agent.decide(obs, info["action_mask"]))
        agent.rewarded(reward, done)
    agent.end_episode()
    result = env.result()
    return sp.metrics(result.workload, result.outcomes, result.energy_j,
                      env.platform.nb_cores, spec)
