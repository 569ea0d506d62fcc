"""Sphinx extension: the options.json reference, rendered from :mod:`hdrm.options` at build time.

``.. hdrm-options::`` renders one section per options block (top level, ``batsim``, ``workload``,
...) with a table of its keys: JSON path, accepted values, default and the field's docstring
(the string literal written under each dataclass field, as in CleanRL's settings).
``.. hdrm-options-example::`` renders a complete options.json with every default. Both read the
dataclasses themselves, so the page cannot drift from the code.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

from hdrm import options as options_module


def field_docs(module: Any = options_module) -> dict[str, dict[str, str]]:
    """Class name -> field name -> docstring written under the field in the module's source."""
    tree = ast.parse(inspect.getsource(module))
    docs: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        found = docs.setdefault(node.name, {})
        for first, second in zip(node.body, node.body[1:]):
            if (isinstance(first, ast.AnnAssign) and isinstance(first.target, ast.Name)
                    and isinstance(second, ast.Expr) and isinstance(second.value, ast.Constant)
                    and isinstance(second.value.value, str)):
                found[first.target.id] = " ".join(inspect.cleandoc(second.value.value).split())
    return docs


def _cell(text: str) -> str:
    """One list-table cell (a single line of reStructuredText)."""
    return text.replace("\n", " ") or "\\ "


def _default_text(row: options_module.OptionField) -> str:
    if row.required:
        return "*required*"
    if row.is_block:
        return "see below"
    return f"``{json.dumps(row.default)}``"


def render_reference() -> list[str]:
    """The reStructuredText of every block: a subsection with a table of its keys."""
    docs = field_docs()
    rows = options_module.option_fields()
    blocks: list[tuple[str, type]] = [("", options_module.Options)]
    blocks += [(r.path, _block_type(r)) for r in rows if r.is_block]
    lines: list[str] = []
    for path, cls in blocks:
        title = f"``{path}``" if path else "Top level"
        summary = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0]
        lines += [title, "-" * len(title), "", " ".join(summary.split()), "",
                  ".. list-table::", "   :header-rows: 1", "   :widths: 22 22 16 40", "",
                  "   * - Key", "     - Accepts", "     - Default", "     - Meaning"]
        for row in (r for r in rows if r.path.rpartition(".")[0] == path):
            doc = docs.get(cls.__name__, {}).get(row.name, "")
            lines += [f"   * - ``{row.path}``", f"     - {_cell(row.type_text)}",
                      f"     - {_cell(_default_text(row))}", f"     - {_cell(doc)}"]
        lines.append("")
    return lines


def _block_type(row: options_module.OptionField) -> type:
    """The dataclass of a nested block row."""
    spec = next(f for f in dataclasses.fields(row.owner) if f.name == row.name)
    return type(spec.default_factory())  # type: ignore[misc]


def render_example() -> list[str]:
    """A complete options.json with every key at its default."""
    example = options_module.Options(workload_file_path="workloads/example.swf").to_dict()
    text = json.dumps(example, indent=2)
    return [".. code-block:: json", ""] + ["   " + line for line in text.splitlines()] + [""]


class _Generated(SphinxDirective):
    """Base of the directives: parse generated reStructuredText in place."""

    has_content = False

    def lines(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(Path(options_module.__file__).resolve()))
        container = nodes.section()
        container.document = self.state.document
        content = StringList(self.lines(), source="<hdrm.options>")
        nested_parse_with_titles(self.state, content, container)
        return list(container.children)


class OptionsReference(_Generated):
    """``.. hdrm-options::``: one section per options block."""

    def lines(self) -> list[str]:
        return render_reference()


class OptionsExample(_Generated):
    """``.. hdrm-options-example::``: a complete options.json with the defaults."""

    def lines(self) -> list[str]:
        return render_example()


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directives."""
    app.add_directive("hdrm-options", OptionsReference)
    app.add_directive("hdrm-options-example", OptionsExample)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
