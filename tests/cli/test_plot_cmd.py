"""``hdrm plot``: saves the figure where asked (or in the run folder), and turns every user error
into one line on stderr with exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.results.example import write_example_run

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden"
needs_golden = pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"no Batsim outputs under {GOLDEN}")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_example_run(tmp_path / "run")


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("kind", ["gantt", "utilisation", "queue", "energy", "contention",
                                  "learning", "actions"])
def test_every_kind_to_a_file(kind: str, run_dir: Path, tmp_path: Path, capsys):
    out = tmp_path / f"{kind}.png"
    assert main(["plot", kind, str(run_dir), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    assert capsys.readouterr().out == f"wrote {out}\n"


def test_default_output_is_in_the_run_folder(run_dir: Path):
    assert main(["plot", "Utilization", str(run_dir)]) == 0
    assert (run_dir / "utilisation.png").read_bytes()[:8] == PNG_SIGNATURE


def test_kind_options(run_dir: Path, tmp_path: Path):
    assert main(["plot", "gantt", str(run_dir), "--color", "user", "--max-jobs", "2",
                 "-o", str(tmp_path / "g.svg")]) == 0
    assert (tmp_path / "g.svg").read_text().startswith("<?xml")
    assert main(["plot", "learning", str(run_dir), "--window", "3",
                 "-o", str(tmp_path / "l.pdf")]) == 0
    assert (tmp_path / "l.pdf").read_bytes().startswith(b"%PDF")


def test_unknown_kind(run_dir: Path, capsys):
    assert main(["plot", "gant", str(run_dir)]) == 2
    line = _error_line(capsys)
    assert line.startswith("hdrm plot: error: hdrm plot KIND: unknown plot kind 'gant'; "
                           "did you mean 'gantt'? choose one of: actions, contention")


def test_missing_run_folder(tmp_path: Path, capsys):
    assert main(["plot", "queue", str(tmp_path / "nope")]) == 2
    assert f"run folder {tmp_path / 'nope'} does not exist" in _error_line(capsys)


@needs_golden
def test_missing_file_is_named(tmp_path: Path, capsys):
    run = GOLDEN / "small_delays/fillerSched"
    assert main(["plot", "learning", str(run), "-o", str(tmp_path / "l.png")]) == 2
    assert "has no episodes.csv (needed for per-episode learning results); files there: " \
           "out_jobs.csv, out_schedule.csv" in _error_line(capsys)
    assert not (tmp_path / "l.png").exists()


def test_option_of_another_kind(run_dir: Path, capsys):
    assert main(["plot", "queue", str(run_dir), "--window", "3"]) == 2
    assert "option --window applies to 'hdrm plot learning' only, not to 'queue'" in \
        _error_line(capsys)


def test_bad_output_suffix_fails_before_drawing(run_dir: Path, tmp_path: Path, capsys):
    assert main(["plot", "gantt", str(run_dir), "-o", str(tmp_path / "g.jpeg")]) == 2
    assert "unknown file type '.jpeg'; end the name in one of: .png, .svg, .pdf" in \
        _error_line(capsys)


def test_bad_colouring(run_dir: Path, capsys):
    assert main(["plot", "gantt", str(run_dir), "--color", "queue"]) == 2
    assert "unknown colouring 'queue'; choose one of: job, user" in _error_line(capsys)
