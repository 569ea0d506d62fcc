"""The profiles Batsim 4.2.1 keeps from a workload file (SIMULATION_BEGINS lists them).

Batsim stores a file's profiles in a ``std::unordered_map<std::string, ProfilePtr>`` and, once
the jobs are read, walks it and drops each profile whose use count is below 2
(``Profiles::remove_unreferenced_profiles``): the map holds one reference, each job using it
one, and each ``seq`` entry of a live ``composed`` profile one. Dropping a sequence releases its
parts, so a profile named only by unused sequences is dropped when the walk meets it after them
and kept when before: the walk's order (libstdc++'s, GCC 12 as the binary was built) decides.

:func:`kept_profiles` replays that walk: ``std::hash<std::string>`` (``_Hash_bytes``, seed
``0xc70f6907``), the prime rehash policy (13 buckets from the first insertion, then the next
listed prime at or above twice as many when full), and the singly linked node list (a node
goes first in its bucket's run, or at the front when its bucket was empty; a rehash re-inserts
the nodes in list order by the same rule).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

_MASK = (1 << 64) - 1
_MUL = 0xC6A4A7935BD1E995
_SEED = 0xC70F6907
#: libstdc++'s ``__fast_bkt`` and the start of its ``__prime_list`` (enough for 10^4 profiles)
_FAST = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79,
           83, 89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227,
           241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709,
           761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029,
           2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953,
           6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113, 12011, 12983)


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def string_hash(text: str) -> int:
    """``std::hash<std::string>`` of libstdc++ on a 64-bit machine (its ``_Hash_bytes``)."""
    data = text.encode("utf-8")
    n = len(data)
    h = (_SEED ^ (n * _MUL)) & _MASK
    aligned = n & ~7
    for i in range(0, aligned, 8):
        word = int.from_bytes(data[i:i + 8], "little")
        h = ((h ^ ((_shift_mix((word * _MUL) & _MASK) * _MUL) & _MASK)) * _MUL) & _MASK
    if n & 7:
        h = ((h ^ int.from_bytes(data[aligned:], "little")) * _MUL) & _MASK
    h = (_shift_mix(h) * _MUL) & _MASK
    return _shift_mix(h)


def _next_bucket_count(n: int) -> int | None:
    """``_Prime_rehash_policy::_M_next_bkt(n)`` (None beyond the primes listed here); the next
    resize is at that many elements (a maximum load factor of 1)."""
    if n < len(_FAST):
        return _FAST[n]
    i = max(6, bisect_left(_PRIMES, n))
    return _PRIMES[i] if i < len(_PRIMES) else None


def map_order(names: list[str]) -> list[str] | None:
    """The order in which an ``unordered_map`` filled with ``names`` (in this order, distinct)
    is walked; None for more names than the primes listed here cover (over 10,273)."""
    codes = [string_hash(name) for name in names]
    buckets, next_resize = 1, 0
    runs: dict[int, list[int]] = {}  # bucket -> its nodes, last inserted last (walked reversed)
    fronts: list[int] = []  # buckets in the order their runs went to the front of the list

    def insert(k: int) -> None:
        run = runs.get(codes[k] % buckets)
        if run is None:
            runs[codes[k] % buckets] = [k]
            fronts.append(codes[k] % buckets)
        else:
            run.append(k)

    for size in range(len(names)):
        if size + 1 > next_resize:
            least = max(size + 1, 11 if next_resize == 0 else 0)
            if least >= buckets:
                count = _next_bucket_count(max(least + 1, buckets * 2))
                if count is None:
                    return None
                old = _walk(runs, fronts)
                buckets = next_resize = count
                runs, fronts = {}, []
                for k in old:
                    insert(k)
            else:
                next_resize = buckets
        insert(size)
    return [names[k] for k in _walk(runs, fronts)]


def _walk(runs: dict[int, list[int]], fronts: list[int]) -> list[int]:
    """The node list: the newest run first, each run newest node first."""
    return [k for bucket in reversed(fronts) for k in reversed(runs[bucket])]


def kept_profiles(profiles: dict[str, Any], used: dict[str, int]) -> set[str]:
    """The names of ``profiles`` (in file order) that Batsim keeps, ``used[name]`` jobs using
    each: the walk of :func:`map_order` drops a profile whose count (1 + jobs + live ``seq``
    entries naming it) is below 2, and a dropped sequence releases the entries of its ``seq``."""
    counts = {name: 1 + used.get(name, 0) for name in profiles}
    for body in profiles.values():
        for sub in _seq(body):
            if sub in counts:
                counts[sub] += 1
    kept = set()
    for name in map_order(list(profiles)) or _file_order_guess(profiles):
        if counts[name] < 2:
            for sub in _seq(profiles[name]):
                if sub in counts:
                    counts[sub] -= 1
        else:
            kept.add(name)
    return kept


def _file_order_guess(profiles: dict[str, Any]) -> list[str]:
    """Beyond the primes listed: the sequences last, so that what they name is kept."""
    return sorted(profiles, key=lambda name: bool(_seq(profiles[name])))


def _seq(body: Any) -> list[str]:
    if isinstance(body, dict) and body.get("type") == "composed" and isinstance(
            body.get("seq"), list):
        return [s for s in body["seq"] if isinstance(s, str)]
    return []
