"""Throughput of hdrm's learners on each device: network updates, decisions, end-to-end PPO.

Two tables, printed with the names of the devices (issue 28):

* ``networks``: hdrm's own networks (:mod:`hdrm.agents.networks`) on random job windows of K rows
  x 10 features, through the PPO learner's own code: update samples/s of one PPO step (forward,
  clipped loss, backward, Adam) on a fixed batch, in fp32 and with ``precision: bf16``; decisions/s
  of one observation (``decide``) and of 16 environments at once (``decide_batch``, per decision).
* ``ppo``: end-to-end PPO training on the ``job_pick`` environment (window of 128 jobs, 128
  processors, 256-job episodes of the SDSC-SP2 slice in ``workloads/``): environment steps per
  second including updates, for each device split (rollouts/updates on cpu/cpu, cpu/GPU as
  ``auto`` picks, GPU/GPU), with one environment (the launcher's loop) and with ``--num-envs``
  environments stepped together (:func:`hdrm.agents.vector.run_vector`).

Without a GPU, the GPU cells say ``absent``. Usage::

    python benchmarks/bench_devices.py [--parts networks,ppo] [--networks kernel,att32,att128,att256]
        [--ppo-networks kernel,att32,att128] [--seconds 2] [--ppo-steps 4096] [--num-envs 8]
        [--threads N] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.agents.buffers import RolloutBatch  # noqa: E402
from hdrm.agents.ppo import PPOAgent  # noqa: E402
from hdrm.agents.vector import run_vector  # noqa: E402
from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

FEATURES = 10
BATCH_ENVS = 16
WORKLOAD = ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"


class Net(NamedTuple):
    """A network of the table: its options block and the window and batch it is timed on."""

    label: str
    network: str
    hidden: tuple[int, ...]
    layers: int
    window: int
    batch: int


NETS = {
    "kernel": Net("kernel (32,16,8)", "kernel", (32, 16, 8), 1, 128, 2048),
    "att32": Net("attention width 32, 1 layer", "attention", (32, 32), 1, 128, 2048),
    "att128": Net("attention width 128, 4 layers", "attention", (128, 128), 4, 256, 256),
    "att256": Net("attention width 256, 6 layers", "attention", (256, 256), 6, 512, 256),
}
#: End-to-end PPO: the same networks on the environment's window of 128 jobs.
PPO_WINDOW = 128


def gpu() -> str | None:
    """``cuda:0`` when torch sees a GPU, else None."""
    return "cuda:0" if torch.cuda.is_available() else None


def device_names() -> dict[str, str]:
    """What each device is: the CPU model and torch's threads, the GPU's name."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    names = {"cpu": f"{cpu}, {os.cpu_count()} cores, torch threads: {torch.get_num_threads()}"}
    if gpu():
        names["cuda:0"] = torch.cuda.get_device_name(0)
    return names


def sync(device: str) -> None:
    """Wait for the device's queued work (GPU timings)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def rate(work: Callable[[], Any], device: str, seconds: float, warmup: int = 2) -> float:
    """Calls of ``work`` per second: after ``warmup`` calls, as many as fit in ``seconds`` (>= 1)."""
    for _ in range(warmup):
        work()
    sync(device)
    calls, t0 = 0, time.perf_counter()
    while True:
        work()
        calls += 1
        sync(device)
        if time.perf_counter() - t0 >= seconds:
            return calls / (time.perf_counter() - t0)


def learner(net: Net, window: int, features: int, device: str, num_envs: int = 1,
            precision: str = "fp32", **params: Any) -> PPOAgent:
    """A PPO learner with ``net`` whose rollouts and updates both run on ``device``."""
    config = {"run": "train", "hidden": list(net.hidden),
              "params": {"network": net.network, "layers": net.layers, "num_envs": num_envs,
                         "rollout_device": device, "update_device": device,
                         "precision": precision, **params}}
    obs_space = spaces.Box(0.0, 1.0, (window, features), np.float32)
    return PPOAgent(config, obs_space, spaces.Discrete(window + 1), seed=0)


def windows(n: int, window: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` random job windows (real rows first, the real-job flag in column -2) and masks."""
    obs = torch.rand(n, window, FEATURES, generator=generator)
    real = torch.arange(window)[None, :] < torch.randint(1, window + 1, (n, 1), generator=generator)
    obs[..., -2] = real.float()
    masks = torch.cat([real, torch.ones(n, 1, dtype=torch.bool)], dim=1)
    return obs, masks


def network_row(key: str, seconds: float) -> dict[str, Any]:
    """Update samples/s and decisions/s of one network on the CPU and (when present) the GPU."""
    net = NETS[key]
    g = torch.Generator().manual_seed(0)
    obs, masks = windows(net.batch, net.window, g)
    actions = torch.multinomial(masks.float(), 1, generator=g)[:, 0]
    fill = [torch.randn(net.batch, generator=g) for _ in range(4)]
    row: dict[str, Any] = {"network": f"{net.label}, K={net.window}, batch {net.batch}"}
    for name, device in (("cpu", "cpu"), ("gpu", gpu())):
        if device is None:
            row.update({f"{col}_{name}": "absent" for col in ("update", "update_bf16",
                                                               "decisions", "decisions_batched")})
            continue
        batch = RolloutBatch(*(t.to(device) for t in (obs, masks, actions, *fill)))
        for column, precision in (("update", "fp32"), ("update_bf16", "bf16")):
            agent = learner(net, net.window, FEATURES, device, precision=precision)
            step = lambda: agent.optimise(agent._minibatch_loss(batch)[0])  # noqa: E731
            row[f"{column}_{name}"] = round(rate(step, device, seconds, warmup=1) * net.batch)
        agent = learner(net, net.window, FEATURES, device).train_mode(False)
        one, mask = obs[0].numpy(), masks[0].numpy()
        row[f"decisions_{name}"] = round(rate(lambda: agent.decide(one, mask), device, seconds))
        many = learner(net, net.window, FEATURES, device, num_envs=BATCH_ENVS).train_mode(False)
        some, some_masks = obs[:BATCH_ENVS].numpy(), masks[:BATCH_ENVS].numpy()
        calls = rate(lambda: many.decide_batch(some, some_masks), device, seconds)
        row[f"decisions_batched_{name}"] = round(calls * BATCH_ENVS)
    return row


def make_env() -> SchedulingEnv:
    """The end-to-end environment (``job_pick`` on 128 processors, window 128)."""
    return SchedulingEnv(workload_file=str(WORKLOAD), nb_jobs=256, start_index="random", seed=0,
                         platform_file=None, homogeneous_procs=128, conventions="rlscheduler",
                         mode="job_pick", window=PPO_WINDOW, contention="none")


def single_env_steps(agent: PPOAgent, env: SchedulingEnv, steps: int) -> None:
    """The launcher's loop for ``steps`` environment steps."""
    done_steps, episode = 0, 0
    while done_steps < steps:
        obs, info = env.reset(seed=episode)
        agent.start_episode()
        done = False
        while not done and done_steps < steps:
            action = agent.decide(obs, info["action_mask"])
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            agent.rewarded(reward, done)
            done_steps += 1
        agent.end_episode()
        episode += 1


SPLITS = (("cpu", "cpu"), ("cpu", "gpu"), ("gpu", "gpu"))


def ppo_rows(key: str, steps: int, num_envs: int, rollout_steps: int) -> list[dict[str, Any]]:
    """End-to-end PPO on each device split, with 1 and ``num_envs`` environments."""
    net, rows = NETS[key], []
    features = make_env().observation_space.shape[1]
    for envs in sorted({1, num_envs}):
        base = None
        for rollout, update in SPLITS:
            devices = {"cpu": "cpu", "gpu": gpu()}
            row = {"network": f"{net.label}, K={PPO_WINDOW}", "envs": envs,
                   "rollout": devices[rollout] or "absent", "update": devices[update] or "absent"}
            rows.append(row)
            if None in (devices[rollout], devices[update]):
                row.update(env_steps_per_s="absent", updates="", wall_s="", vs_cpu="")
                continue
            config = {"run": "train", "hidden": list(net.hidden), "params": {
                "network": net.network, "layers": net.layers, "num_envs": envs,
                "rollout_steps": rollout_steps, "rollout_device": devices[rollout],
                "update_device": devices[update]}}
            env = make_env()
            agent = PPOAgent(config, env.observation_space, env.action_space, seed=0)
            assert agent.network_name == net.network and features == env.observation_space.shape[1]
            # one step more than the rollouts: a rollout's update runs at the next decision
            made = steps + envs
            t0 = time.perf_counter()
            if envs == 1:
                single_env_steps(agent, env, made)
            else:
                vec = SyncVectorEnv([make_env] * envs, autoreset_mode=AutoresetMode.SAME_STEP)
                run_vector(agent, vec, made, seed=0)
                vec.close()
            sync(devices[update])
            wall = time.perf_counter() - t0
            speed = made / wall
            base = base or speed
            row.update(env_steps_per_s=round(speed), updates=agent.updates, wall_s=round(wall, 1),
                       vs_cpu=f"{speed / base:.2f}x")
    return rows


NET_COLUMNS = ("network", "update_cpu", "update_gpu", "update_bf16_cpu", "update_bf16_gpu",
               "decisions_cpu", "decisions_gpu", "decisions_batched_cpu", "decisions_batched_gpu")
PPO_COLUMNS = ("network", "envs", "rollout", "update", "env_steps_per_s", "updates", "wall_s",
               "vs_cpu")


def table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    """``rows`` as a Markdown table (numbers with thousands separators)."""
    def cell(value: Any) -> str:
        return f"{value:,}" if isinstance(value, int) else str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the parts asked for and print their tables."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="networks,ppo", help="networks, ppo or both")
    p.add_argument("--networks", default=",".join(NETS), help=f"among {', '.join(NETS)}")
    p.add_argument("--ppo-networks", default="kernel,att32,att128", help="networks trained end to end")
    p.add_argument("--seconds", type=float, default=2.0, help="time per networks cell (default 2)")
    p.add_argument("--ppo-steps", type=cli.count(1), default=4096,
                   help="env steps per PPO run (default 4096)")
    p.add_argument("--rollout-steps", type=cli.count(1), default=2048,
                   help="PPO rollout (default 2048)")
    p.add_argument("--num-envs", type=cli.count(1), default=8,
                   help="environments of the vectorised runs")
    p.add_argument("--threads", type=cli.count(0), default=0,
                   help="torch CPU threads (0: torch's default)")
    p.add_argument("--json", help="also write the figures to this file")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    parts = a.parts.split(",")
    for keys in (a.networks, a.ppo_networks):
        unknown = [k for k in keys.split(",") if k not in NETS]
        if unknown:
            p.error(f"unknown network {unknown[0]!r}; choose among {', '.join(NETS)}")
    names = device_names()
    print("devices: " + "; ".join(f"{k} = {v}" for k, v in names.items())
          + ("" if gpu() else "; GPU absent (torch sees no CUDA device)"))
    print(f"torch {torch.__version__}")
    out: dict[str, Any] = {"devices": names, "torch": torch.__version__,
                           "settings": {k: v for k, v in vars(a).items() if k != "json"}}

    def save() -> None:
        """Write what is measured so far: a run stopped at a time limit keeps its finished rows."""
        if a.json:
            Path(a.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")

    if "networks" in parts:
        out["networks"] = []
        for k in a.networks.split(","):
            out["networks"].append(network_row(k, a.seconds))
            save()
        print("\nNetworks: update samples/s (one PPO step, fp32 and bf16) and decisions/s "
              f"(one observation; {BATCH_ENVS} environments at once)\n")
        print(table(out["networks"], NET_COLUMNS), flush=True)
    if "ppo" in parts:
        out["ppo"] = []
        for k in a.ppo_networks.split(","):
            out["ppo"] += ppo_rows(k, a.ppo_steps, a.num_envs, a.rollout_steps)
            save()
        print(f"\nEnd-to-end PPO: env steps/s including updates ({a.ppo_steps} steps, rollouts of "
              f"{a.rollout_steps})\n")
        print(table(out["ppo"], PPO_COLUMNS), flush=True)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
