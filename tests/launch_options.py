"""Options files for launch tests: an example's options.json with its inputs made absolute,
short episodes and the test's agent parameters, written into a test folder."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def example_options(folder: Path, example: str = "ppo", *, episodes: int, params: dict | None = None,
                    replace_params: bool = False, tenants: bool = False, nb_jobs: int = 20) -> Path:
    """Write ``folder/options.json`` from ``examples/<example>/options.json``.

    Args:
        folder: where the file goes.
        example: the example whose options are the base.
        episodes: the agent's episodes.
        params: agent parameters, merged into the example's (or in place of them with
            ``replace_params``).
        replace_params: the agent's parameters are ``params`` alone.
        tenants: tenants by user, deadlines at twice the run time alone and the
            ``sla_satisfaction`` objective (the return is minus the miss rate).
        nb_jobs: jobs per episode.
    """
    source = ROOT / "examples" / example / "options.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    for key in ("workload_file_path", "platform_file_path"):
        data[key] = str((source.parent / data[key]).resolve())
    data["nb_jobs"] = nb_jobs
    agent = data["pybatsim"]["agent"]
    agent["episodes"] = episodes
    if replace_params:
        agent["params"] = dict(params or {})
    elif params:
        agent["params"].update(params)
    if tenants:
        data["workload"] = {**data.get("workload", {}), "tenants": "user", "sla": "relative:2"}
        data["pybatsim"]["env"]["objective"] = "sla_satisfaction"
    path = folder / "options.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
