"""``hdrm serve`` against the real Batsim 4.x on a folder of SimGrid platform files.

For each ``*.xml`` of the folders given, in name order:

1. a runnable copy (Batsim needs exactly one master host): the file as it is when it names a
   host ``master_host`` or has a ``role`` ``master`` prop, else the first ``<host>`` of the
   file gets ``<prop id="role" value="master"/>`` on the host's line (line numbers of errors stay
   the file's); a file with no ``<host>`` (only clusters) is skipped, since no cluster node can
   carry a role of its own (Batsim's ``-m``/``-r`` could name one; hdrm serve has neither);
2. a probe session under the binary (one delay job): a file it refuses is skipped with the last
   line of its error;
3. for each seed, a workload of delay and ``parallel_homogeneous`` (``com`` 0) jobs, run by a raw
   FCFS decision process that asks for CALL_ME_LATER, under the binary and under ``hdrm serve``,
   without and (where the hosts have ``wattage_per_state``) with ``-E``: a session counts when the
   messages (SIMULATION_BEGINS equal, every event, order, split and data; times to 1 us) and the
   out_jobs.csv rows (ids, allocations, states; times to 1 us; consumed energy to 1e-6 relative)
   are the binary's, or when both the binary and ``hdrm serve`` fail (the reasons are printed);
4. the built-in engine's reading of the copy, or of the file where no copy is made (``ok``,
   its one-line refusal, or a traceback).

Prints one line per platform: file, compute hosts, routing (zone routings and cluster
topologies), identical sessions / sessions and, for the others, the first difference or error.

Usage::

    python benchmarks/platform_corpus.py DIR [DIR ...] [--outdir OUT] [--seeds 1 2 3]
                                         [--batsim PATH] [--jobs 16] [--only NAME ...]

Needs a runnable Batsim 4.x (``--batsim``, ``$HDRM_BATSIM``, ``../shared/batsim/bin/batsim``,
``batsim`` on the PATH); without one it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import zmq

ROOT = Path(__file__).resolve().parents[1]
SHARED_BATSIM = ROOT.parent / "shared" / "batsim" / "bin" / "batsim"
CALLS_S = (7.0, 11.0, 23.0)
_HOST = re.compile(r"<host\b[^>]*?(/?)>", re.S)


def find_batsim(explicit: str | None) -> str | None:
    """The first candidate whose ``--version`` says 4.x, or None."""
    found = [explicit or "", os.environ.get("HDRM_BATSIM", ""), str(SHARED_BATSIM),
             shutil.which("batsim") or ""]
    for exe in dict.fromkeys(c for c in found if c):
        try:
            done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.strip().startswith("4."):
            return os.path.abspath(exe)
    return None


def runnable_copy(text: str) -> tuple[str | None, str]:
    """``(platform text with one master, how)``, or ``(None, why not)``."""
    if re.search(r"""id\s*=\s*["']master_host["']""", text):
        return text, "master_host"
    if re.search(r"""<prop\s+id\s*=\s*["']role["']\s+value\s*=\s*["']master["']""", text):
        return text, "its own role=master"
    match = _HOST.search(text)
    if match is None:
        return None, "no <host> to mark as master (clusters only)"
    prop = '<prop id="role" value="master"/>'
    if match.group(1):  # <host .../>
        tag = match.group(0)
        new = tag[:-2].rstrip() + f">{prop}</host>"
    else:
        new = match.group(0) + prop
    name = re.search(r"""\bid\s*=\s*["']([^"']*)""", match.group(0))
    how = f"role on {name.group(1) if name else '?'}"
    return text[:match.start()] + new + text[match.end():], how


_ROUTE_TAGS = ("route", "zoneRoute", "ASroute", "bypassRoute", "bypassZoneRoute",
               "bypassASroute")
_DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'


def master_cluster_copy(text: str) -> tuple[str | None, str]:
    """With ``--master-zone``, a copy of a file of clusters only with a master added: a zone
    ``corpus_master`` holding ``master_host`` (1 Gf, 100 W), joined to each cluster of the
    platform's zone (or to its one cluster, wrapped in a Full zone) by a ``<zoneRoute>`` from
    ``master_host`` to the cluster's router (a topology cluster's first node) over
    ``corpus_link`` (10 GBps, 10 us); as Batsim's own cluster512.xml joins its master cluster.
    ``(None, why not)`` for any other shape."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(re.sub(r"^\s*(<!--.*?-->\s*)*", "", text, flags=re.S).encode())
    except ET.ParseError as exc:
        return None, f"not parsed for a master zone ({exc})"
    tops = [c for c in root if c.tag in ("zone", "AS", "cluster")]
    if len(tops) != 1:
        return None, "no single zone to add a master zone to"
    top = tops[0]
    if top.tag == "cluster":
        wrapper = ET.Element("zone", id="corpus_root", routing="Full")
        where = list(root).index(top)
        root.remove(top)
        root.insert(where, wrapper)
        wrapper.append(top)
        top = wrapper
    clusters = [c for c in top if c.tag == "cluster"]
    others = [c for c in top if c.tag not in ("cluster", "link", "backbone", "prop", *_ROUTE_TAGS)]
    if not clusters or others:
        return None, "no master zone added (not a zone of clusters only)"
    first_route = next((i for i, c in enumerate(top) if c.tag in _ROUTE_TAGS), len(top))
    master = ET.Element("zone", id="corpus_master", routing="Full")
    host = ET.SubElement(master, "host", id="master_host", speed="1Gf")
    ET.SubElement(host, "prop", id="wattage_per_state", value="100:100")
    link = ET.Element("link", id="corpus_link", bandwidth="10GBps", latency="10us")
    top.insert(first_route, master)
    top.insert(first_route + 1, link)
    for cluster in clusters:
        route = ET.SubElement(top, "zoneRoute", src="corpus_master", dst=cluster.get("id", ""),
                              gw_src="master_host", gw_dst=_gateway(cluster))
        ET.SubElement(route, "link_ctn", id="corpus_link")
    body = ET.tostring(root, encoding="unicode")
    return f"<?xml version='1.0'?>\n{_DOCTYPE}\n{body}\n", f"master zone + {len(clusters)} routes"


def _gateway(cluster) -> str:
    """A flat cluster's router; a torus, fat tree or dragonfly has none (SimGrid makes a router
    for flat clusters only): its first node."""
    prefix, suffix = cluster.get("prefix", ""), cluster.get("suffix", "")
    if cluster.get("topology", "FLAT").upper() == "FLAT":
        return cluster.get("router_id") or f"{prefix}{cluster.get('id')}_router{suffix}"
    first = re.match(r"\s*(\d+)", cluster.get("radical", ""))
    return f"{prefix}{first.group(1) if first else 0}{suffix}"


def routing_of(text: str) -> str:
    """The zone routings and cluster topologies a file uses, e.g. ``Full+Floyd+TORUS``."""
    kinds = re.findall(r"""<(?:zone|AS)\b[^>]*\brouting\s*=\s*["']([^"']+)""", text)
    kinds += re.findall(r"""<cluster\b[^>]*\btopology\s*=\s*["']([^"']+)""", text)
    kinds += ["cluster"] * bool(re.search(r"<cluster\b", text) and "topology=" not in text)
    kinds += ["peer"] * bool(re.search(r"<peer\b", text))
    return "+".join(dict.fromkeys(kinds)) or "-"


class RawScheduler(threading.Thread):
    """A raw ZeroMQ REP decision process in a thread (``reply(doc) -> text``)."""

    def __init__(self, reply: Callable[[dict], str]) -> None:
        super().__init__(daemon=True)
        self.reply, self.received, self.error = reply, [], None
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.REP)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                if not self.socket.poll(50):
                    continue
                doc = json.loads(self.socket.recv_string())
                self.received.append(doc)
                self.socket.send_string(self.reply(doc))
                if any(e["type"] == "SIMULATION_ENDS" for e in doc["events"]):
                    break
        except Exception as exc:  # noqa: BLE001 - kept and reported
            self.error = exc
        finally:
            self.socket.close(0)
            self.context.term()

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


def fcfs_with_calls() -> Callable[[dict], str]:
    """FCFS on the lowest free resource ids; CALL_ME_LATER at CALLS_S asked at the start."""
    free: set[int] = set()
    queue: list[tuple[str, int]] = []

    def reply(doc: dict) -> str:
        out = []
        for event in doc["events"]:
            data = event["data"]
            if event["type"] == "SIMULATION_BEGINS":
                free.update(r["id"] for r in data["compute_resources"])
                out += [{"timestamp": doc["now"], "type": "CALL_ME_LATER",
                         "data": {"timestamp": t}} for t in CALLS_S]
            elif event["type"] == "JOB_SUBMITTED":
                queue.append((data["job_id"], data["job"]["res"]))
            elif event["type"] == "JOB_COMPLETED":
                free.update(_ids(data["alloc"]))
        while queue and queue[0][1] <= len(free):
            job_id, res = queue.pop(0)
            alloc = sorted(free)[:res]
            free.difference_update(alloc)
            out.append({"timestamp": doc["now"], "type": "EXECUTE_JOB",
                        "data": {"job_id": job_id, "alloc": " ".join(map(str, alloc))}})
        return json.dumps({"now": doc["now"], "events": out})
    return reply


def _ids(text: str) -> list[int]:
    ids = []
    for part in text.split():
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


def seeded_workload(path: Path, seed: int, nb_hosts: int, nb_jobs: int) -> Path:
    """Delay jobs (15 % killed at a walltime equal to their delay) and parallel_homogeneous
    jobs of 1-20 GFLOP per host without communication (some killed at a 5 s walltime)."""
    rng = random.Random(seed)
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        if rng.random() < 0.5:
            delay = rng.choice([2, 3, 4, 6])
            name, walltime = f"d{delay}", delay if rng.random() < 0.15 else 1000
            profiles[name] = {"type": "delay", "delay": delay}
        else:
            gflop = rng.choice([1, 5, 20])
            name, walltime = f"p{gflop}", 5 if rng.random() < 0.15 else 100000
            profiles[name] = {"type": "parallel_homogeneous", "cpu": gflop * 1e9, "com": 0}
        jobs.append({"id": str(i), "subtime": rng.choice(range(0, 30, 2)), "walltime": walltime,
                     "res": rng.randint(1, min(4, nb_hosts)), "profile": name})
    path.write_text(json.dumps({"nb_res": nb_hosts, "jobs": jobs, "profiles": profiles}))
    return path


def run_binary(batsim: str, platform: Path, workload: Path, prefix: Path, energy: bool,
               cwd: Path | None = None, master: str | None = None) -> tuple[list[dict] | None, str]:
    """The messages the binary sent, or ``(None, why it failed)``; it runs in ``cwd`` (the
    original file's folder, where the profiles a platform names relative to it are found)."""
    scheduler = RawScheduler(fcfs_with_calls())
    scheduler.start()
    args = [batsim, "-p", str(platform.resolve()), "-w", str(workload.resolve()),
            "-e", str(prefix.resolve()), "-q", "-s", scheduler.endpoint] + ["-E"] * energy
    args += ["-m", master] if master else []
    try:
        done = subprocess.run(args, capture_output=True, text=True, errors="replace",
                              timeout=120, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, "binary: no end within 120 s"
    finally:
        scheduler.stop()
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    errors = [line.split("] ", 1)[-1] for line in lines
              if re.search(r"(ERROR|CRITICAL)\]", line)
              and not re.search(r"Exiting now|Current backtrace", line)]
    if done.returncode != 0:
        said = (errors or lines or [""])[-1]
        return None, f"binary exit {done.returncode}: {said}"[:300]
    if not scheduler.received or "SIMULATION_ENDS" not in json.dumps(scheduler.received[-1]):
        return None, "binary: no SIMULATION_ENDS"
    return scheduler.received, ""


def run_serve(platform: Path, workload: Path, prefix: Path,
              energy: bool, master: str | None = None) -> tuple[list[dict] | None, str]:
    """The messages ``hdrm serve`` sent, or ``(None, its refusal or traceback)``."""
    from hdrm.batsim.server import ServeOptions, serve
    from hdrm.batsim.simulator import ServerConfig
    from hdrm.errors import HdrmError
    from hdrm.platform.simgrid_roles import HostRoles

    scheduler = RawScheduler(fcfs_with_calls())
    scheduler.start()
    try:
        serve(platform, workload, ServeOptions(scheduler.endpoint, str(prefix), 30.0,
                                               config=ServerConfig(energy=energy),
                                               roles=HostRoles(master) if master else None))
    except HdrmError as exc:
        return None, f"refused: {str(exc).splitlines()[0]}"[:300]
    except Exception as exc:  # noqa: BLE001 - reported
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return None, (f"traceback {type(exc).__name__}: {exc} "
                      f"({Path(where.filename).name}:{where.lineno})")[:300]
    finally:
        scheduler.stop()
    if scheduler.error is not None:
        return None, f"scheduler: {scheduler.error}"
    return scheduler.received, ""


def first_difference(ours: list[dict], theirs: list[dict], mine: Path, ref: Path) -> str:
    """'' when the sessions match (messages, then out_jobs.csv rows), else the first difference."""
    if ours[0] != theirs[0]:
        a, b = ours[0]["events"][0]["data"], theirs[0]["events"][0]["data"]
        keys = [k for k in b if a.get(k) != b.get(k)] or ["?"]
        return f"SIMULATION_BEGINS differs in {keys[0]}"
    for i, (m, r) in enumerate(zip(ours, theirs)):
        if _events(m) != _events(r) or abs(m["now"] - r["now"]) > 1e-6:
            return f"message {i}: now {m['now']:.6f} {_events(m)[:2]} vs {r['now']:.6f} " \
                   f"{_events(r)[:2]}"
        for a, b in zip(m["events"], r["events"]):
            if a["data"] != b["data"] or abs(a["timestamp"] - b["timestamp"]) > 1e-6:
                return f"message {i}: event data or timestamp"
    if len(ours) != len(theirs):
        return f"{len(ours)} messages vs {len(theirs)}"
    return _rows_difference(mine, ref)


def _events(message: dict) -> list[tuple[str, str]]:
    return [(e["type"], e["data"].get("job_id", e["data"].get("type", "")))
            for e in message["events"]]


def _rows_difference(mine: Path, ref: Path) -> str:
    from hdrm.results import read_jobs_csv

    a, b = read_jobs_csv(mine), read_jobs_csv(ref)
    if len(a) != len(b):
        return f"{len(a)} rows vs {len(b)}"
    for x, y in zip(a, b):
        same = ((x.job_id, x.workload_name, x.allocated_resources, x.final_state)
                == (y.job_id, y.workload_name, y.allocated_resources, y.final_state))
        times = max(abs(x.starting_time - y.starting_time), abs(x.finish_time - y.finish_time))
        scale = max(1.0, abs(y.consumed_energy))
        energy = abs(x.consumed_energy - y.consumed_energy) > 1e-6 * scale
        if not same or times > 1e-6 or energy:
            return f"out_jobs.csv row of job {y.job_id}"
    return ""


def builtin_reading(platform: Path) -> str:
    """``ok (N hosts)``, the built-in engine's one-line refusal, or its traceback."""
    from hdrm.errors import HdrmError
    from hdrm.sim.inputs import load_platform_any
    from hdrm.sim.simgrid_machine import simgrid_machine_for

    try:
        loaded = load_platform_any(platform)
        simgrid_machine_for(loaded)
    except HdrmError as exc:
        lines = str(exc).splitlines()
        return f"refused{' (' + str(len(lines)) + ' lines)' if len(lines) > 1 else ''}: {lines[0]}"
    except Exception as exc:  # noqa: BLE001 - reported
        return f"traceback {type(exc).__name__}: {exc}"[:300]
    return f"ok ({len(loaded.nodes)} hosts)"


@dataclass
class Row:
    """What one platform gave."""

    name: str
    hosts: str = "-"
    routing: str = "-"
    master: str = ""
    identical: int = 0
    sessions: int = 0
    notes: list[str] = field(default_factory=list)
    builtin: str = ""

    def line(self) -> str:
        result = f"{self.identical}/{self.sessions}" if self.sessions else "skipped"
        notes = "; ".join(dict.fromkeys(self.notes))
        return (f"{self.name:44s} {self.hosts:>5s} {self.routing:24s} {result:8s} "
                f"builtin {self.builtin} | {notes}")


def first_host(path: Path) -> str | None:
    """The host to name with ``-m``: the first whose name begins with ``master`` (Batsim's
    cluster_locality_* files have a cabinet ``master_host``, node ``master_host0``), else the first
    in file order (a cluster's first node), as hdrm reads the file; None where hdrm does not read
    it."""
    from hdrm.errors import HdrmError
    from hdrm.platform.simgrid import read_simgrid_all_hosts

    try:
        hosts = read_simgrid_all_hosts(path)
    except HdrmError:
        return None
    named = [h.name for h in hosts if h.name.startswith("master")]
    return (named or [h.name for h in hosts] or [None])[0]


def measure(source: Path, out: Path, batsim: str, seeds: list[int], nb_jobs: int,
            master_zone: bool = False, master_host: bool = False) -> Row:
    """One platform's row; a file of clusters only gets a master zone (``master_zone``) or runs
    with its first host as the master (``master_host``: Batsim's and hdrm serve's ``-m``)."""
    text = source.read_text(encoding="utf-8", errors="replace")
    row = Row(source.parent.name + "/" + source.name, routing=routing_of(text))
    runnable, how = runnable_copy(text)
    master = None
    if runnable is None and master_host:
        master = first_host(source)
        runnable, how = (text, f"-m {master}") if master else (None, how)
    if runnable is None and master_zone:
        runnable, how = master_cluster_copy(text)
    out.mkdir(parents=True, exist_ok=True)
    platform = out / source.name
    platform.write_text(runnable or text, encoding="utf-8")
    row.builtin = builtin_reading(platform)  # the file itself where no copy runs
    if runnable is None:
        row.notes.append(how)
        return row
    row.master = how
    probe = seeded_workload(out / "probe.json", 0, 1, 1)
    messages, why = run_binary(batsim, platform, probe, out / "probe", False, source.parent,
                               master)
    if messages is None:
        ours, refusal = run_serve(platform, probe, out / "probe_ours", False, master)
        row.notes.append(f"binary refuses: {why}")
        row.notes.append("hdrm serve runs it" if ours else f"hdrm serve: {refusal}")
        return row
    begins = messages[0]["events"][0]["data"]
    nb_hosts = begins["nb_compute_resources"]
    row.hosts = str(nb_hosts)
    power = any("wattage_per_state" in r.get("properties", {})
                for r in begins["compute_resources"])
    for seed in seeds:
        workload = seeded_workload(out / f"w{seed}.json", seed, nb_hosts, nb_jobs)
        for energy in (False, True)[: 1 + power]:
            tag = f"{seed}{'E' * energy}"
            theirs, why = run_binary(batsim, platform, workload, out / f"real{tag}", energy,
                                     source.parent, master)
            row.sessions += 1
            ours, refusal = run_serve(platform, workload, out / f"ours{tag}", energy, master)
            if theirs is None:  # both refusing counts; the refusals' texts are in the notes
                row.identical += ours is None
                row.notes.append(f"{'-E ' * energy}binary: {why}; hdrm serve: "
                                 f"{refusal or 'runs it'}")
                continue
            for name, messages in (("real", theirs), ("ours", ours)):
                (out / f"{name}{tag}_messages.json").write_text(json.dumps(messages, indent=0))
            diff = refusal or first_difference(ours, theirs, out / f"ours{tag}_jobs.csv",
                                           out / f"real{tag}_jobs.csv")
            row.identical += not diff
            if diff:
                row.notes.append(f"{'-E ' * energy}{diff}")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--outdir", type=Path, default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--batsim", default=None)
    parser.add_argument("--only", nargs="*", default=None, help="file names to keep")
    parser.add_argument("--master-zone", action="store_true",
                        help="add a master zone to files of clusters only (see "
                             "master_cluster_copy) instead of skipping them")
    parser.add_argument("--master-host", action="store_true",
                        help="run files of clusters only with their first host as the master "
                             "(-m NAME for the binary and hdrm serve) instead of skipping them")
    args = parser.parse_args(argv)
    batsim = find_batsim(args.batsim)
    if batsim is None:
        print("no runnable Batsim 4.x (--batsim, $HDRM_BATSIM, ../shared/batsim/bin/batsim, "
              "PATH): nothing compared")
        return 0
    outdir = args.outdir or Path(tempfile.mkdtemp(prefix="platform_corpus_"))
    files = sorted(p for folder in args.folders for p in folder.glob("*.xml"))
    files = [p for p in files if args.only is None or p.name in args.only]
    total = [0, 0]
    for path in files:
        row = measure(path, outdir / path.parent.name / path.stem, batsim, args.seeds, args.jobs,
                      args.master_zone, args.master_host)
        total[0] += row.identical
        total[1] += row.sessions
        print(row.line(), flush=True)
    print(f"total {total[0]}/{total[1]} identical sessions on {len(files)} files "
          f"(outputs in {outdir})")
    return 0


if __name__ == "__main__":
    from hdrm.cli import script as cli

    sys.exit(cli.guarded(main))
