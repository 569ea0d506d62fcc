"""``hdrm workload inference``: generate a multi-tenant DNN inference workload.

``hdrm workload inference --tenants SPEC.json -o DIR`` reads a tenant spec
(:mod:`hdrm.workload.inference`), draws the requests (seeded) and writes ``DIR/workload.json``
(Batsim JSON: one one-core ``parallel_homogeneous`` job per request) and ``DIR/tenants.json``
(the tenants, shares and SLA classes ``hdrm replay --tenants`` reads), then prints one line per
tenant.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import numpy as np

from hdrm.durable import staged, write_text_atomically
from hdrm.errors import ConfigError
from hdrm.workload.batsim_json import write_batsim_json
from hdrm.workload.inference import generate_inference, load_spec, tenants_document

logger = logging.getLogger(__name__)


def run_inference(args: argparse.Namespace) -> int:
    """Generate the workload of ``args.tenants`` into ``args.output``; returns 0."""
    if not args.tenants or not args.output:
        raise ConfigError("hdrm workload inference needs --tenants SPEC.json and -o DIR "
                          "(e.g. --tenants hdrm/data/inference_tenants.json -o inf)")
    if args.requests is not None and args.requests < 1:
        raise ConfigError(f"--requests: expected an integer >= 1, got {args.requests}")
    spec = load_spec(args.tenants)
    workload = generate_inference(spec, args.seed, args.requests)
    outdir = Path(args.output)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"-o {outdir}: cannot create the folder ({exc.strerror})") from None
    with staged() as stage:  # the two files of one scenario, published together
        write_batsim_json(workload, stage.path(outdir / "workload.json"))
        write_text_atomically(stage.path(outdir / "tenants.json"),
                              json.dumps(tenants_document(spec), indent=1) + "\n")
    _print_summary(spec, workload)
    print(f"wrote {outdir / 'workload.json'} and {outdir / 'tenants.json'}")
    return 0


def _print_summary(spec, workload) -> None:
    owners = np.array([job.user_id for job in workload.jobs], dtype=np.int64)
    counts = np.bincount(owners, minlength=len(spec.tenants))
    span = workload.jobs[-1].submit_s if workload.jobs else 0.0
    print(f"{len(workload)} requests of {len(spec.tenants)} tenants over {span:.3f} s")
    print(f"{'tenant':<10} {'model':<9} {'batch':>5} {'requests':>9} {'rate/s':>8} "
          f"{'SLA ms':>7} {'alone ms':>9} {'GB/s':>6}")
    for i, t in enumerate(spec.tenants):
        rate = counts[i] / span if span > 0 else 0.0
        print(f"{t.name:<10} {t.model.name:<9} {t.batch:>5} {counts[i]:>9} {rate:>8.1f} "
              f"{t.sla_ms:>7g} {1000 * t.model.run_time_s(t.batch):>9.3f} "
              f"{t.model.mem_bw_gbps(t.batch):>6.1f}")
