"""``hdeeprm-launch`` end to end: the shipped examples with tiny budgets, every bad-input path
(exit 2, one line on stderr, no traceback), checkpoint round trips and determinism."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hdrm.launcher import main
from hdrm.results.learning import read_actions_csv, read_episodes_csv
from hdrm.results.run import Run

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
AGENTS = ROOT / "agents"
#: Shipped example -> drop-in agent that runs it.
SHIPPED = {"classic": "classic", "reinforce": "reinforce", "a2c": "actor_critic", "ppo": "ppo",
           "ppo_jobpick": "ppo"}
TINY_PPO = {"rollout_steps": 16, "minibatch": 8, "epochs": 1}


def merge(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``changes`` merged in, nested objects key by key (None deletes a key)."""
    out = dict(data)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def options_copy(folder: Path, example: str, changes: dict[str, Any] | None = None,
                 name: str = "options.json") -> Path:
    """A copy of a shipped options file in ``folder`` (input paths made absolute), changed."""
    source = EXAMPLES / example / "options.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    for key in ("workload_file_path", "platform_file_path"):
        if data.get(key):
            data[key] = str((source.parent / data[key]).resolve())
    data = merge(data, changes or {})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def tiny(example: str, **agent: Any) -> dict[str, Any]:
    """Changes giving an example a tiny budget: 2 episodes of 20 jobs, short PPO rollouts."""
    params = dict(TINY_PPO) if example.startswith("ppo") else {}
    return {"nb_jobs": 20, "pybatsim": {"agent": {"episodes": 2, "params": params, **agent}}}


#: A line-based progress line (stderr is not a terminal under capsys).
PROGRESS_LINE = re.compile(r"^hdeeprm-launch: episode \d+ \(\d+/\d+\): .*\n", re.MULTILINE)


def launch(capsys, *argv: Any) -> tuple[int, str, str]:
    """Run the launcher in-process: (status, stdout, stderr without the progress lines)."""
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, PROGRESS_LINE.sub("", captured.err)


def agent_file(name: str) -> Path:
    return AGENTS / f"{name}.py"


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# ---------------------------------------------------------------------------- shipped examples


@pytest.mark.parametrize("example", sorted(SHIPPED))
def test_every_shipped_example_runs_with_a_tiny_budget(tmp_path, capsys, example):
    options = options_copy(tmp_path, example, tiny(example))
    out = tmp_path / "out"
    status, stdout, stderr = launch(capsys, agent_file(SHIPPED[example]), options, "--outdir", out)
    assert status == 0, stderr
    episodes_expected = 2
    run = Run(out)
    episodes = read_episodes_csv(run.file("episodes.csv"))
    assert episodes.episode.tolist() == list(range(episodes_expected))
    actions = read_actions_csv(run.file("actions.csv"))
    assert len(actions) > 0 and set(actions.episode.tolist()) == set(range(episodes_expected))
    assert len(run.jobs()) == 20  # out_jobs.csv: the 20 jobs of the last episode
    assert {"out_schedule.csv", "out_timeline.csv", "overutilizations.json"} <= {
        p.name for p in out.iterdir()}
    learned = [not math.isnan(v) for v in episodes.loss]
    if example == "classic":
        assert not any(learned)
    elif example in ("reinforce", "a2c"):
        assert all(learned)  # one update per episode
    else:
        assert any(learned)  # PPO: an episode in which a 16-step rollout filled
    assert f"{episodes_expected} episodes" in stdout and "objective" in stdout


def test_the_return_is_minus_the_objective_and_the_table_shows_it(tmp_path, capsys):
    options = options_copy(tmp_path, "classic", tiny("classic", episodes=3))
    status, stdout, _ = launch(capsys, agent_file("classic"), options, "--outdir", tmp_path / "o")
    assert status == 0
    episodes = read_episodes_csv(tmp_path / "o" / "episodes.csv")
    schedule = Run(tmp_path / "o").schedule()
    assert episodes.mean_bounded_slowdown[-1] == pytest.approx(schedule["mean_bounded_slowdown"])
    assert episodes.returns[-1] == pytest.approx(-schedule["mean_bounded_slowdown"])
    assert episodes.makespan_s[-1] == pytest.approx(schedule["makespan"])
    assert episodes.energy_j[-1] == pytest.approx(schedule["consumed_joules"])
    header = next(line for line in stdout.splitlines() if "episode" in line and "return" in line)
    assert header.split() == ["episode", "steps", "return", "loss", "makespan_h", "mean_wait_s",
                              "mean_bsld", "energy_MJ", "wall_s"]
    assert "objective avg_bounded_slowdown: last" in stdout


def test_classic_heuristic_outside_the_pairs_matches_the_engine(tmp_path, capsys):
    """A classic "sjf" agent gets an env whose one action is sjf; it decides as the engine does."""
    from hdrm.sim.engine import Simulation, SimulationConfig
    from hdrm.sim.inputs import InputSpec, load_inputs

    changes = {"nb_jobs": 100, "pybatsim": {"agent": {"policy": "sjf"}}}
    options = options_copy(tmp_path, "ppo_jobpick", changes)
    options = options_copy(tmp_path, "ppo_jobpick", merge(changes, {
        "workload": {"start_index": 0}, "pybatsim": {"env": {
            "observation": "small", "actions": {"mode": "policy_pair", "window": 128}}}}))
    status, stdout, stderr = launch(capsys, agent_file("classic"), options, "--outdir", tmp_path / "o")
    assert status == 0, stderr
    assert "policy_pair with 1 actions" in stdout
    launched = {r["job_id"]: float(r["starting_time"]) for r in read_rows(tmp_path / "o" / "out_jobs.csv")}
    platform, workload = load_inputs(InputSpec(json.loads(options.read_text())["workload_file_path"],
                                               homogeneous_procs=256, conventions="rlscheduler",
                                               nb_jobs=100))
    result = Simulation(platform, workload, SimulationConfig(contention="none", decision="commit")).run("sjf")
    assert launched == {str(o.job.id): o.start_s for o in result.outcomes}
    assert set(read_actions_csv(tmp_path / "o" / "actions.csv").action_name) == {"sjf"}


def test_default_outdir_is_a_timestamped_folder_next_to_the_options(tmp_path, capsys):
    options = options_copy(tmp_path / "exp", "classic", tiny("classic"))
    assert launch(capsys, agent_file("classic"), options, "--quiet")[0] == 0
    assert launch(capsys, agent_file("classic"), options, "--quiet")[0] == 0
    runs = sorted((tmp_path / "exp" / "runs").iterdir())
    assert len(runs) == 2 and all((r / "episodes.csv").is_file() for r in runs)
    assert runs[0].name[:8].isdigit() and runs[0].name[8] == "-"


def test_quiet_prints_one_line(tmp_path, capsys):
    options = options_copy(tmp_path, "classic", tiny("classic"))
    status, stdout, stderr = launch(capsys, agent_file("classic"), options, "--quiet",
                                    "--outdir", tmp_path / "o")
    assert status == 0 and stderr == ""
    assert stdout.splitlines() == [f"hdeeprm-launch: 2 episodes, outputs in {tmp_path / 'o'}"]


def test_nbruns_repeat_the_episodes_with_one_model(tmp_path, capsys):
    options = options_copy(tmp_path, "reinforce", tiny("reinforce"))
    model = tmp_path / "m.pt"
    status, _, _ = launch(capsys, agent_file("reinforce"), options, "--outdir", tmp_path / "o",
                          "--nbruns", 2, "--episodes", 1, "--outmodel", model)
    assert status == 0 and model.is_file()
    episodes = read_episodes_csv(tmp_path / "o" / "episodes.csv")
    assert episodes.episode.tolist() == [0, 1] and not any(math.isnan(v) for v in episodes.loss)


# ---------------------------------------------------------------------------- models


def test_checkpoint_round_trip_train_then_test(tmp_path, capsys):
    import torch

    model = tmp_path / "models" / "reinforce.pt"
    train = options_copy(tmp_path / "train", "reinforce", tiny("reinforce", hidden=16))
    status, stdout, _ = launch(capsys, agent_file("reinforce"), train, "--outdir", tmp_path / "a",
                               "--outmodel", model)
    assert status == 0 and f"model saved to {model}" in stdout
    assert sorted(p.name for p in model.parent.iterdir()) == ["reinforce.pt"]  # atomic: no temp
    saved = torch.load(model, weights_only=True)
    assert saved["options"]["pybatsim"]["agent"]["hidden"] == 16
    test = options_copy(tmp_path / "test", "reinforce", tiny("reinforce", hidden=16, run="test"))
    outs = []
    for k in range(2):
        status, stdout, stderr = launch(capsys, agent_file("reinforce"), test, "--outdir",
                                        tmp_path / f"t{k}", "--inmodel", model)
        assert status == 0 and stderr == "", stderr
        assert "(test)" in stdout
        outs.append(read_episodes_csv(tmp_path / f"t{k}" / "episodes.csv"))
    assert all(math.isnan(v) for v in outs[0].loss)  # no learning in test runs
    assert outs[0].returns.tolist() == outs[1].returns.tolist()
    after = torch.load(model, weights_only=True)  # testing does not touch the model
    assert all(torch.equal(saved["model_state_dict"][k], v) for k, v in after["model_state_dict"].items())


def test_testing_without_a_model_says_so(tmp_path, capsys):
    test = options_copy(tmp_path, "a2c", tiny("a2c", run="test", episodes=1))
    status, _, stderr = launch(capsys, agent_file("actor_critic"), test, "--outdir", tmp_path / "o")
    assert status == 0
    assert stderr == "hdeeprm-launch: note: evaluating an untrained model (no --inmodel)\n"


# ---------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("example", ["ppo", "reinforce"])
def test_same_seed_same_results(tmp_path, capsys, example):
    options = options_copy(tmp_path, example, tiny(example, episodes=3))
    for k in range(2):
        assert launch(capsys, agent_file(SHIPPED[example]), options, "--quiet", "--outdir",
                      tmp_path / f"r{k}")[0] == 0
    first, second = ([{k: v for k, v in row.items() if k != "wall_s"} for row in
                      read_rows(tmp_path / f"r{k}" / "episodes.csv")] for k in range(2))
    assert first == second and len(first) == 3
    for name in ("actions.csv", "out_jobs.csv"):
        assert (tmp_path / "r0" / name).read_text() == (tmp_path / "r1" / name).read_text()
    other = options_copy(tmp_path / "seed", example, merge(tiny(example, episodes=3), {"seed": 7}))
    assert launch(capsys, agent_file(SHIPPED[example]), other, "--quiet", "--outdir", tmp_path / "s")[0] == 0
    third = [{k: v for k, v in row.items() if k != "wall_s"} for row in
             read_rows(tmp_path / "s" / "episodes.csv")]
    assert third != first


# ---------------------------------------------------------------------------- bad input


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


TWO_AGENTS = """
from hdrm.agents.base import ClassicAgent

class A(ClassicAgent):
    pass

class B(ClassicAgent):
    pass
"""

FAILING_INIT = """
from hdrm.agents.base import ClassicAgent

class Broken(ClassicAgent):
    def __init__(self, config, observation_space, action_space, action_names=None, seed=0):
        raise RuntimeError("no GPU here")
"""


def bad_inputs(tmp: Path) -> dict[str, tuple[list[Any], str]]:
    """Each bad input: (arguments, regular expression the stderr line must match)."""
    classic = agent_file("classic")
    good = options_copy(tmp / "good", "classic", tiny("classic"))
    reinforce = options_copy(tmp / "rl", "reinforce", tiny("reinforce"))
    return {
        "missing options": ([classic, tmp / "none.json"],
                            rf"{tmp / 'none.json'}: no such options file"),
        "invalid JSON": ([classic, write(tmp / "bad.json", '{"seed": 1,\n  "nb_jobs": }')],
                         rf"{tmp / 'bad.json'}:2:14: invalid JSON"),
        "bad option value": ([classic, options_copy(tmp / "v", "classic",
                                                     {"pybatsim": {"env": {"objective": "makespn"}}})],
                             r"options\.json: pybatsim\.env\.objective: unknown objective "
                             r"\"makespn\"; did you mean 'makespan'"),
        "unknown key": ([classic, options_copy(tmp / "k", "classic", {"nb_job": 3})],
                        r"options\.json: .*nb_job.*did you mean 'nb_jobs'"),
        "bad policy": ([classic, options_copy(tmp / "p", "classic",
                                              {"pybatsim": {"agent": {"policy": "shortest-high_gflop"}}})],
                       r"pybatsim\.agent\.policy: unknown policy \"shortest-high_gflop\"; did you mean "
                       r"'shortest-high_gflops'"),
        "missing workload": ([classic, options_copy(tmp / "w", "classic",
                                                    {"workload_file_path": str(tmp / "no.swf")})],
                             rf"{tmp / 'no.swf'}"),
        "batsim engine": ([classic, options_copy(tmp / "e", "classic", {
            "engine": "batsim", "batsim": {"binary": "no-such-batsim"}})],
            r"options\.json: batsim\.binary: 'no-such-batsim' not found on PATH; install Batsim 4\.x"
            if _has_pybatsim() else r"engine 'batsim' needs PyBatsim 3\.2\.1"),
        "classic job_pick": ([classic, options_copy(tmp / "j", "ppo_jobpick", tiny("ppo_jobpick"))],
                             r"a classic agent applies a policy pair, got mode 'job_pick'"),
        "missing agent": ([tmp / "nope.py", good], rf"agent file {tmp / 'nope.py'}: no such file"),
        "syntax error": ([write(tmp / "syn.py", "class X(:\n"), good],
                         rf"{tmp / 'syn.py'}:1: syntax error"),
        "no Agent class": ([write(tmp / "none.py", "x = 1\n"), good],
                           rf"agent file {tmp / 'none.py'}: no Agent subclass defined"),
        "two Agent classes": ([write(tmp / "two.py", TWO_AGENTS), good],
                              rf"agent file {tmp / 'two.py'}: 2 Agent subclasses: A, B"),
        "failing constructor": ([write(tmp / "init.py", FAILING_INIT), good],
                                rf"{tmp / 'init.py'}:6: creating Broken failed: RuntimeError: no GPU"),
        "bad agent setting": ([agent_file("reinforce"), options_copy(tmp / "s", "reinforce", tiny(
            "reinforce", params={"ent_coeff": 0.1}))],
            r"options\.json: pybatsim\.agent\.params: unknown setting 'ent_coeff'; did you mean "
            r"'ent_coef'"),
        "missing model": ([agent_file("reinforce"), reinforce, "--inmodel", tmp / "m.pt"],
                          rf"checkpoint {tmp / 'm.pt'}: no such file"),
        "corrupt model": ([agent_file("reinforce"), reinforce, "--inmodel",
                           write(tmp / "junk.pt", "not a model")],
                          rf"checkpoint {tmp / 'junk.pt'}: not a readable hdrm checkpoint"),
        "model of a classic": ([classic, good, "--outmodel", tmp / "c.pt"],
                               r"--outmodel .*c\.pt: .*classic\.py is a classic agent, which has no model"),
        "zero runs": ([classic, good, "--nbruns", 0], r"--nbruns: expected a positive number"),
        "zero episodes": ([classic, good, "--episodes", 0], r"--episodes: expected a positive number"),
    }


def _has_pybatsim() -> bool:
    """PyBatsim is installed apart from hdrm's requirements (README.rst); a machine may lack it."""
    try:
        import batsim.batsim  # noqa: F401
    except ImportError:
        return False
    return True


BAD = sorted(bad_inputs(Path("/tmp")).keys())


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, case):
    argv, pattern = bad_inputs(tmp_path)[case]
    status, stdout, stderr = launch(capsys, *argv, "--outdir", tmp_path / "out")
    assert status == 2
    assert stdout == ""
    assert stderr.endswith("\n") and stderr.count("\n") == 1, stderr
    assert stderr.startswith("hdeeprm-launch: error: ")
    assert "Traceback" not in stderr
    assert re_search(pattern, stderr), f"{pattern!r} not in {stderr!r}"


def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("a file, not a folder\n")
    good = options_copy(tmp_path / "good", "classic", tiny("classic"))
    status, stdout, stderr = launch(capsys, agent_file("classic"), good, "--outdir", taken / "run")
    assert status == 2 and stdout == ""
    assert stderr == (f"hdeeprm-launch: error: --outdir: cannot create the folder {taken / 'run'}: "
                      "Not a directory; give a folder you can write to\n")


def re_search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


def test_checkpoint_of_another_network_is_refused(tmp_path, capsys):
    model = tmp_path / "m.pt"
    small = options_copy(tmp_path / "a", "reinforce", tiny("reinforce", hidden=8, episodes=1))
    assert launch(capsys, agent_file("reinforce"), small, "--outdir", tmp_path / "o1",
                  "--outmodel", model)[0] == 0
    wide = options_copy(tmp_path / "b", "reinforce", tiny("reinforce", hidden=32, run="test"))
    status, _, stderr = launch(capsys, agent_file("reinforce"), wide, "--outdir", tmp_path / "o2",
                               "--inmodel", model)
    assert status == 2 and stderr.count("\n") == 1
    assert stderr.startswith(f"hdeeprm-launch: error: checkpoint {model}: parameter ")
    assert "has shape [" in stderr and "check hidden" in stderr
    job_pick = options_copy(tmp_path / "c", "ppo_jobpick", tiny("ppo_jobpick"))
    status, _, stderr = launch(capsys, agent_file("ppo"), job_pick, "--outdir", tmp_path / "o3",
                               "--inmodel", model)
    assert status == 2 and f"checkpoint {model}: " in stderr and stderr.count("\n") == 1


def test_the_console_script_exits_2_without_a_traceback(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "hdrm.launcher", str(agent_file("classic")),
                          str(tmp_path / "missing.json")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert out.stderr == f"hdeeprm-launch: error: {tmp_path / 'missing.json'}: no such options file; check the path\n"


def test_progress_bars_on_a_terminal_only(tmp_path, capsys, monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    options = options_copy(tmp_path, "classic", tiny("classic"))
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([str(agent_file("classic")), str(options), "--outdir", str(tmp_path / "o")]) == 0
    shown = terminal.getvalue()
    assert "2/2" in shown and "episode/s" in shown and "episode 1:" in shown and "job" in shown
    quiet = Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main([str(agent_file("classic")), str(options), "--outdir", str(tmp_path / "q"),
                 "--quiet"]) == 0
    assert quiet.getvalue() == ""


# ---------------------------------------------------------------------------- issue 25: actions

BAD_AGENT = '''
import numpy as np
from hdrm.agents.base import Agent


class Bad(Agent):
    """Valid first-allowed actions, then at decision {at} the bad action {kind}."""

    def decide(self, observation, mask):
        self.calls = getattr(self, "calls", 0) + 1
        valid = int(np.flatnonzero(mask)[0])
        if self.calls <= {at}:
            return valid
        if "{kind}" == "masked":
            return int(np.flatnonzero(~np.asarray(mask, dtype=bool))[0])
        return {kind}
'''


@pytest.mark.parametrize("kind, example, reason", [
    ("1.7", "classic", "invalid action 1.7 at decision 5 of episode 0 (simulated time {t} s): of "
     "type float, expected an int in 0..35; the mask allows 0-35 (36 of 36 actions)"),
    ("-1", "classic", "invalid action -1 at decision 5 of episode 0 (simulated time {t} s): out of "
     "range 0..35; the mask allows 0-35 (36 of 36 actions)"),
    ("masked", "ppo_jobpick", "invalid action {a} at decision 5 of episode 0 (simulated time {t} s): "
     "masked out; the mask allows {m}"),
])
def test_an_invalid_action_is_one_line_naming_the_agent_and_the_outputs_are_written(
        tmp_path, capsys, kind, example, reason):
    from hdrm.launch.actions import describe_mask

    agent = tmp_path / "bad.py"
    agent.write_text(BAD_AGENT.replace("{at}", "5").replace("{kind}", kind), encoding="utf-8")
    options = options_copy(tmp_path, example, {"nb_jobs": 20, "pybatsim": {"agent": {
        "type": "classic", "run": "test", "episodes": 2}}})
    outdir = tmp_path / "out"
    seen: dict[str, Any] = {}

    from hdrm.env.scheduling_env import SchedulingEnv

    real_step = SchedulingEnv.step

    def spy(self, action):  # the state of the decision after the last good one
        result = real_step(self, action)
        seen.update(time=result[4]["time"], mask=result[4]["action_mask"].copy())
        return result

    import unittest.mock

    with unittest.mock.patch.object(SchedulingEnv, "step", spy):
        status, stdout, stderr = launch(capsys, agent, options, "--outdir", outdir)
    assert status == 2 and stdout == ""
    lines = [line for line in stderr.splitlines() if "note: evaluating" not in line]
    assert len(lines) == 1 and "Traceback" not in stderr
    masked = int(np.flatnonzero(~seen["mask"])[0]) if kind == "masked" else None
    expected = reason.format(t=f"{seen['time']:g}", a=masked, m=describe_mask(seen["mask"]))
    jobs = read_rows(outdir / "out_jobs.csv")
    assert lines[0] == (f"hdeeprm-launch: error: {agent}: {expected}; outputs of what was done so "
                        f"far in {outdir}: actions.csv, episodes.csv, out_jobs.csv, "
                        f"out_schedule.csv, out_timeline.csv, overutilizations.json "
                        f"({len(jobs)} jobs ended, 0 episodes complete)")
    assert [int(r["step"]) for r in read_rows(outdir / "actions.csv")] == [0, 1, 2, 3, 4]
    assert all(float(r["finish_time"]) <= seen["time"] for r in jobs)



def test_an_invalid_first_action_says_nothing_was_written(tmp_path, capsys):
    # it said "outputs of what was done so far in OUT:  (0 jobs ended, ...)" of an empty folder
    agent = tmp_path / "bad.py"
    agent.write_text(BAD_AGENT.replace("{at}", "0").replace("{kind}", "-1"), encoding="utf-8")
    options = options_copy(tmp_path, "classic", {"nb_jobs": 20, "pybatsim": {"agent": {
        "type": "classic", "run": "test", "episodes": 2}}})
    outdir = tmp_path / "out"
    status, stdout, stderr = launch(capsys, agent, options, "--outdir", outdir, "--quiet")
    assert status == 2 and stdout == ""
    stderr = stderr.replace("hdeeprm-launch: note: evaluating an untrained model (no --inmodel)\n",
                            "")
    assert stderr == (f"hdeeprm-launch: error: {agent}: invalid action -1 at decision 0 of "
                      "episode 0 (simulated time 0 s): out of range 0..35; the mask allows 0-35 "
                      f"(36 of 36 actions); nothing was written to {outdir}\n")
    assert [p.name for p in outdir.iterdir()] == []


def test_jobs_the_platform_can_never_run_are_reported(tmp_path, capsys):
    # 17 of the first 30 SDSC jobs ask more than tiny4's 4 cores: the launch said nothing of them
    options = options_copy(tmp_path, "classic", {
        "nb_jobs": 30, "platform_file_path": str(ROOT / "platforms" / "tiny4.json")})
    outdir = tmp_path / "out"
    status, stdout, stderr = launch(capsys, agent_file("classic"), options, "--outdir", outdir,
                                    "--quiet")
    rejected = [r for r in read_rows(outdir / "out_jobs.csv") if r["final_state"] == "REJECTED"]
    assert status == 0 and len(rejected) == 17
    first = rejected[0]
    assert stderr == (
        "hdeeprm-launch: note: 17 of 30 jobs of the last episode were rejected: they can never run "
        f"on this platform (job {first['job_id']}: requests "
        f"{first['requested_number_of_resources']} cores, the platform has 4); out_jobs.csv lists "
        "them as REJECTED\n")
    status, _, stderr = launch(capsys, agent_file("classic"), options_copy(
        tmp_path / "b", "classic", {"nb_jobs": 20}), "--outdir", tmp_path / "b" / "out", "--quiet")
    assert status == 0 and stderr == ""  # none rejected: no note

# ---------------------------------------------------------------------------- issue 25: saving

def test_periodic_saves_follow_the_options_and_the_command_line(tmp_path, capsys):
    options = options_copy(tmp_path, "reinforce", tiny("reinforce", episodes=5,
                                                       save_every_episodes=2))
    status, out, _ = launch(capsys, agent_file("reinforce"), options, "--outdir", tmp_path / "a")
    assert status == 0
    assert (f"model saved to {tmp_path / 'a' / 'model.pt'} (3 saves, every 2 episodes and 10 min), "
            "the last after 5 of 5 episodes") in out
    status, out, _ = launch(capsys, agent_file("reinforce"), options, "--outdir", tmp_path / "b",
                            "--save-every-episodes", "0", "--save-every-minutes", "0")
    assert "(1 save, at the end only)" in out
    status, out, _ = launch(capsys, agent_file("reinforce"), options, "--outdir", tmp_path / "c",
                            "--save-every-episodes", "0", "--save-every-minutes", "1e-9")
    assert "(5 saves, every 1e-09 min)" in out  # after every episode, the last one included
    from hdrm.agents.checkpoint import read_checkpoint

    progress = read_checkpoint(tmp_path / "c" / "model.pt")["progress"]
    assert progress["episode"] == 5 and progress["finished"] is True
    status, _, err = launch(capsys, agent_file("reinforce"), options, "--outdir", tmp_path / "d",
                            "--save-every-minutes", "-1")
    assert status == 2 and err == ("hdeeprm-launch: error: --save-every-minutes: expected 0 (off) "
                                   "or a positive number, got -1\n")


def test_a_reused_output_folder_is_refused_unless_overwrite(tmp_path, capsys):
    options = options_copy(tmp_path, "classic", tiny("classic"))
    outdir = tmp_path / "o"
    assert launch(capsys, agent_file("classic"), options, "--outdir", outdir)[0] == 0
    # TensorBoard event files are written where the tensorboard package is installed (a GPU image)
    board = ["tensorboard"] if (outdir / "tensorboard").is_dir() else []
    (outdir / "gantt.png").write_bytes(b"a stale plot")
    (outdir / "mine.txt").write_text("user notes")
    status, out, err = launch(capsys, agent_file("classic"), options, "--outdir", outdir)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"hdeeprm-launch: error: --outdir {outdir}: holds the outputs of a "
                          "previous run (actions.csv, episodes.csv, gantt.png, ")
    status, _, err = launch(capsys, agent_file("classic"), options, "--outdir", outdir, "--overwrite")
    assert status == 0
    assert err == (f"hdeeprm-launch: note: --overwrite: removed a previous run's outputs from "
                   f"{outdir}: actions.csv, episodes.csv, gantt.png, out_jobs.csv, out_schedule.csv, "
                   "out_timeline.csv, overutilizations.json"
                   + "".join(f", {name}" for name in board) + " (other files kept)\n")
    assert sorted(p.name for p in outdir.iterdir()) == [
        "actions.csv", "episodes.csv", "mine.txt", "out_jobs.csv", "out_schedule.csv",
        "out_timeline.csv", "overutilizations.json", *board]


def test_the_other_class_flag_loads_matching_weights(tmp_path, capsys):
    model = tmp_path / "a2c.pt"
    a2c = options_copy(tmp_path / "a", "a2c", tiny("a2c", episodes=1))
    assert launch(capsys, agent_file("actor_critic"), a2c, "--outdir", tmp_path / "o1",
                  "--outmodel", model)[0] == 0
    ppo = options_copy(tmp_path / "b", "ppo", tiny("ppo", episodes=1, run="test"))
    status, _, err = launch(capsys, agent_file("ppo"), ppo, "--outdir", tmp_path / "o2",
                            "--inmodel", model)
    assert status == 2 and err == (
        f"hdeeprm-launch: error: checkpoint {model}: saved by agent class "
        "actor_critic.py:ActorCritic, expected ppo.py:AnnealedPPO (or a class it derives from); "
        "give a checkpoint of this agent, or --allow-other-class to load matching weights anyway\n")
    status, _, err = launch(capsys, agent_file("ppo"), ppo, "--outdir", tmp_path / "o3",
                            "--inmodel", model, "--allow-other-class")
    assert status == 0 and err == ""


# ---------------------------------------------------------------------------- issue 25: tensorboard

def test_tensorboard_asked_for_without_its_extra_is_one_line(tmp_path, capsys):
    import importlib.util

    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("tensorboard is installed here")
    options = options_copy(tmp_path, "reinforce", tiny("reinforce"))
    status, out, err = launch(capsys, agent_file("reinforce"), options, "--outdir", tmp_path / "o",
                              "--tensorboard")
    assert status == 2 and out == ""
    assert err == ("hdeeprm-launch: error: --tensorboard: TensorBoard logging needs the tensorboard "
                   "package, which is not installed; pip install 'hdrm[tensorboard]' (or pip "
                   "install -e '.[tensorboard]' in a checkout), or drop --tensorboard\n")
    assert not (tmp_path / "o").exists()  # refused before anything runs
    status, _, err = launch(capsys, agent_file("reinforce"), options, "--outdir", tmp_path / "o")
    assert status == 0 and err == ""  # without the flag: no TensorBoard logs, no message


def test_a_crashing_agent_keeps_the_model_of_its_last_completed_episode(tmp_path, capsys):
    agent = tmp_path / "crash.py"
    agent.write_text(
        "from hdrm.agents.reinforce import ReinforceAgent\n\n\n"
        "class Crash(ReinforceAgent):\n"
        "    def start_episode(self):\n"
        "        super().start_episode()\n"
        "        self.started = getattr(self, 'started', 0) + 1\n\n"
        "    def decide(self, observation, mask):\n"
        "        if self.started == 3 and len(self.rewards) == 4:\n"
        "            raise RuntimeError('a bug in the agent')\n"
        "        return super().decide(observation, mask)\n", encoding="utf-8")
    options = options_copy(tmp_path, "reinforce", tiny("reinforce", episodes=5,
                                                       save_every_episodes=0))
    # one line naming the agent's line (was: the RuntimeError's traceback out of main), status 1
    status, _, err = launch(capsys, agent, options, "--outdir", tmp_path / "o")
    assert status == 1
    assert err.startswith(f"hdeeprm-launch: error: {agent}:11 in decide: RuntimeError: a bug in "
                          "the agent; outputs of what was done so far in ")
    assert err.count("\n") == 1 and "Traceback" not in err
    from hdrm.agents.checkpoint import read_checkpoint

    progress = read_checkpoint(tmp_path / "o" / "model.pt")["progress"]
    assert progress["episode"] == 2 and progress["reason"] == "agent error"
    assert not progress["finished"]
    assert not (tmp_path / "o" / ".hdrm.lock").exists()


def test_an_evaluation_checkpoint_never_resumes_a_training(tmp_path, capsys):
    from hdrm.agents.checkpoint import read_checkpoint

    train = options_copy(tmp_path / "t", "reinforce", tiny("reinforce", episodes=3))
    assert launch(capsys, agent_file("reinforce"), train, "--outdir", tmp_path / "a")[0] == 0
    test = options_copy(tmp_path / "e", "reinforce", tiny("reinforce", episodes=2, run="test"))
    assert launch(capsys, agent_file("reinforce"), test, "--outdir", tmp_path / "b", "--inmodel",
                  tmp_path / "a" / "model.pt", "--outmodel", tmp_path / "e.pt")[0] == 0
    assert read_checkpoint(tmp_path / "e.pt")["progress"]["finished"] is True
    status, _, err = launch(capsys, agent_file("reinforce"), train, "--outdir", tmp_path / "c",
                            "--inmodel", tmp_path / "e.pt")
    assert status == 0 and "resuming" not in err
    assert list(read_episodes_csv(tmp_path / "c" / "episodes.csv").episode) == [0, 1, 2]


def test_a_resumed_ppo_learns_exactly_what_the_uninterrupted_one_does(tmp_path, capsys, monkeypatch):
    """PPO's rollout spans episodes (16 steps here, episodes of about 20): the partly filled
    rollout, the update counter and the generators come back with the weights and Adam's moments."""
    import shutil

    import torch

    from hdrm.agents import checkpoint
    from hdrm.agents.checkpoint import read_checkpoint

    real = checkpoint.save_snapshot
    kept = tmp_path / "episode2.pt"

    def keep_episode_2(state, path, options, progress=None):  # the unfinished save at episode 2
        written = real(state, path, options, progress)
        if progress and progress["episode"] == 2:
            shutil.copyfile(written, kept)
        return written

    monkeypatch.setattr(checkpoint, "save_snapshot", keep_episode_2)
    options = options_copy(tmp_path, "ppo", tiny("ppo", episodes=5, save_every_episodes=2))
    assert launch(capsys, agent_file("ppo"), options, "--outdir", tmp_path / "straight")[0] == 0
    saved = read_checkpoint(kept)
    assert saved["progress"]["finished"] is False and saved["progress"]["agent"]["objects"]["buffer"]["pos"] > 0
    status, _, err = launch(capsys, agent_file("ppo"), options, "--outdir", tmp_path / "resumed",
                            "--inmodel", kept)
    assert status == 0 and f"resuming the training of {kept} at episode 2 of 5" in err
    straight = read_rows(tmp_path / "straight" / "episodes.csv")[2:]
    resumed = read_rows(tmp_path / "resumed" / "episodes.csv")
    assert [{k: v for k, v in r.items() if k != "wall_s"} for r in resumed] == \
        [{k: v for k, v in r.items() if k != "wall_s"} for r in straight]
    a = read_checkpoint(tmp_path / "straight" / "model.pt")
    b = read_checkpoint(tmp_path / "resumed" / "model.pt")
    assert all(torch.equal(t, b["model_state_dict"][k]) for k, t in a["model_state_dict"].items())
