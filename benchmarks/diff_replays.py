"""Differential check of two hdrm trees: the same replays and env rollouts, byte for byte.

Fast paths must change no decision and no output byte. This script runs the matrix of
:mod:`diff_cases` (every SWF trace of ``--traces``, synthetic workloads, every platform kind,
policies, backfilling, contention, walltime kills, tenants and preemption, dependencies and DAGs,
GPU replays, real Batsim, odd and malformed inputs, the timeline on and off) with two trees, each
in its own process (``PYTHONPATH`` = the tree), and compares every output file after masking the
wall-clock fields (CSV columns and JSON keys named like ``scheduling_time``, ``simulation_time``,
``wall``, and ``cpu_s``; the "wall time" line and a sweep's "in ... s" of the summary; paths and Batsim's port). It also hashes seeded
env rollouts (observations, rewards, masks, energy; random valid actions) in both trees.

Cases run in one process a tree, except those named ``P_``, each in a process of its own: Batsim
JSON on SimGrid XML, where numpy stays unloaded and the numpy-free paths run (in a process that
has imported numpy, the same replay takes the arrays' paths).

A tree is a folder, or a git revision exported with ``git archive`` (uncommitted edits excluded).
Inputs are :mod:`diff_inputs`'. The outputs of a tree are kept under ``--work`` and reused while the matrix is unchanged.

Usage::

    python benchmarks/diff_replays.py --base 49caffb [--head HEAD] [--cases REGEX] [--no-rollouts]
                                      [--work /tmp/hdrm_diff] [--traces ../shared/traces]

Exit status 1 when any case or rollout differs (each is named). Run it under ``nice``: the full
matrix is about 530 replays, ~4 CPU minutes a tree.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # appended: a tree's hdrm comes first
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks import diff_cases  # noqa: E402
from hdrm.cli import script as cli

WALL = re.compile(r"scheduling_time|simulation_time|wall|^cpu_s$")
SUMMARY_WALL = re.compile(r"\d[\d,]*(\.\d+)?\s*(s|ms)\b(\s*\([\d,.]+ \w+/s\))?")


def mask_csv(text: str) -> str:
    """``text`` (CSV with a header) with the wall-clock columns' values replaced."""
    rows = list(csv.reader(io.StringIO(text)))
    wall = [i for i, name in enumerate(rows[0]) if WALL.search(name)] if rows else []
    for row in rows[1:]:
        for i in wall:
            if i < len(row):
                row[i] = "<wall>"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def mask_json(value):
    """``value`` with the values of wall-clock keys replaced, at any depth."""
    if isinstance(value, dict):
        return {k: "<wall>" if WALL.search(k) else mask_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    return value


def normalized(path: Path, root: Path) -> bytes:
    """The bytes of an output file as compared: wall clock, ``root`` and Batsim's port masked."""
    data = path.read_bytes().replace(str(root).encode(), b"<root>")
    data = re.sub(rb"tcp://[^\s'\"]*:\d+", b"tcp://<port>", data)
    if path.name == "batsim.log":
        data = re.sub(rb"Simulation took [\d.]+ seconds", b"<t>", data)
    if path.name == "_stdout.txt":
        lines = [SUMMARY_WALL.sub("<t>", x) if "wall time" in x or re.search(r"\(\S+ s\)|\bin [\d.]+ s\b", x) else x
                 for x in data.decode().splitlines()]
        return "\n".join(lines).encode()
    if path.suffix == ".csv":
        return mask_csv(data.decode()).encode()
    if path.suffix == ".json":
        try:
            return json.dumps(mask_json(json.loads(data)), sort_keys=True).encode()
        except ValueError:  # a malformed input copied by a run: compared as it is
            return data
    return data


def compare(base: Path, head: Path, names) -> list[str]:
    """Names of the cases (with the files) whose outputs differ between two output roots."""
    differ = []
    for name in names:
        a, b = base / name, head / name
        files_a = {str(x.relative_to(a)) for x in a.rglob("*") if x.is_file()}
        files_b = {str(x.relative_to(b)) for x in b.rglob("*") if x.is_file()}
        bad = [f"files {sorted(files_a ^ files_b)}"] if files_a != files_b else []
        bad += [f for f in sorted(files_a & files_b) if normalized(a / f, base) != normalized(b / f, head)]
        if bad:
            differ.append(f"{name}: {', '.join(bad)}")
    return differ


def digest(folder: Path) -> str:
    """Hash of a case's output files (not its printed summary), as :func:`normalized` reads them."""
    h = hashlib.sha256()
    for path in sorted(x for x in folder.rglob("*") if x.is_file() and not x.name.startswith("_")):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + normalized(path, folder) + b"\0")
    return h.hexdigest()[:16]


def run_cases(spec_path: Path, root: Path) -> None:
    """Run the cases of a spec in this process (the tree on ``sys.path``), one folder each."""
    spec = json.loads(spec_path.read_text())
    from hdrm.cli.main import main
    import hdrm.sim.engine as engine

    init, no_timeline = engine.SimulationConfig.__init__, {"on": False}

    def init_no_timeline(self, *args, **kwargs):  # the timeline off, as sweeps and envs run it
        init(self, *args, **kwargs)
        if no_timeline["on"]:
            object.__setattr__(self, "record_timeline", False)

    engine.SimulationConfig.__init__ = init_no_timeline
    os.chdir(root)
    for name, argv in spec["cases"].items():
        shutil.rmtree(root / name, ignore_errors=True)
        (root / name).mkdir()
        no_timeline["on"] = name in spec["no_timeline"]
        args = argv + (["-o", name] if argv[0] == "dag" else ["--outdir", name, "--quiet"])
        if argv[0] == "sweep":
            args = argv + ["--outdir", name, "--backend", "serial", "--quiet"]
        buf, start = io.StringIO(), time.process_time()
        if name.startswith("P_"):  # a process of its own: what this one has imported stays out
            done = subprocess.run([sys.executable, "-m", "hdrm.cli.main", *args], capture_output=True, text=True)
            (root / name / "_stdout.txt").write_text(done.stdout + done.stderr)
            (root / name / "_rc.txt").write_text(f"{done.returncode}\n")
            continue
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                rc = main(args)
            except SystemExit as exc:
                rc = f"exit {exc.code}"
            except Exception as exc:  # noqa: BLE001 (the same exception is expected of both trees)
                rc = "raised " + "".join(traceback.format_exception_only(type(exc), exc)).strip()
        (root / name / "_stdout.txt").write_text(buf.getvalue())
        (root / name / "_rc.txt").write_text(f"{rc}\n")
        with open(root / "_times.txt", "a") as times:
            times.write(f"{name} {time.process_time() - start:.3f}\n")


def rollout_hashes(folder: Path, names: list[str], episodes: int) -> dict[str, str]:
    """Hash of seeded rollouts of each env setting (random valid actions drawn from one seed)."""
    import numpy as np
    from hdrm.env import SchedulingEnv

    hashes = {}
    for name in names:
        env = SchedulingEnv(**diff_cases.rollout_settings(folder)[name])
        digest, rng = hashlib.sha256(), np.random.default_rng(0)
        for episode in range(episodes):
            obs, info = env.reset(seed=episode)
            digest.update(np.asarray(obs).tobytes())
            done = False
            while not done:
                obs, reward, done, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
                done = done or truncated
                digest.update(np.asarray(obs).tobytes() + repr(float(reward)).encode())
                digest.update(np.asarray(info["action_mask"]).tobytes())
            digest.update(repr(getattr(env.sim.machine, "energy_j", lambda: None)()).encode())
        hashes[name] = digest.hexdigest()[:16]
    return hashes


def tree_of(rev: str, work: Path) -> Path:
    """A folder, as is, or a clean ``git archive`` of revision ``rev`` of this checkout."""
    if Path(rev).is_dir():
        return Path(rev).resolve()
    sha = subprocess.run(["git", "-C", str(diff_cases.ROOT), "rev-parse", "--short=10", rev],
                         check=True, capture_output=True, text=True).stdout.strip()
    tree = work / "trees" / sha
    if not (tree / "hdrm").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(diff_cases.ROOT), "archive", sha], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def outputs_of(tree: Path, spec_path: Path, work: Path) -> Path:
    """Run the spec's cases with ``tree`` (reused when already run with the same spec)."""
    key = hashlib.sha256(str(tree).encode() + spec_path.read_bytes()).hexdigest()[:12]
    root = work / "out" / key
    if not (root / "_done").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        _in_tree(tree, "--run", str(spec_path), str(root))
        (root / "_done").write_text(str(tree))
    return root


def _in_tree(tree: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, __file__, *args], env=env, check=True, capture_output=True, text=True)
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    """Command line: compare two trees (or, internally, run cases or rollouts in this tree)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="baseline tree: a folder or a git revision")
    parser.add_argument("--head", default="HEAD", help="tree to check (default HEAD)")
    parser.add_argument("--cases", default=".", help="regular expression on case names")
    parser.add_argument("--work", default="/tmp/hdrm_diff", help="inputs, trees and outputs")
    parser.add_argument("--traces", default=str(diff_cases.ROOT.parent / "shared" / "traces"))
    parser.add_argument("--golden", default=str(diff_cases.ROOT.parent / "shared" / "batsim" / "golden"))
    parser.add_argument("--batsim", default=str(diff_cases.ROOT.parent / "shared" / "batsim" / "bin" / "batsim"),
                        help="Batsim binary ('' skips the Batsim cases)")
    parser.add_argument("--episodes", type=cli.count(1), default=2,
                        help="episodes a rollout setting")
    parser.add_argument("--no-rollouts", action="store_true")
    parser.add_argument("--run", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--roll", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run or args.roll:  # inside a tree: its hdrm, not this checkout's
        import hdrm

        assert hdrm.__file__.startswith(os.environ["PYTHONPATH"]), hdrm.__file__
    if args.run:
        run_cases(Path(args.run[0]), Path(args.run[1]))
        return 0
    if args.roll:
        print(json.dumps(rollout_hashes(Path(args.roll[0]), args.roll[1].split(","), int(args.roll[2]))))
        return 0
    if not args.base:
        parser.error("--base: give the baseline tree (a folder or a git revision)")
    work = Path(args.work).resolve()
    inputs = diff_cases.prepare(work / "inputs", Path(args.traces), Path(args.golden))
    cases, on_batsim, no_timeline = diff_cases.matrix(inputs, args.batsim if Path(args.batsim).is_file() else "")
    wanted = {k: v for k, v in cases.items() if re.search(args.cases, k)}
    spec = work / f"spec_{hashlib.sha256(json.dumps(wanted).encode()).hexdigest()[:12]}.json"
    spec.write_text(json.dumps({"cases": wanted, "no_timeline": sorted(no_timeline)}))
    trees = [tree_of(args.base, work), tree_of(args.head, work)]
    roots = [outputs_of(tree, spec, work) for tree in trees]
    differ = compare(*roots, wanted)
    print(f"{len(wanted) - len(differ)} of {len(wanted)} cases identical ({len(on_batsim & set(wanted))} on Batsim); "
          f"outputs in {roots[0]} and {roots[1]}")
    if not args.no_rollouts:
        names = ",".join(diff_cases.rollout_settings(inputs))
        hashes = [json.loads(_in_tree(tree, "--roll", str(inputs), names, str(args.episodes))) for tree in trees]
        differ += [f"rollout {k}: {hashes[0][k]} != {hashes[1][k]}" for k in hashes[0] if hashes[0][k] != hashes[1][k]]
        print(f"{sum(hashes[0][k] == hashes[1][k] for k in hashes[0])} of {len(hashes[0])} rollout settings identical")
    for line in differ:
        print("DIFFERS", line)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
