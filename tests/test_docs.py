"""The documentation builds without a single warning (Sphinx -W), so it cannot rot silently; the
built pages link only to pages and anchors that exist; the plots page shows every plot it
describes, as committed images made by ``docs/plots/make_images.py``."""

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: A link with a scheme (``https:``, ``mailto:``) leaves the documentation; a bare ``file:``
#: (a docstring's ``file:line:column`` turned into a link) counts as internal and broken.
EXTERNAL = re.compile(r"^(https?|mailto|ftp):|^//")


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    """The HTML build of the documentation (one build for every test of this module)."""
    out = tmp_path_factory.mktemp("docs") / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(DOCS), str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def test_sphinx_builds_with_warnings_as_errors(html):
    assert (html / "index.html").exists()


class _Page(HTMLParser):
    """The ids (anchors), link targets and image sources of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        attr = dict(attrs)
        if attr.get("id"):
            self.ids.add(attr["id"])
        if tag == "a" and attr.get("name"):
            self.ids.add(attr["name"])
        if tag == "a" and attr.get("href"):
            self.hrefs.append(attr["href"])
        if tag == "img" and attr.get("src"):
            self.images.append(attr["src"])


def _pages(html: Path) -> dict[Path, _Page]:
    pages = {}
    for path in html.rglob("*.html"):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    return pages


def broken_links(html: Path) -> list[str]:
    """``page: href (why)`` for every internal link to a missing file or anchor."""
    pages = _pages(html)
    broken = []
    for path, page in pages.items():
        for href in page.hrefs:
            if EXTERNAL.match(href):
                continue
            target, _, anchor = href.partition("#")
            file = (path.parent / target).resolve() if target else path
            where = f"{path.relative_to(html.resolve())}: {href}"
            if not file.is_file():
                broken.append(f"{where} (no such file)")
            elif anchor and file in pages and anchor not in pages[file].ids:
                broken.append(f"{where} (no such anchor)")
    return sorted(broken)


def test_no_internal_link_is_broken(html):
    assert broken_links(html) == []


def test_the_link_check_finds_broken_links(tmp_path):
    (tmp_path / "a.html").write_text(
        '<p id="here"><a href="a.html#here">ok</a> <a href="#gone">anchor</a> '
        '<a href="file:line:column">docstring</a> <a href="https://example.org">out</a> '
        '<a href="namedtuple_Context.html">module</a></p>', encoding="utf-8")
    assert broken_links(tmp_path) == ["a.html: #gone (no such anchor)",
                                      "a.html: file:line:column (no such file)",
                                      "a.html: namedtuple_Context.html (no such file)"]


def _plot_sections() -> dict[str, str]:
    """The plots page's sections that show a plot: ``{kind: section text}``."""
    text = (DOCS / "plots.rst").read_text(encoding="utf-8")
    kinds = re.split(r"^([a-z]+)\n~+\n", text.split("Plot kinds\n", 1)[1].split("\nComparing runs\n")[0],
                     flags=re.M)
    sections = dict(zip(kinds[1::2], kinds[2::2]))
    sections["compare"] = text.split("\nComparing runs\n", 1)[1].split("\nHow the metrics")[0]
    return sections


def test_the_plots_page_shows_an_image_of_every_plot(html):
    from hdrm.viz import KINDS

    sections = _plot_sections()
    assert sorted(sections) == sorted((*KINDS, "compare"))  # a section per kind, and compare
    page = _Page()
    page.feed((html / "plots.html").read_text(encoding="utf-8"))
    for kind, section in sections.items():
        images = re.findall(r"^\.\. image:: (\S+)", section, flags=re.M)
        assert images == [f"plots/{kind}.png"], f"section {kind!r} shows {images}"
        source = DOCS / images[0]
        assert source.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert 5_000 < source.stat().st_size < 200_000  # a real picture, and a small file
        assert any(src.endswith(f"{kind}.png") for src in page.images), kind
        assert (html / "_images" / f"{kind}.png").is_file()
    script = (DOCS / "plots" / "make_images.py").read_text(encoding="utf-8")
    assert "python docs/plots/make_images.py" in (DOCS / "plots.rst").read_text(encoding="utf-8")
    assert all(f'"{kind}"' in script for kind in sections)
