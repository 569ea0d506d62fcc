"""What a loaded model was trained in, against the environment of this launch.

A checkpoint keeps the options of the run that wrote it: ``hdeeprm-launch`` stores its whole
options.json, ``benchmarks/train.py`` its ``setting``. Parameter shapes decide whether the weights
load; some settings change what the policy's actions mean without changing a shape: which jobs
it may start (``pick_limit``), the decision semantics, the action mode, and the order EASY
reserves in (``reservation``: what the ``job_window_reservation`` observations show and
``pick_limit="easy"`` obeys; compared only where one of them uses it).
:func:`setting_differences` lists those that differ, so the launcher can say so in one line
before the policy acts in an environment it did not learn in.
"""

from __future__ import annotations

from typing import Any, Mapping

from hdrm.env.config import EnvConfig

#: The settings compared: name, where options.json sets it, and its default there.
_COMPARED = (("pick_limit", "pybatsim.env.actions.pick_limit", "fits"),
             ("decision", "simulation.decision", None),
             ("mode", "pybatsim.env.actions.mode", None),
             ("reservation", "pybatsim.env.reservation", "fcfs"))
#: Observations that show EASY's reservation (``hdrm.env.job_window``).
_RESERVING = ("job_window_reservation", "job_window_predicted", "job_window_queue")


def trained_setting(options: Any) -> dict[str, Any]:
    """The compared settings (and the observation) a checkpoint's ``options`` record; those it
    does not record are left out."""
    if not isinstance(options, Mapping):
        return {}
    setting = options.get("setting")
    if isinstance(setting, Mapping):  # benchmarks/train.py
        found = {name: setting.get(name, default) for name, _, default in _COMPARED}
        found["observation"] = setting.get("observation")
    else:  # hdeeprm-launch: its options.json
        env = _get(options, "pybatsim", "env")
        if not isinstance(env, Mapping):
            return {}
        actions = env.get("actions") if isinstance(env.get("actions"), Mapping) else {}
        found = {"pick_limit": actions.get("pick_limit", "fits"),
                 "decision": _get(options, "simulation", "decision"),
                 "mode": actions.get("mode"), "reservation": env.get("reservation", "fcfs"),
                 "observation": env.get("observation")}
    return {k: v for k, v in found.items() if v is not None}


def setting_differences(options: Any, config: EnvConfig | Any) -> list[str]:
    """``"pick_limit 'easy' (here 'fits', pybatsim.env.actions.pick_limit)"`` for each compared
    setting the checkpoint records with another value than ``config``'s."""
    trained = trained_setting(options)
    here = {name: getattr(config, name, None) for name, _, _ in _COMPARED}
    observation = getattr(config, "observation", None)
    uses_order = ("easy" in (trained.get("pick_limit"), here["pick_limit"])
                  or trained.get("observation") in _RESERVING or observation in _RESERVING)
    out = []
    for name, where, _ in _COMPARED:
        if name == "reservation" and not uses_order:
            continue
        if name in trained and here[name] is not None and trained[name] != here[name]:
            out.append(f"{name} {trained[name]!r} (here {here[name]!r}, {where})")
    return out


def _get(options: Mapping, *keys: str) -> Any:
    value: Any = options
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value
