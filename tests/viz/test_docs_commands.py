"""Every command shown in docs/plots.rst runs, in a folder holding the example run under the
names the page uses, and prints what the page shows."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.results.example import write_example_run

PAGE = Path(__file__).resolve().parents[2] / "docs" / "plots.rst"
#: Run folders the page's commands name besides example-run (all copies of the example run).
OTHER_RUNS = ("runs/fcfs", "runs/ppo", "big-run")


def console_commands(text: str) -> list[tuple[str, list[str]]]:
    """``(command, shown output lines)`` for each ``$ `` line of the page's console blocks."""
    commands: list[tuple[str, list[str]]] = []
    in_console = False
    for line in text.splitlines():
        if line.startswith(".. code-block::"):
            in_console = line.split("::")[1].strip() == "console"
        elif in_console and line.startswith("   $ "):
            commands.append((line[5:], []))
        elif in_console and line.startswith("   ") and commands:
            commands[-1][1].append(line[3:])
        elif line and not line.startswith(" "):
            in_console = False
    return commands


def test_the_page_shows_commands():
    commands = [c for c, _ in console_commands(PAGE.read_text())]
    assert commands[0].startswith("hdrm plot gant ")
    assert sum(c.startswith("hdrm plot ") for c in commands) >= 9
    assert any(c.startswith("hdrm compare ") for c in commands)


@pytest.mark.parametrize("index", range(len(console_commands(PAGE.read_text()))))
def test_command_runs(index: int, tmp_path: Path, monkeypatch, capsys):
    command, shown = console_commands(PAGE.read_text())[index]
    monkeypatch.chdir(tmp_path)
    if command.startswith("python -c "):
        exec(shlex.split(command)[2], {})  # noqa: S102 - the page's own one-liner
        assert (tmp_path / "example-run" / "out_jobs.csv").is_file()
        return
    for name in ("example-run",) + OTHER_RUNS:
        write_example_run(tmp_path / name)
    words = shlex.split(command.split(" > ")[0])
    assert words[0] == "hdrm"
    status = main(words[1:])
    out = capsys.readouterr()
    if "gant " in command:  # the page's example of an error
        assert status == 2 and out.err.startswith(shown[0][: shown[0].index("...")])
        return
    assert status == 0, out.err
    printed = out.out.splitlines()
    for expected in shown:
        if expected != "...":
            assert expected in printed
