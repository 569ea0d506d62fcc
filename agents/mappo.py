"""MAPPO: a job-ordering agent and a GPU-placing agent learned together (issue 20).

On a GPU workload (an openb pod list or a Gavel trace) each decision has two phases: the
``order`` agent picks a task of the queue window or waits, then the ``place`` agent picks the node
of that task (its GPUs follow the configured placement's within-node rule). Both actors read
their sets through transformer encoders (the window's job rows; the feasible nodes plus a pooled
view of all), and one centralised critic values every phase; PPO's clipped objective is applied
per agent, with GAE, an entropy bonus and a running normalisation of the value targets.

The launcher sees this class's ``multi_agent`` flag and runs the multi-agent environment
(:class:`hdrm.launch.multiagent.TurnEnv`), one phase per step. Run::

    hdeeprm-launch agents/mappo.py options.json --outmodel mappo.pt
    hdeeprm-launch agents/mappo.py test_options.json --inmodel mappo.pt    # "run": "test"

with an agent block such as::

    "agent": {"run": "train", "lr": 0.0003, "gamma": 0.99, "episodes": 20,
              "params": {"dim": 32, "heads": 4, "rollout_steps": 512, "minibatch": 128}}

Ablations (``params``): ``"mode": "factored"`` (one policy over the joint action (job, node)),
``"freeze_place": "fgd"`` (learn the order only, placed by FGD), ``"freeze_order": "sjf"``
(learn the placement only), ``"share_actors": false`` (no parameter shared by the two actors).
Every setting: :class:`hdrm.agents.mappo.MAPPOSettings`.
"""

from hdrm.agents.mappo import MAPPOAgent


class MAPPO(MAPPOAgent):
    """The built-in MAPPO learner, as a drop-in agent."""
