"""``hdrm platform``: validate a platform, print its summary, export it as SimGrid XML.

Usage::

    hdrm platform platforms/hetero.json                  validate and summarise
    hdrm platform platforms/hetero.json --xml out.xml    ... and write the SimGrid platform
    hdrm platform platforms/hetero.json --json           the summary as JSON
    hdrm platform some_simgrid_platform.xml              summarise a SimGrid file, host by host
    hdrm platform --list-types                           the shipped type library
    hdrm platform from-openb NODES.csv -o gpu.json       a GPU platform from an openb node list
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, Sequence

from hdrm.durable import write_text_atomically
from hdrm.errors import ConfigError
from hdrm.platform.library import TypeLibrary, default_library
from hdrm.platform.loader import platform_from_dict
from hdrm.platform.openb import library_with_accelerator_types, platform_json_from_openb
from hdrm.platform.simgrid import MASTER_HOST, write_simgrid_xml
from hdrm.sim.inputs import load_platform_any
from hdrm.platform.summary import PlatformSummary, summarize_platform
from hdrm.workload.openb import read_openb_nodes
from hdrm.workload.swf import SkippableLineError


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``platform`` sub-command to the ``hdrm`` parser."""
    parser = subparsers.add_parser(
        "platform",
        help="validate a platform file, print its summary, export SimGrid XML",
        description=(
            "Validate a platform JSON file (clusters > nodes > processors > cores), print a "
            "summary (counts, GFLOP/s, reference speed, memory, power, processor types) and "
            "optionally write the SimGrid platform XML that Batsim loads. A .xml FILE is read "
            "as a SimGrid platform, one core per host."
        ),
    )
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="platform JSON (or SimGrid XML), or 'from-openb'")
    parser.add_argument("nodes", nargs="?", metavar="NODES.csv",
                        help="with 'from-openb': the openb node list to convert")
    parser.add_argument("-o", "--output", metavar="OUT.json",
                        help="with 'from-openb': write the platform JSON here")
    parser.add_argument("--accelerator-types", metavar="A.json",
                        help="with 'from-openb': extra GPU models, a file shaped like "
                        "hdrm/platform/data/accelerators.json (written into OUT.json)")
    parser.add_argument("--xml", metavar="OUT.xml", help="write the SimGrid platform XML here")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument(
        "--list-types",
        action="store_true",
        help="list the shipped processor, node and network types",
    )
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Carry out ``hdrm platform``; returns the exit status."""
    if args.list_types:
        print(format_library(default_library()))
        return 0
    if not args.file:
        raise ConfigError("give a platform FILE (e.g. platforms/tiny4.json) or --list-types")
    if args.file == FROM_OPENB:
        return _from_openb(args)
    if args.nodes or args.output or args.accelerator_types:
        raise ConfigError(f"NODES.csv, --output and --accelerator-types go with '{FROM_OPENB}' "
                          "only (a platform JSON file defines its own accelerator_types); "
                          f"e.g. hdrm platform {FROM_OPENB} nodes.csv -o gpu.json")
    platform = load_platform_any(Path(args.file))
    summary = summarize_platform(platform)
    if args.json:
        print(json.dumps(_jsonable(dataclasses.asdict(summary)), indent=2))
    else:
        print(format_summary(summary))
        if platform.accelerators:
            print(f"accelerators:\n  {_gpu_counts(platform)}")
    if args.xml:
        path = write_simgrid_xml(platform, args.xml)
        size_kb = path.stat().st_size / 1024.0
        print(
            f"wrote {path}: {platform.nb_cores + 1} hosts "
            f"({platform.nb_cores} cores + {MASTER_HOST}), {size_kb:,.0f} kB"
        )
    return 0


#: The FILE word that converts an openb node list.
FROM_OPENB = "from-openb"


def _from_openb(args: argparse.Namespace) -> int:
    """``hdrm platform from-openb NODES.csv -o OUT.json``: convert, validate, summarise."""
    if not args.nodes or not args.output:
        raise ConfigError(f"usage: hdrm platform {FROM_OPENB} NODES.csv -o OUT.json (give both)")
    try:
        nodes, _ = read_openb_nodes(args.nodes)
    except SkippableLineError as exc:  # a platform keeps every node: no row is skipped
        raise exc.unskippable() from None
    out = Path(args.output)
    library = library_with_accelerator_types(args.accelerator_types)
    doc = platform_json_from_openb(nodes, out.stem, source=args.nodes, library=library)
    platform = platform_from_dict(doc, source=str(out))
    try:
        write_text_atomically(out, json.dumps(doc, indent=1) + "\n")  # whole or not at all
    except OSError as exc:  # was a FileNotFoundError traceback
        raise ConfigError(f"-o {out}: cannot write the platform JSON ({exc.strerror}); check that "
                          "the folder exists and is writable") from None
    print(f"wrote {out}: {len(platform.nodes)} nodes, {platform.nb_cores} cores, "
          f"{_gpu_counts(platform)}")
    return 0


def _gpu_counts(platform: Any) -> str:
    """``"6 GPUs (4 T4, 2 P100)"``: the platform's accelerators by model, most first."""
    models: dict[str, int] = {}
    for device in platform.accelerators:
        models[device.type.name] = models.get(device.type.name, 0) + 1
    gpus = ", ".join(f"{n} {m}" for m, n in sorted(models.items(), key=lambda kv: -kv[1]))
    return f"{len(platform.accelerators)} GPUs ({gpus or 'none'})"


def _jsonable(value: Any) -> Any:
    """Replace infinities (unbounded memory) by None so the JSON stays standard."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


_NUMBER = re.compile(r"^(-?[0-9][0-9,]*(\.[0-9]+)?|unbounded)$")


def _fmt(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}" if math.isfinite(value) else "unbounded"


def _speed(gflops: float) -> str:
    """A core speed: two decimals, or three significant digits below 1 GFLOP/s."""
    return f"{gflops:,.2f}" if gflops >= 1 else f"{gflops:.3g}"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> str:
    """Align rows under headers: numeric columns to the right, text to the left."""
    cells = [list(headers)] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_NUMBER.match(r[i]) for r in cells[1:]) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)]
        lines.append(indent + "  ".join(parts).rstrip())
    return "\n".join(lines)


def format_summary(summary: PlatformSummary) -> str:
    """The human summary that ``hdrm platform`` prints."""
    memory = "unbounded"
    if math.isfinite(summary.total_memory_mb):
        total_mb = summary.total_memory_mb
        memory = f"{_fmt(total_mb / 1024.0)} GB ({_fmt(total_mb, 0)} MB)"
    lines = [
        f"platform {summary.name!r} ({summary.source})",
        f"  clusters         {summary.nb_clusters}",
        f"  nodes            {summary.nb_nodes}",
        f"  processors       {summary.nb_processors}",
        f"  cores            {summary.nb_cores}",
        f"  total speed      {_fmt(summary.total_gflops)} GFLOP/s",
        f"  reference speed  {_fmt(summary.reference_gflops, 3)} GFLOP/s per core (mean)",
        f"  memory           {memory}",
        f"  power            {_fmt(summary.full_power_w)} W at full load, "
        f"{_fmt(summary.idle_power_w)} W idle, {_fmt(summary.sleep_power_w)} W asleep",
        "processor types:",
        format_table(
            ("type", "procs", "cores", "GFLOP/s/core", "GFLOP/s", "GB/s/proc", "W full", "model"),
            [
                (t.name, t.nb_processors, t.nb_cores, _speed(t.core_gflops), _fmt(t.total_gflops),
                 _fmt(t.mem_bw_gbps), _fmt(t.full_power_w), f"{t.vendor} {t.model}".strip())
                for t in summary.processor_types
            ],
        ),
        "clusters:",
        format_table(
            ("name", "network", "nodes", "cores", "GFLOP/s", "memory GB"),
            [
                (c.name, c.network, c.nb_nodes, c.nb_cores, _fmt(c.total_gflops),
                 _fmt(c.memory_mb / 1024.0))
                for c in summary.clusters
            ],
        ),
    ]
    return "\n".join(lines)


def format_library(library: TypeLibrary) -> str:
    """The type library as four tables, for ``hdrm platform --list-types``."""
    procs = [
        (p.name, p.vendor, p.year, p.cores, _fmt(p.clock_ghz, 2), _fmt(p.flops_per_cycle, 0),
         _speed(p.core_gflops), _fmt(p.mem_bw_gbps), _fmt(p.tdp_w, 0), p.model)
        for p in library.processor_types.values()
    ]
    nodes = [
        (n.name, " + ".join(f"{c} x {t}" for t, c in n.processors), _fmt(n.memory_gb, 0))
        for n in library.node_types.values()
    ]
    nets = [
        (n.name, _fmt(n.bandwidth_gbps, 0), _fmt(n.latency_us, 2), n.description)
        for n in library.network_types.values()
    ]
    gpus = [
        (a.name, a.vendor, a.year or "-", _fmt(a.memory_gb, 0), _fmt(a.fp32_tflops, 1)
         if a.fp32_tflops else "-", _fmt(a.idle_w, 0), _fmt(a.busy_w, 0),
         _fmt(a.price_usd_per_hour, 2), a.model)
        for a in library.accelerator_types.values()
    ]
    return "\n".join([
        f"processor types ({len(procs)}):",
        format_table(("name", "vendor", "year", "cores", "GHz", "flops/cycle", "GFLOP/s/core",
                      "GB/s", "TDP W", "model"), procs),
        f"node types ({len(nodes)}):",
        format_table(("name", "processors", "memory GB"), nodes),
        f"network types ({len(nets)}):",
        format_table(("name", "Gbit/s", "latency us", "description"), nets),
        f"accelerator types ({len(gpus)}; node lists may also use the spellings of "
        "hdrm.platform.accelerators.ALIASES):",
        format_table(("name", "vendor", "year", "memory GB", "FP32 TFLOP/s", "idle W", "busy W",
                      "USD/h", "model"), gpus),
    ])
