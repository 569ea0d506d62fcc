"""What a model file written by ``benchmarks/train.py`` records about itself: the learner's
name in tables, its setting, the training figures and the no-leakage rule it was trained under
(read back by ``benchmarks/compare.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.train_settings import TrainSettings


def learner_label(learner: str, agent: Any) -> str:
    """How the learner is named in tables: ``PPO-kernel``, ``DQN`` ..."""
    network = getattr(agent, "network_name", None)
    return f"{learner.upper()}-{network}" if network else learner.upper()


def metadata(s: "TrainSettings", agent: Any, config: dict[str, Any], figures: dict[str, Any],
             rule: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the checkpoint records about the model (read back by ``compare.py``): the learner,
    its setting, the training figures and the no-leakage rule it was trained under."""
    return {"rule": rule,
        "learner": s.learner, "label": learner_label(s.learner, agent), "agent": config,
        "setting": {"trace": s.trace, "backfill": s.backfill, "decision": s.decision,
                    "mode": s.mode, "objective": s.objective, "platform": s.platform,
                    "reward_timing": s.reward_timing, "wait_penalty": s.wait_penalty,
                    "validation_guard": s.validation_guard,
                    "pick": s.pick if s.mode == "job_pick" else "env",
                    "observation": s.observation, "reservation": s.reservation,
                    "pick_limit": s.pick_limit,
                    "features": observation_features(s.observation),
                    "job_selections": list(s.job_selections) if s.job_selections else None,
                    "window": s.window if s.mode == "job_pick" else None,
                    "train_jobs": s.train_jobs, "seed": s.seed, "imitate": s.imitate,
                    "init_model": s.init_model,
                    "load_factors": list(s.load_factors) if s.load_factors else None,
                    "validation_load_factors": list(s.validation_load_factors)},
        "training": figures,
    }


def observation_features(name: str | None) -> list[str] | None:
    """The feature names of a job-window observation kind, in column order (recorded in the
    model file, so an evaluation refuses a model whose observation has changed since); None for
    the kinds of ``policy_pair`` mode, which name no columns."""
    from hdrm.env.observations import OBSERVATIONS

    features = getattr(OBSERVATIONS.get(name or "job_window", "--observation"), "features", None)
    return list(features) if features else None


def save(agent: Any, s: "TrainSettings", config: dict[str, Any], figures: dict[str, Any],
         rule: dict[str, Any] | None = None) -> None:
    """Write ``agent`` to ``s.out`` with the metadata."""
    from hdrm.agents.checkpoint import save_checkpoint

    save_checkpoint(agent, s.out, metadata(s, agent, config, figures, rule))
