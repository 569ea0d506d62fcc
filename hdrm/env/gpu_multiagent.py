"""Two agents, one decision: job ordering and GPU placement as a PettingZoo environment.

:class:`GpuMultiAgentEnv` is a PettingZoo ``ParallelEnv`` over the GPU decision core: the same
:class:`~hdrm.sim.gpu_engine.GpuSimulation`, inputs, objectives and reward tracker as the
single-agent :class:`~hdrm.env.gpu_env.GpuSchedulingEnv` (it drives one,
:class:`~hdrm.env.gpu_multiagent_core.TwoPhaseCore`). Agents ``possible_agents == ["order",
"place"]``; one decision has two phases:

* phase ``"order"``: agent ``order`` picks a task of the window (action ``i < window``, valid
  when the task fits now on some node) or waits (action ``window``: the engine moves to its next
  decision point; valid while an event can still come);
* phase ``"place"``: agent ``place`` picks the node of the task just chosen (action = node index
  in platform order, valid where the task fits now); within the node the GPUs are chosen by the
  within-node rule of the configured ``placement`` (``fgd`` by default), and the GPU model
  follows from the node.

The agent that does not act passes 0 (its action is ignored); ``infos[agent]["active"]`` says
which one acts, and its ``action_mask`` then allows only 0. A masked action is a ``ValueError``
naming the agent and the action; ``action_space(agent).sample()`` without a mask draws among the
agent's valid actions of the current state (:class:`~hdrm.env.action_space.MaskedDiscrete`), so
that PettingZoo's tests that sample bare (``parallel_seed_test``, ``max_cycles_test``) play valid
actions. Both agents stay in ``agents`` until the episode ends; then both are terminated
(``truncations`` stay False: episodes end with the workload). One shared reward
(``rewards["order"] == rewards["place"]``): the decrease of the objective's running value, so the
episode return is minus the objective (``objective``, or a weighted sum
``objective_weights={"avg_jct": 1, "gpu_cost": 0.001}``).

Observations (dict spaces, float32 features in [0, 1], int8 masks), columns named by
``env.job_features``, ``env.cluster_features`` and ``env.node_features``
(:mod:`hdrm.env.gpu_multiagent_obs`)::

    obs["order"] = {"jobs": [W, FJ], "cluster": [FC], "action_mask": [W + 1]}
    obs["place"] = {"job": [FJ], "nodes": [N, FN], "action_mask": [N]}

``env.state()`` is the global summary for a centralised critic: the cluster vector, the chosen
task's row (zeros in the order phase) and the phase (0 order, 1 place). ``env.summary()`` gives
the episode's figures as ``hdrm replay`` computes them. Factories (the PettingZoo convention):
:func:`parallel_env` and :func:`env` (AEC, through ``pettingzoo.utils.parallel_to_aec``).
"""

from __future__ import annotations

import logging
import math
import operator
from typing import Any, Mapping

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils import parallel_to_aec

from hdrm.env.action_space import CurrentMask, MaskedDiscrete, action_index
from hdrm.env.gpu_multiagent_core import TwoPhaseCore
from hdrm.env.gpu_multiagent_obs import JOB_FEATURES, NODE_FEATURES, ClusterFeatures, node_features
from hdrm.env.gpu_multiagent_summary import episode_summary
from hdrm.env.render import RENDER_MODES
from hdrm.errors import ConfigError
from hdrm.options import Options

logger = logging.getLogger(__name__)

ORDER, PLACE = "order", "place"
#: The ``fits`` column of the node rows: the placing agent's mask.
_FITS = NODE_FEATURES.index("fits")


def _box(shape: tuple[int, ...]) -> spaces.Box:
    return spaces.Box(0.0, 1.0, shape=shape, dtype=np.float32)


def _mask_space(n: int) -> spaces.Box:
    return spaces.Box(0, 1, shape=(n,), dtype=np.int8)


class GpuMultiAgentEnv(ParallelEnv):
    """Job ordering and GPU placement as two cooperating agents (see the module docstring).

    Args:
        options: parsed options.json (:class:`hdrm.options.Options`), or None.
        render_mode: None, ``"ansi"`` or ``"rgb_array"`` (the GPU views of
            :mod:`hdrm.env.gpu_render`).
        objective_weights: minimise this weighted sum of objectives instead of ``objective``.
        load_factor: divide every episode's submission times by this (more load above 1);
            ``reset(options={"load_factor": ...})`` overrides it for one episode.
        fgd_features: add the node column ``fgd_score`` (FGD's score of the node for the chosen
            task, :mod:`hdrm.env.gpu_multiagent_obs`); off by default.
        fitting_first: the ordering agent's window shows the queued tasks that fit now first
            (:class:`~hdrm.env.gpu_multiagent_core.TwoPhaseCore`); off by default (the first
            ``window`` queued tasks in submission order).
        node_rank: add the node column ``rank`` (the node's position in platform order,
            :mod:`hdrm.env.gpu_multiagent_obs`); off by default.
        max_cycles: end each episode after this many steps (cycles: one agent acts in each),
            truncating it (``truncations`` true for both agents), PettingZoo's convention;
            None (the default): an episode runs until every task has ended.
        **settings: :class:`~hdrm.env.config.EnvConfig` fields (``workload_file``,
            ``platform_file``, ``throughputs``, ``window``, ``objective``, ``placement`` (the
            within-node GPU choice of the placing agent's node), ``backfilling``, ``nb_jobs``,
            ``start_index``, ``seed`` ...); ``mode``, ``decision``, ``engine`` and
            ``observation`` are fixed (``job_pick``, ``event``,
            ``builtin``, ``gpu_job_window``: :data:`~hdrm.env.gpu_multiagent_core.FIXED`).

    Raises:
        ConfigError: a bad setting, or inputs that are not a GPU workload and platform.
    """

    metadata = {"name": "hdrm_gpu_v0", "render_modes": list(RENDER_MODES), "render_fps": 4,
                "is_parallelizable": True}
    possible_agents = [ORDER, PLACE]

    def __init__(self, options: Options | None = None, render_mode: str | None = None,
                 objective_weights: Mapping[str, float] | None = None,
                 load_factor: float = 1.0, fgd_features: bool = False,
                 fitting_first: bool = False, node_rank: bool = False,
                 max_cycles: int | None = None, **settings: Any) -> None:
        if isinstance(load_factor, bool) or not isinstance(load_factor, (int, float)) \
                or not math.isfinite(load_factor) or load_factor <= 0:
            raise ConfigError(f"load_factor: expected a finite number > 0 (2 doubles the "
                              f"arrival rate), got {load_factor!r}")
        if max_cycles is not None and (not isinstance(max_cycles, (int, np.integer))
                                       or isinstance(max_cycles, bool) or max_cycles < 1):
            raise ConfigError(f"max_cycles: expected a whole number of steps >= 1 (or None: no "
                              f"limit), got {max_cycles!r}")
        self.max_cycles = None if max_cycles is None else int(max_cycles)
        self._cycles = 0
        self.core = TwoPhaseCore(options, objective_weights, render_mode, fitting_first,
                                 **settings)
        self.render_mode = render_mode
        self.load_factor = load_factor
        self.fgd_features = fgd_features
        self.node_rank = node_rank
        self.window = self.core.config.window
        self.nb_nodes = self.core.sim.core.cluster.nb_nodes
        self.job_features = JOB_FEATURES
        self.node_features = node_features(self.core, fgd_features, node_rank).names
        self._cluster = ClusterFeatures(self.core)
        self.cluster_features = self._cluster.names
        fj, fc, fn = len(JOB_FEATURES), len(self.cluster_features), len(self.node_features)
        self.observation_spaces = {
            ORDER: spaces.Dict({"jobs": _box((self.window, fj)), "cluster": _box((fc,)),
                                "action_mask": _mask_space(self.window + 1)}),
            PLACE: spaces.Dict({"job": _box((fj,)), "nodes": _box((self.nb_nodes, fn)),
                                "action_mask": _mask_space(self.nb_nodes)}),
        }
        self._current = {ORDER: CurrentMask(), PLACE: CurrentMask()}
        self.action_spaces = {
            ORDER: MaskedDiscrete(self.window + 1, current=self._current[ORDER]),
            PLACE: MaskedDiscrete(self.nb_nodes, current=self._current[PLACE])}
        self.state_space = _box((fc + fj + 1,))
        self.agents: list[str] = []
        self.phase = ORDER
        self.heuristic_cache: dict[str, Any] = {}
        self._only_zero = {ORDER: _only_zero(self.window + 1), PLACE: _only_zero(self.nb_nodes)}
        self._idle_place = {"job": np.zeros(fj, dtype=np.float32),
                            "nodes": np.zeros((self.nb_nodes, fn), dtype=np.float32)}
        self._idle_place["nodes"].flags.writeable = False
        self._job_row = self._idle_place["job"]
        self._order_obs: dict[str, np.ndarray] | None = None
        self._nodes = None

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Dict:
        """The agent's observation space (the same object at every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> MaskedDiscrete:
        """The agent's action space (the same object at every call): its ``sample()`` without a
        mask draws among the agent's valid actions of the current state (its last observation's
        ``action_mask``), so that PettingZoo's tests which sample bare play valid actions."""
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ PettingZoo API
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode; ``options`` may hold ``start_index`` and ``load_factor``."""
        options = dict(options or {})
        options.setdefault("load_factor", self.load_factor)
        self.core.start(seed, options)
        self.agents = list(self.possible_agents)
        self.heuristic_cache = {}
        self._cluster.reset()
        self._nodes = node_features(self.core, self.fgd_features, self.node_rank)
        self.phase = ORDER
        self._job_row = self._idle_place["job"]
        self._order_obs = None
        self._cycles = 0
        if self.core.done:  # nothing to decide (every task rejected, or none)
            self.agents = []
        return self._observations(), self._infos()

    def step(self, actions: dict[str, Any]):
        """Apply the acting agent's action; returns (observations, rewards, terminations,
        truncations, infos), each keyed by agent."""
        if not self.agents:
            raise RuntimeError("step() called after the episode ended; call reset()")
        actor = self.phase
        if actor not in actions:
            raise ValueError(f"step: no action for agent {actor!r}, whose phase it is "
                             f"(give every agent an action; the other one passes 0)")
        try:
            action = operator.index(actions[actor])  # int, numpy integer, 0-d integer array
        except TypeError:
            action = action_index(actions[actor], self.action_spaces[actor].n)
        if not 0 <= action < self.action_spaces[actor].n:
            raise ValueError(f"{actor}: action {action} outside "
                             f"Discrete({self.action_spaces[actor].n})")
        reward = self._order_step(action) if actor == ORDER else self._place_step(action)
        done = self.core.done
        self._cycles += 1
        cut = not done and self.max_cycles is not None and self._cycles >= self.max_cycles
        agents = list(self.agents)
        observations, infos = self._observations(), self._infos()
        rewards = {a: reward for a in agents}
        terminations = {a: done for a in agents}
        truncations = {a: cut for a in agents}
        if done or cut:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """The global state for a centralised critic (``state_space``)."""
        cluster = self._order_view()["cluster"]
        phase = np.array([1.0 if self.phase == PLACE else 0.0], dtype=np.float32)
        return np.concatenate([cluster, self._job_row, phase]).astype(np.float32)

    def render(self) -> str | np.ndarray | None:
        """The GPU view of the current state (``render_mode`` ``"ansi"`` or ``"rgb_array"``)."""
        return self.core.render()

    def close(self) -> None:
        self.core.close()

    def summary(self) -> dict[str, float]:
        """The episode's figures (:func:`~hdrm.env.gpu_multiagent_summary.episode_summary`)."""
        return episode_summary(self.core.result())

    # ------------------------------------------------------------------ phases
    def _order_step(self, action: int) -> float:
        core = self.core
        if action == self.window:
            if not core.order_mask()[action]:
                raise ValueError(f"order: action {action} (wait) is masked: no event is left "
                                 "to wait for; pick a task that fits")
            reward = core.wait()
            self._order_obs = None
            return reward
        core.choose(action)
        self._job_row = self._order_view()["jobs"][action].copy()
        self.phase = PLACE
        return core.no_choice()

    def _place_step(self, action: int) -> float:
        reward = self.core.place(action)
        self.phase = ORDER
        self._job_row = self._idle_place["job"]
        self._order_obs = None
        return reward

    # ------------------------------------------------------------------ observations
    def _order_view(self) -> dict[str, np.ndarray]:
        """The order agent's features at the current decision (built once per state)."""
        if self._order_obs is None:
            core = self.core
            jobs = core.observer.build()
            jobs[len(core.window_jobs()):] = 0.0  # padding rows: all 0 (the cluster column too)
            self._order_obs = {"jobs": jobs, "cluster": self._cluster.build(),
                               "action_mask": core.order_mask().astype(np.int8)}
        return self._order_obs

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        observations = self._build_observations()
        for agent, current in self._current.items():
            current.mask = observations[agent]["action_mask"]
        return observations

    def _build_observations(self) -> dict[str, dict[str, np.ndarray]]:
        view = self._order_view()
        if self.core.done or self.phase == ORDER:
            order = view
            if self.core.done:
                order = dict(view, action_mask=self._only_zero[ORDER])
            place = dict(self._idle_place, action_mask=self._only_zero[PLACE])
            return {ORDER: order, PLACE: place}
        shape = self.core.sim.core.shape(self.core.chosen)
        nodes = self._nodes.for_task(shape)
        place = {"job": self._job_row, "nodes": nodes,
                 "action_mask": nodes[:, _FITS].astype(np.int8)}
        order = dict(view, action_mask=self._only_zero[ORDER])
        return {ORDER: order, PLACE: place}

    def _infos(self) -> dict[str, dict[str, Any]]:
        sim = self.core.sim
        common = {"phase": self.phase, "time": sim.now, "queue_size": len(sim.core.queue),
                  "jobs_done": len(sim.outcomes), "objective": self.core.objective_value}
        done = self.core.done
        return {a: dict(common, active=not done and a == self.phase) for a in self.agents}


def _only_zero(n: int) -> np.ndarray:
    mask = np.zeros(n, dtype=np.int8)
    mask[0] = 1
    mask.flags.writeable = False
    return mask


def parallel_env(**kwargs: Any) -> GpuMultiAgentEnv:
    """The PettingZoo ``ParallelEnv`` (:class:`GpuMultiAgentEnv` with these settings)."""
    return GpuMultiAgentEnv(**kwargs)


def env(**kwargs: Any):
    """The PettingZoo AEC environment: :func:`parallel_env` through ``parallel_to_aec``, which
    adds PettingZoo's order-enforcing wrapper (once: wrapped twice, ``aec_to_parallel`` could
    not give the parallel environment back and wrapped it in a conversion instead)."""
    return parallel_to_aec(parallel_env(**kwargs))
