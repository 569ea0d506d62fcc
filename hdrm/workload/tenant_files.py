"""Tenant specs from the command line and from files: mapping CSV files and tenants JSON files.

``--tenants`` takes ``user``, ``group``, ``qos`` or ``job`` (one tenant per value of that field),
or a file:

Mapping CSV (``.csv``)
    A header, then one row per key. The first column names what is mapped: ``job_id``, ``user``,
    ``group`` or ``qos``; then ``tenant``; then, with ``job_id`` only, an optional ``deadline_s``
    (an absolute deadline in the trace's clock; empty: the tenant's SLA)::

        user,tenant
        3,astro
        12,astro

    Jobs the file does not name get a tenant from their user (``"user 7"``).

Tenants JSON (``.json``)
    An object with the keys ``by`` (the field of jobs the map does not name; default ``user``),
    ``map`` (an object ``{"user:3": "astro", "job:17": "bio"}``, or the path of a mapping CSV,
    relative to the JSON file), ``sla`` (the default SLA, ``"relative:3"``), ``classes`` (SLA
    class name -> SLA text, most urgent first) and ``tenants`` (name -> ``{"share": 2,
    "class": "gold"}`` or ``{"share": 1, "sla": "latency:600"}``).

Every error is one line naming the file, the line or key, the value and the fix.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from hdrm.errors import ConfigError
from hdrm.workload.job import Job, Workload
from hdrm.workload.swf_file import read_swf_text  # as the SWF reader opens it
from hdrm.workload.text import decode_utf8
from hdrm.workload.tenants import (
    TENANT_SOURCES,
    Sla,
    Tenant,
    TenantSpec,
    TenantTable,
    build_tenants,
    parse_sla,
    positive,
)

#: First columns a mapping CSV may have.
MAP_KEYS = {"job_id": "job", "user": "user", "group": "group", "qos": "qos"}
#: Keys of a tenants JSON file.
JSON_KEYS = ("by", "map", "sla", "classes", "tenants")
#: Keys of one tenant in a tenants JSON file.
TENANT_KEYS = ("share", "class", "sla")


def load_tenant_spec(what: str, default_sla: Sla = Sla("relative", 3.0),
                     where: str = "--tenants") -> TenantSpec:
    """A :class:`TenantSpec` from ``user|group|qos|job`` or a mapping CSV or tenants JSON path.

    Raises:
        ConfigError: an unknown source, a missing file, or a malformed file (one line).
    """
    text = str(what).strip()
    if text.lower() in TENANT_SOURCES:
        return TenantSpec(source=text.lower(), default_sla=default_sla, where=where)
    path = Path(text)
    if path.suffix.lower() not in (".csv", ".json"):
        raise ConfigError(f"{where}: {text!r} is neither a tenant source "
                          f"({', '.join(TENANT_SOURCES)}) nor a .csv or .json file")
    if not path.is_file():
        raise ConfigError(f"{where}: no such file {text!r}; give a mapping CSV or a tenants "
                          "JSON file (docs/tenants.rst)")
    if path.suffix.lower() == ".csv":
        mapping, deadlines = read_mapping_csv(path)
        return TenantSpec("user", mapping, deadlines, default_sla=default_sla, where=str(path))
    return _read_json(path, default_sla)


def read_mapping_csv(path: Path) -> tuple[dict[str, str], dict[str, float]]:
    """The ``"user:3" -> tenant`` mapping and ``"job:7" -> deadline`` of a mapping CSV."""
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the mapping file ({exc.strerror})") from None
    rows = list(csv.reader(io.StringIO(decode_utf8(content, path, ConfigError), newline="")))
    if not rows:
        raise ConfigError(f"{path}: empty mapping file; the first line is a header such as "
                          "'user,tenant' or 'job_id,tenant,deadline_s'")
    header = [h.strip().lower() for h in rows[0]]
    kind = MAP_KEYS.get(header[0]) if header else None
    if kind is None or header[1:2] != ["tenant"] or header[2:] not in ([], ["deadline_s"]):
        raise ConfigError(f"{path}, line 1: header {','.join(rows[0])!r}; expected "
                          f"'KEY,tenant' with KEY one of {', '.join(MAP_KEYS)}, or "
                          "'job_id,tenant,deadline_s'")
    if header[2:] and kind != "job":
        raise ConfigError(f"{path}, line 1: a deadline_s column needs job_id keys, not {header[0]}")
    mapping: dict[str, str] = {}
    deadlines: dict[str, float] = {}
    for lineno, row in enumerate(rows[1:], 2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(header):
            raise ConfigError(f"{path}, line {lineno}: {len(row)} columns {row!r}, the header "
                              f"has {len(header)} ({','.join(header)})")
        key, tenant = f"{kind}:{_key_value(row[0], kind)}", row[1].strip()
        if not tenant:
            raise ConfigError(f"{path}, line {lineno}: empty tenant for {header[0]} {row[0]!r}")
        if key in mapping and mapping[key] != tenant:
            raise ConfigError(f"{path}, line {lineno}: {header[0]} {row[0].strip()!r} is mapped "
                              f"again (to {tenant!r}, earlier to {mapping[key]!r}); keep one row")
        mapping[key] = tenant
        if len(row) > 2 and row[2].strip():
            deadlines[key] = _number(row[2], f"{path}, line {lineno}, deadline_s")
    return mapping, deadlines


def _key_value(text: str, kind: str) -> str:
    """An id as the jobs spell it: integral user, group and job numbers without ``.0``."""
    value = text.strip()
    if kind in ("user", "group", "job"):
        try:
            number = float(value)
        except ValueError:
            return value
        if number.is_integer():
            return str(int(number))
    return value


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ConfigError(f"{where}: expected a number of seconds, got {text.strip()!r}")
    return value


def _read_json(path: Path, default_sla: Sla) -> TenantSpec:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object with keys {', '.join(JSON_KEYS)}")
    for key in data:
        if key not in JSON_KEYS:
            raise ConfigError(f"{path}: unknown key {key!r}; choose among {', '.join(JSON_KEYS)}")
    source = str(data.get("by", "user")).lower()
    if source not in TENANT_SOURCES:
        raise ConfigError(f"{path}, key 'by': unknown value {data.get('by')!r}; choose one of "
                          f"{', '.join(TENANT_SOURCES)}")
    mapping, deadlines = _json_map(path, data.get("map", {}))
    sla = parse_sla(data["sla"], f"{path}, key 'sla'") if "sla" in data else default_sla
    classes = {str(name): parse_sla(text, f"{path}, key 'classes.{name}'")
               for name, text in _object(path, data, "classes").items()}
    tenants = {str(name): _tenant(path, str(name), entry, classes)
               for name, entry in _object(path, data, "tenants").items()}
    return TenantSpec(source, mapping, deadlines, tenants, sla, classes, str(path))


def _object(path: Path, data: dict, key: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}, key {key!r}: expected an object, got {value!r}")
    return value


def _json_map(path: Path, value: Any) -> tuple[dict[str, str], dict[str, float]]:
    if isinstance(value, str):
        csv_path = path.parent / value
        if not csv_path.is_file():  # was a FileNotFoundError traceback
            raise ConfigError(f"{path}, key 'map': no such mapping CSV {str(csv_path)!r} (the "
                              "path is relative to the tenants file)")
        return read_mapping_csv(csv_path)
    if not isinstance(value, dict):
        raise ConfigError(f"{path}, key 'map': expected an object or a CSV path, got {value!r}")
    mapping = {}
    for key, tenant in value.items():
        kind, sep, ident = str(key).partition(":")
        if not sep or kind not in MAP_KEYS.values() or not ident:
            raise ConfigError(f"{path}, key 'map.{key}': keys are 'user:ID', 'group:ID', "
                              "'qos:CLASS' or 'job:ID'")
        if not isinstance(tenant, str) or not tenant:
            raise ConfigError(f"{path}, key 'map.{key}': expected a tenant name, got {tenant!r}")
        mapping[f"{kind}:{_key_value(ident, kind)}"] = tenant
    return mapping, {}


def _tenant(path: Path, name: str, entry: Any, classes: dict[str, Sla]) -> Tenant:
    where = f"{path}, key 'tenants.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}': expected an object such as {{\"share\": 2}}, got {entry!r}")
    for key in entry:
        if key not in TENANT_KEYS:
            raise ConfigError(f"{where}.{key}': unknown key; choose among {', '.join(TENANT_KEYS)}")
    share = positive(entry.get("share", 1.0), f"{where}.share'")
    sla_class = str(entry.get("class", ""))
    if sla_class and sla_class not in classes:
        raise ConfigError(f"{where}.class': unknown class {sla_class!r}; the file's classes are "
                          f"{', '.join(classes) or 'none (add a classes object)'}")
    if sla_class and "sla" in entry:
        raise ConfigError(f"{where}': give a class or an sla, not both")
    sla = parse_sla(entry["sla"], f"{where}.sla'") if "sla" in entry else None
    return Tenant(name, share, sla, sla_class)


def swf_groups(path: str | Path) -> dict[int, int]:
    """Job number -> group id (SWF fields 1 and 13) of an SWF trace (plain, gzip, bzip2 or xz).

    The file is opened as the SWF reader opens it (:func:`~hdrm.workload.swf_file.read_swf_text`).

    Raises:
        WorkloadError: the file holds no SWF text (compressed twice, an archive, binary data),
            or cannot be read.
    """
    text = read_swf_text(str(path))
    groups = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 13 and not line.lstrip().startswith(";"):
            try:
                groups[int(float(fields[0]))] = int(float(fields[12]))
            except (ValueError, OverflowError):  # a line the trace's reader skipped (--no-strict)
                continue
    return groups


def tenants_for(workload: Workload, what: str, sla: str = "relative:3",
                where: str = "--tenants") -> TenantTable:
    """The :class:`TenantTable` of ``workload`` for ``--tenants WHAT --sla SLA``.

    Raises:
        ConfigError: a bad source, file or SLA; ``group`` on a workload that is not an SWF file.
    """
    return tenant_builder(workload, what, sla, where)(workload.jobs)


def tenant_builder(workload: Workload, what: str, sla: str = "relative:3",
                   where: str = "--tenants") -> Callable[[Sequence[Job]], TenantTable]:
    """A function that makes the :class:`TenantTable` of any selection of ``workload``'s jobs
    (files are read once: an environment builds one table per episode).

    Raises:
        ConfigError: a bad source, file or SLA; ``group`` on a workload that is not an SWF file.
    """
    spec = load_tenant_spec(what, parse_sla(sla, where.replace("tenants", "sla")), where)
    groups = None
    if spec.source == "group" or any(k.startswith("group:") for k in spec.mapping):
        source = str(workload.source)
        if not source.endswith((".swf", ".gz", ".bz2", ".xz")):
            raise ConfigError(f"{where}: tenants by group read SWF field 13; {source!r} is not "
                              "an SWF trace (use user, qos or a mapping file)")
        groups = swf_groups(source)
    return TenantBuilder(spec, groups)


class TenantBuilder:
    """Makes the :class:`TenantTable` of a selection of jobs (picklable, for environments).

    Args:
        spec: the tenant spec.
        groups: job number -> SWF group id, when the spec reads groups.
    """

    def __init__(self, spec: TenantSpec, groups: dict[int, int] | None) -> None:
        self.spec = spec
        self.groups = groups

    def group_of(self, job: Job) -> int:
        """The SWF group of ``job`` (-1 unknown)."""
        return self.groups.get(job.id, -1) if self.groups is not None else -1

    def __call__(self, jobs: Sequence[Job]) -> TenantTable:
        """The table of ``jobs`` (``jobs[i].idx == i``)."""
        return build_tenants(jobs, self.spec, self.group_of if self.groups is not None else None)
