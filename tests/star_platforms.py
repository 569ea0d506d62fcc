"""Platforms of one ``<zone routing="Cluster">`` (SimGrid 3.32's StarZone): ``master_host`` and 6
compute hosts ``h0``-``h5``, each joined by a ``<host_link>`` over ``ctl`` (1 ms), for the fast
tests of hdrm.platform.simgrid_routes and the slow ones against the Batsim binary."""

from __future__ import annotations

from pathlib import Path

from topology_platforms import HEAD

PLATFORMS_DIR = Path(__file__).resolve().parents[1] / "platforms"
#: ctl: every host's link up and down (1 ms); lo: the master's slow loopback (7 ms)
CTL = ('<link id="ctl" bandwidth="1GBps" latency="1ms"/>'
       '<link id="lo" bandwidth="1GBps" latency="7ms"/>')
#: sd: a split-duplex link (3 ms each way); mu: another link up (5 ms)
SPLIT = ('<link id="sd" bandwidth="1GBps" latency="3ms" sharing_policy="SPLITDUPLEX"/>'
         '<link id="mu" bandwidth="1GBps" latency="5ms"/>')
BACKBONE = '<backbone id="bb" bandwidth="1GBps" latency="20us"/>'
#: the master host's route to itself over lo
SELF = '<route src="master_host" dst="master_host"><link_ctn id="lo"/></route>'
_HOSTS = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(6))
_HOST_LINKS = "".join(f'<host_link id="h{i}" up="ctl" down="ctl"/>' for i in range(6))


def star(links: str, master_link: str, routes: str = "", backbone: str = "") -> str:
    """The zone ``zc``: the hosts, ``links`` (and cabinets), the compute hosts' host_links and
    ``master_link`` (the master's, or ""), ``backbone`` and ``routes``, in the DTD's order."""
    return (f'{HEAD}<zone id="zc" routing="Cluster"><host id="master_host" speed="1Gf"/>{_HOSTS}'
            f'{links}{_HOST_LINKS}{master_link}{backbone}{routes}</zone></platform>\n')
