"""Train one ``benchmarks/train.py`` setting over several seeds, one after the other, resumably.

Usage::

    nice -n 10 python benchmarks/train_seeds.py --seeds 0,1,2 --out models/NAME.pt -- \\
        --trace lublin --learner ppo --network kernel --minutes 10 ...

Each seed ``k`` writes ``models/NAME_seedk.pt`` (the arguments after ``--`` are ``train.py``'s,
without ``--seed`` and ``--out``). ``train.py`` writes the best model so far each time
validation improves, and its resume state (``NAME_seedk.pt.resume``) then and once a minute; a seed
whose model file is *final* (its training figures say so) is skipped, so rerunning the same
command after an interruption trains only the seeds left. The table of ``benchmarks/compare.py``
shows the mean over a setting's seeds with their spread.

An interruption (Ctrl-C, SIGTERM of this process alone) stops the seed being trained too
(:func:`hdrm.cli.script.run_command`): its best model so far and its resume state stay on disk,
and the rerun (the same ``train.py`` command) continues that seed from the state's validation
(:mod:`benchmarks.train_resume`; with ``--max-steps``, to the model an uninterrupted run gives).
A ``--log-dir D`` after ``--`` becomes ``D/seedk`` for seed ``k``,
so each seed keeps its own episodes.csv and validation.csv.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cli_lists  # noqa: E402
from benchmarks.train_resume import resume_path  # noqa: E402
from hdrm.cli.script import run_command  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402

#: The training script each seed runs.
TRAIN_SCRIPT = Path(__file__).resolve().parent / "train.py"


def seed_file(out: str | Path, seed: int) -> Path:
    """``models/NAME.pt`` -> ``models/NAME_seed{seed}.pt``."""
    out = Path(out)
    return out.with_name(f"{out.stem}_seed{seed}{out.suffix}")


def is_final(path: Path) -> bool:
    """Whether ``path`` holds a finished run's model (not one saved on the way)."""
    if not path.is_file():
        return False
    from hdrm.agents.checkpoint import read_checkpoint

    options = read_checkpoint(path)["options"]
    return bool(isinstance(options, dict) and options.get("training", {}).get("final"))


def seed_args(train_args: list[str], seed: int) -> list[str]:
    """``train.py``'s arguments for ``seed``: a ``--log-dir D`` (or ``--log-dir=D``) becomes
    ``D/seed{seed}`` (one folder for every seed: each seed's logs replaced the previous one's)."""
    out = list(train_args)
    for i, arg in enumerate(out):
        if arg == "--log-dir" and i + 1 < len(out):
            out[i + 1] = str(Path(out[i + 1]) / f"seed{seed}")
        elif arg.startswith("--log-dir="):
            out[i] = "--log-dir=" + str(Path(arg.split("=", 1)[1]) / f"seed{seed}")
    return out


def parse_seeds(text: str) -> list[int]:
    """``0,1,2`` as seeds.

    Raises:
        ConfigError: not a comma-separated list of distinct integers.
    """
    return cli_lists.ints(text, "--seeds", distinct=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    args = sys.argv[1:] if argv is None else argv
    own, train_args = (args[: args.index("--")], args[args.index("--") + 1:]) if "--" in args \
        else (args, [])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--out", required=True, help="models/NAME.pt (seed k: NAME_seedk.pt)")
    a = p.parse_args(own)
    try:
        seeds = parse_seeds(a.seeds)
        if "--seed" in train_args or "--out" in train_args:
            raise ConfigError("--seed/--out: give them to train_seeds.py (--seeds, --out), not "
                              "after '--'")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for seed in seeds:
        out = seed_file(a.out, seed)
        if is_final(out):
            print(f"seed {seed}: {out} is finished; skipped", flush=True)
            continue
        cmd = [sys.executable, str(TRAIN_SCRIPT), *seed_args(train_args, seed), "--seed",
               str(seed), "--out", str(out)]
        if resume_path(out).is_file():
            print(f"seed {seed}: resuming the interrupted training ({resume_path(out)})",
                  flush=True)
        print("training:", " ".join(cmd), flush=True)
        code = run_command(cmd)
        if code != 0:
            print(f"error: seed {seed} failed (exit {code})", file=sys.stderr)
            return code
    return 0


if __name__ == "__main__":
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
