"""A classic agent: one fixed policy pair for the whole run (HDeepRM's ClassicAgent).

Use it to measure a heuristic baseline with the same launcher, environment and outputs as the
learners::

    hdeeprm-launch agents/classic.py examples/classic/options.json

with an agent block such as::

    "agent": {"run": "test", "policy": "shortest-high_gflops"}

``policy`` is one of the environment's action names: a job-core pair ``"<job selection>-<core
selection>"`` in ``policy_pair`` mode. When the pair cannot be applied at a decision (its action is
masked out), the agent takes the first valid action instead.
"""

from hdrm.agents.base import ClassicAgent


class FixedPair(ClassicAgent):
    """Always the configured pair; the first valid action when it is masked out.

    ``self.action`` is the index of the pair, ``self.fallbacks`` counts the decisions where the
    pair was masked out.
    """
