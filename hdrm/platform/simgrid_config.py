"""A platform's ``<config>`` keys, read as SimGrid 3.32 reads them under Batsim 4.2.1.

SimGrid applies each ``<config>`` element's ``<prop>``\\ s in key order (sorted) and aborts on the
first key it does not declare ("Bad config key: network/coordinates", with a "Did you mean
'network/TCP-gamma'?" for a snake_case spelling of a kebab-case key) and on a value its type
cannot parse (boolean: yes/on/true/1, no/off/false/0; int: strtol; double: strtod).
:data:`DECLARED` lists the keys the Batsim 4.2.1 binary declares (provenance below).

Under Batsim the host model is ``ptask_L07`` (Batsim sets it before reading the platform, so a
file's ``host/model`` is ignored: "already defined by user"), and L07 brings its own cpu and
network models, so ``network/model``, ``cpu/model``, the CM02/LV08 factors
(``network/latency-factor``, ``bandwidth-factor``, ``weight-S``, ``crosstraffic``) and the
``*/optim`` keys change nothing Batsim simulates (SimGrid v3.32's src/surf/ptask_L07.cpp reads
none of them); nor do tracing, contexts, debugging, SMPI, ns-3, model-checking, chaos-monkey and
DVFS keys (their plugins are only loaded by ``plugin``). These are read and ignored.
:data:`MODELLED` are the keys L07 does read: hdrm serve models their default values only and
refuses another one in one line (:func:`check_modelled`).
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from hdrm.errors import PlatformError

#: Every key SimGrid 3.32 declares in the Batsim 4.2.1 binary, with its type: the list the binary
#: prints after "Existing config keys:" when it aborts on a bad key (recorded in session 27 from
#: /work/shared/batsim/bin/batsim on Batsim's graphene.xml). It is the flags declared in SimGrid
#: v3.32's sources (src/simgrid/sg_config.cpp, src/instr/instr_config.cpp,
#: src/smpi/internals/smpi_config.cpp, the models and plugins) less those of parts the binary
#: is built without (model checking, SMPI collectives, the file-system plugin), plus
#: bmf/* and a few tracing keys declared at run time.
DECLARED: dict[str, str] = {
    **dict.fromkeys(("bmf/max-iterations", "cmonkey/host", "cmonkey/link", "contexts/guard-size",
                     "contexts/nthreads", "contexts/stack-size", "maxmin/concurrency-limit",
                     "plugin/dvfs/max-pstate", "plugin/dvfs/min-pstate",
                     "smpi/async-small-thresh", "smpi/list-leaks", "smpi/map", "smpi/np",
                     "smpi/send-is-detached-thresh", "tracing/precision"), "int"),
    **dict.fromkeys(("bmf/precision", "cmonkey/time", "debug/breakpoint", "maxmin/precision",
                     "network/TCP-gamma", "network/bandwidth-factor", "network/latency-factor",
                     "network/loopback-bw", "network/loopback-lat", "network/weight-S",
                     "plugin/dvfs/sampling-rate", "smpi/auto-shared-malloc-thresh",
                     "smpi/cpu-threshold", "smpi/init", "smpi/iprobe", "smpi/iprobe-cpu-usage",
                     "smpi/test", "smpi/wtime", "surf/precision"), "double"),
    **dict.fromkeys(("cmonkey/tell", "cpu/maxmin-selective-update", "debug/clean-atexit",
                     "debug/verbose-exit", "exception/cutpath", "help-nostop",
                     "model-check/timeout", "network/crosstraffic",
                     "network/maxmin-selective-update", "smpi/display-allocs",
                     "smpi/errors-are-fatal", "smpi/grow-injected-times", "smpi/pedantic",
                     "smpi/simulate-computation", "smpi/trace-call-location",
                     "smpi/trace-call-use-absolute-path", "tracing", "tracing/actor",
                     "tracing/basic", "tracing/categorized", "tracing/disable-destroy",
                     "tracing/disable_link", "tracing/disable_power", "tracing/platform",
                     "tracing/platform/topology", "tracing/smpi", "tracing/smpi/computing",
                     "tracing/smpi/display-sizes", "tracing/smpi/format/ti-one-file",
                     "tracing/smpi/group", "tracing/smpi/internals", "tracing/smpi/sleeping",
                     "tracing/uncategorized", "tracing/vm"), "boolean"),
    **dict.fromkeys(("contexts/factory", "contexts/synchro", "cpu/model", "cpu/optim",
                     "cpu/solver", "disk/model", "disk/solver", "host/model", "host/solver",
                     "model-check/replay", "network/model", "network/optim", "network/solver",
                     "ns3/TcpModel", "ns3/seed", "path", "plugin", "plugin/dvfs/governor",
                     "smpi/IB-penalty-factors", "smpi/bw-factor", "smpi/comp-adjustment-file",
                     "smpi/host-speed", "smpi/hostfile", "smpi/lat-factor", "smpi/replay",
                     "smpi/shared-malloc", "tracing/comment", "tracing/comment-file",
                     "tracing/filename", "tracing/smpi/format"), "string"),
}

#: The keys ptask_L07 reads, with the value hdrm serve models (the binary's default): the lmm
#: solver, the loopback link of a host's route to itself, the TCP window bounding a flow, the
#: time precision, the lmm's variable limit and the plugins.
MODELLED: dict[str, str | float] = {
    "host/solver": "fairbottleneck", "network/loopback-bw": 1e10, "network/loopback-lat": 0.0,
    "network/TCP-gamma": 4194304.0, "surf/precision": 1e-9, "maxmin/concurrency-limit": -1.0,
    "plugin": "",
}


def config_props(root: ET.Element) -> list[tuple[str, str]]:
    """Each ``<config>``'s ``(key, value)`` pairs, in the order SimGrid applies them (sorted per
    element; a key repeated in one element keeps its first value)."""
    found = []
    for config in root.iter("config"):
        props: dict[str, str] = {}
        for prop in config.iter("prop"):
            props.setdefault(prop.get("id", ""), prop.get("value", ""))
        found += sorted(props.items())
    return found


def check_declared(root: ET.Element, path: str | Path) -> None:
    """Refuse what SimGrid 3.32 aborts on: a key it does not declare, a value of the wrong type.

    Raises:
        PlatformError: one line naming the file, the line, the key and the fix.
    """
    for key, value in config_props(root):
        kind = DECLARED.get(key)
        where = f"{path}{_line(path, key)}: <config> key {key!r}"
        if kind is None:
            kebab = key.replace("_", "-")
            fix = f"write {kebab!r}" if kebab in DECLARED else "remove it"
            raise PlatformError(
                f"{where}, which SimGrid 3.32 does not declare (Batsim 4 aborts: \"Bad config key: "
                f"{key}\"); {fix}"
            )
        if not _parses(kind, value):
            raise PlatformError(
                f"{where}: value {value!r} is not a {kind}, which SimGrid 3.32 refuses (Batsim 4 "
                f"aborts); give a {kind}"
            )


def check_modelled(root: ET.Element, path: str | Path) -> None:
    """Refuse a ``<config>`` value of a :data:`MODELLED` key other than the one hdrm serve models.

    Raises:
        PlatformError: one line naming the file, the line, the key, the value and the fix.
    """
    for key, value in config_props(root):
        if key not in MODELLED:
            continue
        modelled = MODELLED[key]
        same = value == modelled if isinstance(modelled, str) else \
            math.isclose(_number(value), modelled, rel_tol=1e-12)
        if not same:
            raise PlatformError(
                f"{path}{_line(path, key)}: <config> key {key!r} = {value!r}, which changes what "
                f"Batsim 4.2.1 simulates and hdrm serve does not model (it models {modelled!r}); "
                "remove the key, or run the real batsim"
            )


def _parses(kind: str, value: str) -> bool:
    if kind == "boolean":
        return value in ("yes", "on", "true", "1", "no", "off", "false", "0")
    if kind == "int":
        return re.fullmatch(r"\s*[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", value) is not None
    if kind == "double":
        return not math.isnan(_number(value)) or value.strip().lower().lstrip("+-") == "nan"
    return True


def _number(value: str) -> float:
    """``value`` as C's strtod reads all of it (no digit separators, no trailing blanks)."""
    if "_" in value or value != value.rstrip():
        return math.nan
    try:
        return float(value)
    except ValueError:
        return math.nan


def _line(path: str | Path, key: str) -> str:
    """``:LINE`` of the first ``<prop id="key"`` outside comments, or ``""``."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    text = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    match = re.search(rf"<prop\b[^>]*?\bid\s*=\s*[\"']{re.escape(key)}[\"']", text)
    return f":{text.count(chr(10), 0, match.start()) + 1}" if match else ""
