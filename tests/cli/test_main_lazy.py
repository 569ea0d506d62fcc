"""``hdrm COMMAND`` imports only that sub-command's module; help and typos still see them all."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from hdrm.cli import main as cli_main


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def test_every_command_name_is_the_one_its_module_registers():
    # the table maps a word to a module: each module alone must add exactly that word
    for name, module in cli_main.COMMANDS.items():
        assert _choices(cli_main.build_parser([name, "--help"])) == [name], module
    assert _choices(cli_main.build_parser()) == list(cli_main.COMMANDS)


@pytest.mark.parametrize("argv", [[], ["--help"], ["-v"], ["replya", "x"]])
def test_without_a_known_command_every_command_is_built(argv):
    assert _choices(cli_main.build_parser(argv)) == list(cli_main.COMMANDS)


def test_a_typo_still_gets_argparse_choices(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main.main(["replya"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'replya'" in err and "replay" in err and "fragmentation" in err


def test_hdrm_replay_does_not_import_the_other_commands():
    code = ("import sys; from hdrm.cli import main as m; m.build_parser(['-v', 'replay', '--help']);"
            "print(sorted(k for k in sys.modules if k.startswith('hdrm.cli.') and k.endswith('_cmd')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['hdrm.cli.replay_cmd']"
