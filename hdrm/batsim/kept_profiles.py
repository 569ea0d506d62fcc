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
#: libstdc++'s ``__fast_bkt``, and its ``__prime_list`` on a 64-bit machine (GCC 12's
#: libstdc++-v3/src/shared/hashtable-aux.cc: 256 + 48 primes, from 2 to 2^64 - 59; the
#: sentinel, a repeat of the last, left out)
_FAST = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83,
           89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257,
           277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823,
           887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549,
           2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517,
           8123, 8783, 9497, 10273, 11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753,
           22447, 24281, 26267, 28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201,
           57557, 62233, 67307, 72817, 78779, 85229, 92203, 99733, 107897, 116731, 126271, 136607,
           147793, 159871, 172933, 187091, 202409, 218971, 236897, 256279, 277261, 299951, 324503,
           351061, 379787, 410857, 444487, 480881, 520241, 562841, 608903, 658753, 712697, 771049,
           834181, 902483, 976369, 1056323, 1142821, 1236397, 1337629, 1447153, 1565659, 1693859,
           1832561, 1982627, 2144977, 2320627, 2510653, 2716249, 2938679, 3179303, 3439651,
           3721303, 4026031, 4355707, 4712381, 5098259, 5515729, 5967347, 6456007, 6984629,
           7556579, 8175383, 8844859, 9569143, 10352717, 11200489, 12117689, 13109983, 14183539,
           15345007, 16601593, 17961079, 19431899, 21023161, 22744717, 24607243, 26622317,
           28802401, 31160981, 33712729, 36473443, 39460231, 42691603, 46187573, 49969847,
           54061849, 58488943, 63278561, 68460391, 74066549, 80131819, 86693767, 93793069,
           101473717, 109783337, 118773397, 128499677, 139022417, 150406843, 162723577, 176048909,
           190465427, 206062531, 222936881, 241193053, 260944219, 282312799, 305431229, 330442829,
           357502601, 386778277, 418451333, 452718089, 489790921, 529899637, 573292817, 620239453,
           671030513, 725980837, 785430967, 849749479, 919334987, 994618837, 1076067617,
           1164186217, 1259520799, 1362662261, 1474249943, 1594975441, 1725587117, 1866894511,
           2019773507, 2185171673, 2364114217, 2557710269, 2767159799, 2993761039, 3238918481,
           3504151727, 3791104843, 4101556399, 4294967291, 6442450933, 8589934583, 12884901857,
           17179869143, 25769803693, 34359738337, 51539607367, 68719476731, 103079215087,
           137438953447, 206158430123, 274877906899, 412316860387, 549755813881, 824633720731,
           1099511627689, 1649267441579, 2199023255531, 3298534883309, 4398046511093,
           6597069766607, 8796093022151, 13194139533241, 17592186044399, 26388279066581,
           35184372088777, 52776558133177, 70368744177643, 105553116266399, 140737488355213,
           211106232532861, 281474976710597, 562949953421231, 1125899906842597, 2251799813685119,
           4503599627370449, 9007199254740881, 18014398509481951, 36028797018963913,
           72057594037927931, 144115188075855859, 288230376151711717, 576460752303423433,
           1152921504606846883, 2305843009213693951, 4611686018427387847, 9223372036854775783,
           18446744073709551557)


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


def _next_bucket_count(n: int) -> int:
    """``_Prime_rehash_policy::_M_next_bkt(n)``: the first listed prime at or above ``n`` (from
    the 7th), or the last one (libstdc++ then never rehashes again: far beyond any workload);
    the next resize is at that many elements (a maximum load factor of 1)."""
    if n < len(_FAST):
        return _FAST[n]
    return _PRIMES[min(max(6, bisect_left(_PRIMES, n)), len(_PRIMES) - 1)]


def map_order(names: list[str]) -> list[str]:
    """The order in which an ``unordered_map`` filled with ``names`` (in this order, distinct)
    is walked."""
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
    for name in map_order(list(profiles)):
        if counts[name] < 2:
            for sub in _seq(profiles[name]):
                if sub in counts:
                    counts[sub] -= 1
        else:
            kept.add(name)
    return kept


def _seq(body: Any) -> list[str]:
    if isinstance(body, dict) and body.get("type") == "composed" and isinstance(
            body.get("seq"), list):
        return [s for s in body["seq"] if isinstance(s, str)]
    return []
