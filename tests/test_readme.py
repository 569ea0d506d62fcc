"""README.rst's commands are true: CI runs its install and test commands, and the experiment and
quick-start commands run (with their outputs redirected to a temporary folder)."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.rst").read_text(encoding="utf-8")


def literal_block(title: str) -> list[str]:
    """The command lines of the literal block that follows the paragraph ending ``title::``."""
    after = README.split(title + "::", 1)[1]
    lines = []
    for line in after.splitlines()[1:]:
        if line.startswith("    "):
            lines.append(line.strip())
        elif line.strip() and lines:
            break
    return lines


def test_ci_runs_exactly_the_readme_install_and_test_commands():
    (install,) = literal_block("without its obsolete ``pyzmq<23`` pin)")
    (test,) = literal_block("Test")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert install in ci and test in ci


def _commands() -> list[str]:
    return (literal_block("and write Batsim-style outputs to ``runs/quickstart``")
            + literal_block("both on the shipped examples")
            + literal_block("Look at the results")
            + literal_block("allocation curves to ``runs/fgd``"))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


@pytest.mark.parametrize("index", range(len(_commands())))
def test_command_runs(index, outputs):
    command = _commands()[index].replace("runs/", f"{outputs}/")
    words = shlex.split(command)
    tool = {"hdrm": "hdrm.cli.main", "hdeeprm-launch": "hdrm.launcher"}[words[0]]
    out = subprocess.run([sys.executable, "-m", tool, *words[1:]], cwd=ROOT, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert not re.search(r"Traceback", out.stderr)


def test_cpu_build_of_torch_is_documented_and_admitted_by_the_pin():
    from packaging.specifiers import SpecifierSet

    (install,) = literal_block("without its obsolete ``pyzmq<23`` pin)")
    (cpu,) = literal_block("which the pin ``torch==2.13.0`` admits and\npip prefers")
    index = "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert cpu == install.replace("python -m pip install ", f"python -m pip install {index} ", 1)
    pins = [line for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
            if line.startswith("torch")]
    assert pins == ["torch==2.13.0"]
    pin = SpecifierSet(pins[0][len("torch"):])
    assert "2.13.0+cpu" in pin and "2.13.0" in pin  # the CPU wheels' local label satisfies it
    assert "pip check" in README and "pyzmq<23.0.0" in README  # the one expected pip check line
