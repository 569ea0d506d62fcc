"""Which profiles Batsim 4.2.1 keeps from a workload, and in which order SIMULATION_BEGINS lists
them: its ``std::unordered_map`` walked in libstdc++'s order (:mod:`hdrm.batsim.kept_profiles`).
The expected lists were recorded from the binary (every job rejected at once); the ``slow``
tests compare with it on seeded files."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from real_batsim import real_batsim
from test_serve_composed import NB, PROFILES
from test_serve_energy_order import messages
from test_serve_workloads import write_platform

from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.kept_profiles import kept_profiles, map_order

#: SIMULATION_BEGINS of the binary for profiles p0..p19 (file order), each used by one job
TWENTY = ["p19", "p18", "p17", "p16", "p14", "p13", "p0", "p9", "p12", "p1", "p5", "p6", "p2",
          "p15", "p4", "p11", "p7", "p3", "p8", "p10"]
#: ... for the profiles of test_serve_composed.py, jobs using these: what it listed
UNUSED_SEQUENCES = [
    # 'nest' (unused) names 'd1', walked after it: d1 kept; 'c2' dropped with 'sc' and 'mix'
    (["d3", "sd", "t4", "t6"], ["sd", "t6", "t4", "d3", "d1"]),
    (["c2", "d1", "sc", "st", "t4", "t6"], ["st", "sc", "sd", "t6", "t4", "c2", "d3", "d1"]),
]


def test_the_walk_order_of_twenty_names():
    assert map_order([f"p{i}" for i in range(20)]) == TWENTY


@pytest.mark.parametrize(("used", "listed"), UNUSED_SEQUENCES)
def test_profiles_of_unused_sequences_kept_or_dropped_as_the_walk_meets_them(used, listed):
    kept = kept_profiles(PROFILES, Counter(used))
    assert [name for name in map_order(list(PROFILES)) if name in kept] == listed


def test_simulation_begins_lists_them_in_batsims_order(tmp_path):
    used, listed = UNUSED_SEQUENCES[1]
    jobs = [{"id": str(i), "subtime": 0, "res": 1, "profile": p} for i, p in enumerate(used)]
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": NB, "jobs": jobs, "profiles": PROFILES}))
    assert list(read_job_table(path).profile_sets["w0"]) == listed


def test_beyond_ten_thousand_profiles_the_walk_still_decides():
    """'s' then 10,300 profiles (20,753 buckets; was file order with every part kept): 's',
    unused, names 'q1' and 'q2'; the walk meets q2 before s (kept) and q1 after it (dropped);
    the binary lists q2 then q0 (used) (runs/s24k/beyond.py)."""
    names = [f"q{i}" for i in range(10_300)]
    profiles = {"s": {"type": "composed", "seq": ["q1", "q2"]}}
    profiles.update({name: {"type": "delay", "delay": 1} for name in names})
    order = map_order(list(profiles))
    assert order.index("q2") < order.index("s") < order.index("q1")
    kept = kept_profiles(profiles, Counter(["q0"]))
    assert [name for name in order if name in kept] == ["q2", "q0"]


# ---------------------------------------------------------------- against the real binary
BATSIM, WHY_NOT = real_batsim()


def _reject_all(doc: dict) -> str:
    return json.dumps({"now": doc["now"], "events": [
        {"timestamp": doc["now"], "type": "REJECT_JOB", "data": {"job_id": e["data"]["job_id"]}}
        for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]})


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seed", range(1, 6))
def test_seeded_files_as_the_binary_lists_them(tmp_path, seed):
    """Names of every length (hash tails), 30 to 3,000 profiles (rehashes up to 5,087
    buckets), a random half used, sequences among them."""
    rng = random.Random(seed)
    size = rng.choice([30, 200, 3000])
    profiles: dict[str, dict] = {}
    for i in range(size):
        name = "".join(rng.choice("abcxyz_019") for _ in range(rng.randint(1, 20))) + str(i)
        profiles[name] = {"type": "delay", "delay": 1 + i % 5}
    names = list(profiles)
    for i in range(size // 10):
        profiles[f"seq{i}"] = {"type": "composed", "seq": rng.sample(names, 2)}
    used = rng.sample(list(profiles), size // 2)
    jobs = [{"id": str(i), "subtime": 0, "res": 1, "profile": p} for i, p in enumerate(used)]
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": NB, "jobs": jobs, "profiles": profiles}))
    platform = write_platform(tmp_path / "p.xml", NB)
    theirs = messages(platform, [path], tmp_path / "real", False, _reject_all, real=True)
    listed = list(theirs[0]["events"][0]["data"]["profiles"]["w0"])
    assert list(read_job_table(path).profile_sets["w0"]) == listed
    assert len(listed) < len(profiles)
