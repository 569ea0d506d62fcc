"""What crosses a process boundary in distributed PPO (hdrm.distributed.wire): numpy arrays that
keep every value's dtype and bits, never torch objects. No Ray: the worker's body runs here."""

from __future__ import annotations

import pickle

import numpy as np
import torch

from hdrm.agents.buffers import RolloutBatch
from hdrm.distributed import wire
from hdrm.distributed.ppo import RolloutWorker, share_steps
from .ppo_helpers import learner, write_options


def _no_torch(obj) -> bool:
    """Whether ``obj`` pickles without any torch object in it."""
    return b"torch" not in pickle.dumps(obj, protocol=5)


def test_weights_travel_as_numpy_and_come_back_bit_for_bit(tmp_path):
    agent, _ = learner(write_options(tmp_path))
    state = agent.state_dict()
    sent = pickle.loads(pickle.dumps(wire.to_wire(state), protocol=5))
    assert _no_torch(wire.to_wire(state))
    assert all(isinstance(v, np.ndarray) for v in sent.values())
    back = wire.from_wire(sent)
    assert back.keys() == state.keys()
    assert all(back[k].dtype == state[k].dtype and torch.equal(back[k], state[k]) for k in state)


def test_received_read_only_arrays_become_writable_tensors():
    """Ray hands over arrays that share its store's read-only memory; the tensors made from them
    own a copy (torch warns about, and could write through, a read-only array otherwise)."""
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    array.setflags(write=False)
    tensor = wire.from_wire({"w": array, "n": 3})["w"]
    tensor += 1
    assert array[0, 0] == 0 and tensor[0, 0] == 1
    assert wire.from_wire({"n": 3}) == {"n": 3}  # non-array values pass through


def test_a_workers_fragment_is_numpy_and_joins_into_the_learners_batch(tmp_path):
    """The rollout worker's reply carries its share as numpy columns and its generator state as
    an array (one object per share, no torch); the learner joins two shares end to end into the
    tensors it learns from, with the workers' values unchanged."""
    options = write_options(tmp_path)
    agent, task = learner(options)
    share = share_steps(agent.settings.rollout_steps, 2, 1)
    workers = [RolloutWorker(task, w, 1, share, agent.seed + w) for w in range(2)]
    weights = wire.to_wire(agent.state_dict())
    generator = wire.generator_to_wire(agent.generator.get_state())
    replies = [w.collect(weights, generator if i == 0 else None, None, float("inf"))[0]
               for i, w in enumerate(workers)]
    for reply in replies:
        assert all(isinstance(column, np.ndarray) for column in reply.batch)
        assert len(reply.batch.obs) == share and isinstance(reply.generator_state, np.ndarray)
        assert _no_torch((reply.batch, reply.generator_state))
    joined = wire.join_batches([r.batch for r in replies])
    assert isinstance(joined, RolloutBatch) and len(joined.actions) == 2 * share
    for column, first, second in zip(joined, replies[0].batch, replies[1].batch):
        assert column.dtype == torch.from_numpy(first).dtype
        assert np.array_equal(column.numpy(), np.concatenate([first, second]))


def test_small_weights_go_inside_the_calls_large_ones_through_the_store_once():
    from hdrm.distributed.ppo import INLINE_WEIGHTS_BYTES, send_weights

    class Store:  # stands for Ray: counts the puts
        def __init__(self):
            self.puts = []

        def put(self, value):
            self.puts.append(value)
            return ("ref", len(self.puts))

    store = Store()
    small = {"w": np.zeros(INLINE_WEIGHTS_BYTES // 4, dtype=np.float32), "step": 3}
    assert send_weights(store, small) is small and store.puts == []  # exactly at the limit
    large = {"w": np.zeros(INLINE_WEIGHTS_BYTES // 4 + 1, dtype=np.float32),
             "b": torch.zeros(2)}
    assert send_weights(store, large) == ("ref", 1) and store.puts == [large]
