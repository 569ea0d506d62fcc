"""benchmarks/crosscheck_saga.py on 10 DAGs, where SAGA (``anrg-saga``) is installed.

SAGA is not in the ``test`` extra (it requires z3-solver, pysmt, pygraphviz, mypy, GitPython and
wfcommons, and Python 3.11), so the SAGA runs are skipped without it; the parts that do not need it
always run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import crosscheck_saga  # noqa: E402
from hdrm.dag.generator import draw  # noqa: E402


def test_the_added_source_and_sink_change_no_makespan():
    from hdrm.dag.listsched import cpop, heft

    for seed in range(10):
        drawn = draw(crosscheck_saga.spec_for(seed), seed)
        dag, work = crosscheck_saga.single_entry_exit(drawn)
        assert len(dag.entries) == len(dag.exits) == 1
        assert len(work) == dag.size
        assert heft(dag).makespan_s == heft(drawn.dag).makespan_s


def test_saga_upward_ranks_are_the_papers_without_transfers():
    # with uniform links SAGA's mean transfer is (p - 1) / (p + 1) of the papers'; with free
    # transfers the two upward ranks are the same
    from dataclasses import replace

    from hdrm.dag.ranks import upward_ranks

    spec = replace(crosscheck_saga.spec_for(3), ccr=0.0)
    drawn = draw(spec, 3)
    up, _ = crosscheck_saga.saga_priorities(drawn.dag, list(drawn.work), drawn.speeds)
    assert up == pytest.approx(upward_ranks(drawn.dag))


def test_crosscheck_on_ten_dags(capsys):
    pytest.importorskip("saga", reason="SAGA (pip install anrg-saga) is not installed")
    assert crosscheck_saga.main(["--dags", "10"]) == 0
    out = capsys.readouterr().out
    assert "10 DAGs, tolerance 0.10%: every paper difference explained" in out
    assert "UNEXPLAINED" not in out


def test_crosscheck_fails_on_a_difference(monkeypatch, capsys):
    pytest.importorskip("saga", reason="SAGA (pip install anrg-saga) is not installed")
    real = crosscheck_saga.cpop

    def late_cpop(dag, priority=None):
        schedule = real(dag, priority)
        return type(schedule)(schedule.dag, "cpop", schedule.processor, schedule.start_s,
                              tuple(f * 1.01 if f == schedule.makespan_s else f
                                    for f in schedule.finish_s))

    monkeypatch.setattr(crosscheck_saga, "cpop", late_cpop)
    monkeypatch.setattr(crosscheck_saga.Schedule, "validate", lambda self: None)
    assert crosscheck_saga.main(["--dags", "2"]) == 1
    assert "UNEXPLAINED cpop seed 0" in capsys.readouterr().out
