"""A replay buffer's content as a resume state: compact, and put back bit for bit.

A DQN's buffer of 50,000 transitions with a 128-job window holds ~0.42 GB, nearly all of it
observations (``obs`` and ``next_obs``, float32), which :mod:`benchmarks.train_resume` writes at
validations. Two things make it small without changing a bit:

* an n-step transition's next observation is, as a rule, the observation of the transition
  stored ``n`` slots later (the step ``n`` decisions on): such rows of ``next_obs`` are not
  stored, only a flag per row and the shift. The shift is found from the rows themselves
  (:func:`_shift`) and each flagged row was compared bit for bit, so a row that differs (an
  episode's last steps, a slot overwritten since, Ape-X's interleaved actors) is stored as it is;
* every array is compressed with zlib (level 1: job windows are mostly zero padding).

On the benchmark's full buffer (Lublin-1, 50,000 transitions of a 128 x 8 window) the state
shrinks from 424 MB to 12.6 MB, and making and writing it from ~1 s to ~0.4 s (reading it back
takes ~0.4 s, was ~0.2 s). A state written before (its arrays as tensors) still loads.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

#: zlib's level: 1 compresses the mostly-zero windows ~19x at ~0.5 GB/s; higher levels gain a
#: third more for twice the time.
LEVEL = 1
#: Largest shift looked for between a row's next observation and a later row's observation.
MAX_SHIFT = 16
#: Rows looked at to find the shift.
PROBE_ROWS = 1024
#: The layout of :func:`pack`'s state (a state without it holds plain tensors: the first one).
CODEC = "zlib-shift-1"


def pack(arrays: dict[str, np.ndarray], size: int, capacity: int) -> dict[str, Any]:
    """The filled rows of ``arrays`` (``obs``, ``next_obs`` and the other per-slot arrays of a
    ring of ``capacity`` slots, ``size`` filled) as compressed bytes, ``next_obs`` without the
    rows that repeat a later slot's ``obs``."""
    obs, nxt = arrays["obs"][:size], arrays["next_obs"][:size]
    shift = _shift(obs, nxt, capacity)
    same = _same_rows(obs, nxt, shift, capacity)
    state: dict[str, Any] = {"codec": CODEC, "next_shift": shift,
                             "next_same": _compress(np.packbits(same)),
                             "next_obs": _compress(nxt[~same]),
                             "shapes": {"next_obs": [int((~same).sum()), *nxt.shape[1:]]}}
    for name, array in arrays.items():
        if name != "next_obs":
            state[name] = _compress(array[:size])
            state["shapes"][name] = list(array[:size].shape)
    return state


def unpack(state: dict[str, Any], arrays: dict[str, np.ndarray], size: int, capacity: int
           ) -> None:
    """Write what :func:`pack` made back into the first ``size`` rows of ``arrays``.

    Raises:
        ValueError: the state does not fit the arrays (another buffer's), or an unknown layout.
    """
    if state.get("codec") is None:  # a state of the first layout: the rows as tensors
        for name, target in arrays.items():
            _put(name, target, state[name].numpy(), size)
        return
    if state["codec"] != CODEC:
        raise ValueError(f"replay: a saved buffer of layout {state['codec']!r}, expected {CODEC!r}")
    shapes = state["shapes"]
    for name, target in arrays.items():
        if name != "next_obs":
            _put(name, target, _decompress(state[name], target.dtype, shapes[name]), size)
    same = np.unpackbits(_decompress(state["next_same"], np.uint8, [-1]), count=size)
    same = same.astype(bool)
    nxt = arrays["next_obs"]
    stored = _decompress(state["next_obs"], nxt.dtype, shapes["next_obs"])
    _put("next_obs", nxt[: int((~same).sum())], stored, int((~same).sum()))
    nxt[:size][~same] = stored
    slots = (np.flatnonzero(same) + int(state["next_shift"])) % capacity
    nxt[:size][same] = arrays["obs"][slots]


def _shift(obs: np.ndarray, nxt: np.ndarray, capacity: int) -> int:
    """The shift ``k`` for which the most probed rows have ``next_obs[i] == obs[i + k]``; 0 when
    none does."""
    probe = min(len(obs), PROBE_ROWS)
    best, best_count = 0, 0
    for k in range(1, min(MAX_SHIFT, len(obs) - 1) + 1):
        count = int(_same_rows(obs, nxt[:probe], k, capacity, len(obs)).sum())
        if count > best_count:
            best, best_count = k, count
    return best


def _same_rows(obs: np.ndarray, nxt: np.ndarray, shift: int, capacity: int,
               size: int | None = None) -> np.ndarray:
    """Whether row ``i`` of ``nxt`` equals, bit for bit, the filled slot ``(i + shift) %
    capacity`` of ``obs`` (``size`` filled; default ``len(nxt)``)."""
    n, size = len(nxt), len(obs) if size is None else size
    same = np.zeros(n, dtype=bool)
    if shift <= 0:
        return same
    bits_obs, bits_nxt = _words(obs), _words(nxt)
    direct = max(0, min(n, size - shift))  # slots i + shift < size, no wrap
    same[:direct] = (bits_nxt[:direct] == bits_obs[shift:shift + direct]).all(axis=1)
    if size == capacity and direct < n:  # a full ring: the last rows' slots wrap to the front
        rest = np.arange(direct, n)
        same[direct:] = (bits_nxt[direct:] == bits_obs[(rest + shift) % capacity]).all(axis=1)
    return same


def _words(rows: np.ndarray) -> np.ndarray:
    """``rows`` as rows of unsigned integers of their bits (as wide as the row's bytes allow),
    so that ``==`` compares bits: no ``-0.0 == 0.0``, no ``nan != nan``."""
    flat = np.ascontiguousarray(rows).reshape(len(rows), -1)
    width = next(w for w in (8, 4, 2, 1) if flat.shape[1] * flat.itemsize % w == 0)
    return flat.view(np.uint8).view(f"u{width}") if flat.size else flat.view(np.uint8)


def _compress(array: np.ndarray) -> Any:
    """zlib's bytes of ``array`` as a uint8 tensor (``torch.save`` writes a tensor's bytes as
    they are; a ``bytes`` object it pickles as text, ~1.8 times as long for compressed data)."""
    import torch

    packed = zlib.compress(np.ascontiguousarray(array).data, LEVEL)
    return torch.from_numpy(np.frombuffer(bytearray(packed), dtype=np.uint8))


def _decompress(data: Any, dtype: Any, shape: list[int]) -> np.ndarray:
    """The array of ``dtype`` and ``shape`` (as saved) in the zlib ``data`` (a uint8 tensor, or
    bytes)."""
    raw = zlib.decompress(memoryview(data.numpy()) if hasattr(data, "numpy") else data)
    return np.frombuffer(raw, dtype=dtype).reshape([int(d) for d in shape])


def _put(name: str, target: np.ndarray, saved: np.ndarray, size: int) -> None:
    if saved.shape[1:] != target.shape[1:] or saved.shape[0] != size:
        raise ValueError(f"replay: saved {name} of shape {tuple(saved.shape)} does not fit this "
                         f"buffer's {target.shape}")
    target[:size] = saved
