"""Sphinx extension: the command-line reference, generated from the argparse parsers at build time.

``.. hdrm-cli:: hdrm`` documents the ``hdrm`` command and every sub-command it has;
``.. hdrm-cli:: hdeeprm-launch`` documents ``hdeeprm-launch``. Each command gets a section (with the
label ``cli-<command>``, e.g. ``cli-hdrm-replay``, for ``:ref:`` links) holding its usage line,
description, one table per argument group (argument, default, meaning) and its examples (the
parser's epilog). The parsers are built by the code itself (:data:`COMMANDS`), so the page cannot
drift from the options the commands really accept. A command whose module or ``build_parser()``
does not exist yet (``hdrm.launcher`` while it is being written) renders a short note instead;
a module that exists but fails to import is a build warning (an error under ``-W``).

The extension also keeps ``:doc:`` links to the pages announced in :data:`PENDING_PAGES` from
breaking the ``-W`` build before those pages are written: such a link renders as its plain text
until the page exists, then as a normal link.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

#: Console command -> the module whose ``build_parser()`` builds its parser.
COMMANDS = {"hdrm": "hdrm.cli.main", "hdeeprm-launch": "hdrm.launcher"}

#: Pages other engineers are writing; ``:doc:`` links to them render as text until they exist.
PENDING_PAGES = frozenset({"environment", "launcher", "batsim", "results"})

#: Width of the generated usage lines (independent of the terminal that builds the docs).
USAGE_WIDTH = 96


@dataclass(frozen=True)
class ArgumentDoc:
    """One argument of a command, as the reference shows it.

    Attributes:
        synopsis: how it is written (``--policy POLICY``, ``-o FILE, --output FILE``, ``TRACE``).
        default: the default shown (``required``, a value, or empty when there is nothing to say).
        help: the help text with ``%(default)s``-style fields expanded and the choices appended.
    """

    synopsis: str
    default: str
    help: str


@dataclass(frozen=True)
class GroupDoc:
    """An argument group: its title and arguments."""

    title: str
    arguments: tuple[ArgumentDoc, ...]


@dataclass(frozen=True)
class CommandDoc:
    """Everything the reference shows about one command or sub-command.

    Attributes:
        prog: the command as typed (``hdrm replay``).
        usage: argparse's usage line, wrapped at :data:`USAGE_WIDTH`.
        description: the parser's description (or its one-line help as a sub-command).
        summary: the one-line help its parent command gives it (empty for a top-level command).
        groups: the argument groups that have documented arguments.
        exclusive: one sentence per mutually exclusive group.
        epilog: the parser's epilog (examples), verbatim.
        subcommands: the sub-commands, in the order the parser lists them.
    """

    prog: str
    usage: str
    description: str
    groups: tuple[GroupDoc, ...]
    exclusive: tuple[str, ...] = ()
    epilog: str = ""
    subcommands: tuple["CommandDoc", ...] = field(default_factory=tuple)
    summary: str = ""


def load_parser(command: str) -> argparse.ArgumentParser | None:
    """Build the parser of ``command`` (a key of :data:`COMMANDS`).

    Returns:
        The parser, or None when the command's module or its ``build_parser()`` does not exist yet.

    Raises:
        KeyError: ``command`` is not in :data:`COMMANDS`.
        Exception: whatever importing an existing module or building its parser raises.
    """
    module_name = COMMANDS[command]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    build = getattr(module, "build_parser", None)
    return build() if callable(build) else None


def describe(parser: argparse.ArgumentParser, summary: str = "") -> CommandDoc:
    """Describe ``parser`` and, recursively, its sub-commands.

    Args:
        parser: the parser.
        summary: the one-line help the parent gave this sub-command, used when it has no
            description.
    """
    subcommands: list[CommandDoc] = []
    for action in parser._actions:  # argparse keeps no public list of them
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # aliases map to the same parser
                    seen.add(id(sub))
                    subcommands.append(describe(sub, helps.get(name, "")))
    groups = []
    for group in parser._action_groups:
        rows = tuple(_argument(a, parser.prog) for a in group._group_actions if _documented(a))
        if rows:
            groups.append(GroupDoc(group.title or "arguments", rows))
    return CommandDoc(
        prog=parser.prog,
        usage=usage_line(parser),
        description=parser.description or summary,
        groups=tuple(groups),
        exclusive=tuple(_exclusive(parser)),
        epilog=parser.epilog or "",
        subcommands=tuple(subcommands),
        summary=summary,
    )


def usage_line(parser: argparse.ArgumentParser) -> str:
    """argparse's usage text for ``parser``, without the ``usage:`` prefix."""
    formatter = argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, "")
    return formatter.format_help().strip()


def _documented(action: argparse.Action) -> bool:
    hidden = action.help == argparse.SUPPRESS
    skipped = (argparse._HelpAction, argparse._SubParsersAction)
    return not hidden and not isinstance(action, skipped)


def synopsis(action: argparse.Action) -> str:
    """How an argument is written: ``--seed SEED``, ``-o FILE, --output FILE``, ``RUN_DIR``."""
    if not action.option_strings:
        return action.metavar if isinstance(action.metavar, str) else action.dest
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    value = _value_form(action)
    return ", ".join(f"{option} {value}" for option in action.option_strings)


def _value_form(action: argparse.Action) -> str:
    if action.metavar is not None:
        name = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    else:
        name = action.dest.upper()  # choices go to the help column, not into the synopsis
    forms = {"?": f"[{name}]", "*": f"[{name} ...]", "+": f"{name} [{name} ...]"}
    if isinstance(action.nargs, int):
        return " ".join([name] * action.nargs)
    return forms.get(action.nargs, name)


def _default(action: argparse.Action) -> str:
    if action.required or (not action.option_strings and action.nargs not in ("?", "*")):
        return "required"
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS):
        return ""
    if isinstance(action.default, (list, tuple)):
        return " ".join(map(str, action.default))
    return str(action.default)


def _argument(action: argparse.Action, prog: str) -> ArgumentDoc:
    text = _expanded_help(action, prog)
    if action.choices is not None:
        choices = ", ".join(map(str, action.choices))
        if choices not in text:
            text = f"{text} Choices: {choices}.".strip()
    return ArgumentDoc(synopsis(action), _default(action), text)


def _expanded_help(action: argparse.Action, prog: str) -> str:
    """The help text with argparse's ``%(name)s`` fields filled in, as ``--help`` shows it."""
    text = action.help or ""
    if "%" not in text:
        return " ".join(text.split())
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    try:
        return " ".join((text % params).split())
    except (KeyError, TypeError, ValueError):
        return " ".join(text.split())


def _exclusive(parser: argparse.ArgumentParser) -> list[str]:
    sentences = []
    for group in parser._mutually_exclusive_groups:
        names = ", ".join(a.option_strings[0] if a.option_strings else a.dest
                          for a in group._group_actions)
        sentences.append(f"{'Exactly' if group.required else 'At most'} one of: {names}.")
    return sentences


# ---------------------------------------------------------------------------- rendering


def _table(rows: tuple[ArgumentDoc, ...]) -> nodes.table:
    """A three-column table: argument, default, meaning."""
    table = nodes.table(classes=["hdrm-cli-table"])
    group = nodes.tgroup(cols=3)
    table += group
    for width in (30, 14, 56):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += _row([nodes.Text("Argument"), nodes.Text("Default"), nodes.Text("Meaning")])
    body = nodes.tbody()
    for arg in rows:
        default = nodes.emphasis(text=arg.default) if arg.default == "required" else (
            nodes.literal(text=arg.default) if arg.default else nodes.Text(""))
        body += _row([nodes.literal(text=arg.synopsis), default, nodes.Text(arg.help)])
    group += head
    group += body
    return table


def _row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += nodes.paragraph("", "", cell)
        row += entry
    return row


def _command_list(subcommands: tuple[CommandDoc, ...]) -> nodes.bullet_list:
    """A bullet list of the sub-commands with their one-line help."""
    items = nodes.bullet_list()
    for sub in subcommands:
        text = nodes.paragraph("", "", nodes.literal(text=sub.prog))
        if sub.summary:
            text += nodes.Text(f": {sub.summary}")
        items += nodes.list_item("", text)
    return items


def render(doc: CommandDoc, document: nodes.document) -> nodes.section:
    """A section for ``doc`` with nested sections for its sub-commands."""
    section = nodes.section()
    label = "cli-" + nodes.make_id(doc.prog)
    section["names"].append(label)
    document.note_explicit_target(section, section)
    section += nodes.title("", "", nodes.literal(text=doc.prog))
    if doc.description:
        section += nodes.paragraph(text=doc.description)
    section += nodes.literal_block(text=doc.usage, language="none")
    if doc.subcommands:
        section += _command_list(doc.subcommands)
    for group in doc.groups:
        section += nodes.rubric(text=group.title.capitalize())
        section += _table(group.arguments)
    for sentence in doc.exclusive:
        section += nodes.paragraph(text=sentence)
    if doc.epilog:
        section += nodes.literal_block(text=doc.epilog.rstrip(), language="none")
    for sub in doc.subcommands:
        section += render(sub, document)
    return section


class CliReference(SphinxDirective):
    """``.. hdrm-cli:: COMMAND``: the reference of one console command."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        command = self.arguments[0]
        if command not in COMMANDS:
            logger.warning("hdrm-cli: unknown command %r; choose one of: %s", command,
                           ", ".join(COMMANDS), location=self.get_location())
            return []
        self._note_sources(command)
        try:
            parser = load_parser(command)
        except Exception as exc:  # noqa: BLE001 - any failure of the project's code is reported
            logger.warning("hdrm-cli: cannot build the parser of %s: %s: %s", command,
                           type(exc).__name__, exc, location=self.get_location())
            return []
        if parser is None:
            return [self._pending_note(command)]
        return [render(describe(parser), self.state.document)]

    def _note_sources(self, command: str) -> None:
        """Rebuild the page when the command's code changes."""
        root = Path(__file__).resolve().parents[2]
        package = COMMANDS[command].rsplit(".", 1)[0].replace(".", "/")
        for path in sorted((root / package).glob("*.py")):
            self.env.note_dependency(str(path))

    def _pending_note(self, command: str) -> nodes.Node:
        note = nodes.note()
        note += nodes.paragraph(
            text=f"The reference of {command} is generated from "
                 f"{COMMANDS[command]}.build_parser(), which this version of hdrm does not have yet.")
        logger.info("hdrm-cli: %s has no parser yet; wrote a note instead", command)
        return note


def resolve_pending_page(app: Sphinx, env: Any, node: nodes.Element,
                         contnode: nodes.Node) -> nodes.Node | None:
    """Render a ``:doc:`` link to a not yet written page of :data:`PENDING_PAGES` as text."""
    if node.get("reftype") != "doc":
        return None
    target = str(node.get("reftarget", "")).rstrip("/").rsplit("/", 1)[-1]
    if target not in PENDING_PAGES or target in env.found_docs:
        return None
    logger.info("hdrm: page %r is not written yet; its link is plain text for now", target)
    return contnode


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive and the pending-page link handler."""
    app.add_directive("hdrm-cli", CliReference)
    app.connect("missing-reference", resolve_pending_page)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
