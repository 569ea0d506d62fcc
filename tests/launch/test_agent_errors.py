"""An exception of the user's agent.py (decide, rewarded, start_episode, end_episode): one line
naming the agent's file and line, the method and the exception, exit status 1, and the outputs of
what was done so far written as one consistent set; ``--traceback`` or ``HDRM_TRACEBACK=1`` prints
the full trace first. (It was a traceback from deep inside hdrm, exit 1 and nothing written.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hdrm.cli.main import main as hdrm_main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_launcher import launch, options_copy, read_rows  # noqa: E402

CRASHING = '''
import numpy as np
from hdrm.agents.base import Agent


class Crash(Agent):
    """Valid actions, then an error in {method} at decision 5."""

    def decide(self, observation, mask):
        self.calls = getattr(self, "calls", 0) + 1
        if "{method}" == "decide" and self.calls > 5:
            return self.calls // 0
        return int(np.flatnonzero(mask)[0])

    def end_episode(self):
        if "{method}" == "end_episode":
            {{}}["loss"]
        return {{}}
'''
HINT = "(run with --traceback for the full trace)"
OUTPUTS = ("actions.csv, episodes.csv, out_jobs.csv, out_schedule.csv, out_timeline.csv, "
           "overutilizations.json")


def _setup(tmp_path: Path, method: str) -> tuple[Path, Path, Path]:
    agent = tmp_path / "agent.py"
    agent.write_text(CRASHING.format(method=method), encoding="utf-8")
    options = options_copy(tmp_path, "classic", {"nb_jobs": 20, "pybatsim": {"agent": {
        "type": "classic", "run": "test", "episodes": 2}}})
    return agent, options, tmp_path / "out"


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "note: evaluating" not in line]


def test_an_error_in_decide_is_one_line_naming_the_agents_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HDRM_TRACEBACK", raising=False)
    agent, options, outdir = _setup(tmp_path, "decide")
    status, stdout, stderr = launch(capsys, agent, options, "--outdir", outdir)
    assert status == 1 and stdout == "" and "Traceback" not in stderr
    jobs = read_rows(outdir / "out_jobs.csv")
    assert _errors(stderr) == [
        f"hdeeprm-launch: error: {agent}:12 in decide: ZeroDivisionError: integer division or "
        f"modulo by zero; outputs of what was done so far in {outdir}: {OUTPUTS} ({len(jobs)} "
        f"jobs ended, 0 episodes complete) {HINT}"]
    assert [int(r["step"]) for r in read_rows(outdir / "actions.csv")] == [0, 1, 2, 3, 4]


def test_an_error_in_end_episode_names_it(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HDRM_TRACEBACK", raising=False)
    agent, options, outdir = _setup(tmp_path, "end_episode")
    status, _, stderr = launch(capsys, agent, options, "--outdir", outdir, "--quiet")
    assert status == 1
    (line,) = _errors(stderr)
    assert line.startswith(f"hdeeprm-launch: error: {agent}:17 in end_episode: KeyError: 'loss'; "
                           f"outputs of what was done so far in {outdir}: ")
    assert line.endswith(f"(20 jobs ended, 0 episodes complete) {HINT}")


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_traceback_prints_the_full_trace_first(tmp_path, capsys, monkeypatch, how):
    agent, options, outdir = _setup(tmp_path, "decide")
    extra = ["--traceback"] if how == "flag" else []
    if how == "environment":
        monkeypatch.setenv("HDRM_TRACEBACK", "1")
    status, _, stderr = launch(capsys, agent, options, "--outdir", outdir, *extra)
    assert status == 1
    lines = _errors(stderr)
    assert lines[0] == "Traceback (most recent call last):"
    assert f'  File "{agent}", line 12, in decide' in lines
    assert "ZeroDivisionError: integer division or modulo by zero" in lines
    assert lines[-1].startswith(f"hdeeprm-launch: error: {agent}:12 in decide: ")
    assert HINT not in stderr


@pytest.mark.parametrize("how", ["flag", "environment", "neither"])
def test_hdrm_traceback_shows_the_trace_of_a_one_line_error(tmp_path, capsys, monkeypatch, how):
    missing = tmp_path / "missing.json"
    monkeypatch.delenv("HDRM_TRACEBACK", raising=False)
    if how == "environment":
        monkeypatch.setenv("HDRM_TRACEBACK", "1")
    argv = (["--traceback"] if how == "flag" else []) + ["platform", str(missing)]
    assert hdrm_main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"hdrm platform: error: {missing}")
    assert ("Traceback (most recent call last):" in err) == (how != "neither")
