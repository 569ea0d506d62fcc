"""A run's error crosses a process boundary as its nearest class that a message alone makes."""

from __future__ import annotations

import pytest

from hdrm.distributed import runner
from hdrm.errors import ConfigError, SkippableLineError, WorkloadError


class _Run:
    name = "r1"


@pytest.mark.parametrize("error, sent", [
    (SkippableLineError("t.swf:3: found 17 fields", "fix the line", "malformed lines"),
     WorkloadError),
    (ConfigError("bad key 'x'"), ConfigError),
])
def test_the_error_of_a_run_is_raised_again_with_its_message(monkeypatch, error, sent):
    def fail(run, runs_dir):
        raise error

    monkeypatch.setattr(runner, "execute", fail)
    info = runner.execute_reporting(_Run(), None)
    assert info == {"name": "r1", "error_class": sent.__name__, "error": str(error)}
    with pytest.raises(sent) as raised:
        runner.raise_failure(info)
    assert type(raised.value) is sent and str(raised.value) == str(error)


def test_a_skippable_line_error_pickles_whole():
    # a process pool sends a worker's exception back pickled: it must come back the same error
    import pickle

    error = SkippableLineError("t.swf:3: found 17 fields", "fix the line", "malformed lines",
                               "rerun with --no-strict")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is SkippableLineError and str(back) == str(error)
    assert (back.problem, back.fix, back.skipped, back.relax) == (
        error.problem, error.fix, error.skipped, error.relax)


class _Stopped:
    """A run stopped (Ctrl-C) after writing part of its outputs."""

    name = "stopped"

    def digest(self) -> str:
        return "0" * 64

    def to_json(self) -> dict:
        return {}

    def produce(self, folder):
        folder.mkdir(parents=True)
        (folder / "out_jobs.csv").write_text("job_id\n1\n", encoding="utf-8")
        raise KeyboardInterrupt


def test_a_run_stopped_midway_leaves_no_scratch_folder(tmp_path):
    # its half-written scratch folder stayed until the next start of the sweep removed it
    with pytest.raises(KeyboardInterrupt):
        runner.execute(_Stopped(), tmp_path)
    assert list(tmp_path.iterdir()) == []
