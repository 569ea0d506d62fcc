"""``hdrm COMMAND`` imports only that sub-command's module; help and typos still see them all."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from hdrm.cli import main as cli_main

REPO = Path(__file__).resolve().parents[2]


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


def _modules_after_replay(tmp_path, *args: str) -> set[str]:
    """Modules loaded by ``hdrm replay ARGS`` run in a fresh interpreter."""
    code = ("import io, contextlib, sys; from hdrm.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main({['replay', *args, '--outdir', str(tmp_path / 'out')]!r}) == 0\n"
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_a_cpu_replay_leaves_the_gpu_engine_and_the_sla_reports_unloaded(tmp_path):
    # a CPU replay never runs the GPU engine, its policies and outputs, nor (without --tenants)
    # the SLA report and the tenant files: importing them cost a short replay ~0.04 CPU s
    trace = str(REPO / "workloads" / "lublin_256_first500.swf")
    loaded = _modules_after_replay(tmp_path, "--homogeneous-procs", "128", "--workload", trace,
                                   "--policy", "fcfs", "--backfill", "easy", "--contention",
                                   "none", "--quiet")
    assert "numpy" in loaded  # the SWF reader parses with numpy
    assert "hdrm.sim.engine" in loaded and "hdrm.sim.outputs" in loaded
    unwanted = {"hdrm.cli.gpu_replay", "hdrm.core.gpu_scheduler", "hdrm.sim.gpu_engine",
                "hdrm.sim.gpu_outputs", "hdrm.results.sla", "hdrm.workload.tenant_files",
                "hdrm.workload.openb", "hdrm.workload.gavel", "hdrm.platform.openb",
                "hdrm.sim.preemptive", "hdrm.results.run", "hdrm.results.learning",
                "hdrm.policies.sla_orders", "hdrm.workload.tenants"}
    assert not unwanted & loaded, sorted(unwanted & loaded)


def test_a_batsim_json_replay_on_a_simgrid_platform_needs_no_numpy(tmp_path):
    # the bench's case (issue 27): reading, simulating (fcfs + EASY) and writing the outputs
    # of a Batsim JSON workload on a SimGrid platform never import numpy (~0.09 CPU s),
    # nor defusedxml (the file declares no entity) or lxml (nothing is written in XML)
    platform = tmp_path / "platform.xml"
    workload = tmp_path / "workload.json"
    code = ("from hdrm.platform.model import Platform; from hdrm.platform.simgrid import "
            "write_simgrid_xml; from hdrm.workload.swf import read_swf; from "
            "hdrm.workload.batsim_json import write_batsim_json; "
            f"write_simgrid_xml(Platform.homogeneous(256), {str(platform)!r}); "
            f"write_batsim_json(read_swf({str(REPO / 'workloads' / 'lublin_256_first500.swf')!r}),"
            f" {str(workload)!r})")
    subprocess.run([sys.executable, "-c", code], check=True)
    loaded = _modules_after_replay(tmp_path, "--platform", str(platform), "--workload",
                                   str(workload), "--policy", "fcfs", "--backfill", "easy",
                                   "--contention", "none", "--quiet")
    assert "hdrm.sim.outputs" in loaded and (tmp_path / "out" / "out_jobs.csv").exists()
    heavy = {"numpy", "defusedxml", "lxml", "hdrm.workload.swf", "hdrm.platform.loader"} & loaded
    assert not heavy, sorted(heavy)  # (nor the SWF reader and the JSON platform loader)
    # nor what a CPU platform without tenants or dependencies never uses: accelerator types,
    # SLA orders, the dependency graph; nor difflib (suggestions for wrong names only)
    unused = {"hdrm.platform.accelerators", "hdrm.policies.sla_orders", "hdrm.workload.tenants",
              "hdrm.workload.dependencies", "hdrm.core.dependencies", "difflib"} & loaded
    assert not unused, sorted(unused)
