"""Batsim 4.2.1's Pajé schedule trace, ``<prefix>_schedule.trace``, as ``hdrm serve`` writes it.

The trace (Batsim's ``PajeTracer``, ``src/export.cpp``) declares a container per machine
(``m<id>``, named after the host, storage hosts included), a state per machine that is ``w``
(waiting) or the job it computes (``j<job id>``, declared with a colour on its first start), and
``Job kill`` events (``kk`` on the killer, ``km`` on each of the job's machines) when a job's
executor ends at its walltime or by a cancelled parallel task. Times are C's ``%lf``.

One thing cannot be matched byte for byte: Batsim gives each job a colour from 64 hues that it
shuffles with ``std::random_device`` on every run, so two runs of the binary differ there. hdrm
draws the same 64 colours, shuffled with a fixed seed (the same file for the same session); the
rest of the file is Batsim's, line for line.
"""

from __future__ import annotations

import colorsys
import random
from typing import Sequence

#: The fields of each Pajé event Batsim defines (its trailing spaces included).
_DEFINITIONS = (
    ("PajeDefineContainerType 1", ("Type string", "Alias string", "Name string"), ""),
    ("PajeCreateContainer 2", ("Time date ", "Type string  ", "Alias string ", "Name string   ",
                               "Container string  "), ""),
    ("PajeDestroyContainer 3", ("Time date", "Name string ", "Type string"), ""),
    ("PajeDefineStateType 4", ("Alias string ", "Type string ", "Name string "), ""),
    ("PajeDefineEntityValue 5", ("Alias string  ", "Type string  ", "Name string  ",
                                 "Color color "), ""),
    ("PajeSetState 6", ("Time date  ", "Type string  ", "Container string  ", "Value string  "),
     " "),
    ("PajeDefineEventType 7", ("Type string", "Alias string", "Name string"), ""),
    ("PajeNewEvent 8", ("Time date", "Type string", "Container string", "Value string"), ""),
    ("PajeDefineVariableType 9", ("Type string", "Alias string", "Name string", "Color string"),
     ""),
    ("PajeSetVariable 10", ("Time date", "Type string", "Container string", "Value double"), ""),
)

_TYPES = """# Container types creation
1 0 root_ct "Machines"
1 root_ct machine_ct "Machine"
1 0 scheduler_ct "Scheduler"
1 scheduler_ct killer_ct "Killer"

# Event types creation
7 killer_ct kk "Job kill"
7 machine_ct km "Job kill"

# Variable types creation
9 scheduler_ct vu_vt "Utilization" "0.0 0.5 0.0"

"""

_STATES = """
# States creation
4 machine_state machine_ct "Machine state"

# Creation of the different values the machine state can be
5 w machine_state "Waiting" "0.0 0.0 0.0"
5 l machine_state "Launching" "0.3 0.3 0.3"

# Begin of events
"""

#: The number of job colours (hues evenly spaced, full saturation and value), as Batsim.
NB_COLOURS = 64


def header() -> str:
    """The event definitions that open the trace."""
    parts = []
    for name, fields, end_pad in _DEFINITIONS:
        lines = [f"%EventDef {name}", *(f"% {f}" for f in fields), f"%EndEventDef{end_pad}"]
        parts.append("\n".join(lines) + "\n\n")
    return "".join(parts)


def job_colours(seed: int = 0) -> list[str]:
    """The 64 job colours as Batsim writes them (``"r g b"``, 6 decimals), shuffled with
    ``seed`` (Batsim shuffles them at random on every run)."""
    colours = []
    for i in range(NB_COLOURS):
        r, g, b = colorsys.hsv_to_rgb(i * (360.0 / NB_COLOURS) / 360.0, 1.0, 1.0)
        colours.append(f'"{r:f} {g:f} {b:f}"')
    random.Random(seed).shuffle(colours)
    return colours


class PajeTrace:
    """The lines of Batsim's Pajé trace, gathered during a session.

    Args:
        names: every machine's host name in resource order (compute hosts, then storage).
        start_s: when the trace begins (the simulation's start).
        seed: the seed of the job colours' shuffle.
    """

    def __init__(self, names: Sequence[str], start_s: float = 0.0, seed: int = 0) -> None:
        self.names = list(names)
        self._colours = job_colours(seed)
        self._declared: set[str] = set()
        t = f"{start_s:f}"
        lines = [header(), _TYPES, "# Containers creation\n",
                 f'2 {t} root_ct root "Machines" 0\n']
        lines += [f'2 {t} machine_ct m{i} "{name}" root\n' for i, name in enumerate(self.names)]
        lines += [f'2 {t} scheduler_ct sc "Scheduler" 0\n', f'2 {t} killer_ct k "Killer" sc\n',
                  _STATES]
        lines += [f"6 {t} machine_state m{i} w\n" for i in range(len(self.names))]
        self.lines = lines

    def job_started(self, t: float, job_id: str, hosts: Sequence[int]) -> None:
        """Job ``job_id`` computes on ``hosts`` from ``t`` (declared on its first start)."""
        if job_id not in self._declared:
            colour = self._colours[len(self._declared) % NB_COLOURS]
            self._declared.add(job_id)
            self.lines.append(f'5 j{job_id} machine_state "{job_id}" {colour}\n')
        stamp = f"{t:f}"
        self.lines.extend(f"6 {stamp} machine_state m{h} j{job_id}\n" for h in sorted(hosts))

    def job_killed(self, t: float, job_id: str, hosts: Sequence[int]) -> None:
        """Job ``job_id``'s executor ended by its walltime or a cancelled task at ``t``."""
        stamp = f"{t:f}"
        self.lines.append(f'8 {stamp} kk k "{job_id}"\n')
        self.lines.extend(f'8 {stamp} km m{h} "{job_id}"\n' for h in sorted(hosts))

    def machines_waiting(self, t: float, hosts: Sequence[int]) -> None:
        """``hosts`` compute nothing from ``t``."""
        stamp = f"{t:f}"
        self.lines.extend(f"6 {stamp} machine_state m{h} w\n" for h in hosts)

    def text(self, end_s: float) -> str:
        """The whole trace, its containers destroyed at ``end_s``."""
        t = f"{end_s:f}"
        tail = ["\n# End of events, containers destruction\n"]
        tail += [f"3 {t} m{i} machine_ct\n" for i in range(len(self.names))]
        tail.append(f"3 {t} root root_ct\n")
        return "".join(self.lines) + "".join(tail)
