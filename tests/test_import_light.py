"""Importing hdrm, its layers L0-L3 (but the batsim engine) and the env never loads torch or zmq.

Each check runs in a fresh interpreter, so modules imported by other tests cannot hide an import.
Modules are found with :mod:`pkgutil` from the files on disk, so modules not written yet are simply
not there; packages that must not be imported (hdrm.batsim, hdrm.agents, hdrm.cli) are not entered.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

HEAVY = ("torch", "zmq")

#: Parts of the package this test does not import (their own layer may use torch or zmq): the
#: distributed learners train torch networks.
SKIPPED = ("hdrm.batsim", "hdrm.agents", "hdrm.launcher", "hdrm.cli", "hdrm.distributed.ppo",
           "hdrm.distributed.apex")

_PROBE = textwrap.dedent("""
    import importlib, json, pkgutil, sys

    heavy, skipped = {heavy!r}, {skipped!r}

    def light_modules(path, prefix):
        for info in pkgutil.iter_modules(path, prefix):
            if info.name.startswith(skipped):
                continue
            yield info.name
            if info.ispkg:
                package = importlib.import_module(info.name)
                yield from light_modules(package.__path__, info.name + ".")

    import hdrm
    report = {{"imported": ["hdrm"], "culprits": {{}}, "errors": {{}}}}
    report["culprits"]["hdrm"] = [m for m in heavy if m in sys.modules]
    for name in light_modules(hdrm.__path__, "hdrm."):
        before = set(sys.modules)
        try:
            importlib.import_module(name)
        except Exception as exc:
            report["errors"][name] = f"{{type(exc).__name__}}: {{exc}}"
            continue
        report["imported"].append(name)
        pulled = [m for m in heavy if m in sys.modules and m not in before]
        if pulled:
            report["culprits"][name] = pulled
    report["loaded"] = [m for m in heavy if m in sys.modules]
    print(json.dumps(report))
    """)


def _probe() -> dict:
    code = _PROBE.format(heavy=HEAVY, skipped=SKIPPED)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_light_layers_do_not_import_torch_or_zmq():
    report = _probe()
    assert {
        "hdrm",
        "hdrm.errors",
        "hdrm.registry",
        "hdrm.options",
        "hdrm.platform.model",
        "hdrm.workload.job",
    } <= set(report["imported"])
    assert not any(m.startswith(SKIPPED) for m in report["imported"])
    assert not report["errors"], f"modules that fail to import: {report['errors']}"
    culprits = {name: mods for name, mods in report["culprits"].items() if mods}
    assert not culprits, f"modules that import {'/'.join(HEAVY)}: {culprits}"
    assert report["loaded"] == []


def test_bare_import_is_standard_library_only():
    code = (
        "import sys; before = set(sys.modules); import hdrm, hdrm.options; "
        "print(sorted(m.split('.')[0] for m in set(sys.modules) - before "
        "if m.split('.')[0] not in sys.stdlib_module_names and m.split('.')[0] != 'hdrm'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
