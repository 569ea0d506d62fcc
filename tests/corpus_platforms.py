"""Platforms with bypass routes, out of the DTD's order, or with watts out of count, shared by
tests/platform/test_simgrid_corpus_shapes.py (hand-checked routes and refusals) and
tests/batsim/test_real_batsim_corpus_shapes.py (what the binary does with them)."""

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


_M = '<host id="master_host" speed="1Gf"/><host id="h0" speed="1Gf"/>'
_L = '<link id="l" bandwidth="1GBps" latency="1us"/>'
_R = '<route src="master_host" dst="h0"><link_ctn id="l"/></route>'
_Z12 = ('<zone id="A" routing="Full"><zone id="Z1" routing="Full">'
        '<host id="master_host" speed="1Gf"/></zone><zone id="Z2" routing="Full">'
        '<host id="h0" speed="1Gf"/></zone>')
_ZR = '<zoneRoute src="Z1" dst="Z2" gw_src="master_host" gw_dst="h0"><link_ctn id="l"/></zoneRoute>'
#: <platform> bodies out of the order of SimGrid's DTD: (body, the element refused, its line
#: words); the binary refuses each (tests/batsim/test_real_batsim_corpus_shapes.py)
OUT_OF_ORDER = {
    "link after a route": (f'<zone id="z" routing="Full">{_M}{_R}{_L}</zone>',
                           "<link id='l'>: a <link> after the routes of zone 'z'"),
    "host after a route": ('<zone id="z" routing="Full"><host id="master_host" speed="1Gf"/>'
                           f'{_L}{_R}<host id="h0" speed="1Gf"/></zone>',
                           "<host id='h0'>: a <host> after the routes of zone 'z'"),
    "prop after a host": (f'<zone id="z" routing="Full">{_M}<prop id="a" value="b"/>{_L}{_R}'
                          '</zone>', "<prop id='a'> in zone 'z': a <prop> after the zone's"),
    "zone after a zone route": (f'{_Z12}{_L}{_ZR}<zone id="Z3" routing="Full">'
                                '<host id="h1" speed="1Gf"/></zone></zone>',
                                "<zone id='Z3'>: a <zone> after the routes of zone 'A'"),
    "link after a zone route": (f'{_Z12}{_ZR}{_L}</zone>',
                                "<link id='l'>: a <link> after the routes of zone 'A'"),
    "config after a zone": (f'<zone id="z" routing="Full">{_M}{_L}{_R}</zone><config>'
                            '<prop id="maxmin/precision" value="1e-5"/></config>',
                            "<config>: a <config> after the platform's zones"),
}
#: ... and in order: props first, traces anywhere after them, routes last
IN_ORDER = {
    "leaf": f'<zone id="z" routing="Full"><prop id="a" value="b"/>{_M}{_L}{_R}</zone>',
    "inner": f'<config><prop id="maxmin/precision" value="1e-5"/></config>{_Z12}{_L}{_ZR}</zone>',
}


def watts_out_of_count(master_speed: str) -> str:
    """A master whose speeds are ``master_speed``, then hosts hb (3 speeds) and ha (2 speeds),
    every host with one wattage pair."""
    watts = '<prop id="wattage_per_state" value="100:200"/>'
    return ('<platform version="4.1"><zone id="z" routing="Full">'
            f'<host id="master_host" speed="{master_speed}">{watts}</host>'
            f'<host id="hb" speed="1Gf, 2Gf, 3Gf">{watts}</host>'
            f'<host id="ha" speed="1Gf, 2Gf">{watts}</host></zone></platform>\n')
