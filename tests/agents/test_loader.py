"""Loading an agent.py from its path: exactly one Agent subclass, clear errors otherwise."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hdrm.agents.base import ClassicAgent
from hdrm.agents.loader import load_agent_class
from hdrm.errors import AgentLoadError


def write(tmp_path: Path, source: str, name: str = "agent.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_loads_the_one_subclass_and_ignores_imported_ones(tmp_path):
    path = write(
        tmp_path,
        """
        from dataclasses import dataclass
        from hdrm.agents.base import Agent, ClassicAgent, first_valid

        @dataclass(frozen=True)
        class Settings:
            x: int = 1

        class Mine(Agent):
            def decide(self, observation, mask):
                return first_valid(mask)
    """,
    )
    cls = load_agent_class(path)
    assert cls.__name__ == "Mine" and cls.__module__.startswith("hdrm_user_agent_agent_")
    assert load_agent_class(str(path)).__name__ == "Mine"  # loading twice works


def test_subclass_of_a_builtin_counts(tmp_path):
    path = write(
        tmp_path,
        """
        from hdrm.agents.base import ClassicAgent
        class Fixed(ClassicAgent):
            pass
    """,
    )
    assert issubclass(load_agent_class(path), ClassicAgent)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(
        AgentLoadError, match=r"agent file .*nope\.py: no such file; give the path of an agent\.py"
    ):
        load_agent_class(tmp_path / "nope.py")
    with pytest.raises(AgentLoadError, match=r"is a folder, not a file"):
        load_agent_class(tmp_path)


def test_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, "import math\n\nclass Broken(:\n    pass\n")
    with pytest.raises(AgentLoadError, match=rf"^{path}:3: syntax error: "):
        load_agent_class(path)


def test_no_agent_subclass(tmp_path):
    path = write(tmp_path, "from hdrm.agents.base import ClassicAgent\n\nclass NotAnAgent:\n    pass\n")
    with pytest.raises(
        AgentLoadError,
        match=rf"^agent file {path}: no Agent subclass defined "
        r"\(it imports ClassicAgent; subclass one of them\)",
    ):
        load_agent_class(path)


def test_two_agent_subclasses_are_named(tmp_path):
    path = write(
        tmp_path,
        """
        from hdrm.agents.base import ClassicAgent
        class A(ClassicAgent):
            pass
        class B(ClassicAgent):
            pass
    """,
    )
    with pytest.raises(
        AgentLoadError, match=rf"^agent file {path}: 2 Agent subclasses: A, B; define exactly one$"
    ):
        load_agent_class(path)


def test_exception_while_importing_names_file_line_and_error(tmp_path):
    path = write(tmp_path, "x = 1\nraise ValueError('no GPU here')\n")
    with pytest.raises(
        AgentLoadError, match=rf"^{path}:2: importing the agent failed: ValueError: no GPU here$"
    ):
        load_agent_class(path)
    path = write(tmp_path, "import not_a_real_module_xyz\n", "missing_import.py")
    with pytest.raises(
        AgentLoadError, match=r"missing_import\.py:1: importing the agent failed: ModuleNotFoundError"
    ):
        load_agent_class(path)
    path = write(tmp_path, "import sys\nsys.exit(3)\n", "exits.py")
    with pytest.raises(AgentLoadError, match=r"exits\.py:2: importing the agent failed: SystemExit: 3"):
        load_agent_class(path)


def test_abstract_agent_is_reported(tmp_path):
    path = write(tmp_path, "from hdrm.agents.base import Agent\n\nclass Half(Agent):\n    pass\n")
    with pytest.raises(AgentLoadError, match=rf"^agent file {path}: Half does not implement decide$"):
        load_agent_class(path)
