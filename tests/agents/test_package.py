"""hdrm.agents stays in its layer (L0 + gymnasium.spaces + torch) and its API modules stay torch-free."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hdrm.agents

PACKAGE = Path(hdrm.agents.__file__).parent
ALLOWED_HDRM = ("hdrm", "hdrm.errors", "hdrm.registry", "hdrm.options", "hdrm.durable", "hdrm.agents")
TORCH_FREE = ("__init__.py", "base.py", "catalog.py", "loader.py", "settings.py", "testing.py")


def imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_imports_respect_the_layering(path):
    for module in imported_modules(path):
        if module.startswith("hdrm"):
            assert module in ALLOWED_HDRM or module.startswith("hdrm.agents."), (
                f"{path.name} imports {module}"
            )
        if module.startswith("gymnasium"):
            assert module in ("gymnasium", "gymnasium.spaces"), f"{path.name} imports {module}"
        if path.name in TORCH_FREE:
            assert not module.startswith("torch"), f"{path.name} must not import torch at module level"


def test_gymnasium_is_only_used_for_spaces():
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "gymnasium":
                assert [a.name for a in node.names] == ["spaces"], path.name
            if isinstance(node, ast.Import):
                assert "gymnasium" not in [a.name for a in node.names], path.name
