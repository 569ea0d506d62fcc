"""Worker processes freeze what their setup built out of garbage collection
(hdrm.distributed.heap): a rollout worker alone in its process leaves the collector only the
objects its work creates; one that shares the caller's process leaves the collector alone."""

from __future__ import annotations

import gc

from hdrm.distributed.heap import freeze_setup
from hdrm.distributed.ppo import RolloutWorker

from .ppo_helpers import learner, write_options


def test_freeze_setup_keeps_live_objects_and_frees_garbage():
    class Cycle:
        pass

    garbage = Cycle()
    garbage.me = garbage
    kept = [Cycle() for _ in range(100)]
    before = gc.get_freeze_count()
    try:
        del garbage
        frozen = freeze_setup("test")
        assert frozen == gc.get_freeze_count() > before + 100  # kept and everything alive
        assert not any(type(o) is Cycle for o in gc.get_objects())  # none left to traverse
        assert all(isinstance(o, Cycle) for o in kept)
    finally:
        gc.unfreeze()
    assert sum(type(o) is Cycle for o in gc.get_objects()) == 100  # the cycle was freed


def test_a_rollout_worker_alone_in_its_process_leaves_gc_only_its_work(tmp_path):
    agent, task = learner(write_options(tmp_path))
    try:
        worker = RolloutWorker(task, 0, 1, 16, agent.seed, own_process=True)
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # torch, numpy, hdrm, the trace, the environment and agent
        assert len(gc.get_objects()) < frozen / 10  # what a full collection still traverses
        collected, _ = worker.collect(None, None, None, float("inf"))
        assert collected.env_steps == 16 and collected.batch is not None
    finally:
        gc.unfreeze()


def test_a_rollout_worker_in_the_callers_process_freezes_nothing(tmp_path):
    agent, task = learner(write_options(tmp_path))
    before = gc.get_freeze_count()
    RolloutWorker(task, 0, 1, 16, agent.seed)
    assert gc.get_freeze_count() == before
