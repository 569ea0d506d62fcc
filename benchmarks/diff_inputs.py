"""Inputs of :mod:`diff_replays`' matrix, written once into a work folder.

The first 3,000 jobs of every SWF trace of ``--traces`` (and SDSC-SP2's x 32 for the 4,096-core
platform), a KTH slice with job dependencies (SWF fields 17-18), two workloads of
:func:`hdrm.workload.generate.generate_workload`, a Batsim JSON conversion, a random WfCommons
workflow and a periodic task set, an inference workload with its tenants, the platforms of
``platforms/`` and ``hdrm/data`` plus ``benchmarks/hetero4096.json``, three platforms of one-core
nodes (the gates of the one-core fast paths), a Gavel GPU platform, the SimGrid XML platforms and
Batsim JSON workloads of ``../shared/batsim/golden``, and odd or malformed workloads and platforms.
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SLICE = 3000

def _processor(cores: int, ghz: float, fpc: int, bw: float, tdp: float) -> dict[str, Any]:
    return {"vendor": "diff", "model": "diff", "year": 2024, "cores": cores, "clock_ghz": ghz,
            "flops_per_cycle": fpc, "mem_bw_gbps": bw, "tdp_w": tdp}


def _one_core_platforms(folder: Path) -> None:
    """Platforms of one-core nodes: two speeds with memory, identical nodes, two processors a node."""
    fast, slow = _processor(1, 3.0, 16, 20, 40), _processor(1, 2.0, 8, 8, 15)
    shapes = {
        "onecore_hetero": ({"f1": fast, "s1": slow}, {"fn": ("f1", 1, 4), "sn": ("s1", 1, 2)},
                           [("fn", 48), ("sn", 80)]),
        "onecore_same": ({"f1": fast}, {"fn": ("f1", 1, 64)}, [("fn", 128)]),
        "twocore": ({"f1": fast}, {"fn": ("f1", 2, 8)}, [("fn", 64)]),
    }
    for name, (procs, nodes, counts) in shapes.items():
        doc = {"name": name, "description": f"differential matrix platform {name}",
               "processor_types": procs,
               "node_types": {n: {"processors": [{"type": p, "count": c}], "memory_gb": m}
                              for n, (p, c, m) in nodes.items()},
               "clusters": [{"name": "c0", "network": "ethernet_25g",
                             "nodes": [{"type": n, "count": k} for n, k in counts]}]}
        (folder / f"{name}.json").write_text(json.dumps(doc))
    gpu = {t: {"processors": [{"type": "xeon_gold_6148", "count": 2}], "memory_gb": 384,
               "accelerators": [{"type": a, "count": 4}]}
           for t, a in (("k80", "K80"), ("p100", "P100"), ("v100", "V100M16"))}
    (folder / "gavel.json").write_text(json.dumps({
        "name": "gavel", "node_types": gpu, "clusters": [{"name": "g", "network": "infiniband_edr",
                                                          "nodes": [{"type": t, "count": 4} for t in gpu]}]}))


def _slices(traces: Path, folder: Path) -> list[str]:
    """The first ``SLICE`` jobs of each SWF trace, with its header; returns their stems."""
    stems = []
    for trace in sorted(traces.glob("*.swf.gz")):
        head, jobs = [], []
        with gzip.open(trace, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith(";"):
                    head += [] if jobs else [line]
                elif line.strip():
                    jobs.append(line)
                    if len(jobs) >= SLICE:
                        break
        stem = trace.name[:-len(".swf.gz")]
        (folder / f"{stem}.swf").write_text("".join(head + jobs), encoding="utf-8")
        stems.append(stem)
    return stems


def _dependencies(source: Path, target: Path) -> None:
    """1,000 jobs of ``source`` where every fifth job follows one of the four before it."""
    rnd, out, count = random.Random(7), [], 0
    for line in source.read_text(encoding="utf-8").splitlines(True):
        if not line.startswith(";"):
            fields, count = line.split(), count + 1
            if count > 1000:
                break
            if count % 5 == 0 and count > 5:
                fields[16], fields[17] = str(int(fields[0]) - rnd.randint(1, 4)), str(rnd.randint(0, 300))
            line = " ".join(fields) + "\n"
        out.append(line)
    target.write_text("".join(out), encoding="utf-8")


def _workflow(target: Path) -> None:
    """A random layered WfCommons workflow (12 layers of 3 to 12 tasks)."""
    rnd = random.Random(3)
    layers = [[f"t{k}_{i}" for i in range(rnd.randint(3, 12))] for k in range(12)]
    parents: dict[str, list[str]] = {t: [] for layer in layers for t in layer}
    children: dict[str, list[str]] = {t: [] for t in parents}
    for upper, lower in zip(layers, layers[1:]):
        for task in lower:
            for parent in rnd.sample(upper, rnd.randint(1, min(3, len(upper)))):
                parents[task].append(parent)
                children[parent].append(task)
    tasks = [{"id": t, "parents": parents[t], "children": children[t],
              "inputFiles": [f"{p}>{t}" for p in parents[t]],
              "outputFiles": [f"{t}>{c}" for c in children[t]]} for t in parents]
    files = [{"id": f"{t}>{c}", "sizeInBytes": rnd.randint(1, 10**9)} for t in parents for c in children[t]]
    runs = [{"id": t, "runtimeInSeconds": rnd.randint(1, 500)} for t in parents]
    target.write_text(json.dumps({"name": "wf", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": tasks, "files": files}, "execution": {"tasks": runs}}}))


def _bad_inputs(folder: Path, golden: Path, swf: Path) -> None:
    """Odd and malformed Batsim JSON workloads, SWF files and SimGrid XML platforms."""
    base = {"nb_res": 8, "profiles": {"p1": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0},
                                      "d": {"type": "delay", "delay": 20}},
            "jobs": [{"id": 1, "subtime": 0, "res": 2, "walltime": 100, "profile": "p1"},
                     {"id": 2, "subtime": 5, "res": 4, "walltime": 50, "profile": "d"},
                     {"id": "x3", "subtime": 7.5, "res": 1, "walltime": -1, "profile": "p1", "user_id": 3}]}
    text = json.dumps(base)
    edits = {"ok": ("", ""), "dup_key": ('"subtime": 5,', '"subtime": 5, "subtime": 6,'),
             "dup_escaped_key": ('"subtime": 5,', '"subtime": 5, "\\u0073ubtime": 6,'),
             "dup_top_key": ('"nb_res": 8', '"nb_res": 8, "nb_res": 9'),
             "dup_profile_key": ('"delay": 20', '"delay": 20, "delay": 30'),
             "escaped_quotes": ('"profile": "d"', '"profile": "d", "n": "a\\":\\"b:", "n\\"o:": "\\\\"'),
             "escaped_quotes_dup": ('"profile": "d"', '"profile": "d", "n": "a\\":\\"b:", "n": "q"'),
             "nan_subtime": ('"subtime": 5', '"subtime": NaN'), "inf_walltime": ('"walltime": 50', '"walltime": Infinity'),
             "neg_res": ('"res": 4', '"res": -4'), "zero_res": ('"res": 4', '"res": 0'), "str_res": ('"res": 4', '"res": "4"'),
             "float_res": ('"res": 4', '"res": 4e0'), "bool_res": ('"res": 4', '"res": true'),
             "bool_id": ('"id": 2', '"id": true'), "float_id": ('"id": 2', '"id": 2.5'), "dup_id": ('"id": 2', '"id": 1'),
             "null_trace": ('"profile": "p1"}', '"profile": "p1", "trace_submit_s": null}'),
             "missing_profile": ('"profile": "d"', '"profile": "nope"'), "missing_res": ('"res": 4, ', ''),
             "bad_profile_type": ('"type": "delay"', '"type": "weird"'), "neg_delay": ('"delay": 20', '"delay": -1'),
             "neg_subtime": ('"subtime": 5', '"subtime": -3'), "neg_zero_subtime": ('"subtime": 0', '"subtime": -0.0'),
             "big_res": ('"res": 4', '"res": 100'), "huge_walltime": ('"walltime": 50', '"walltime": 12345678901234567890123'),
             "user_str": ('"user_id": 3', '"user_id": "alice"'), "extra_fields": ('"profile": "d"', '"profile": "d", "x": [1, {"y": 2}]'),
             "not_json": (text[40:], "")}
    for name, (old, new) in edits.items():
        assert old in text, name
        (folder / f"{name}.json").write_text(text.replace(old, new, 1) if old else text)
    (folder / "bom.json").write_text("\ufeff" + text, encoding="utf-8")
    (folder / "jobs_reversed.json").write_text(json.dumps(dict(base, jobs=base["jobs"][::-1])))
    lines = swf.read_text(encoding="utf-8").splitlines(True)
    head, jobs = [x for x in lines if x.startswith(";")], [x for x in lines if not x.startswith(";")][:40]
    variants = {"short_line": {5: " ".join(jobs[5].split()[:10]) + "\n"}, "repeated_number": {7: jobs[6]},
                "text_line": {8: "hello world\n"}, "fractional_procs": {9: _field(jobs[9], 4, "2.5")},
                "negative_run": {10: _field(jobs[10], 3, "-1")}, "blank_lines": {3: "\n   \n" + jobs[3]},
                "tabs_crlf": {i: "\t".join(j.split()) + "\r\n" for i, j in enumerate(jobs)}}
    for name, changes in variants.items():
        (folder / f"{name}.swf").write_text("".join(head + [changes.get(i, j) for i, j in enumerate(jobs)]))
    xml = (golden / "small_delays" / "platform.xml").read_text(encoding="utf-8")
    doctype = xml[xml.index("<!DOCTYPE"):xml.index(">", xml.index("<!DOCTYPE"))]
    (folder / "entity.xml").write_text(xml.replace(doctype, doctype + ' [<!ENTITY sp "1Gf">]'))
    (folder / "broken.xml").write_text(xml[: len(xml) // 2])
    (folder / "bom.xml").write_bytes(b"\xef\xbb\xbf" + xml.encode())
    (folder / "latin1.xml").write_bytes(xml.replace("<?xml version='1.0'?>", "<?xml version='1.0' encoding='ISO-8859-1'?>")
                                        .replace('id="', 'id="\u00e9', 1).encode("latin-1"))


def _field(line: str, index: int, value: str) -> str:
    fields = line.split()
    fields[index] = value
    return " ".join(fields) + "\n"


def prepare(folder: Path, traces: Path, golden: Path) -> Path:
    """Write the matrix's inputs into ``folder`` (skipped when its ``_ready`` mark exists)."""
    if (folder / "_ready").exists():
        return folder
    for sub in ("platforms", "bad", "golden"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for source in [*ROOT.glob("platforms/*.json"), ROOT / "benchmarks" / "hetero4096.json",
                   ROOT / "hdrm" / "data" / "example_platform.json", ROOT / "hdrm" / "data" / "inference_platform.json"]:
        (folder / "platforms" / source.name).write_bytes(source.read_bytes())
    for source in ROOT.glob("workloads/*"):
        if source.suffix in (".swf", ".json", ".csv"):
            (folder / source.name).write_bytes(source.read_bytes())
    _one_core_platforms(folder / "platforms")
    if (traces / "gpu").is_dir() and not (folder / "gpu").exists():
        (folder / "gpu").symlink_to(traces.resolve() / "gpu")  # openb and Gavel files, read as they are
    for case in sorted(golden.iterdir()):
        (folder / "golden" / case.name).mkdir(exist_ok=True)
        for name in ("platform.xml", "workload.json"):
            (folder / "golden" / case.name / name).write_bytes((case / name).read_bytes())
    _slices(traces, folder)
    _dependencies(folder / "KTH-SP2-1996-2.1-cln.swf", folder / "kth_deps.swf")
    scaled(folder / "SDSC-SP2-1998-4.2-cln.swf", 32, folder / "sdsc_x32.swf")
    _workflow(folder / "wf.json")
    _bad_inputs(folder / "bad", golden, folder / "KTH-SP2-1996-2.1-cln.swf")
    from hdrm.workload.generate import generate_workload, write_swf  # the driver's own hdrm
    import numpy as np

    for cores, seed in ((384, 1), (64, 2)):
        write_swf(generate_workload(2000, cores, np.random.default_rng(seed), load=0.9), folder / f"synth_{cores}.swf")
    hdrm = [sys.executable, "-m", "hdrm.cli.main"]
    for argv in (["workload", "SDSC-SP2-1998-4.2-cln.swf", "--platform", "platforms/hetero.json", "--nb-jobs", "1500",
                  "--json", "sdsc_hetero.json"],
                 ["workload", "inference", "--tenants", str(ROOT / "hdrm/data/inference_tenants.json"),
                  "--requests", "5000", "-o", "inf"],
                 ["dag", "taskset", "--graphs", "4", "--utilisation", "2.0", "--seed", "1", "-o", "taskset.json"],
                 *(["workload", f"{stem}.swf", "--no-strict", "--json", f"{stem}.json"] for stem in
                   ("CTC-SP2-1996-3.1-cln", "LLNL-Atlas-2006-2.1-cln", "lublin_256", "KTH-SP2-1996-2.1-cln"))):
        subprocess.run(hdrm + argv, cwd=folder, check=True, capture_output=True)
    platforms = [f"{folder}/platforms/{name}.json" for name in ("hetero", "onecore_same", "tiny_hetero")]
    (folder / "sweep.json").write_text(json.dumps({
        "policies": ["fcfs", "sjf", "shortest-high_gflops", "random-random"], "backfill": ["none", "easy", "conservative"],
        "platforms": platforms, "traces": [f"{folder}/SDSC-SP2-1998-4.2-cln.swf", f"{folder}/lublin_256.swf"],
        "load_factors": [1.0, 2.0], "seeds": [0, 1], "nb_jobs": 100}))
    (folder / "_ready").write_text("")
    return folder



def scaled(source: Path, factor: int, target: Path) -> None:
    """``source`` (SWF) with every processor count (fields 5 and 8, header MaxNodes/MaxProcs) x ``factor``."""
    out = []
    for line in source.read_text(encoding="utf-8").splitlines(True):
        if line.startswith(";"):
            key, sep, value = line[1:].partition(":")
            if key.strip() in ("MaxNodes", "MaxProcs") and value.strip().isdigit():
                line = f";{key}{sep} {int(value) * factor}\n"
        else:
            fields = line.split()
            for i in (4, 7):
                if fields[i].isdigit() and int(fields[i]) > 0:
                    fields[i] = str(int(fields[i]) * factor)
            line = " ".join(fields) + "\n"
        out.append(line)
    target.write_text("".join(out), encoding="utf-8")
