"""Building an experiment: options.json + agent.py -> checked names, a seeded environment and agent.

The steps, in the order :func:`build_experiment` runs them:

1. the open names of the options (objective, observation, contention model, policy pairs of
   ``actions.selection``) are checked against their registries (:func:`check_open_names`);
2. with engine ``batsim``, the Batsim executable (``batsim.binary``) must be found: each episode
   is then one Batsim run, stepped by the environment (:mod:`hdrm.batsim.env_bridge`);
3. the agent class is loaded from agent.py (exactly one Agent subclass, else
   :class:`~hdrm.errors.AgentLoadError`); a classic agent's ``policy`` is checked too;
4. python's ``random``, numpy's global generator and, only when the agent module imported torch,
   torch are seeded from ``options.seed`` (:func:`seed_globals`);
5. the environment is built from the options; a classic agent whose policy is a heuristic outside
   the 36 default pairs (``"sjf"``) gets an environment whose only action is that policy;
6. the agent is created with the agent block of the options as a plain dict, the spaces, the
   action names and the seed, then put in train or test mode.

Every failure a user can cause is an :class:`~hdrm.errors.HdrmError` whose one-line message names
the options file or the agent file.
"""

from __future__ import annotations

import logging
import random
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from hdrm.agents.base import Agent, ClassicAgent
from hdrm.agents.loader import load_agent_class
from hdrm.core.gpu_scheduler import gpu_policy_names
from hdrm.core.contention import CONTENTION_MODELS
from hdrm.env.objectives import OBJECTIVES
from hdrm.env.observations import OBSERVATIONS
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import AgentLoadError, ConfigError, HdrmError
from hdrm.launch import multiagent
from hdrm.options import SELECTION_PATH, Options, check_names
from hdrm.policies.job_selection import JOB_POLICIES
from hdrm.policies.pairs import ALL_PAIRS, policy_names
from hdrm.sim.gpu_inputs import is_gpu_input

logger = logging.getLogger(__name__)

#: JSON path of a classic agent's policy.
POLICY_PATH = "pybatsim.agent.policy"


@dataclass
class Experiment:
    """A checked experiment, ready to run.

    Attributes:
        options: the parsed options (never mutated).
        agent_path: the agent.py the agent class came from.
        env: the environment.
        agent: the agent, in train or test mode.
        episodes: episodes per run (``pybatsim.agent.episodes`` or the override).
        training: whether the agent learns (``pybatsim.agent.run`` is ``"train"``).
        torch_seeded: whether torch was loaded by the agent module and seeded.
        final_env: where the last episode's outputs come from when it was not played in
            ``env`` (rollout workers); None: ``env``.
    """

    options: Options
    agent_path: Path
    env: SchedulingEnv
    agent: Agent
    episodes: int
    training: bool
    torch_seeded: bool = False
    final_env: Any = None

    @property
    def classic(self) -> bool:
        """Whether the agent is a :class:`~hdrm.agents.base.ClassicAgent` (no model)."""
        return isinstance(self.agent, ClassicAgent)


def check_open_names(options: Options, classic: bool = False) -> None:
    """Check the registry names of ``options``; with ``classic`` also ``pybatsim.agent.policy``.

    Raises:
        ConfigError: an unknown name, naming the file, the JSON path and the close valid names.
    """
    # on GPU inputs (an openb or Gavel workload) the actions are (queue order x placement) pairs
    gpu = is_gpu_input(options.platform_file_path, options.workload_file_path,
                       options.workload.throughputs)
    pairs = gpu_policy_names() if gpu else policy_names()
    choices: dict[str, list[str]] = {
        "pybatsim.env.objective": OBJECTIVES.names(),
        "pybatsim.env.observation": OBSERVATIONS.names(),
        "pybatsim.env.reservation": JOB_POLICIES.names(),
        "simulation.contention": CONTENTION_MODELS.names(),
        SELECTION_PATH: pairs,
    }
    if classic:
        choices[POLICY_PATH] = pairs
    check_names(options, choices)


def seed_globals(seed: int) -> bool:
    """Seed python's ``random``, numpy's global generator and torch when already imported.

    hdrm itself never uses these global generators; user agents might. Torch is seeded only when
    some module (the agent's) imported it: this function never imports torch.

    Returns:
        Whether torch was seeded.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    torch.manual_seed(seed % 2**63)
    return True


def build_experiment(options: Options, agent_path: str | Path, episodes: int | None = None
                     ) -> Experiment:
    """Check ``options``, load the agent class of ``agent_path`` and build the env and the agent.

    Args:
        options: the parsed options.
        agent_path: the agent.py file.
        episodes: episodes per run instead of ``pybatsim.agent.episodes`` (None keeps it).

    Raises:
        ConfigError: a bad name or setting (naming the options file and the JSON path).
        AgentLoadError: the agent file cannot be loaded, or its class cannot be created.
        PlatformError, WorkloadError: the platform or the workload cannot be read.
    """
    if episodes is not None and episodes < 1:
        raise ConfigError(f"--episodes: expected a positive number of episodes, got {episodes}")
    check_open_names(options)
    _check_engine(options)
    agent_path = Path(agent_path)
    cls = load_agent_class(agent_path)
    classic = issubclass(cls, ClassicAgent)
    if classic:
        check_open_names(options, classic=True)
    torch_seeded = seed_globals(options.seed)
    if multiagent.wants_turns(cls):  # MAPPO: the two-agent GPU env, one phase per step
        env = multiagent.turn_env(options, **env_overrides(options, classic))
    else:
        env = _build_env(options, classic)
    agent = make_agent(cls, options, env, agent_path)
    if multiagent.wants_turns(cls):
        try:
            env.set_frozen(getattr(agent, "frozen", {}))
        except ConfigError as exc:
            raise ConfigError(with_source(options.source, str(exc))) from None
    training = options.pybatsim.agent.run == "train"
    agent.train_mode(training)
    return Experiment(options, agent_path, env, agent, episodes or options.pybatsim.agent.episodes,
                      training, torch_seeded)


def env_overrides(options: Options, classic: bool) -> dict[str, Any]:
    """Environment settings beyond the options: a classic agent's heuristic as the action, and
    on GPU inputs the timeline (the outputs report GPU allocation and fragmentation over time).

    Raises:
        ConfigError: a classic agent with ``job_pick`` actions (it applies policy pairs).
    """
    gpu = is_gpu_input(options.platform_file_path, options.workload_file_path,
                       options.workload.throughputs)
    extra = {"timeline": True} if gpu else {}  # the outputs report GPU use over time
    if not classic:
        return extra
    actions = options.pybatsim.env.actions
    if actions.mode != "policy_pair":
        raise ConfigError(
            f"{options.source}: pybatsim.env.actions.mode: a classic agent applies a policy pair, "
            f"got mode {actions.mode!r}; use \"policy_pair\" (job_pick needs a learning agent)"
        )
    policy = options.pybatsim.agent.policy.lower()
    if actions.selection is None and policy not in ALL_PAIRS:
        return {"selection": (policy,), **extra}
    return extra


def make_agent(cls: type[Agent], options: Options, env: SchedulingEnv, agent_path: Path,
               params: Mapping[str, Any] | None = None, seed: int | None = None) -> Agent:
    """Create the agent from the agent block of ``options`` and the spaces of ``env``.

    ``params`` are merged into the block's ``params``; ``seed`` replaces ``options.seed``.

    Raises:
        ConfigError: the agent rejected a setting (the message is prefixed with the options file).
        AgentLoadError: the constructor failed otherwise (naming the agent file and its line).
    """
    config = options.pybatsim.agent.to_dict()
    if params:
        config["params"] = {**(config.get("params") or {}), **params}
    try:
        return cls(config, env.observation_space, env.action_space,
                   action_names=list(env.action_names),
                   seed=options.seed if seed is None else seed)
    except HdrmError as exc:
        raise type(exc)(with_source(options.source, str(exc))) from None
    except Exception as exc:  # a user's constructor may fail in any way: name the file
        raise AgentLoadError(
            f"{agent_path}{_line_in(agent_path, exc)}: creating {cls.__name__} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from None


def with_source(source: str, message: str) -> str:
    """``message`` prefixed with ``source`` unless it already names it."""
    return message if source in message else f"{source}: {message}"


def _check_engine(options: Options) -> None:
    """Engine ``batsim``: fail before loading the agent when Batsim cannot be found."""
    if options.engine != "batsim":
        return
    try:  # the import fails in one line where PyBatsim is missing: name the options file too
        from hdrm.batsim.process import find_batsim  # pybatsim and zmq: only for this engine

        find_batsim(options.batsim.binary)
    except ConfigError as exc:
        raise ConfigError(with_source(options.source, str(exc))) from None


def _build_env(options: Options, classic: bool) -> SchedulingEnv:
    overrides = env_overrides(options, classic)
    try:
        return SchedulingEnv(options=options, **overrides)
    except ConfigError as exc:
        raise ConfigError(with_source(options.source, str(exc))) from None


def _line_in(path: Path, exc: BaseException) -> str:
    """``":N"`` for the deepest traceback frame in ``path``, or ``""``."""
    target = path.resolve()
    line = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == target:
            line = f":{frame.lineno}"
    return line


__all__ = [
    "Experiment",
    "POLICY_PATH",
    "build_experiment",
    "check_open_names",
    "env_overrides",
    "make_agent",
    "seed_globals",
    "with_source",
]
