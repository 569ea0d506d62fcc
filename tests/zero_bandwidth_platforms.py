"""SimGrid platforms with a bandwidth of 0 somewhere, for the fast tests of hdrm's refusals
(tests/platform/test_simgrid_zero_bandwidth.py) and the slow ones against the Batsim binary
(tests/batsim/test_real_batsim_zero_bandwidth.py).

One element a line, so that a refusal's line number can be checked by hand: lines 1-3 are the
XML declaration, the document type and ``<platform>``; line 4 the outer zone."""

from __future__ import annotations

from topology_platforms import DRAGONFLY, FAT_TREE, TORUS, VIVALDI_PEERS

HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1">\n')


def full(z_bw: str, used: str, policy: str = "") -> str:
    """A Full zone (line 4): master_host (5), h0..h5 (6-11), links l0..l5 of 10 GBps (12-17),
    link z of bandwidth ``z_bw`` (18), then each host's route to the master over its own link.
    z is also on the route named by ``used``: "h0" (h0 to the master), "h0-h1", "master" (the
    master to itself) or "" (on no route)."""
    lines = ['<zone id="w" routing="Full">', '<host id="master_host" speed="1Gf"/>']
    lines += [f'<host id="h{i}" speed="1Gf"/>' for i in range(6)]
    lines += [f'<link id="l{i}" bandwidth="10GBps" latency="1ms"/>' for i in range(6)]
    sharing = f' sharing_policy="{policy}"' if policy else ""
    lines.append(f'<link id="z" bandwidth="{z_bw}" latency="1ms"{sharing}/>')
    way = ' direction="UP"' if policy == "SPLITDUPLEX" else ""
    for i in range(6):
        extra = f'<link_ctn id="z"{way}/>' if used == "h0" and i == 0 else ""
        lines.append(f'<route src="h{i}" dst="master_host"><link_ctn id="l{i}"/>{extra}</route>')
    if used == "h0-h1":
        lines.append(f'<route src="h0" dst="h1"><link_ctn id="z"{way}/></route>')
    if used == "master":
        lines.append(f'<route src="master_host" dst="master_host"><link_ctn id="z"{way}/>'
                     '</route>')
    return HEAD + "\n".join(lines + ["</zone>", "</platform>"]) + "\n"


def clusters(ca: str = "", cm: str = "", link_bw: str = "1.25GBps") -> str:
    """Compute cluster ca (line 5, nodes c0..c5) and master cluster cm (line 6, its node
    master_host0 named by role), 1 GBps node links of 1 ms, 2 GBps backbones of 100 us, joined
    by link 'backbone' (line 7, bandwidth ``link_bw``). ``ca``/``cm``: attributes that replace
    or extend the cluster's (``bb_bw="0Bps"`` replaces the default one)."""
    def cluster(cid: str, prefix: str, radical: str, attrs: str) -> str:
        base = {"bw": "1GBps", "lat": "1ms", "bb_bw": "2GBps", "bb_lat": "100us"}
        extra = []
        for part in attrs.split():
            key, value = part.split("=", 1)
            if key in base:
                base[key] = value.strip('"')
            else:
                extra.append(part)
        given = " ".join(f'{k}="{v}"' for k, v in base.items() if v != "-")
        return (f'<cluster id="{cid}" prefix="{prefix}" suffix="" radical="{radical}" '
                f'speed="1Gf" {given}{" " if extra else ""}{" ".join(extra)}>')

    lines = ['<zone id="AS0" routing="Full">',
             cluster("ca", "c", "0-5", ca) + "</cluster>",
             cluster("cm", "master_host", "0-0", cm) + '<prop id="role" value="master"/>'
             "</cluster>",
             f'<link id="backbone" bandwidth="{link_bw}" latency="500us"/>',
             '<zoneRoute src="ca" dst="cm" gw_src="cca_router" gw_dst="master_hostcm_router">'
             '<link_ctn id="backbone"/></zoneRoute>',
             "</zone>", "</platform>"]
    return HEAD + "\n".join(lines) + "\n"


def _peer_bw(text: str, peer: str, attribute: str) -> str:
    start = text.index(f'<peer id="{peer}"')
    at = text.index(f'{attribute}="', start) + len(attribute) + 2
    return text[:at] + "0Bps" + text[text.index('"', at):]


#: name -> (platform, the start of hdrm's refusal after the file name, or None: read).
#: The binary's behaviour on each is in tests/batsim/test_real_batsim_zero_bandwidth.py.
REFUSED = {
    "link on a host's route": (full("0", "h0"), ":18: <link id='z'>: bandwidth='0' gives a link "
                               "of bandwidth 0, on the route of the messages from host 'h0' to "
                               "the master host 'master_host'"),
    "link on the master's route to itself": (
        full("0Bps", "master"), ":18: <link id='z'>: bandwidth='0Bps' gives a link of bandwidth "
        "0, on the route of the messages from host 'master_host' to the master host "
        "'master_host'"),
    "split-duplex link": (full("0GBps", "h0", "SPLITDUPLEX"),
                          ":18: <link id='z'>: bandwidth='0GBps' gives a link of bandwidth 0"),
    "master cluster: loopback_lat alone": (
        clusters(cm='loopback_lat="5us"'), ":6: <cluster id='cm'>: no loopback_bw with "
        "loopback_lat='5us' gives each node a loopback of bandwidth 0, on the route of the "
        "messages from host 'master_host0' to the master host 'master_host0'"),
    "master cluster: loopback_bw 0": (
        clusters(cm='loopback_lat="5us" loopback_bw="0Bps"'),
        ":6: <cluster id='cm'>: loopback_bw='0Bps' with loopback_lat='5us' gives each node a "
        "loopback of bandwidth 0"),
    "compute cluster: bw 0": (
        clusters(ca='bw="0Bps"'), ":5: <cluster id='ca'>: bw='0Bps' gives each node a link of "
        "bandwidth 0, on the route of the messages from host 'c0' to the master host "
        "'master_host0'"),
    "compute cluster: backbone bb_bw 0": (
        clusters(ca='bb_bw="0"'), ":5: <cluster id='ca'>: bb_bw='0' with bb_lat='100us' gives "
        "a backbone of bandwidth 0"),
    "master cluster: bb_lat without bb_bw": (
        clusters(cm='bb_bw=-'), ":6: <cluster id='cm'>: no bb_bw with bb_lat='100us' gives a "
        "backbone of bandwidth 0, on the route of the messages from host 'master_host0'"),
    "zoneRoute link": (clusters(link_bw="0bps"), ":7: <link id='backbone'>: bandwidth='0bps' "
                       "gives a link of bandwidth 0, on the route of the messages from host "
                       "'c0'"),
    "compute peer: bw_out 0": (_peer_bw(VIVALDI_PEERS, "p1", "bw_out"),
                               ":4: <peer id='p1'>: bw_out='0Bps' gives a link of bandwidth 0"),
    "master peer: bw_in 0": (_peer_bw(VIVALDI_PEERS, "master_host", "bw_in"),
                             ":4: <peer id='master_host'>: bw_in='0Bps' gives a link of "
                             "bandwidth 0"),
    "torus: bw 0": (TORUS.replace('bw="1GBps" lat=', 'bw="0Bps" lat=', 1),
                    ":4: <cluster id='t'>: bw='0Bps', which SimGrid 3.32 refuses when it loads "
                    "the platform (\"TorusZone: incorrect bandwidth for internode "
                    "communication, bw=0.000000\")"),
    "fat tree: bw 0": (FAT_TREE.replace('bw="1GBps" lat=', 'bw="0" lat=', 1),
                       ":4: <cluster id='t'>: bw='0', which SimGrid 3.32 refuses when it loads "
                       "the platform (\"FatTreeZone: incorrect bandwidth"),
    "dragonfly: bw 0": (DRAGONFLY.replace('bw="1GBps" lat=', 'bw="0MBps" lat=', 1),
                        ":4: <cluster id='t'>: bw='0MBps', which SimGrid 3.32 refuses when it "
                        "loads the platform (\"DragonflyZone: incorrect bandwidth"),
}
#: name -> platform with a bandwidth of 0 that no message crosses (or no link at all): read.
ACCEPTED = {
    "link on a route between two compute hosts": full("0Bps", "h0-h1"),
    "link on no route": full("0", ""),
    "compute cluster: loopback_lat alone": clusters(ca='loopback_lat="5us"'),
    "master cluster: loopback_lat 0, loopback_bw 0 (no loopback)": clusters(
        cm='loopback_lat="0" loopback_bw="0"'),
    "master cluster: loopback_bw and loopback_lat": clusters(
        cm='loopback_lat="5us" loopback_bw="1GBps"'),
    "master cluster: bb_bw 0 and bb_lat 0 (no backbone)": clusters(cm='bb_bw="0" bb_lat="0"'),
    "compute peer: bw_in 0": _peer_bw(VIVALDI_PEERS, "p1", "bw_in"),
    "torus: loopback_lat alone": TORUS.replace('lat="10us"', 'lat="10us" loopback_lat="3us"', 1),
}
