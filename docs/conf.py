"""Sphinx configuration of the hdrm documentation.

Build (warnings are errors, as in CI)::

    python -m sphinx -W -b html docs docs/_build/html

Only Sphinx is needed (``pip install -e .[docs]``); the theme (alabaster) ships with Sphinx and the
options reference comes from the local extension in ``_ext/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the hdrm package of this checkout, installed or not

import hdrm  # noqa: E402  (after the path set-up)

project = "hdrm"
author = "the hdrm contributors"
copyright = "the hdrm contributors"  # noqa: A001  (Sphinx's setting name)
release = hdrm.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "options_ref",
    "cli_ref",
]

root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
nitpicky = False

# autodoc: members in source order, type hints in the description (not in long signatures).
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"

# napoleon: Google docstrings. "Attributes:" become :ivar: fields, so dataclass fields documented
# both in the class docstring and by autodoc are not described twice (a -W error).
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True
# Sphinx links every :ivar: name to an attribute of that name; where two classes have one (the
# machines' power_w), the link is ambiguous, a harmless warning that -W would make an error.
suppress_warnings = ["ref.python"]

html_theme = "alabaster"
html_title = f"hdrm {release}"
html_theme_options = {
    "description": "Learn and evaluate job-scheduling policies on heterogeneous clusters",
    "fixed_sidebar": True,
}


def _namedtuple_source(app, modname: str, fullname: str) -> str | None:
    """viewcode: a NamedTuple's generated members claim a module ``namedtuple_<Name>`` that has
    no source (the module index linked to pages that were never written); their source is the
    module that defines the class."""
    from sphinx.ext.viewcode import _get_full_modname

    followed = _get_full_modname(modname, fullname)
    return modname if followed and followed.startswith("namedtuple_") else followed


def setup(app):
    """Project hooks of the build."""
    app.connect("viewcode-follow-imported", _namedtuple_source)
