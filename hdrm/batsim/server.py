"""``hdrm serve``: play Batsim's side of the protocol over ZeroMQ on the built-in physics.

Like Batsim, the server is the ZeroMQ REQ side: it *connects* to the decision process's endpoint
(``tcp://localhost:28000`` by default; the decision process binds it, as ``pybatsim -s
tcp://127.0.0.1:PORT`` does), sends one message, waits for one reply, and so on until SIMULATION_ENDS.
Any PyBatsim scheduler runs against it unchanged, without the Batsim binary.

At the end it writes ``<prefix>_jobs.csv`` and ``<prefix>_schedule.csv`` exactly as Batsim 4.2.1
does (``-e``/``export_prefix``; the folder is created if needed).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import zmq

from hdrm.batsim import protocol as p
from hdrm.batsim.protocol import DEFAULT_ENDPOINT
from hdrm.batsim.platform_hosts import load_served_hosts
from hdrm.batsim.actors import ActorSimulation
from hdrm.batsim.bandwidth import message_bandwidths
from hdrm.batsim.delayed import DelayedSimulation
from hdrm.batsim.jobs import read_job_table, read_job_tables
from hdrm.batsim.latency import route_latencies
from hdrm.batsim.machine_limit import keep_machines, machine_count
from hdrm.batsim.outputs_machines import SessionTraces
from hdrm.batsim.simulator import BatsimSimulation, ServerConfig
from hdrm.errors import ConfigError, HdrmError, ProtocolError, SessionDeadlock
from hdrm.platform.simgrid_roles import HostRoles
from hdrm.results.csvio import write_jobs_csv, write_schedule_csv
from hdrm.results.metrics import summarize
from hdrm.results.records import JobResult
from hdrm.sim.outputs import make_outdir

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeOptions:
    """How a session runs.

    Attributes:
        endpoint: the decision process's ZeroMQ endpoint, which the server connects to.
        export_prefix: output prefix (``out`` gives ``out_jobs.csv``); None writes no file.
        timeout_s: how long to wait for each reply before giving up.
        config: Batsim options (energy, forwarded profiles, sched-config).
        record: keep a transcript of every message, both ways.
        roles: Batsim's ``-m/--master-host`` and ``-r/--add-role-to-hosts``
            (:mod:`hdrm.platform.simgrid_roles`); None: the platform file's roles alone.
        machine_states: write ``<prefix>_machine_states.csv`` (Batsim's
            ``--disable-machine-state-tracing`` turns it off).
        schedule_trace: write the Pajé trace ``<prefix>_schedule.trace`` (Batsim's
            ``--disable-schedule-tracing`` turns it off).
    """

    endpoint: str = DEFAULT_ENDPOINT
    export_prefix: str | None = "out"
    timeout_s: float = 60.0
    config: ServerConfig = field(default_factory=ServerConfig)
    record: bool = False
    roles: HostRoles | None = None
    machine_states: bool = True
    schedule_trace: bool = True


@dataclass
class ServeResult:
    """What a session produced.

    Attributes:
        results: out_jobs.csv rows.
        summary: out_schedule.csv columns.
        energy_j: energy of all compute hosts (whether or not energy accounting was on).
        messages: number of request/reply round trips.
        transcript: ``("batsim" | "scheduler", text)`` pairs when recorded.
        files: the output files written.
    """

    results: list[JobResult]
    summary: dict[str, Any]
    energy_j: float
    messages: int
    transcript: list[tuple[str, str]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


class _Channel:
    """A REQ socket with a reply timeout (internal)."""

    def __init__(self, endpoint: str, timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ConfigError(f"timeout: must be > 0 seconds, got {timeout_s!r}")
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.REQ)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVTIMEO, max(1, int(self.timeout_s * 1000)))
        try:
            self.socket.connect(endpoint)
        except zmq.ZMQError as exc:
            self.close()
            raise ConfigError(
                f"socket endpoint {endpoint!r}: {exc}; write it like 'tcp://localhost:28000'"
            ) from None
        self.waited_s = 0.0

    def exchange(self, text: str, what: str) -> str:
        """Send ``text`` and return the reply; ``what`` names the message sent (for errors).

        Raises:
            ProtocolError: no reply in time, or a reply that is not UTF-8 text.
        """
        self.socket.send(text.encode("utf-8"))
        t0 = time.perf_counter()
        try:
            raw = self.socket.recv()  # waits at most timeout_s (RCVTIMEO)
        except zmq.Again:
            raise ProtocolError(
                f"no reply from the decision process at {self.endpoint} within {self.timeout_s:g} s; "
                "is a scheduler bound there (e.g. pybatsim SCHED -s 'tcp://127.0.0.1:PORT') and alive?"
            ) from None
        finally:
            self.waited_s += time.perf_counter() - t0
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(
                f"the decision process at {self.endpoint} replied to {what} with bytes that are not "
                f"UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}: {raw[:80]!r}); the protocol "
                "is UTF-8 JSON text"
            ) from None

    def close(self) -> None:
        self.socket.close(linger=0)
        self.context.term()


class BatsimServer:
    """One Batsim-protocol session on a platform and a workload.

    Args:
        platform: SimGrid XML platform or hdrm platform JSON.
        workload: Batsim JSON workload, or several (Batsim's several ``-w``: w0, w1, ...).
        options: session options.

    Raises:
        PlatformError, WorkloadError: the inputs cannot be read or simulated (checked up front,
            before any socket is opened).
    """

    def __init__(self, platform: str | Path, workload: str | Path | Sequence[str | Path],
                 options: ServeOptions | None = None):
        self.options = options or ServeOptions()
        served = load_served_hosts(platform, self.options.config.energy, self.options.roles)
        self.hosts, master = served.compute, served.master
        config = replace(self.options.config, storage=tuple(served.storage))
        if isinstance(workload, (str, Path)):
            self.table = read_job_table(workload, self.options.config.workload_id)
        else:  # several -w, as Batsim: w0, w1, ...
            self.table = read_job_tables(workload)
        count = machine_count(config.mmax, config.mmax_workload, list(self.table.paths.values()))
        self.hosts = keep_machines(self.hosts, count, platform)  # Batsim's --mmax
        latencies = route_latencies(platform, self.hosts, master)
        bandwidths = message_bandwidths(platform, self.hosts, self.table, latencies, master=master)
        self.simulation: BatsimSimulation = (
            ActorSimulation(self.hosts, self.table, config, bandwidths)
            if bandwidths is not None
            else BatsimSimulation(self.hosts, self.table, config) if latencies.zero
            else DelayedSimulation(self.hosts, self.table, config, latencies))
        if config.dynamic_jobs and type(self.simulation) is DelayedSimulation:
            raise ConfigError(  # (its own submitters and messages: not written for them)
                f"{platform}: hdrm serve --enable-dynamic-jobs needs a platform whose routes "
                "it knows exactly (this one's run the delayed model); run the real batsim")
        self._attach_traces(config)
        #: Called with ("batsim" | "scheduler", text) for every message (tests, tracing).
        self.on_message: Callable[[str, str], None] | None = None

    def _attach_traces(self, config: ServerConfig) -> None:
        """Batsim's other output files (:mod:`hdrm.batsim.outputs_machines`), where written;
        on the actor model the machine states are followed whatever is written (out_schedule.csv's
        ``time_*`` columns)."""
        opts = self.options
        if opts.export_prefix is None:
            return
        if not isinstance(self.simulation, ActorSimulation):
            if not (opts.machine_states or opts.schedule_trace or config.energy):
                return
            logger.warning(
                "%s_machine_states.csv, _schedule.trace, _consumed_energy.csv and "
                "_pstate_changes.csv are not written: hdrm serve writes them where it runs "
                "Batsim's actors (a SimGrid XML platform with routes it knows), not for this "
                "session", opts.export_prefix)
            return
        self.simulation.attach_traces(SessionTraces(
            self.hosts, [h.name for h in config.storage], config.energy, opts.machine_states,
            opts.schedule_trace))

    def run(self) -> ServeResult:
        """Run the session to SIMULATION_ENDS and write the outputs.

        Raises:
            ProtocolError: a malformed or invalid reply, or no reply in time.
        """
        t0 = time.perf_counter()
        transcript: list[tuple[str, str]] = []
        channel = _Channel(self.options.endpoint, self.options.timeout_s)
        sim, count = self.simulation, 0
        try:
            message = sim.begin()
            while message is not None:
                text = p.encode_message(message)
                self._note(transcript, "batsim", text)
                reply = channel.exchange(text, _describe(message))
                self._note(transcript, "scheduler", reply)
                count += 1
                try:  # (a reply that never comes: the binary waits, it does not abort)
                    sim.react(p.decode_message(reply, "scheduler"))
                    message = sim.next_message()
                except SessionDeadlock:  # the binary ends there and writes its files
                    self._result(count, channel.waited_s, time.perf_counter() - t0)
                    raise
                except HdrmError:
                    self._leave_empty_outputs()
                    raise
        finally:
            channel.close()
        wall_s = time.perf_counter() - t0
        result = self._result(count, channel.waited_s, wall_s)
        result.transcript = transcript
        logger.info("session done: %d jobs, %d round trips, %.3f s", len(result.results), count, wall_s)
        return result

    def _leave_empty_outputs(self) -> None:
        """A session stopped on a reply or an event, where the binary aborts: the output files
        it opens when it starts are left empty, as it leaves them (out_jobs.csv, and where hdrm
        serve writes them the machine states, the Pajé trace and under -E the energy and
        power-state files; no out_schedule.csv), so no earlier run's file is left there."""
        prefix = self.options.export_prefix
        if prefix is None:
            return
        traces = getattr(self.simulation, "traces", None)
        suffixes = ["_jobs.csv"]
        if traces is not None:
            suffixes += ["_machine_states.csv"] if traces.machine_states else []
            suffixes += ["_schedule.trace"] if traces.paje is not None else []
            suffixes += ["_consumed_energy.csv", "_pstate_changes.csv"] if traces.energy else []
        make_outdir(Path(prefix).parent, f"export prefix {prefix}")
        for suffix in suffixes:
            Path(f"{prefix}{suffix}").write_text("")
        stale = Path(f"{prefix}_schedule.csv")
        if stale.exists():
            stale.unlink()

    def _note(self, transcript: list[tuple[str, str]], who: str, text: str) -> None:
        if self.options.record:
            transcript.append((who, text))
        if self.on_message is not None:
            self.on_message(who, text)

    def _result(self, count: int, scheduling_s: float, wall_s: float) -> ServeResult:
        sim = self.simulation
        results = sim.results()
        energy = sim.board.energy_j()
        traces = getattr(sim, "traces", None)
        summary = summarize(  # consumed_joules: from the first submission to the last job end
            results, sim.board.nb_hosts,
            sim.board.window_energy_j() if self.options.config.energy else None,
            scheduling_time_s=scheduling_s, simulation_time_s=wall_s,
            nb_machine_switches=sim.board.nb_machine_switches,
            nb_grouped_switches=sim.board.nb_grouped_switches,
            machine_state_times_s=traces.state_times() if traces is not None else None,
        )
        if not results:  # Batsim divides by 0 jobs (a session without -w): written -nan
            summary.update(dict.fromkeys(_MEANS_OVER_JOBS, math.nan))
        files: list[Path] = []
        prefix = self.options.export_prefix
        if prefix is not None:
            make_outdir(Path(prefix).parent, f"export prefix {prefix}")
            files.append(write_jobs_csv(results, f"{prefix}_jobs.csv"))
            files.append(write_schedule_csv(summary, f"{prefix}_schedule.csv"))
            if traces is not None:
                files += traces.write(prefix, sim.maestro.now)
        return ServeResult(results, summary, energy, count, files=files)


#: out_schedule.csv columns Batsim writes as a sum over its jobs divided by their number
_MEANS_OVER_JOBS = ("mean_slowdown", "mean_turnaround_time", "mean_waiting_time", "success_rate")


def _describe(message: p.Message) -> str:
    """``the message at t=12.000000 (JOB_SUBMITTED, JOB_COMPLETED)``, for error messages."""
    kinds = ", ".join(dict.fromkeys(message.types))
    return f"the message at t={message.now:.6f} ({kinds})"


def serve(platform: str | Path, workload: str | Path | Sequence[str | Path],
          options: ServeOptions | None = None) -> ServeResult:
    """Run one Batsim-protocol session (see :class:`BatsimServer`)."""
    return BatsimServer(platform, workload, options).run()
