"""The complete agent.py of docs/howto_agent.rst loads, plays an episode and passes check_agent.

The file is read from the page itself (the code block captioned ``my_agent.py``), so the example
readers copy is the one tested.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def shown_file(page: Path, caption: str) -> str:
    """The content of the code block of ``page`` whose caption is ``caption``, dedented."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"   :caption: {caption}") + 1
    end = next((k for k in range(start + 1, len(lines))
                if lines[k].strip() and not lines[k].startswith(" ")), len(lines))
    return textwrap.dedent("\n".join(lines[start:end])).strip() + "\n"


def _agent_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_agent.py"
    path.write_text(shown_file(DOCS / "howto_agent.rst", path.name), encoding="utf-8")
    return path


def test_the_shown_file_is_the_whole_block():
    text = shown_file(DOCS / "howto_agent.rst", "my_agent.py")
    assert text.startswith('"""An epsilon-greedy bandit')
    assert text.endswith('self.counts = np.array(state["counts"], dtype=float)\n')


def test_the_howto_agent_file_loads_and_plays_an_episode(tmp_path):
    from hdrm.agents.base import Agent
    from hdrm.agents.loader import load_agent_class
    from hdrm.env import SchedulingEnv

    cls = load_agent_class(_agent_file(tmp_path))
    env = SchedulingEnv(nb_jobs=12, observation="small")
    agent = cls({"run": "train"}, env.observation_space, env.action_space,
                action_names=env.action_names, seed=3)
    assert isinstance(agent, Agent)
    obs, info = env.reset(seed=3)
    agent.start_episode()
    steps, done = 0, False
    while not done:
        action = agent.decide(obs, info["action_mask"])
        assert info["action_mask"][action], f"{cls.__name__} chose the masked action {action}"
        obs, reward, terminated, truncated, info = env.step(action)
        agent.rewarded(reward, terminated or truncated)
        done, steps = terminated or truncated, steps + 1
    assert steps > 0 and agent.end_episode()["steps"] == steps
    assert len(env.result().outcomes) == 12


def test_the_howto_agent_file_passes_the_conformance_check(tmp_path):
    from hdrm.agents.loader import load_agent_class
    from hdrm.agents.testing import check_agent

    check_agent(load_agent_class(_agent_file(tmp_path)), {"run": "train"})
