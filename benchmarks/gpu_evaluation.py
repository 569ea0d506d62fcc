"""One cell of the GPU comparison, as a run of ``hdrm sweep``'s machinery.

A :class:`GpuEvalRun` is "this (queue order x placement) pair, or this model, on this workload's
test windows, over these seeds". :func:`run_gpu_evaluations` hands the runs to
:func:`hdrm.distributed.sweep.run_pending` as :mod:`benchmarks.evaluation` does for the CPU
table: the sweep's backends, atomic runs and resume (a run whose folder is finished is read back,
not run again). A run's row is ``{"per_seed": {seed: score}}``, each score the mean of
:class:`~benchmarks.gpu_protocol.GpuScore` over the windows; ``score.json`` holds it too.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmarks.evaluation import SCORE_FILE, Execution, run_rows
from benchmarks.gpu_protocol import GpuScore, Setting, run_pair
from hdrm.errors import ConfigError

Kind = Literal["pair", "model"]


@dataclass(frozen=True)
class GpuEvalRun:
    """One evaluation: a fixed pair or a model on a setting's test windows, over seeds.

    Attributes:
        kind: ``pair`` (through the engine) or ``model`` (through the multi-agent env).
        policy: the pair name (``sjf-fgd``) or the model file (absolute).
        setting: the workload's files, load factor and windows.
        seeds: the seeds (the engine's tie order; a model's episode seed).
        model_digest: SHA-256 of the model file, so a retrained model is run again.
        backfill: the pair's backfilling mode (``none`` or ``greedy``).
    """

    kind: Kind
    policy: str
    setting: Setting
    seeds: tuple[int, ...]
    model_digest: str = ""
    backfill: str = "none"

    @property
    def name(self) -> str:
        """The run's folder name: readable settings, then a digest of all of them."""
        label = Path(self.policy).stem if self.kind == "model" else self.policy
        return (f"{self.kind}_{label}_{self.backfill}_{self.setting.key}_"
                f"x{self.setting.load_factor:g}_{self.digest()[:8]}")

    def digest(self) -> str:
        """SHA-256 of every setting."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """The settings as a JSON object (kept in ``done.json``)."""
        values = asdict(self)
        values["seeds"] = list(self.seeds)
        return json.loads(json.dumps(values))  # tuples as lists

    def produce(self, folder: Path) -> dict[str, Any]:
        """Evaluate, write ``score.json`` into ``folder`` and return the row."""
        row = {"per_seed": {str(seed): asdict(self.score(seed)) for seed in self.seeds}}
        folder.mkdir(parents=True, exist_ok=True)
        (folder / SCORE_FILE).write_text(json.dumps(row, indent=1) + "\n", encoding="utf-8")
        return row

    def score(self, seed: int) -> GpuScore:
        """The mean score over the test windows for one seed."""
        if self.kind == "pair":
            return GpuScore.mean(run_pair(self.setting, s, self.policy, seed, self.backfill)
                                 for s in self.setting.test_starts)
        if self.kind == "model":
            from benchmarks.gpu_learners import model_score  # torch: only for models

            return GpuScore.mean(model_score(self.policy, self.setting, s, seed)
                                 for s in self.setting.test_starts)
        raise ConfigError(f"kind: unknown GPU evaluation {self.kind!r}; choose pair or model")


def model_run(path: str, setting: Setting, seeds: tuple[int, ...]) -> GpuEvalRun:
    """The :class:`GpuEvalRun` of a model file (its content's digest included)."""
    content = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return GpuEvalRun("model", str(Path(path).resolve()), setting, seeds, content)


@dataclass(frozen=True)
class Summary:
    """A run's scores over seeds: the mean and the standard deviation of each field."""

    mean: GpuScore
    spread: GpuScore


def summary_of(row: dict[str, Any]) -> Summary:
    """The mean and spread (population standard deviation) over the seeds of a run's row."""
    per_seed = [GpuScore(**{f.name: float(s[f.name]) for f in fields(GpuScore)})
                for s in row["per_seed"].values()]
    spread = GpuScore(*(float(np.std([getattr(s, f.name) for s in per_seed])) if per_seed
                        else math.nan for f in fields(GpuScore)))
    return Summary(GpuScore.mean(per_seed), spread)


def run_gpu_evaluations(runs: list[GpuEvalRun], execution: Execution) -> list[Summary]:
    """Run the evaluations through the sweep machinery; their summaries, in order."""
    return [summary_of(row) for row in run_rows(runs, execution, "hdrm_compare_gpu_")]
