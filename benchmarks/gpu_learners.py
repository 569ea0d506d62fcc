"""The learned models of the GPU comparison: how they are found, named and evaluated.

A model is a checkpoint under ``models/gpu/`` whose options carry ``"learner"``, ``"agent"``
(the agent's settings), ``"setting"`` (the workload key it was trained on, its ``role`` and the
environment's ``window``) and ``"training"`` (budget, command, figures). Its role names its column:

* ``mappo``: two agents (order and place) learned together, centralised critic;
* ``factored``: one PPO policy over the joint action (the single-agent ablation);
* ``learned_order``: a learned order agent with the best heuristic placement (frozen ``place``);
* ``learned_place``: the best heuristic order with a learned place agent (frozen ``order``).

A model is evaluated greedily through the multi-agent environment
(:class:`hdrm.env.gpu_multiagent.GpuMultiAgentEnv`) on the test windows of the workload it was
trained on, under the same load factor and window size (:func:`applies`), episodes played by
:func:`hdrm.agents.mappo_rollout.play_episode`; a frozen agent's phases are played by the
heuristic drivers of :mod:`hdrm.env.gpu_multiagent_heuristics`. Torch and the environment are
imported only here, and only when a model is evaluated.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from benchmarks.gpu_protocol import GpuScore, Setting, score_result
from benchmarks.model_files import ModelFile, read_models

logger = logging.getLogger(__name__)

#: Column names of the roles.
ROLE_COLUMNS = {"mappo": "MAPPO", "factored": "PPO factored (single agent)",
                "learned_order": "learned order + {place}",
                "learned_place": "{order} + learned place"}
#: The fields of the environment's ``summary()`` a score takes.
SUMMARY_FIELDS = ("avg_jct", "p95_jct", "max_wait", "makespan", "gpu_allocation_rate", "gpu_cost")


class GpuModel(ModelFile):
    """A model file of the GPU comparison and what its metadata says."""

    @property
    def workload(self) -> str:
        """The key of the workload it was trained on."""
        return str(self.setting["workload"])


def applies(model: GpuModel, setting: Setting) -> bool:
    """Whether ``model`` was trained for ``setting``: same workload, load factor and window
    size (a model trained on another load or by a ``--quick`` run gets no column, with a note
    on stderr)."""
    trained = model.meta["setting"]
    if model.workload != setting.key:
        return False
    same = (float(trained.get("load_factor", -1)) == setting.load_factor
            and int(trained.get("window_tasks", -1)) == setting.window_tasks)
    if not same:
        print(f"note: {model.path} was trained on {setting.key} at load x"
              f"{trained.get('load_factor')} with windows of {trained.get('window_tasks')} "
              f"tasks, not x{setting.load_factor:g} and {setting.window_tasks}; no column",
              file=sys.stderr)
    return same


def model_column(meta: dict[str, Any]) -> str:
    """A model's column from its role (``learned order + fgd``, ``sjf + learned place``), and
    its warm start when it had one (``MAPPO, warm start sjf-first_fit``), and its view when it is
    not the first one (``, fitting-first window, first_fit in node``: :func:`view_of`)."""
    setting = meta["setting"]
    role = setting.get("role", "mappo")
    params = meta.get("agent", {}).get("params", {})
    template = ROLE_COLUMNS.get(role, role)
    column = template.format(place=params.get("freeze_place", "?"),
                             order=params.get("freeze_order", "?"))
    imitate = setting.get("imitate")
    column = f"{column}, warm start {imitate}" if imitate else column
    view = view_of(setting)
    if view == OLD_VIEW:
        return column
    window = "fitting-first window" if view["fitting_first"] else "submission window"
    rank = ", node rank" if view["node_rank"] else ""
    return f"{column}, {window}, {view['placement']} in node{rank}"


#: The view of the models trained before the view was a setting: the first ``window`` queued
#: tasks in submission order, and GPUs chosen within the placing agent's node by FGD's rule
#: (the environment's default placement).
OLD_VIEW = {"fitting_first": False, "placement": "fgd", "node_rank": False}


def view_of(setting: dict[str, Any]) -> dict[str, Any]:
    """The environment view a model was trained with (:data:`OLD_VIEW` where its setting does
    not say): ``fitting_first`` (the order agent's window shows the tasks that fit now first)
    ``placement`` (whose rule picks the GPUs within the node the place agent chose) and
    ``node_rank`` (the place agent sees each node's position in platform order)."""
    return {key: setting.get(key, value) for key, value in OLD_VIEW.items()}


def learner_class(name: str, where: str) -> type:
    """The agent class of a learner name: ``mappo`` is :class:`hdrm.agents.mappo.MAPPOAgent`
    (an agent.py learner, not in the registry), any other a registered agent.

    Raises:
        ConfigError: an unknown name (the registry's message).
    """
    if name == "mappo":
        from hdrm.agents.mappo import MAPPOAgent

        return MAPPOAgent
    from hdrm.agents import get_agent_class

    return get_agent_class(name, where)


def discover_models(models_dir: str | Path) -> list[GpuModel]:
    """The GPU models in ``models_dir`` (``*.pt`` with GPU comparison metadata).

    Files whose learner is not registered, or without the metadata, are left out with a note on
    stderr; an absent folder holds no model.
    """
    return [GpuModel(path, model_column(meta), meta) for path, meta in read_models(
        models_dir, "GPU comparison", lambda meta: "workload" in meta.get("setting", {}),
        learner_class)]


def make_env(setting: Setting, window: int, seed: int, start: int | tuple[int, ...],
             pick: str = "env", view: dict[str, Any] | None = None) -> Any:
    """The multi-agent environment on ``setting``'s files: episodes of the window from
    ``start`` (a tuple: episodes cycle through them), loaded by the setting's factor; ``pick``
    ``fitting``: seen through :class:`WorkConserving`, ``env``: as it is; ``view``: the
    window's order and the within-node GPU rule (:func:`view_of`; :data:`OLD_VIEW` when None).

    With ``fitting`` the environment's backfilling is ``greedy``, so that a heuristic order
    driving a frozen order agent (or teaching one) is work-conserving too: after a task that
    fits nowhere it goes on to the next one that fits, as the greedy pairs do (the
    environment's backfilling setting is read only by the heuristic drivers); with ``env`` it is
    ``none``.
    """
    from hdrm.env.gpu_multiagent import GpuMultiAgentEnv

    env = GpuMultiAgentEnv(workload_file=setting.trace, platform_file=setting.platform,
                            throughputs=setting.throughputs, nb_jobs=setting.window_tasks,
                            window=window, objective="avg_jct", seed=seed,
                            start_index=start if isinstance(start, tuple) else int(start),
                            load_factor=setting.load_factor,
                            backfilling="greedy" if pick == "fitting" else "none",
                            **(view or OLD_VIEW))
    return WorkConserving(env) if pick == "fitting" else env


class WorkConserving:
    """The multi-agent environment as a work-conserving learner sees it: while a queued task of
    the window fits now, the order agent's wait action is masked (as ``benchmarks/compare.py``'s
    ``pick fitting`` does for job-pick learners). Everything else is the environment's."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        """The environment's reset, the order mask made work-conserving."""
        observations, infos = self.env.reset(*args, **kwargs)
        return self._conserving(observations), infos

    def step(self, actions: dict[str, int]) -> tuple:
        """The environment's step, the order mask made work-conserving."""
        observations, *rest = self.env.step(actions)
        return (self._conserving(observations), *rest)

    @staticmethod
    def _conserving(observations: dict[str, Any]) -> dict[str, Any]:
        mask = observations["order"]["action_mask"]
        if not (mask[-1] and mask[:-1].any()):
            return observations
        mask = mask.copy()
        mask[-1] = 0
        return {**observations, "order": {**observations["order"], "action_mask": mask}}


def drivers(frozen: dict[str, str]) -> dict[str, Any]:
    """The heuristic drivers of the agents a model froze (``{"place": "fgd"}``)."""
    from hdrm.env.gpu_multiagent_heuristics import heuristic_order_action, heuristic_place_action

    act = {"order": heuristic_order_action, "place": heuristic_place_action}
    return {agent: (lambda env, a=agent, n=name: act[a](env, n)) for agent, name in frozen.items()}


def play_pair(env: Any, order: str, place: str, seed: int) -> GpuScore:
    """One episode of ``env`` with both agents played by heuristic drivers (queue order
    ``order``, placement ``place``); the finished episode's score."""
    from hdrm.agents.mappo_rollout import acting_agent

    drive = drivers({"order": order, "place": place})
    _, infos = env.reset(seed=seed)
    while env.agents:
        active = acting_agent(infos)
        action = drive[active](env)
        _, _, _, _, infos = env.step({a: action if a == active else 0 for a in env.agents})
    return episode_score(env)


def load_agent(path: str, env: Any, seed: int) -> Any:
    """The model's agent, built for ``env``'s spaces, weights loaded, greedy."""
    import torch

    from hdrm.agents.checkpoint import load_checkpoint, read_checkpoint
    from hdrm.agents.mappo_rollout import agent_spaces

    torch.set_num_threads(1)
    meta = read_checkpoint(path)["options"]
    cls = learner_class(meta["learner"], f"{path}: learner")
    observation, action = agent_spaces(env)
    agent = cls(dict(meta["agent"], run="test"), observation, action, seed=seed)
    load_checkpoint(agent, path, optimizer=False)
    agent.train_mode(False)
    return agent


def episode_score(env: Any) -> GpuScore:
    """The finished episode's score: the environment's ``summary()`` (the figures ``hdrm
    replay`` computes), with the mean wait and run time from its run's job rows."""
    summary = env.summary()
    extra = score_result(env.core.result())
    values = {field: float(summary[field]) for field in SUMMARY_FIELDS}
    return GpuScore(**values, mean_wait=extra.mean_wait, mean_run=extra.mean_run)


def model_score(path: str, setting: Setting, start: int, seed: int) -> GpuScore:
    """The model's greedy score on the window from ``start`` for one seed."""
    from hdrm.agents.checkpoint import read_checkpoint
    from hdrm.agents.mappo_rollout import play_episode

    trained = read_checkpoint(path)["options"]["setting"]
    env = make_env(setting, int(trained["window"]), seed, start, trained.get("pick", "env"),
                   view_of(trained))
    agent = load_agent(path, env, seed)
    play_episode(env, agent, drivers(dict(getattr(agent, "frozen", {}) or {})), seed=seed)
    return episode_score(env)
