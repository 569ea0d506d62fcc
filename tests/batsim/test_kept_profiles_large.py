"""Batsim 4.2.1's profile walk beyond 10,273 profiles (:mod:`hdrm.batsim.kept_profiles`):
libstdc++'s whole ``__prime_list`` (GCC 12), so the buckets keep growing as Batsim's do and
SIMULATION_BEGINS lists the kept profiles of a large file in the binary's order. The recorded
values were read from the binary; the ``slow`` test runs it on a file of 20,000 profiles."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from real_batsim import real_batsim
from test_kept_profiles import _reject_all
from test_serve_composed import NB
from test_serve_energy_order import messages
from test_serve_workloads import write_platform

from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.kept_profiles import _PRIMES, _next_bucket_count, kept_profiles, map_order

BATSIM, WHY_NOT = real_batsim()


@pytest.mark.parametrize(("n", "buckets"), [
    (11, 11), (14, 17), (26, 29), (10_274, 11113), (2 * 10273, 20753),
    (2 * 20753, 42043),
    (1_000_000, 1056323), (2_000_000, 2144977), (4294967291, 4294967291),
    (4294967292, 6442450933), (2**64 - 1, 2**64 - 59)])
def test_next_bucket_count_is_the_next_listed_prime(n, buckets):
    """Hand-checked against GCC 12's list: the first prime at or above n (from 13 on), the fast
    table below 14 (0: one bucket), the last prime past the end."""
    assert _next_bucket_count(n) == buckets


def test_the_list_is_libstdcxx_s_on_64_bit_machines():
    """256 + 48 increasing primes (the sentinel left out), 4294967291 the 256th."""
    assert len(_PRIMES) == 304 and list(_PRIMES) == sorted(set(_PRIMES))
    assert _PRIMES[255] == 2**32 - 5 and _PRIMES[-1] == 2**64 - 59
    for p in _PRIMES:  # primes (Miller-Rabin with the first 12 primes: exact below 3.3e24)
        d, s = p - 1, 0
        while d % 2 == 0 and p > 2:
            d, s = d // 2, s + 1
        for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
            if a % p == 0:
                continue
            x = pow(a, d, p)
            if x in (1, p - 1):
                continue
            for _ in range(s - 1):
                x = x * x % p
                if x == p - 1:
                    break
            else:
                pytest.fail(f"{p} is not prime")


def large_file(path: Path, seed: int, size: int = 21_000) -> Path:
    """``size`` profiles: names of every length, nine in ten delays, the others sequences of 2-3
    earlier profiles (sequences among them, some repeated); 1,500 jobs on random profiles."""
    rng = random.Random(seed)
    profiles: dict[str, dict] = {}
    for i in range(size):
        name = "".join(rng.choice("abcxyz_019") for _ in range(rng.randint(1, 20))) + str(i)
        if i > 10 and rng.random() < 0.1:
            seq = rng.sample(list(profiles)[-2000:], rng.randint(2, 3))
            profiles[name] = {"type": "composed", "repeat": rng.randint(1, 2), "seq": seq}
        else:
            profiles[name] = {"type": "delay", "delay": 1 + i % 5}
    used = rng.sample(list(profiles), 1500)
    jobs = [{"id": str(i), "subtime": 0, "res": 1, "profile": p} for i, p in enumerate(used)]
    path.write_text(json.dumps({"nb_res": NB, "jobs": jobs, "profiles": profiles}))
    return path


#: the binary's SIMULATION_BEGINS for 12,000 profiles q0..q11999 (file order), each used by one
#: job: its first and last ten names (20,753 buckets at the end; runs/s24k/qrec.py)
Q_FIRST = ["q11996", "q11994", "q11993", "q11991", "q11988", "q11986", "q11985", "q11984",
           "q11982", "q11981"]
Q_LAST = ["q10248", "q7669", "q10251", "q10253", "q10262", "q10264", "q10266", "q7337",
          "q10268", "q10271"]


def test_twelve_thousand_names_as_the_binary_walks_them():
    order = map_order([f"q{i}" for i in range(12_000)])
    assert sorted(order) == sorted(f"q{i}" for i in range(12_000))
    assert order[:10] == Q_FIRST and order[-10:] == Q_LAST


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_file_of_21000_profiles_as_the_binary_lists_them(tmp_path, seed):
    """The kept profiles and their order, as SIMULATION_BEGINS lists them, for 21,000 profiles:
    rehashes to 20,753 then 42,043 buckets (was file order beyond 10,273 profiles)."""
    path = large_file(tmp_path / "w.json", seed)
    begun = time.perf_counter()
    theirs = messages(write_platform(tmp_path / "p.xml", NB), [path], tmp_path / "real", False,
                      _reject_all, real=True)
    listed = list(theirs[0]["events"][0]["data"]["profiles"]["w0"])
    ours = list(read_job_table(path).profile_sets["w0"])
    assert ours == listed
    doc = json.loads(path.read_text())
    used = Counter(job["profile"] for job in doc["jobs"])
    kept = kept_profiles(doc["profiles"], used)
    assert set(used) < kept < set(doc["profiles"])  # parts of live sequences kept, others not
    print(f"{len(doc['profiles'])} profiles, {len(listed)} listed, "
          f"{time.perf_counter() - begun:.2f} s")
