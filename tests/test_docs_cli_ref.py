"""The Sphinx extension that generates the command-line reference (docs/_ext/cli_ref.py).

It must describe every sub-command and option the parsers really have, pick up a command as soon
as its module defines ``build_parser()``, label each command's section for ``:ref:`` links, and
keep links to announced pages that are not written yet from failing the ``-W`` build.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _cli_ref() -> ModuleType:
    """The Sphinx extension docs/_ext/cli_ref.py, imported from its file."""
    name = "hdrm_docs_cli_ref"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DOCS / "_ext" / "cli_ref.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_cli_reference_describes_every_subcommand_and_option():
    from hdrm.cli.main import build_parser

    cli_ref = _cli_ref()
    doc = cli_ref.describe(build_parser())
    parser = build_parser()
    installed = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert [s.prog for s in doc.subcommands] == [f"hdrm {name}" for name in installed]
    replay = next(s for s in doc.subcommands if s.prog == "hdrm replay")
    rows = {a.synopsis: a for g in replay.groups for a in g.arguments}
    assert rows["--policy POLICY"].default == "fcfs"
    assert rows["--outdir D"].default == "required"
    assert rows["--backfill BACKFILL"].help == ("Choices: none, easy, easy_first, conservative, "
                                                "greedy.")
    assert replay.exclusive == ("Exactly one of: --platform, --homogeneous-procs.",
                                "At most one of: --walltime-kill, --no-walltime-kill.")
    assert replay.usage.startswith("hdrm replay [-h] (--platform P.json | --homogeneous-procs N)")
    assert "hdrm replay --platform platforms/hetero.json" in replay.epilog


def test_cli_reference_synopses_and_expanded_help():
    cli_ref = _cli_ref()
    parser = argparse.ArgumentParser(prog="x")
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("-o", "--output", metavar="FILE", default="a.png",
                        help="save to %(metavar)s (default %(default)s)")
    parser.add_argument("--pair", nargs=2)
    parser.add_argument("--tag", nargs="*", default=["a", "b"])
    parser.add_argument("--fast", action="store_true", help="go")
    rows = [a for g in cli_ref.describe(parser).groups for a in g.arguments]
    assert [(a.synopsis, a.default, a.help) for a in rows] == [
        ("RUN_DIR", "required", ""),
        ("-o FILE, --output FILE", "a.png", "save to FILE (default a.png)"),
        ("--pair PAIR PAIR", "", ""),
        ("--tag [TAG ...]", "a b", ""),
        ("--fast", "", "go"),
    ]


def test_cli_reference_picks_up_a_command_once_its_module_has_build_parser(monkeypatch):
    cli_ref = _cli_ref()
    monkeypatch.setitem(cli_ref.COMMANDS, "later", "hdrm_docs_test_not_written_yet")
    assert cli_ref.load_parser("later") is None
    fake = ModuleType("hdrm_docs_test_not_written_yet")
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    assert cli_ref.load_parser("later") is None  # the module exists, build_parser() not yet
    fake.build_parser = lambda: argparse.ArgumentParser(prog="later")
    assert cli_ref.load_parser("later").prog == "later"
    launcher = cli_ref.load_parser("hdeeprm-launch")
    has_it = hasattr(importlib.import_module("hdrm.launcher"), "build_parser") \
        if importlib.util.find_spec("hdrm.launcher") else False
    assert (launcher is not None) == has_it


def test_cli_reference_renders_sections_with_labels():
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    from hdrm.cli.main import build_parser

    cli_ref = _cli_ref()
    document = new_document("<test>", get_default_settings(Parser))
    section = cli_ref.render(cli_ref.describe(build_parser()), document)
    text = section.astext()
    assert "--homogeneous-procs N" in text
    assert "Exactly one of: --platform, --homogeneous-procs." in text
    assert "cli-hdrm-replay" in document.ids


def test_links_to_pending_pages_become_text_until_the_page_exists():
    from docutils import nodes
    from sphinx.addnodes import pending_xref

    cli_ref = _cli_ref()
    text = nodes.inline(text="the environment")
    node = pending_xref(reftype="doc", reftarget="environment")
    def resolve(found: set[str], xref: pending_xref) -> nodes.Node | None:
        return cli_ref.resolve_pending_page(None, SimpleNamespace(found_docs=found), xref, text)

    assert resolve({"index"}, node) is text  # not written yet: the link text
    assert resolve({"environment"}, node) is None  # written: Sphinx links it
    assert resolve(set(), pending_xref(reftype="doc", reftarget="no_such_page")) is None
