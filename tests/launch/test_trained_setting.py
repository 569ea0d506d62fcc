"""A loaded model trained in another environment: ``hdeeprm-launch --inmodel`` says which
settings differ (those that change what the policy's actions mean without changing a shape)."""

from __future__ import annotations

import json
from pathlib import Path

from hdrm.agents.checkpoint import read_checkpoint
from hdrm.env.config import EnvConfig
from hdrm.launch.trained_setting import setting_differences, trained_setting
from hdrm.launcher import main as launch

REPO = Path(__file__).resolve().parents[2]
SWF = str(REPO / "workloads" / "lublin_256_first500.swf")


def _config(**kwargs) -> EnvConfig:
    base = dict(workload_file=SWF, platform_file=None, homogeneous_procs=256, mode="job_pick",
                conventions="rlscheduler", decision="event")
    return EnvConfig(**{**base, **kwargs})


def test_a_shipped_model_limited_to_easy_picks_names_its_limit_and_order():
    model = REPO / "models" / "ppo-kernel_sdsc_none_event_easypicks_f1_seed0.pt"
    options = read_checkpoint(model)["options"]
    assert trained_setting(options) == {"pick_limit": "easy", "decision": "event",
                                        "mode": "job_pick", "reservation": "f1",
                                        "observation": "job_window_predicted"}
    assert setting_differences(options, _config()) == [
        "pick_limit 'easy' (here 'fits', pybatsim.env.actions.pick_limit)",
        "reservation 'f1' (here 'fcfs', pybatsim.env.reservation)"]
    same = _config(pick_limit="easy", reservation="f1", observation="job_window_predicted")
    assert setting_differences(options, same) == []


def test_the_reservation_order_counts_only_where_something_uses_it():
    options = {"setting": {"mode": "job_pick", "decision": "event", "reservation": "wfp3",
                           "observation": "job_window"}}
    assert setting_differences(options, _config()) == []  # neither side reserves
    assert setting_differences(options, _config(observation="job_window_reservation")) == [
        "reservation 'wfp3' (here 'fcfs', pybatsim.env.reservation)"]
    assert setting_differences({"setting": {"decision": "commit"}}, _config()) == [
        "decision 'commit' (here 'event', simulation.decision)"]
    assert setting_differences(None, _config()) == [] and trained_setting([]) == {}


def test_the_launcher_warns_in_one_line_when_the_limit_differs(tmp_path, capsys):
    options = json.loads((REPO / "examples" / "ppo_jobpick" / "options.json").read_text())
    options.update(workload_file_path=SWF, nb_jobs=64)
    options["simulation"]["decision"] = "event"
    options["pybatsim"]["env"]["actions"]["pick_limit"] = "easy"
    options["pybatsim"]["agent"]["episodes"] = 1
    train = tmp_path / "train.json"
    train.write_text(json.dumps(options))
    agent = str(REPO / "agents" / "ppo.py")
    assert launch([agent, str(train), "--outdir", str(tmp_path / "a"), "--quiet"]) == 0
    model = tmp_path / "a" / "model.pt"
    assert "warning" not in capsys.readouterr().err
    assert launch([agent, str(train), "--inmodel", str(model), "--outdir", str(tmp_path / "b"),
                   "--quiet"]) == 0  # the same settings: nothing to say
    assert "was trained with" not in capsys.readouterr().err
    options["pybatsim"]["env"]["actions"]["pick_limit"] = "fits"
    options["pybatsim"]["agent"]["run"] = "test"
    other = tmp_path / "eval.json"
    other.write_text(json.dumps(options))
    assert launch([agent, str(other), "--inmodel", str(model), "--outdir", str(tmp_path / "c"),
                   "--quiet"]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if "was trained with" in x]
    assert lines == [f"hdeeprm-launch: warning: {model} was trained with pick_limit 'easy' "
                     "(here 'fits', pybatsim.env.actions.pick_limit): its policy acts here in an "
                     "environment it did not learn in; set those in the options file to match"]
