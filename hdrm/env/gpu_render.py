"""Views of a GPU environment's state for :meth:`GpuSchedulingEnv.render
<hdrm.env.gpu_env.GpuSchedulingEnv.render>`.

On a GPU platform the scarce resource is the GPU share, so the views show GPUs where the CPU
views (:mod:`hdrm.env.render`) show cores:

``ansi``
    A text view: the simulated time; the tasks waiting, running and done; the milli-GPU allocated
    and the fragmentation (FGD's expected stranded milli-GPU against the workload's typical task
    types, and its share of the free milli-GPU); one line per GPU model (nodes, GPUs, free share,
    wholly free GPUs), one for the nodes without GPUs (busy milli-CPU); one character per node
    (``#`` every GPU share allocated, ``+`` some, ``.`` none; on a node without GPUs ``c`` some
    CPU busy, ``_`` none); and the head of the queue (task id, GPUs and share, allowed models,
    milli-CPU, memory, waiting time).
``rgb_array``
    The same as an image (:func:`hdrm.viz.cluster.cluster_image`): one cell per node shaded by the
    allocated fraction of its milli-GPU (of its milli-CPU on a node without GPUs); the headline,
    the queue head's GPU demand and the free share per model in the title.

Both read the decision core and the environment's cluster view only; rendering never changes
the episode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hdrm.env.render import MAP_MAX_NODES, MAP_WIDTH, QUEUE_HEAD
from hdrm.policies.gpu_state import MILLI, TaskShape

if TYPE_CHECKING:
    from hdrm.env.gpu_env import GpuSchedulingEnv

#: Colour bar label of the image view.
IMAGE_LABEL = "allocated share of the GPUs (CPU: no GPU)"


def node_allocation(env: GpuSchedulingEnv) -> np.ndarray:
    """Per node, the allocated fraction of its milli-GPU, or of its milli-CPU on a node without
    GPUs."""
    c = env.sim.core.cluster
    gpu_cap = c.nb_gpus * MILLI
    gpu_used = gpu_cap - c.gpu_left.sum(axis=1)
    cpu_used = c.cpu_cap - c.cpu_left
    return np.where(gpu_cap > 0, gpu_used / np.maximum(gpu_cap, 1),
                    cpu_used / np.maximum(c.cpu_cap, 1))


def _headline(env: GpuSchedulingEnv) -> tuple[str, str]:
    """The time and the tasks; the GPUs allocated and the fragmentation."""
    sim, view = env.sim, env.view
    total = env.sim.core.cluster.total_gpu_milli
    free = view.free_milli
    frag = view.fragmentation()
    share = f"{100.0 * frag / free:.0f}% of the free" if free else "nothing free"
    return (f"t = {sim.now:.1f} s | tasks: {len(sim.core.queue)} queued, "
            f"{sim.machine.running} running, {len(sim.outcomes)}/{len(sim.workload)} done",
            f"GPUs allocated {(total - free) / MILLI:.2f}/{total // MILLI} "
            f"({100.0 * (total - free) / max(total, 1):.0f}%) | fragmentation "
            f"{frag:.0f} milli-GPU ({share})")


def _model_lines(env: GpuSchedulingEnv) -> list[str]:
    c, view = env.sim.core.cluster, env.view
    nodes = np.bincount(c.model[c.model >= 0], minlength=len(c.model_names))
    lines = []
    for m, name in enumerate(c.model_names):
        cap, free = view.model_milli[m], view.free_by_model[m]
        lines.append(f"{name}: {_count(int(nodes[m]), 'node')}, "
                     f"{_count(int(cap) // MILLI, 'GPU')}, free "
                     f"{free / MILLI:.2f} ({100.0 * free / max(cap, 1):.0f}%), "
                     f"{view.whole_by_model[m]} wholly free")
    cpu_only = c.model < 0
    if cpu_only.any():
        busy = int((c.cpu_cap - c.cpu_left)[cpu_only].sum())
        lines.append(f"no GPU: {_count(int(cpu_only.sum()), 'node')}, milli-CPU busy "
                     f"{busy}/{int(c.cpu_cap[cpu_only].sum())}")
    return lines


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _node_char(has_gpu: bool, fraction: float) -> str:
    if fraction <= 0:
        return "." if has_gpu else "_"
    if not has_gpu:
        return "c"
    return "#" if fraction >= 1 else "+"


def _map_lines(env: GpuSchedulingEnv) -> list[str]:
    c = env.sim.core.cluster
    fractions = node_allocation(env)
    shown = min(c.nb_nodes, MAP_MAX_NODES)
    chars = "".join(_node_char(bool(g), float(f))
                    for g, f in zip(c.nb_gpus[:shown], fractions[:shown]))
    lines = [f"  {chars[i:i + MAP_WIDTH]}" for i in range(0, len(chars), MAP_WIDTH)]
    if shown < c.nb_nodes:
        lines.append(f"  ... {c.nb_nodes - shown} more nodes")
    return ["nodes (GPU shares allocated: # all, + some, . none; without GPUs: c CPU busy, "
            "_ idle):"] + lines


def demand_text(shape: TaskShape) -> str:
    """A task's demand in words: ``2 GPUs x 500 milli (T4|V100M32), 4000 milli-CPU, 8192 MiB``."""
    if shape.gpus:
        gpus = _count(shape.gpus, "GPU")
        models = f" ({'|'.join(shape.models)})" if shape.models else ""
        head = f"{gpus} x {shape.milli} milli{models}"
    else:
        head = "no GPU"
    return f"{head}, {shape.cpu_milli} milli-CPU, {shape.memory_mib} MiB"


def _queue_lines(env: GpuSchedulingEnv) -> list[str]:
    core, now = env.sim.core, env.sim.now
    if not core.queue:
        return ["queue: empty"]
    lines = [f"queue head ({min(len(core.queue), QUEUE_HEAD)} of {len(core.queue)}):"]
    for job in core.queue[:QUEUE_HEAD]:
        lines.append(f"  task {job.id}: {demand_text(core.shape(job))}, "
                     f"waiting {now - job.submit_s:.0f} s")
    return lines


def render_gpu_ansi(env: GpuSchedulingEnv) -> str:
    """The text view of the current state (see the module docstring)."""
    lines = [" | ".join(_headline(env))] + _model_lines(env) + _map_lines(env) + _queue_lines(env)
    return "\n".join(lines) + "\n"


def render_gpu_rgb(env: GpuSchedulingEnv) -> np.ndarray:
    """The image view of the current state (see the module docstring)."""
    from hdrm.viz.cluster import cluster_image  # matplotlib: only when an image is asked for

    c, view = env.sim.core.cluster, env.view
    free = ", ".join(f"{name} {100.0 * view.free_by_model[m] / max(view.model_milli[m], 1):.0f}%"
                     for m, name in enumerate(c.model_names))
    queue = env.sim.core.queue
    tasks, gpus = _headline(env)
    if queue:
        shape = env.sim.core.shape(queue[0])
        tasks += f"; queue head: task {queue[0].id} ({demand_text(shape).split(',')[0]})"
    title = "\n".join((tasks, gpus, f"free GPU share: {free}"))
    return cluster_image(node_allocation(env), title, label=IMAGE_LABEL)
