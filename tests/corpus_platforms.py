"""Platforms with bypass routes, shared by tests/platform/test_simgrid_corpus_shapes.py (their
routes, worked out by hand) and tests/batsim/test_real_batsim_corpus_shapes.py (the binary's
sessions on them)."""

from __future__ import annotations


def bypass_floyd(nb_hosts: int) -> str:
    """A Floyd zone: master -l (1 ms)- r -l<i> ((i+1) x 100 us)- h<i>, and bypass routes
    h1 -> master over b (5 ms) and master -> h2 over b then l2."""
    hosts = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(nb_hosts))
    links = "".join(f'<link id="l{i}" bandwidth="1GBps" latency="{i + 1}00us"/>'
                    for i in range(nb_hosts))
    routes = "".join(f'<route src="r" dst="h{i}"><link_ctn id="l{i}"/></route>'
                     for i in range(nb_hosts))
    return ('<platform version="4.1"><zone id="z" routing="Floyd">'
            f'<host id="master_host" speed="1Gf"/>{hosts}<router id="r"/>'
            f'<link id="l" bandwidth="1GBps" latency="1ms"/>{links}'
            '<link id="b" bandwidth="100MBps" latency="5ms"/>'
            f'<route src="master_host" dst="r"><link_ctn id="l"/></route>{routes}'
            '<bypassRoute src="h1" dst="master_host"><link_ctn id="b"/></bypassRoute>'
            '<bypassRoute src="master_host" dst="h2"><link_ctn id="b"/><link_ctn id="l2"/>'
            '</bypassRoute></zone></platform>')


def bypass_zones(nb_hosts: int) -> str:
    """Zone Z1 (master -m (200 us)- g1) and Z2 (h<i> -l<i>- g2) in a Full zone joined by x
    (1 ms), and a bypass zone route Z2 -> Z1 from g2 to the master over y (3 ms)."""
    hosts = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(nb_hosts))
    links = "".join(f'<link id="l{i}" bandwidth="1GBps" latency="{i + 1}00us"/>'
                    for i in range(nb_hosts))
    routes = "".join(f'<route src="h{i}" dst="g2"><link_ctn id="l{i}"/></route>'
                     for i in range(nb_hosts))
    return ('<platform version="4.1"><zone id="A" routing="Full">'
            '<zone id="Z1" routing="Full"><host id="master_host" speed="1Gf"/><router id="g1"/>'
            '<link id="m" bandwidth="1GBps" latency="200us"/>'
            '<route src="master_host" dst="g1"><link_ctn id="m"/></route></zone>'
            f'<zone id="Z2" routing="Full">{hosts}<router id="g2"/>{links}{routes}</zone>'
            '<link id="x" bandwidth="1GBps" latency="1ms"/>'
            '<link id="y" bandwidth="50MBps" latency="3ms"/>'
            '<zoneRoute src="Z1" dst="Z2" gw_src="g1" gw_dst="g2"><link_ctn id="x"/></zoneRoute>'
            '<bypassZoneRoute src="Z2" dst="Z1" gw_src="g2" gw_dst="master_host">'
            '<link_ctn id="y"/></bypassZoneRoute></zone></platform>')
