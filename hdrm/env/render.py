"""Views of the environment's state for :meth:`SchedulingEnv.render`.

``ansi``
    A text view: the simulated time, the jobs waiting, running and done, the busy cores of each
    cluster, one character per node (``#`` all cores busy, ``+`` some, ``.`` none) and the head
    of the queue (job id, cores, requested time, waiting time).
``rgb_array``
    The same as an image (an ``(height, width, 3)`` uint8 array drawn with matplotlib by
    :mod:`hdrm.viz.cluster`): one cell per node shaded by its busy fraction, the figures of the
    text view in the title.

Both read the decision core only; rendering never changes the episode. On a GPU platform the
environment draws the GPU views of :mod:`hdrm.env.gpu_render` instead.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hdrm.env.scheduling_env import SchedulingEnv

#: The render modes of :class:`~hdrm.env.scheduling_env.SchedulingEnv`.
RENDER_MODES = ("ansi", "rgb_array")
#: Nodes per line of the text node map, and nodes shown at most.
MAP_WIDTH, MAP_MAX_NODES = 64, 4096
#: Queued jobs listed by the text view.
QUEUE_HEAD = 5


def node_busy(env: SchedulingEnv) -> tuple[np.ndarray, np.ndarray]:
    """Busy and total cores of every node, in node order."""
    platform = env.platform
    total = np.fromiter((len(n.core_ids) for n in platform.nodes), dtype=np.int64,
                        count=len(platform.nodes))
    core_node = np.asarray(platform.core_node, dtype=np.int64)
    busy_core = np.asarray(env.sim.core.state.core_job) >= 0
    busy = np.bincount(core_node[busy_core], minlength=len(total))
    return busy, total


def _node_char(busy: int, total: int) -> str:
    if busy == 0:
        return "."
    return "#" if busy >= total else "+"


def _headline(env: SchedulingEnv, busy: np.ndarray, total: np.ndarray) -> str:
    sim = env.sim
    queued = len(sim.core.queue)
    running = sim.machine.running
    cores = int(total.sum())
    used = int(busy.sum())
    return (f"t = {sim.now:.1f} s | jobs: {queued} queued, {running} running, "
            f"{len(sim.outcomes)}/{len(sim.workload)} done | cores busy {used}/{cores} "
            f"({100.0 * used / max(cores, 1):.0f}%)")


def _cluster_lines(env: SchedulingEnv, busy: np.ndarray, total: np.ndarray) -> list[str]:
    lines = []
    for cluster in env.platform.clusters:
        ids = list(cluster.node_ids)
        lines.append(f"cluster {cluster.name}: {len(ids)} nodes, cores busy "
                     f"{int(busy[ids].sum())}/{int(total[ids].sum())}")
    return lines


def _map_lines(busy: np.ndarray, total: np.ndarray) -> list[str]:
    shown = min(len(total), MAP_MAX_NODES)
    chars = "".join(_node_char(int(b), int(t)) for b, t in zip(busy[:shown], total[:shown]))
    lines = [f"  {chars[i:i + MAP_WIDTH]}" for i in range(0, len(chars), MAP_WIDTH)]
    if shown < len(total):
        lines.append(f"  ... {len(total) - shown} more nodes")
    return ["nodes (# all cores busy, + some, . none):"] + lines


def _queue_lines(env: SchedulingEnv) -> list[str]:
    sim = env.sim
    queue = sim.core.queue
    if not queue:
        return ["queue: empty"]
    lines = [f"queue head ({min(len(queue), QUEUE_HEAD)} of {len(queue)}):"]
    for job in queue[:QUEUE_HEAD]:
        walltime = f"{job.walltime_s:.0f} s" if math.isfinite(job.walltime_s) else "none"
        lines.append(f"  job {job.id}: {_cores(job.res)}, requested {walltime}, "
                     f"waiting {sim.now - job.submit_s:.0f} s")
    return lines


def _cores(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"


def render_ansi(env: SchedulingEnv) -> str:
    """The text view of the current state (see the module docstring)."""
    busy, total = node_busy(env)
    lines = [_headline(env, busy, total)]
    lines += _cluster_lines(env, busy, total)
    lines += _map_lines(busy, total)
    lines += _queue_lines(env)
    return "\n".join(lines) + "\n"


def render_rgb(env: SchedulingEnv) -> np.ndarray:
    """The image view of the current state (see the module docstring)."""
    from hdrm.viz.cluster import cluster_image  # matplotlib: only when an image is asked for

    busy, total = node_busy(env)
    head = env.sim.core.queue[:1]
    queue_head = f"; queue head: job {head[0].id} ({_cores(head[0].res)})" if head else ""
    return cluster_image(busy / np.maximum(total, 1), _headline(env, busy, total) + queue_head)
