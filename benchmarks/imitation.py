"""Warm start of a policy learner by imitating a heuristic (behaviour cloning).

A heuristic with backfilling (say WFP3 with EASY, the strongest queue heuristic of the SDSC-SP2
rows) is run by the built-in engine on a training sequence; its schedule gives every job a start
time. The same sequence is then played through the ``job_pick`` environment following that
schedule: at each decision the environment plays the window job that fits now and that the
teacher started earliest among those it had started by now; when there is none, the teacher waits,
which a learner in pick mode ``any`` expresses by picking a job that does not fit (the environment
then waits for the next event). The learner's label is the *set* of equally good actions: any
fitting job the teacher had started by now, or, when the teacher waits, any job that does not fit.
Only when every job of the window fits (the teacher's blocked head then lies beyond the window)
is the label the fitting job the teacher starts next. In the event-driven environment any
fitting job may start, so a learner can express any backfilling schedule this way.

The observations, the learner's masks and the teacher's actions of a few episodes are kept; the
policy network is then fitted to the teacher's action sets (the negative log-probability of the
set under the masked policy) and its value head to the episodes' returns (the rewards the learner
will see, scaled as it scales them, summed to the end of the episode). Reinforcement learning then
starts from a policy close to the teacher instead of a random one, a common remedy when a sparse,
heavy-tailed objective makes learning from scratch unstable (Hester et al., "Deep Q-learning from
demonstrations", AAAI 2018, for the idea in value learning). The network may not be able to
express the teacher exactly (a ``job_pick`` observation does not show the running jobs, hence
not EASY's shadow time): the fit's accuracy is printed and recorded in the model.

With ``pick_limit="easy"`` (the learner may start only the jobs EASY would start in the
environment's ``reservation`` order, :mod:`hdrm.env.reservation_view`) the teacher is played in
the environment itself: at each decision it starts the first job of its order among those the
limit allows, and that job is the label (:func:`limited_pick`). That is EASY with the
reservation's order for the reserved job and the teacher's order for everything else: with the
teacher's order as the reservation's, exactly the teacher with EASY; with another, EASY in the
reservation's order whose backfilling follows the teacher's (say EASY for F1's head with the
shortest jobs backfilled first).

With ``decision="commit"`` (RLScheduler's semantics) the environment itself holds each pick
that does not fit and backfills around it with its own backfilling, so a queue heuristic with
that backfilling is exactly "pick the first job of my order, again and again": at each decision
the teacher plays the window job that comes first in its order (its key computed now, with the
decision core's run-time predictions for the ``*_pred`` orders), and that job is the label. The
environment then backfills as the heuristic would, except that it offers the backfill candidates
in submission order, EASY's textbook order, where the heuristic's own run offers them in its
order; with FCFS, or without backfilling, the replay is the heuristic's schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks import protocol
from hdrm.env import SchedulingEnv
from hdrm.errors import ConfigError
from hdrm.policies.job_selection import JOB_POLICIES, JobPolicy
from hdrm.sim.engine import Simulation


@dataclass
class Demonstrations:
    """What the teacher did: observations, learner masks, the teacher's actions (played, and
    every action as good), and returns."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    targets: np.ndarray
    returns: np.ndarray
    scores: list[float]

    def __len__(self) -> int:
        return len(self.actions)


def teacher_starts(env: SchedulingEnv, teacher: str, backfill: str) -> dict[int, float]:
    """Start time of every job of the current episode under ``teacher`` (by job index)."""
    sim = env.sim
    config = protocol.sim_config(backfill, "event", sim.config.contention)
    result = Simulation(sim.platform, sim.workload, config).run(teacher)
    return {o.job.idx: o.start_s for o in result.outcomes}


def teacher_actions(env: SchedulingEnv, starts: dict[int, float]) -> tuple[int, np.ndarray]:
    """The teacher's move now: the window position it plays and every position as good as it.

    Starting any window job that may start now (it fits and, with ``pick_limit="easy"``, EASY
    would start it) and that the teacher had started by now is as good as starting the one it
    started first; when there is none, the teacher waits, and picking any job that may not
    start now waits alike. Returns ``(played, acceptable)``, ``acceptable`` a boolean
    array over the window positions.
    """
    window = env.window_jobs()
    fits = env.window_startable()  # the decision's mask already computed it
    now = env.sim.now
    teacher = np.fromiter((starts.get(job.idx, np.inf) for job in window), dtype=float,
                          count=len(window))
    start_now = fits & (teacher <= now)
    if start_now.any():
        acceptable = start_now
    elif not fits.all():
        acceptable = ~fits  # a job it may not start now: picking it waits
    else:  # every job fits (the teacher's blocked head lies beyond the window)
        acceptable = teacher == teacher.min()
    candidates = np.flatnonzero(acceptable)
    return int(candidates[np.argmin(teacher[candidates])]), acceptable


def commit_pick(env: SchedulingEnv, policy: JobPolicy, rng: np.random.Generator
                ) -> tuple[int, np.ndarray]:
    """The teacher's move in commit semantics: the window job first in ``policy``'s order now.

    Returns ``(played, acceptable)`` as :func:`teacher_actions` does; only the played position
    is acceptable (ties of the order's key go to the earlier submission, as the order sorts
    stably).
    """
    window = env.window_jobs()
    sim = env.sim
    first = policy.order(window, sim.now, rng, sim.core.predictor.predict)[0]
    played = next(i for i, job in enumerate(window) if job is first)
    acceptable = np.zeros(len(window), dtype=bool)
    acceptable[played] = True
    return played, acceptable


def limited_pick(env: SchedulingEnv, policy: JobPolicy, rng: np.random.Generator
                 ) -> tuple[int, np.ndarray]:
    """The teacher's move with ``pick_limit="easy"``: the first job of ``policy``'s order now
    among the window jobs the limit allows (:meth:`SchedulingEnv.window_startable`).

    Returns ``(played, acceptable)`` as :func:`teacher_actions` does; only the played position
    is acceptable. The environment asks only when some job may start, so the teacher never
    waits; should none be allowed, it waits (any position that may not start).
    """
    window = env.window_jobs()
    allowed = env.window_startable()
    if not allowed.any():
        return int(np.argmax(~allowed)), ~allowed
    sim = env.sim
    candidates = [job for job, ok in zip(window, allowed) if ok]
    first = policy.order(candidates, sim.now, rng, sim.core.predictor.predict)[0]
    played = next(i for i, job in enumerate(window) if job is first)
    acceptable = np.zeros(len(window), dtype=bool)
    acceptable[played] = True
    return played, acceptable


def check_limited_teacher(pick_limit: str, backfill: str) -> None:
    """With ``pick_limit`` ``easy`` the teacher backfills as EASY (:func:`limited_pick`): its
    ``backfill`` must say so.

    Raises:
        ConfigError: one line naming the backfilling and the fix.
    """
    if pick_limit == "easy" and backfill != "easy":
        raise ConfigError(f"--imitate-backfill {backfill}: with --pick-limit easy the teacher "
                          "starts the first job of its order among those EASY allows, i.e. it "
                          "backfills as EASY; give --imitate-backfill easy")


def check_commit_teacher(decision: str, env_backfill: str, backfill: str) -> None:
    """In commit semantics (``decision``) the environment backfills around each pick with
    ``env_backfill``: the teacher's ``backfill`` must be the same.

    Raises:
        ConfigError: one line naming both backfillings and the fix.
    """
    if decision == "commit" and backfill != env_backfill:
        raise ConfigError(f"--imitate-backfill {backfill}: with --decision commit the environment "
                          f"backfills around each pick itself (--backfill {env_backfill}); "
                          f"give --imitate-backfill {env_backfill}")


def collect(env: SchedulingEnv, starts_pool: Sequence[int], teacher: str, backfill: str,
            pick: str, gamma: float, reward_scale: float,
            objective: str = "avg_bounded_slowdown") -> Demonstrations:
    """Play the teacher on each start index of ``starts_pool`` and record what a learner needs.

    In ``job_pick`` mode the teacher is a queue heuristic run with ``backfill`` (see the module
    docstring; with commit decisions it picks the first job of its order, :func:`commit_pick`,
    and ``backfill`` must be the environment's; with ``pick_limit="easy"`` the first job of its
    order that the limit allows, :func:`limited_pick`, and ``backfill`` must be ``easy``); in ``policy_pair`` mode it is one of the
    environment's pairs, played at every decision (``backfill`` and ``pick`` do not apply).
    Scores are the episodes' ``objective``.

    Raises:
        ConfigError: commit decisions with a teacher's backfilling other than the environment's,
            or ``pick_limit="easy"`` with one other than ``easy``.
    """
    pair_mode = env.config.mode == "policy_pair"
    pair_action = env.action_names.index(teacher) if pair_mode else -1
    commit = not pair_mode and env.config.decision == "commit"
    limited = not pair_mode and not commit and env.config.pick_limit == "easy"
    if not pair_mode:
        check_commit_teacher(env.config.decision, env.config.backfilling, backfill)
        check_limited_teacher(env.config.pick_limit, backfill)
    order = JOB_POLICIES.get(teacher, "--imitate") if commit or limited else None
    rng = np.random.default_rng(0)  # a random order's draws: never the episode's own
    obs_list, mask_list, actions, targets, returns, scores = [], [], [], [], [], []
    for start in starts_pool:
        obs, info = env.reset(seed=0, options={"start_index": int(start)})
        starts = {} if pair_mode or commit or limited else teacher_starts(env, teacher, backfill)
        rewards, done = [], False
        while not done:
            mask = info["action_mask"]
            target = np.zeros(len(mask), dtype=bool)
            if pair_mode:
                action = pair_action
                target[action] = True
                agent_mask = mask
            else:
                action, acceptable = (commit_pick(env, order, rng) if commit
                                      else limited_pick(env, order, rng) if limited
                                      else teacher_actions(env, starts))
                target[: len(acceptable)] = acceptable
                agent_mask = protocol.agent_mask(env, mask, pick)
            obs_list.append(np.asarray(obs, dtype=np.float32))
            mask_list.append(agent_mask)
            actions.append(action)
            targets.append(target)
            obs, reward, terminated, truncated, info = env.step(protocol.env_action(mask, action))
            rewards.append(float(reward) * reward_scale)
            done = terminated or truncated
        ret, out = 0.0, []
        for r in reversed(rewards):
            ret = r + gamma * ret
            out.append(ret)
        returns.extend(reversed(out))
        scores.append(protocol.score_result(env.result()).value(objective))
    return Demonstrations(np.stack(obs_list), np.stack(mask_list).astype(bool),
                          np.asarray(actions, dtype=np.int64), np.stack(targets),
                          np.asarray(returns, dtype=np.float32), scores)


def fit(agent: Any, demos: Demonstrations, epochs: int, batch: int = 256, lr: float = 1e-3,
        seed: int = 0, echo: Callable[[str], Any] = print) -> dict[str, float]:
    """Fit ``agent.network`` to the demonstrations; returns the last epoch's loss and accuracy.

    The policy loss is the negative log-probability of the set of acceptable actions (the
    cross-entropy of a set-valued label); accuracy counts the greedy action falling in the set.
    """
    import torch

    from hdrm.agents.distributions import masked_logits

    net = agent.network
    optimizer = torch.optim.Adam(net.parameters(), lr=lr, eps=1e-5)
    device = next(net.parameters()).device  # the learner's update device
    obs = torch.as_tensor(demos.obs, device=device)
    masks = torch.as_tensor(demos.masks, device=device)
    targets = torch.as_tensor(demos.targets, device=device)
    returns = torch.as_tensor(demos.returns, device=device)
    rng = np.random.default_rng(seed)
    stats: dict[str, float] = {}
    for epoch in range(epochs):
        order = rng.permutation(len(demos))
        total = correct = ce_sum = v_sum = 0.0
        for lo in range(0, len(order), batch):
            idx = torch.as_tensor(order[lo:lo + batch], device=device)
            logits = masked_logits(net.logits(obs[idx]), masks[idx])
            good = masked_logits(logits, targets[idx] & masks[idx])
            ce = (torch.logsumexp(logits, -1) - torch.logsumexp(good, -1)).mean()
            v_loss = 0.5 * (net.value(obs[idx]) - returns[idx]).pow(2).mean()
            optimizer.zero_grad()
            (ce + v_loss).backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            optimizer.step()
            n = len(idx)
            total += n
            ce_sum += ce.item() * n
            v_sum += v_loss.item() * n
            correct += float(targets[idx].gather(1, logits.argmax(-1, keepdim=True)).sum())
        stats = {"ce": ce_sum / total, "value_loss": v_sum / total, "accuracy": correct / total}
        echo(f"imitation epoch {epoch + 1}/{epochs}: cross-entropy {stats['ce']:.4f}, "
             f"teacher actions matched {stats['accuracy']:.1%}, value loss {stats['value_loss']:.4f}")
    if hasattr(agent, "sync_rollout"):
        agent.sync_rollout()  # decisions use a copy of the network when the devices differ
    return stats
