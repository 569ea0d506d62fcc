"""The Python examples in the documentation (``>>>`` blocks) run and print what the pages show."""

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(p for p in DOCS.glob("*.rst") if ">>> " in p.read_text(encoding="utf-8"))


def test_some_page_has_examples():
    assert any(p.name == "simulator.rst" for p in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_examples(page):
    failures, tried = doctest.testfile(
        str(page), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert tried > 0 and failures == 0
