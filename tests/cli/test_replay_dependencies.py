"""The dependencies line of ``hdrm replay``'s summary: one think time, and none in the trace."""

from __future__ import annotations

from hdrm.cli.main import main

#: Jobs 2 and 3 each follow the previous job 10 s after it ends (one think time).
SAME_THINK = """; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 50 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 1 10
3 10 -1 30 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 2 10
"""

#: The same jobs without preceding jobs (fields 17-18 are -1).
NO_DEPS = """; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 50 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1
3 10 -1 30 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1
"""


def replay(tmp_path, capsys, text: str, *extra: str) -> str | None:
    """Replay ``text`` as an SWF trace on 4 cores; returns the summary's dependencies value
    (None without that line)."""
    path = tmp_path / "trace.swf"
    path.write_text(text)
    args = ["replay", "--homogeneous-procs", "4", "--workload", str(path), "--contention", "none",
            "--outdir", str(tmp_path / "out"), *extra]
    assert main(args) == 0
    rows = [line.split(None, 1) for line in capsys.readouterr().out.splitlines()]
    values = [row[1].strip() for row in rows if row and row[0] == "dependencies"]
    assert len(values) <= 1
    return values[0] if values else None


def test_one_think_time_prints_one_value(tmp_path, capsys):
    # 1 runs 0-100, 2 released at 110 runs 110-160, 3 released at 170: both wait 10 s
    assert replay(tmp_path, capsys, SAME_THINK) == ("on: 2 jobs wait for a preceding job "
                                                    "(think time 10 s)")


def test_explicit_dependencies_on_a_trace_without_any(tmp_path, capsys):
    assert replay(tmp_path, capsys, NO_DEPS, "--dependencies") == "none in this trace"


def test_default_on_a_trace_without_any_says_nothing(tmp_path, capsys):
    assert replay(tmp_path, capsys, NO_DEPS) is None


def test_no_dependencies_says_off(tmp_path, capsys):
    assert replay(tmp_path, capsys, SAME_THINK, "--no-dependencies").startswith(
        "off (--no-dependencies")
