"""SimGrid platforms whose routes SimGrid computes (torus, fat-tree and dragonfly clusters,
Vivaldi and Cluster zones), each with at least 6 compute hosts, for the fast tests of
hdrm.platform.simgrid_topology and the slow ones against the Batsim binary."""

from __future__ import annotations

HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1">\n')


def behind_zone_route(cluster: str, gateway: str, link_lat: str = "100us") -> str:
    """``cluster`` (id ``t``) beside the master's Full zone, joined by one zoneRoute whose link
    has latency ``link_lat``; ``gateway`` is the cluster's node on the way."""
    return (f'{HEAD}<zone id="w" routing="Full"><zone id="zm" routing="Full">'
            f'<host id="master_host" speed="1Gf"/></zone>{cluster}'
            f'<link id="l1" bandwidth="1GBps" latency="{link_lat}"/>'
            f'<zoneRoute src="t" dst="zm" gw_src="{gateway}" gw_dst="master_host">'
            '<link_ctn id="l1"/></zoneRoute></zone></platform>\n')


def _cluster(topology: str, params: str, prefix: str, count: int, lat: str, extra: str = "",
             props: str = "") -> str:
    return (f'<cluster id="t" topology="{topology}" topo_parameters="{params}" prefix="{prefix}" '
            f'suffix="" radical="0-{count - 1}" speed="1Gf" bw="1GBps" lat="{lat}"{extra}>'
            f'{props}</cluster>')


TORUS = behind_zone_route(_cluster("TORUS", "2,3,2", "t-", 12, "10us",
                                   props='<prop id="tp" value="1"/>'), "t-7")
TORUS_LIMITED = behind_zone_route(_cluster(
    "TORUS", "4,3", "t-", 12, "7us", ' loopback_lat="3us" loopback_bw="10GBps" '
    'limiter_link="1GBps" sharing_policy="SHARED"'), "t-5")
FAT_TREE = behind_zone_route(_cluster("FAT_TREE", "2;4,4;1,2;1,2", "f", 16, "10us",
                                      props='<prop id="tp" value="2"/>'), "f5")
FAT_TREE_3 = behind_zone_route(_cluster("FAT_TREE", "3;2,2,3;1,2,2;1,1,1", "f", 12, "9us",
                                        ' loopback_lat="1us"'), "f0")
DRAGONFLY = behind_zone_route(_cluster("DRAGONFLY", "3,1;2,1;2,1;2", "d", 24, "10us",
                                       props='<prop id="tp" value="3"/>'), "d9")
DRAGONFLY_LIMITED = behind_zone_route(_cluster(
    "DRAGONFLY", "2,2;3,1;2,1;2", "d", 24, "6us", ' limiter_link="2GBps" sharing_policy="SHARED"'),
    "d0")

_POINTS = [("3 4 0.1", "1GBps", "1GBps"), ("-1.5 2 0.2", "10GBps", "100MBps"),
           ("10 0 0", "1GBps", "1GBps"), ("0.3 0.4 0.25", "1GBps", "2GBps"),
           ("-2 -2 1", "1GBps", "1GBps"), ("0 1 0", "1GBps", "1GBps")]
_PEER_LAT = ' lat="1ms"'  # deprecated: SimGrid warns and ignores it
VIVALDI_PEERS = (
    f'{HEAD}<zone id="v" routing="Vivaldi"><prop id="zp" value="v"/>'
    '<peer id="master_host" speed="1Gf" bw_in="1GBps" bw_out="1GBps" coordinates="0 0 0.5"/>'
    + "".join(f'<peer id="p{i}" speed="1Gf" bw_in="{bw_in}" bw_out="{bw_out}" '
              f'coordinates="{xyh}"{_PEER_LAT if i == 0 else ""}/>'
              for i, (xyh, bw_in, bw_out) in enumerate(_POINTS))
    + '</zone></platform>\n')
VIVALDI_HOSTS = (
    f'{HEAD}<zone id="v" routing="Vivaldi">'
    '<host id="master_host" speed="1Gf" coordinates="0 0 0.5"/>'
    + "".join(f'<host id="h{i}" speed="1Gf" coordinates="{xyh}"/>'
              for i, (xyh, _, _) in enumerate(_POINTS))
    + '</zone></platform>\n')
CLUSTER_CABINETS = (
    f'{HEAD}<zone id="zc" routing="Cluster"><prop id="zp" value="1"/>'
    '<host id="master_host" speed="1Gf"/>'
    '<cabinet id="cab1" prefix="c" suffix=".x" radical="0-3" speed="1Gf" bw="1GBps" lat="50us"/>'
    '<cabinet id="cab2" prefix="d" suffix="" radical="0-1" speed="2Gf" bw="1GBps" lat="80us"/>'
    '<backbone id="bb" bandwidth="10GBps" latency="20us"/></zone></platform>\n')
CLUSTER_HOST_LINKS = (
    f'{HEAD}<zone id="zc" routing="Cluster">'
    '<host id="master_host" speed="1Gf"/><host id="h0" speed="1Gf"/><host id="h1" speed="1Gf"/>'
    '<cabinet id="cab1" prefix="c" suffix="" radical="0-3" speed="1Gf" bw="1GBps" lat="50us"/>'
    '<link id="u0" bandwidth="1GBps" latency="11us"/><link id="d0" bandwidth="1GBps" '
    'latency="13us"/><link id="um" bandwidth="1GBps" latency="3us"/>'
    '<link id="dm" bandwidth="1GBps" latency="5us"/>'
    '<host_link id="h0" up="u0" down="d0"/><host_link id="master_host" up="um" down="dm"/>'
    '<backbone id="bb" bandwidth="10GBps" latency="20us"/></zone></platform>\n')

CLUSTER_BEHIND_ZONE_ROUTE = (
    f'{HEAD}<zone id="w" routing="Full"><zone id="zm" routing="Full">'
    '<host id="master_host" speed="1Gf"/></zone><zone id="t" routing="Cluster">'
    '<cabinet id="cb" prefix="k" suffix="" radical="0-5" speed="1Gf" bw="125MBps" lat="50us"/>'
    '<backbone id="cbb" bandwidth="1GBps" latency="7us"/><router id="t_gw"/></zone>'
    '<link id="l1" bandwidth="1GBps" latency="100us"/>'
    '<zoneRoute src="t" dst="zm" gw_src="t_gw" gw_dst="master_host"><link_ctn id="l1"/>'
    '</zoneRoute></zone></platform>\n')

#: name -> platform whose routes hdrm computes (every message as the binary's)
COMPUTED = {
    "torus": TORUS, "torus, limiters and loopbacks": TORUS_LIMITED, "fat tree": FAT_TREE,
    "fat tree of 3 levels": FAT_TREE_3, "dragonfly": DRAGONFLY,
    "dragonfly, limiters": DRAGONFLY_LIMITED, "Vivaldi peers": VIVALDI_PEERS,
    "Vivaldi hosts": VIVALDI_HOSTS, "Cluster zone of cabinets": CLUSTER_CABINETS,
    "Cluster zone with host_links": CLUSTER_HOST_LINKS,
    "Cluster zone behind a zoneRoute": CLUSTER_BEHIND_ZONE_ROUTE,
}

#: name -> (platform, what hdrm's refusal says); the binary aborts on the first two and leaves
#: hosts out of the last two
REFUSED = {
    "a peer in a Full zone": (
        f'{HEAD}<zone id="w" routing="Full"><peer id="master_host" speed="1Gf" bw_in="1GBps" '
        'bw_out="1GBps"/><peer id="p0" speed="1Gf" bw_in="1GBps" bw_out="1GBps"/></zone>'
        '</platform>\n', "a <peer> outside a Vivaldi zone"),
    "a torus short of radicals": (TORUS.replace('radical="0-11"', 'radical="0-10"'),
                                  "gives 11 hosts, but TORUS '2,3,2' has 12 nodes"),
    "a cabinet in a Full zone": (
        f'{HEAD}<zone id="w" routing="Full"><host id="master_host" speed="1Gf"/>'
        '<host id="h0" speed="1Gf"/><cabinet id="cab1" prefix="c" suffix="" radical="0-3" '
        'speed="1Gf" bw="1GBps" lat="50us"/></zone></platform>\n',
        "makes none of its hosts"),
    "a torus of more radicals": (TORUS.replace('radical="0-11"', 'radical="0-12"'),
                                 "makes only the first 12"),
}

#: the master host and the compute hosts in two zones of a Vivaldi zone: the binary aborts when a
#: job ends ("Please specify the Vivaldi coordinates of Netzone zh"), routers router_<zone> or not
VIVALDI_ZONES = (
    f'{HEAD}<zone id="v" routing="Vivaldi"><zone id="zm" routing="Full">'
    '<host id="master_host" speed="1Gf"/><router id="router_zm" coordinates="0 0 0.1"/></zone>'
    '<zone id="zh" routing="Full">' + "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(6))
    + '<router id="router_zh" coordinates="3 4 0.2"/></zone></zone></platform>\n')
