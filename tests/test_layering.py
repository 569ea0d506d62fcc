"""The layering of docs/architecture.rst, checked statically on every module under hdrm/.

Each module is parsed with :mod:`ast` (nothing is imported) and every import it makes, at any
depth (inside functions, under ``if TYPE_CHECKING:``, relative or absolute, and
``importlib.import_module`` with a literal name), is checked against the rules below. A new
subpackage must be given a layer here.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import NamedTuple

import hdrm

HDRM_DIR = Path(hdrm.__file__).parent

#: Layer of each part of the package (the ``hdrm`` root package itself is L0).
LAYER_OF = {
    "hdrm": "L0",
    "hdrm.errors": "L0",
    "hdrm.registry": "L0",
    "hdrm.options": "L0",
    "hdrm.option_names": "L0",
    "hdrm.typedjson": "L0",
    "hdrm.implied": "L0",
    "hdrm.durable": "L0",
    "hdrm.jsonfile": "L0",
    "hdrm.lazy": "L0",
    "hdrm.platform": "L1",
    "hdrm.workload": "L1",
    "hdrm.results": "L1",
    "hdrm.core": "L2",
    "hdrm.policies": "L2",
    "hdrm.dag": "L2",
    "hdrm.sim": "L3",
    "hdrm.batsim": "L3",
    "hdrm.viz": "L3",
    "hdrm.fragmentation": "L3",
    "hdrm.env": "L4",
    "hdrm.agents": "L4",
    "hdrm.launcher": "L5",
    "hdrm.launch": "L5",
    "hdrm.cli": "L5",
    "hdrm.distributed": "L5",
}
_ORDER = ("L0", "L1", "L2", "L3", "L4", "L5")


def _up_to(layer: str) -> tuple[str, ...]:
    """Every part of the package in ``layer`` or below, but the L4 parts (peers, never shared)."""
    top = _ORDER.index(layer)
    return tuple(part for part, lay in LAYER_OF.items() if _ORDER.index(lay) <= min(top, 3))


class Rule(NamedTuple):
    """What a part of the package may import: parts of hdrm, and third-party module prefixes."""

    hdrm_parts: tuple[str, ...]
    third_party: tuple[str, ...]
    summary: str


_L1_LIBS = ("numpy", "lxml", "defusedxml")
_L2_LIBS = _L1_LIBS + ("sortedcontainers",)
_RULES_BY_LAYER = {
    "L0": Rule(_up_to("L0"), (), "L0 and the standard library"),
    "L1": Rule(_up_to("L1"), _L1_LIBS, "L0-L1 and " + ", ".join(_L1_LIBS)),
    "L2": Rule(_up_to("L2"), _L2_LIBS, "L0-L2 and " + ", ".join(_L2_LIBS)),
    "L3": Rule(_up_to("L3"), _L2_LIBS, "L0-L3 and " + ", ".join(_L2_LIBS)),
}
RULES = {part: _RULES_BY_LAYER[lay] for part, lay in LAYER_OF.items() if lay in _RULES_BY_LAYER}
RULES["hdrm.batsim"] = Rule(
    _up_to("L3"),
    _L2_LIBS + ("zmq", "batsim", "procset"),
    "L0-L3 and " + ", ".join(_L2_LIBS + ("zmq", "batsim", "procset")),
)
RULES["hdrm.viz"] = Rule(
    _up_to("L3"), _L2_LIBS + ("matplotlib",), "L0-L3 and " + ", ".join(_L2_LIBS + ("matplotlib",))
)
RULES["hdrm.env"] = Rule(
    _up_to("L3") + ("hdrm.env",),
    _L2_LIBS + ("gymnasium", "pettingzoo"),
    "L0-L3, hdrm.env and " + ", ".join(_L2_LIBS + ("gymnasium", "pettingzoo")),
)
RULES["hdrm.agents"] = Rule(
    _up_to("L0") + ("hdrm.agents",),
    ("numpy", "gymnasium.spaces", "torch"),
    "L0, hdrm.agents and numpy, gymnasium.spaces, torch (never the env, "
    "the engines or the core)",
)
RULES["hdrm.launcher"] = RULES["hdrm.launch"] = RULES["hdrm.cli"] = Rule(
    tuple(LAYER_OF), ("",), "anything"
)
#: Scale-out sits on top like the launcher, and is the only part that may import ray.
RULES["hdrm.distributed"] = Rule(tuple(LAYER_OF), ("",), "anything")
#: Third-party modules only one part of the package may import, whatever its layer allows.
ONLY_IN = {"ray": "hdrm.distributed"}

#: Deliberate exceptions, each with its reason: (importing module, imported module prefix).
EXCEPTIONS: set[tuple[str, str]] = set()


def part_of(module: str) -> str | None:
    """The part of the package a dotted hdrm name belongs to; None for an unassigned subpackage."""
    parts = module.split(".")
    if len(parts) == 1:
        return "hdrm"
    candidate = f"hdrm.{parts[1]}"
    if candidate in LAYER_OF:
        return candidate
    on_disk = (HDRM_DIR / parts[1]).is_dir() or (HDRM_DIR / f"{parts[1]}.py").is_file()
    return None if on_disk else "hdrm"  # not a module: a name of the root package (__version__)


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a relative import ``from {'.' * level}{target} import ...``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([target] if target else []))


#: Names of :mod:`hdrm.lazy` that import a third-party module when used: importing one counts
#: as importing that module.
LAZY_IMPORTS = {"numpy": "numpy", "LazyGenerator": "numpy"}


def imported_names(module: str, source: str, is_package: bool = False) -> list[str]:
    """Every module (or ``module.name``) that ``source`` imports, in order of appearance."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            names.extend(base if a.name == "*" else f"{base}.{a.name}" for a in node.names)
            names.extend(LAZY_IMPORTS[a.name] for a in node.names
                         if base == "hdrm.lazy" and a.name in LAZY_IMPORTS)
        elif isinstance(node, ast.Call) and _is_dynamic_import(node) and module != "hdrm.lazy":
            # (hdrm.lazy names its stand-ins' modules; their users are checked: LAZY_IMPORTS)
            names.append(node.args[0].value)  # type: ignore[attr-defined]
    return names


def _is_dynamic_import(node: ast.Call) -> bool:
    """``importlib.import_module("x")``, ``__import__("x")`` or ``LazyModule("x")`` (:mod:`hdrm.lazy`)
    with a literal name."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    literal = (
        bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )
    return name in ("import_module", "__import__", "LazyModule") and literal


def _allowed_in(target: str) -> str:
    """The parts of hdrm whose rules allow a third-party module."""
    parts = sorted(
        {p for p, r in RULES.items() if _matches(target, r.third_party) and r.third_party != ("",)}
    )
    return ", ".join(parts) or "nowhere in the library"


def _matches(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(p == "" or name == p or name.startswith(p + ".") for p in prefixes)


def check_source(module: str, source: str, is_package: bool = False) -> list[str]:
    """Layering violations of one module, each as ``"module: imports X (layer ...)"``."""
    part = part_of(module)
    if part is None:
        return [
            f"{module}: not assigned to a layer; add its package to LAYER_OF in "
            f"{Path(__file__).name} and to docs/architecture.rst"
        ]
    rule, layer = RULES[part], LAYER_OF[part]
    problems = []
    for name in imported_names(module, source, is_package):
        top = name.split(".")[0]
        if any(module == m and _matches(name, (p,)) for m, p in EXCEPTIONS):
            continue
        if top == "hdrm":
            target = part_of(name)
            if target is None or target not in rule.hdrm_parts:
                where = "unassigned" if target is None else f"{LAYER_OF[target]} {target}"
                problems.append(
                    f"{module}: imports {name} (layer {where}; {part} is {layer} and may "
                    f"import {rule.summary})"
                )
        elif top in ONLY_IN and part != ONLY_IN[top]:
            problems.append(f"{module}: imports {name} (only {ONLY_IN[top]} may import {top})")
        elif top not in sys.stdlib_module_names and not _matches(name, rule.third_party):
            problems.append(
                f"{module}: imports {name} (layer: third-party, allowed in {_allowed_in(name)}; "
                f"{part} is {layer} and may import {rule.summary})"
            )
    return problems


def package_modules() -> list[tuple[str, Path, bool]]:
    """(dotted name, file, is_package) of every module under hdrm/."""
    found = []
    for path in sorted(HDRM_DIR.rglob("*.py")):
        rel = path.relative_to(HDRM_DIR.parent).with_suffix("")
        is_package = rel.name == "__init__"
        parts = rel.parts[:-1] if is_package else rel.parts
        found.append((".".join(parts), path, is_package))
    return found


# --------------------------------------------------------------------------- the tests


def test_every_module_respects_the_layering():
    modules = package_modules()
    names = {m for m, _, _ in modules}
    assert {"hdrm", "hdrm.errors", "hdrm.registry", "hdrm.options", "hdrm.platform.model"} <= names
    problems = []
    for module, path, is_package in modules:
        problems.extend(check_source(module, path.read_text(encoding="utf-8"), is_package))
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_checker_catches_planted_violations():
    source = (
        "from __future__ import annotations\n"
        "import json\n"
        "import numpy as np\n"
        "import torch\n"
        "from hdrm.errors import ConfigError\n"
        "from hdrm.sim import engine\n"
        "from ..core.state import ClusterState\n"
        "from . import swf\n"
        "def late():\n"
        "    import zmq\n"
        "    importlib.import_module('hdrm.launcher')\n"
    )
    problems = check_source("hdrm.workload.fake", source)
    assert [p.split(" (")[0] for p in problems] == [
        "hdrm.workload.fake: imports torch",
        "hdrm.workload.fake: imports hdrm.sim.engine",
        "hdrm.workload.fake: imports hdrm.core.state.ClusterState",
        "hdrm.workload.fake: imports zmq",
        "hdrm.workload.fake: imports hdrm.launcher",
    ]
    assert problems[0] == (
        "hdrm.workload.fake: imports torch (layer: third-party, allowed in hdrm.agents; "
        "hdrm.workload is L1 and may import L0-L1 and numpy, lxml, defusedxml)"
    )
    assert problems[1].startswith(
        "hdrm.workload.fake: imports hdrm.sim.engine (layer L3 hdrm.sim; "
    )
    assert "allowed in hdrm.batsim;" in problems[3]


def test_a_lazy_import_counts_as_an_import():
    # hdrm.lazy's stand-ins import numpy when used: an L0 module may not use them, L1 may
    source = ("from hdrm.lazy import numpy as np\nfrom hdrm.lazy import LazyModule\n"
              "etree = LazyModule('lxml.etree')\n")
    assert [p.split(" (")[0] for p in check_source("hdrm.options", source)] == [
        "hdrm.options: imports numpy", "hdrm.options: imports lxml.etree"]
    assert check_source("hdrm.workload.fake", source) == []


def test_agents_see_only_spaces_and_arrays():
    source = (
        "import torch\nfrom torch import nn\nfrom gymnasium import spaces\nimport numpy\n"
        "from hdrm.errors import AgentLoadError\nfrom hdrm.agents.base import Agent\n"
        "import gymnasium\nfrom gymnasium import Env\nfrom hdrm.env import SchedulingEnv\n"
        "from hdrm.core import state\nfrom hdrm.policies.pairs import PAIRS\n"
    )
    problems = check_source("hdrm.agents.ppo", source)
    assert [p.split(" (")[0].split("imports ")[1] for p in problems] == [
        "gymnasium",
        "gymnasium.Env",
        "hdrm.env.SchedulingEnv",
        "hdrm.core.state",
        "hdrm.policies.pairs.PAIRS",
    ]


def test_lower_layers_and_peers():
    assert check_source("hdrm.options", "import numpy\n")[0].startswith(
        "hdrm.options: imports numpy (layer: third-party"
    )
    assert check_source("hdrm.errors", "from hdrm.platform import model\n")
    assert check_source("hdrm.core.state", "from hdrm.env import spaces\n")
    assert check_source("hdrm.env.core", "from hdrm.agents.base import Agent\n")
    assert check_source("hdrm.sim.engine", "import matplotlib\n")
    assert check_source("hdrm.viz.gantt", "import torch\n")
    assert not check_source(
        "hdrm.viz.gantt", "from matplotlib.figure import Figure\nfrom hdrm.sim import engine\n"
    )
    assert not check_source(
        "hdrm.batsim.adapter",
        "import zmq\nfrom procset import ProcSet\n" "from batsim.batsim import BatsimScheduler\n",
    )
    assert not check_source(
        "hdrm.env.core", "import gymnasium as gym\nfrom hdrm.sim.engine import Engine\n"
    )
    assert not check_source("hdrm.cli.main", "import torch\nfrom hdrm.launcher import main\n")
    assert not check_source(
        "hdrm.core.state", "from typing import TYPE_CHECKING\nfrom hdrm import __version__\n"
    )


def test_only_the_distributed_package_imports_ray():
    assert not check_source("hdrm.distributed.ray_backend", "import ray\nfrom hdrm.launcher import main\n")
    assert check_source("hdrm.cli.sweep_cmd", "import ray\n") == [
        "hdrm.cli.sweep_cmd: imports ray (only hdrm.distributed may import ray)"
    ]
    assert check_source("hdrm.launcher", "from ray.util import queue\n")
    assert check_source("hdrm.sim.engine", "import ray\n")
    assert check_source("hdrm.core.state", "from hdrm.distributed import sweep\n")
    assert check_source("hdrm.env.core", "from hdrm.distributed.sweep import run_sweep\n")


def test_relative_imports_resolve_from_packages_and_modules():
    assert imported_names("hdrm.platform", "from . import model\n", is_package=True) == [
        "hdrm.platform.model"
    ]
    assert imported_names("hdrm.platform.loader", "from .model import Platform\n") == [
        "hdrm.platform.model.Platform"
    ]
    assert imported_names("hdrm.platform.loader", "from .. import errors\n") == ["hdrm.errors"]
    assert imported_names("hdrm.sim.engine", "from ..core import *\n") == ["hdrm.core"]


def test_unassigned_subpackages_are_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "HDRM_DIR", tmp_path)
    (tmp_path / "extras").mkdir()
    assert check_source("hdrm.extras.tool", "import json\n") == [
        "hdrm.extras.tool: not assigned to a layer; add its package to LAYER_OF in test_layering.py "
        "and to docs/architecture.rst"
    ]
    assert (
        "layer unassigned" in check_source("hdrm.core.state", "from hdrm.extras import tool\n")[0]
    )


def test_there_are_no_exceptions():
    assert not EXCEPTIONS
    assert check_source("hdrm", "from hdrm.env.registration import register_envs\n")
    assert check_source("hdrm", "from hdrm.env.scheduling_env import SchedulingEnv\n")
    assert check_source("hdrm", "import gymnasium\n")
    assert check_source("hdrm.options", "from hdrm.env.registration import register_envs\n")
