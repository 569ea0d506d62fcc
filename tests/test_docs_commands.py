"""Every console command shown in the documentation runs, so the docs cannot rot.

Each ``$ hdrm ...``, ``$ hdeeprm-launch ...`` and ``$ python benchmarks/...`` line of a
``.. code-block:: console`` block of ``docs/*.rst`` (except plots.rst, tested by
tests/viz/test_docs_commands.py) runs in-process from the repository root, in page order, and must
exit with status 0. Outputs go to a temporary folder: the value of an output option
(:data:`OUTPUT_OPTIONS`) is rewritten into it, and so is every later argument naming that output or
a file the page shows (a code block with ``:caption: NAME``, written there before the commands
run). When a command shows output lines, the real output must match them as a doctest would
(``...`` matches anything; the temporary folder is removed from the output first).

A console block preceded by the comment ``.. needs-batsim`` holds commands that need the real
Batsim binary: they run only where ``batsim`` is on the PATH (and must mention batsim). A block
preceded by ``.. needs-network`` (installation) or ``.. runs-until-stopped`` (``hdrm serve``, which
waits for a scheduler to connect) never runs. Any other command in a console block is an error:
the docs must not show commands that nothing checks.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import runpy
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hdrm import __version__

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Pages whose commands another test runs.
OTHER_TESTS = {"plots.rst"}
#: Options whose value is a file or folder the command writes.
OUTPUT_OPTIONS = ("--outdir", "-o", "--output", "--outmodel", "--json", "--xml", "-e")
MARKERS = ("needs-batsim", "needs-network", "runs-until-stopped")
RUNNABLE = ("hdrm ", "hdeeprm-launch ", "python benchmarks/")
CHECK, FLAGS = doctest.OutputChecker(), doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass(frozen=True)
class Command:
    """A ``$`` line of a console block, with the output lines shown under it."""

    page: str
    line: int
    text: str
    shown: tuple[str, ...] = ()
    marker: str | None = None


@dataclass(frozen=True)
class Block:
    """A code block: its language, options (``caption`` ...), first content line and content."""

    language: str
    options: dict
    line: int
    lines: tuple[str, ...]
    marker: str | None = None


def code_blocks(text: str) -> list[Block]:
    """The ``.. code-block::`` blocks of a reStructuredText page, with their marker comments."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        stripped = lines[i].lstrip()
        if not stripped.startswith(".. code-block::"):
            i += 1
            continue
        indent = _indent(lines[i])
        previous = next((s.strip() for s in reversed(lines[:i]) if s.strip()), "")
        marker = previous[3:] if previous[3:] in MARKERS and previous.startswith(".. ") else None
        options, i = {}, i + 1
        while i < len(lines) and lines[i].strip().startswith(":") and lines[i].count(":") >= 2:
            name, _, value = lines[i].strip()[1:].partition(":")
            options[name] = value.strip()
            i += 1
        start = i
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
            i += 1
        body = lines[start:i]
        margin = min((_indent(s) for s in body if s.strip()), default=0)
        content = [s[margin:] for s in body]
        while content and not content[-1].strip():
            content.pop()
        first = next((k for k, s in enumerate(content) if s.strip()), 0)
        blocks.append(Block(stripped.split("::")[1].strip(), options, start + first + 1,
                            tuple(content[first:]), marker))
    return blocks


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def console_commands(page: str, text: str) -> list[Command]:
    """The commands of the page's console blocks, in page order."""
    commands: list[Command] = []
    for block in code_blocks(text):
        if block.language != "console":
            continue
        starts = [k for k, line in enumerate(block.lines) if line.startswith("$ ")]
        for k, end in zip(starts, starts[1:] + [len(block.lines)]):
            shown = tuple(block.lines[k + 1:end])
            commands.append(Command(page, block.line + k, block.lines[k][2:].strip(), shown,
                                    block.marker))
    return commands


def page_files(text: str) -> dict[str, str]:
    """Files a page shows (code blocks with ``:caption: NAME``): name -> content."""
    files = {}
    for block in code_blocks(text):
        name = block.options.get("caption", "")
        if name and " " not in name and "." in Path(name).name and not Path(name).is_absolute():
            files[name] = "\n".join(block.lines) + "\n"
    return files


PAGES = sorted(p for p in DOCS.glob("*.rst") if p.name not in OTHER_TESTS)
ALL = [c for p in PAGES for c in console_commands(p.name, p.read_text(encoding="utf-8"))]


# ---------------------------------------------------------------------------- running a page


@dataclass
class PageRun:
    """Runs the commands of one page in order, sharing one temporary output folder."""

    page: Path
    tmp: Path
    mapped: dict[str, Path] = field(default_factory=dict)
    unavailable: set[str] = field(default_factory=set)
    results: dict[int, tuple[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        text = self.page.read_text(encoding="utf-8")
        self.commands = console_commands(self.page.name, text)
        for name, content in page_files(text).items():
            target = self.tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            self.mapped[name] = target

    def result(self, index: int) -> tuple[str, str]:
        """``(status, message)`` of command ``index``, running the commands before it first."""
        for k in range(len(self.results), index + 1):
            self.results[k] = self._run(self.commands[k])
        return self.results[index]

    def rewrite(self, words: list[str]) -> tuple[list[str], list[str]]:
        """Arguments with outputs moved to the temporary folder; and the outputs named."""
        out, outputs = [], []
        for k, word in enumerate(words):
            option, eq, value = word.partition("=")
            if eq and option in OUTPUT_OPTIONS:
                outputs.append(value)
                out.append(f"{option}={self._output(value)}")
            elif k and words[k - 1] in OUTPUT_OPTIONS:
                outputs.append(word)
                out.append(str(self._output(word)))
            else:
                out.append(self._mapped(word))
        return out, outputs

    def _output(self, word: str) -> Path:
        assert not Path(word).is_absolute(), f"use relative output paths in the docs, not {word}"
        self.mapped[word] = self.tmp / word
        self.mapped[word].parent.mkdir(parents=True, exist_ok=True)
        return self.mapped[word]

    def _mapped(self, word: str) -> str:
        for name, path in self.mapped.items():
            if word == name or word.startswith(name + "/"):
                return str(path) + word[len(name):]
        return word

    def _uses_unavailable(self, words: list[str]) -> bool:
        return any(w == u or w.startswith(f"{u}/") for w in words for u in self.unavailable)

    def _run(self, command: Command) -> tuple[str, str]:
        words = shlex.split(command.text)
        redirect = words[words.index(">") + 1] if ">" in words else None
        words = words[: words.index(">")] if redirect else words
        skip = _skip_reason(command)
        if skip or self._uses_unavailable(words):
            _, outputs = self.rewrite(words)
            self.unavailable.update(outputs + ([redirect] if redirect else []))
            return "skip", skip or "uses the output of a command that was skipped"
        argv, _ = self.rewrite(words)
        before = _listing(argv)
        status, out, err = _execute(argv)
        created = sorted(str(p.relative_to(ROOT)) for p in set(_listing(argv)) - set(before))
        if created:
            return "fail", f"wrote {created} into the checkout; give it an output option"
        if redirect:
            self._output(redirect).write_text(out, encoding="utf-8")
        out, err = out.replace(f"{self.tmp}/", ""), err.replace(f"{self.tmp}/", "")
        if status != 0:
            return "fail", f"exit status {status}\nstderr:\n{err[-3000:]}\nstdout:\n{out[-2000:]}"
        want = "\n".join(command.shown).strip()
        if want and not redirect and not CHECK.check_output(want + "\n", out, FLAGS):
            return "fail", f"the page shows:\n{want}\nthe command printed:\n{out}"
        return "ok", ""


def _listing(argv: list[str]) -> list[Path]:
    """The entries of the repository root and of the folders of the checkout files named
    (bytecode caches aside)."""
    folders = {ROOT} | {(ROOT / w).parent for w in argv[1:]
                        if not Path(w).is_absolute() and (ROOT / w).exists()}
    return [entry for folder in folders for entry in folder.iterdir() if entry.name != "__pycache__"]


def _skip_reason(command: Command) -> str:
    if command.marker == "needs-network":
        return "installs packages from the network"
    if command.marker == "runs-until-stopped":
        return "a server that waits for a scheduler to connect"
    if command.marker == "needs-batsim" and shutil.which("batsim") is None:
        return "needs the batsim binary, which is not on the PATH"
    return ""


def _execute(argv: list[str]) -> tuple[int, str, str]:
    """Run a documented command in-process from the repository root: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = _dispatch(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return int(status or 0), out.getvalue(), err.getvalue()


def _dispatch(argv: list[str]) -> int:
    if argv[0] == "hdrm":
        from hdrm.cli.main import main

        return main(argv[1:])
    if argv[0] == "hdeeprm-launch":
        from hdrm.launcher import main as launch

        return launch(argv[1:])
    saved, sys.argv = sys.argv, argv[1:]
    try:
        runpy.run_path(str(ROOT / argv[1]), run_name="__main__")
    finally:
        sys.argv = saved
    return 0


@pytest.fixture(scope="module")
def page_runs() -> dict[str, PageRun]:
    """The runs of the pages whose commands the module's tests ran so far."""
    return {}


# ---------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("command", ALL, ids=[f"{c.page}:{c.line}" for c in ALL])
def test_documented_command_runs(command: Command, page_runs, tmp_path_factory):
    if command.page not in page_runs:
        page_runs[command.page] = PageRun(DOCS / command.page, tmp_path_factory.mktemp("docs"))
    run = page_runs[command.page]
    status, message = run.result(run.commands.index(command))
    if status == "skip":
        pytest.skip(message)
    assert status == "ok", f"docs/{command.page}:{command.line}: $ {command.text}\n{message}"


def test_every_command_is_runnable_or_marked():
    for c in ALL:
        where = f"docs/{c.page}:{c.line}: $ {c.text}"
        if c.marker == "needs-network":
            assert c.text.startswith("python -m pip "), f"{where}: only installs need the network"
        elif c.marker == "runs-until-stopped":
            assert c.text.startswith("hdrm serve "), f"{where}: only servers run until stopped"
        elif c.marker == "needs-batsim":
            assert "batsim" in c.text, f"{where}: a needs-batsim command must involve batsim"
        else:
            assert c.text.startswith(RUNNABLE), (
                f"{where}: not a command this test can run; show {', '.join(RUNNABLE)} commands, "
                "or mark the block (.. needs-batsim, .. needs-network, .. runs-until-stopped)")


def test_the_pages_show_the_main_commands():
    for prefix in ("hdrm replay ", "hdrm workload ", "hdrm plot ", "hdrm compare ",
                   "hdeeprm-launch agents/reinforce.py "):
        assert any(c.text.startswith(prefix) for c in ALL), f"no page shows {prefix}..."
    assert len(ALL) >= 15


def test_getting_started_installs_with_the_readme_command():
    readme = (ROOT / "README.rst").read_text(encoding="utf-8")
    installs = [line.strip() for line in readme.splitlines()
                if line.strip().startswith("python -m pip install")]
    shown = [c for c in ALL if c.page == "getting_started.rst" and c.marker == "needs-network"]
    assert [c.text for c in shown] == installs  # the install line, then with the CPU wheel index
    assert len(installs) == 2 and "download.pytorch.org/whl/cpu" in installs[1]


SNIPPET = """\
Intro.

.. needs-batsim

.. code-block:: console

   $ hdrm replay --engine batsim --outdir runs/b
   $ hdrm plot gantt runs/b -o g.png
   wrote g.png

.. code-block:: python
   :caption: my/file.py

   print("hi")

   print("bye")

Text.

   .. code-block:: console

      $ hdrm workload x.swf
"""


def test_the_page_parser_finds_commands_markers_outputs_and_files():
    commands = console_commands("p.rst", SNIPPET)
    assert [(c.line, c.text, c.shown, c.marker) for c in commands] == [
        (7, "hdrm replay --engine batsim --outdir runs/b", (), "needs-batsim"),
        (8, "hdrm plot gantt runs/b -o g.png", ("wrote g.png",), "needs-batsim"),
        (22, "hdrm workload x.swf", (), None),
    ]
    assert page_files(SNIPPET) == {"my/file.py": 'print("hi")\n\nprint("bye")\n'}


def test_rewriting_moves_outputs_and_their_later_uses_to_the_temporary_folder(tmp_path):
    page = tmp_path / "p.rst"
    page.write_text(SNIPPET, encoding="utf-8")
    run = PageRun(page, tmp_path / "out")
    argv, outputs = run.rewrite("hdrm replay --outdir runs/b --json=w.json -o g.png".split())
    assert argv == ["hdrm", "replay", "--outdir", str(tmp_path / "out/runs/b"),
                    f"--json={tmp_path / 'out/w.json'}", "-o", str(tmp_path / "out/g.png")]
    assert outputs == ["runs/b", "w.json", "g.png"]
    argv, _ = run.rewrite(["hdrm", "plot", "gantt", "runs/b/out_jobs.csv", "runs/bb", "my/file.py"])
    assert argv[3:] == [str(tmp_path / "out/runs/b/out_jobs.csv"), "runs/bb",
                        str(tmp_path / "out/my/file.py")]
    assert (tmp_path / "out/my/file.py").read_text() == 'print("hi")\n\nprint("bye")\n'


def test_commands_after_a_skipped_one_that_use_its_output_are_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    page = tmp_path / "p.rst"
    page.write_text(SNIPPET, encoding="utf-8")
    run = PageRun(page, tmp_path / "out")
    assert run.result(1) == ("skip", "needs the batsim binary, which is not on the PATH")
    assert run.result(0)[0] == "skip"


def test_a_failing_command_or_a_wrong_shown_output_fails(tmp_path):
    page = tmp_path / "p.rst"
    page.write_text(".. code-block:: console\n\n"
                    "   $ hdrm replay --homogeneous-procs 4 --workload no.swf --outdir r\n"
                    "   $ hdrm --version\n   hdrm 9.9\n"
                    "   $ hdrm --version\n   hdrm ...\n", encoding="utf-8")
    run = PageRun(page, tmp_path / "out")
    status, message = run.result(0)
    assert status == "fail" and message.startswith("exit status 2")
    assert "no.swf: no such file" in message
    printed = f"the page shows:\nhdrm 9.9\nthe command printed:\nhdrm {__version__}\n"
    assert run.result(1) == ("fail", printed)
    assert run.result(2) == ("ok", "")
