"""Clusters of a topology in SimGrid 3.32 (Batsim 4.2.1): ``<cluster topology="TORUS">``,
``"FAT_TREE"`` and ``"DRAGONFLY"``, their links and routes as SimGrid builds them (read in
``src/kernel/routing/TorusZone.cpp``, ``FatTreeZone.cpp``, ``DragonflyZone.cpp`` and
``src/surf/sg_platf.cpp``; :mod:`hdrm.platform.simgrid_topology` says what they route and how
they were measured).

Nodes are ranked in ``radical`` order (SimGrid's ids in the zone). Every link has the cluster's
``lat`` and ``bw`` (a dragonfly's green, black and blue links: times their number of cables),
split-duplex (``<name>_UP``, ``_DOWN``) unless ``sharing_policy`` says otherwise; a node's
limiter (``limiter_link``: ``<id>_link_<rank>_limiter``, latency 0; a switch's or router's:
``<id>_link_<its id>_limiter``) and loopback (``loopback_bw`` or ``loopback_lat`` above 0:
``<id>_link_<radical>_loopback``, a node's route to itself) are links too. A cluster of a
topology has no router. SimGrid numbers its fat-tree leaves' positions and its fat-tree and
dragonfly link names across all such clusters of the run; here each cluster counts from 0 (the
same latencies, other names where a platform has two).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from hdrm.platform.simgrid_star import LinkSpec, Local, Topology, TopologyUnmodelled, bps, seconds
from hdrm.platform.simgrid_values import parse_radical

__all__ = ["ClusterLinks", "Dragonfly", "FatTree", "Torus"]


@dataclass
class ClusterLinks:
    """What every topology cluster shares: node names, link attributes, limiters, loopbacks."""

    cid: str
    names: list[str]
    bw: float | None
    lat: float
    split: bool
    limiter_bw: float | None
    loopback: tuple[float | None, float] | None  # (bandwidth, latency)
    radicals: list[int] = field(default_factory=list)

    @classmethod
    def read(cls, element: ET.Element, count: int) -> ClusterLinks:
        cid = element.get("id", "?")
        where = f"cluster {cid!r}"
        radicals = parse_radical(element.get("radical", ""), where)[:count]
        prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
        lb_bw = bps(element.get("loopback_bw", "0")) or 0.0
        lb_lat = seconds(element.get("loopback_lat", "0"), where)
        limiter = bps(element.get("limiter_link", "0")) or 0.0
        return cls(cid, [f"{prefix}{r}{suffix}" for r in radicals], bps(element.get("bw", "")),
                   seconds(element.get("lat", "0"), where),
                   element.get("sharing_policy", "SPLITDUPLEX").upper() == "SPLITDUPLEX",
                   limiter if limiter > 0 else None,
                   (lb_bw, lb_lat) if lb_bw > 0 or lb_lat > 0 else None, radicals)

    def link(self, name: str, factor: int = 1) -> tuple[LinkSpec, LinkSpec]:
        """A cluster link (up, down): two when split-duplex, else one used both ways (of
        ``factor`` times the cluster's bandwidth: a dragonfly's links of several cables)."""
        bw = None if self.bw is None else self.bw * factor
        if self.split:
            return ((f"{name}_UP", bw, self.lat, "SPLITDUPLEX"),
                    (f"{name}_DOWN", bw, self.lat, "SPLITDUPLEX"))
        one = (name, bw, self.lat, "SHARED")
        return one, one

    def node_loopback(self, rank: int) -> LinkSpec:
        bw, lat = self.loopback  # type: ignore[misc]
        return (f"{self.cid}_link_{self.radicals[rank]}_loopback", bw, lat, "FATPIPE")

    def limiter(self, ident: int) -> LinkSpec:
        return (f"{self.cid}_link_{ident}_limiter", self.limiter_bw, 0.0, "SHARED")


class _Cluster(Topology):
    """A topology cluster: its nodes by rank; no router, no gateway."""

    def __init__(self, base: ClusterLinks) -> None:
        self.base = base
        self.points = list(base.names)
        self.rank = {name: i for i, name in enumerate(base.names)}

    def local(self, src: str, dst: str) -> Local:
        if src not in self.rank or dst not in self.rank:  # a router: no route (SimGrid's rule)
            return [], 0.0, None, None
        s, d = self.rank[src], self.rank[dst]
        if s == d and self.base.loopback is not None:
            return [self.base.node_loopback(s)], 0.0, None, None
        return self._route(s, d), 0.0, None, None

    def _route(self, s: int, d: int) -> list[LinkSpec]:
        raise NotImplementedError


class Torus(_Cluster):
    """SimGrid's ``TorusZone``: ``topo_parameters`` gives the size of each dimension."""

    def __init__(self, base: ClusterLinks, dims: list[int]) -> None:
        super().__init__(base)
        self.dims = dims
        self.links: dict[tuple[int, int], tuple[LinkSpec, LinkSpec]] = {}
        for rank in range(len(base.names)):
            product = 1
            for j, size in enumerate(dims):
                last = (rank // product) % size == size - 1
                neighbour = rank - (size - 1) * product if last else rank + product
                name = f"{base.cid}_link_from_{rank}_to_{neighbour}"
                self.links[rank, j] = base.link(name)
                product *= size

    def _route(self, s: int, d: int) -> list[LinkSpec]:
        mine = self._coords(s)
        target = self._coords(d)
        route: list[LinkSpec] = []
        current = s
        while current != d:
            product, nxt, link = 1, current, None
            for j, size in enumerate(self.dims):
                here = (current // product) % size
                if here != (d // product) % size:
                    m, t = mine[j], target[j]
                    if (m < t <= m + size // 2) or (m > size // 2 and (m + size // 2) % size >= t):
                        nxt = current + product - (product * size if here == size - 1 else 0)
                        link = self.links[current, j][0]
                    else:
                        nxt = current - product + (product * size if here == 0 else 0)
                        link = self.links[nxt, j][1]
                    break
                product *= size
            if link is None:  # unreachable: the coordinates differ somewhere
                raise TopologyUnmodelled(f"torus {self.base.cid!r}: no dimension to route in")
            if self.base.limiter_bw is not None:
                route.append(self.base.limiter(current))
            route.append(link)
            current = nxt
        if self.base.limiter_bw is not None:
            route.append(self.base.limiter(d))
        return route

    def _coords(self, rank: int) -> list[int]:
        out, product = [], 1
        for size in self.dims:
            out.append((rank // product) % size)
            product *= size
        return out


@dataclass(eq=False)
class _TreeNode:
    ident: int
    level: int
    position: int
    label: list[int]
    limiter: LinkSpec | None
    parents: list = field(default_factory=list)  # of _TreeLink (None: port unused)
    children: list = field(default_factory=list)


@dataclass(eq=False)
class _TreeLink:
    up: LinkSpec
    down: LinkSpec
    up_node: _TreeNode
    down_node: _TreeNode


class FatTree(_Cluster):
    """SimGrid's ``FatTreeZone``: ``levels;children per level;parents per level;ports``."""

    def __init__(self, base: ClusterLinks, levels: int, down: list[int], up: list[int],
                 ports: list[int]) -> None:
        super().__init__(base)
        self.levels, self.down, self.up, self.ports = levels, down, up, ports
        count = len(base.names)
        limit = base.limiter if base.limiter_bw is not None else (lambda i: None)
        self.nodes = [_TreeNode(i, 0, i, [0] * levels, limit(i)) for i in range(count)]
        for node in self.nodes:
            node.parents = [None] * (up[0] * ports[0])
        by_level = [count] + [math.prod(up[:i + 1]) * math.prod(down[i + 1:])
                              for i in range(levels)]
        ident = 2 * count
        for i in range(levels):
            for j in range(by_level[i + 1]):
                ident -= 1
                node = _TreeNode(ident, i + 1, j, [0] * levels, limit(ident))
                node.children = [None] * (down[i] * ports[i])
                if i != levels - 1:
                    node.parents = [None] * (up[i + 1] * ports[i + 1])
                self.nodes.append(node)
        self._labels(by_level)
        self._connect(by_level)

    def _labels(self, by_level: list[int]) -> None:
        k = 0
        for i in range(self.levels + 1):
            current = [0] * self.levels
            top = [self.down[j] if j + 1 > i else self.up[j] for j in range(self.levels)]
            for _ in range(by_level[i]):
                self.nodes[k].label = list(current)
                for pos in range(self.levels):  # count in the mixed radix, digit 0 first
                    current[pos] += 1
                    if current[pos] < top[pos]:
                        break
                    current[pos] = 0
                k += 1

    def _connect(self, by_level: list[int]) -> None:
        unique, k = 0, 0
        for level in range(self.levels):
            first = sum(by_level[:level + 1])
            parents = self.nodes[first:first + by_level[level + 1]]
            for node in self.nodes[k:k + by_level[level]]:
                for parent in parents:
                    if not self._related(parent, node):
                        continue
                    for j in range(self.ports[level]):
                        name = f"link_from_{node.ident}_{parent.ident}_{unique}"
                        up, dn = self.base.link(name)
                        link = _TreeLink(up, dn, parent, node)
                        parent.children[node.label[level] + j * self.down[level]] = link
                        node.parents[parent.label[level] + j * self.up[level]] = link
                        unique += 1
            k += by_level[level]

    def _related(self, parent: _TreeNode, child: _TreeNode) -> bool:
        return parent.level == child.level + 1 and all(
            parent.label[i] == child.label[i] or i + 1 == parent.level for i in range(self.levels))

    def _in_subtree(self, root: _TreeNode, node: _TreeNode) -> bool:
        if root.level <= node.level:
            return False
        return (all(root.label[i] == node.label[i] for i in range(node.level))
                and all(root.label[i] == node.label[i] for i in range(root.level, self.levels)))

    def _route(self, s: int, d: int) -> list[LinkSpec]:
        source, target = self.nodes[s], self.nodes[d]
        route: list[LinkSpec] = []
        current = source
        while not self._in_subtree(current, target):  # up, d-mod-k
            k = target.position
            for i in range(current.level):
                k //= self.up[i]
            k %= self.up[current.level] * self.ports[current.level]
            if current.limiter is not None:
                route.append(current.limiter)
            link = self._port(current.parents, k)
            route.append(link.up)
            current = link.up_node
        while current is not target:  # down (SimGrid's loop over the ports, as written)
            before = current
            level = current.level - 1
            i = (source.position % self.ports[level]) * self.down[level]
            while i < len(current.children):
                level = current.level - 1
                if i % self.down[level] == target.label[level]:
                    link = self._port(current.children, i)
                    route.append(link.down)
                    if current.limiter is not None:
                        route.append(current.limiter)
                    current = link.down_node
                i += 1
            if current is before:
                raise TopologyUnmodelled(f"fat tree {self.base.cid!r}: no way down")
        if current.limiter is not None:
            route.append(current.limiter)
        return route

    def _port(self, links: list, i: int) -> _TreeLink:
        if links[i] is None:
            raise TopologyUnmodelled(f"fat tree {self.base.cid!r}: port {i} has no link")
        return links[i]


@dataclass(eq=False)
class _Router:
    group: int
    chassis: int
    blade: int
    limiter: LinkSpec | None
    nodes: list = field(default_factory=list)  # of LinkSpec
    green: dict = field(default_factory=dict)  # blade -> LinkSpec
    black: dict = field(default_factory=dict)  # chassis -> LinkSpec
    blue: LinkSpec | None = None


class Dragonfly(_Cluster):
    """SimGrid's ``DragonflyZone``: groups, chassis per group, routers (blades) per chassis,
    nodes per router, and the number of links of each level."""

    def __init__(self, base: ClusterLinks, groups: tuple[int, int], chassis: tuple[int, int],
                 routers: tuple[int, int], nodes: int) -> None:
        super().__init__(base)
        (self.g, blue), (self.c, black), (self.r, green) = groups, chassis, routers
        self.n = nodes
        ident = 2 * self.g * self.c * self.r * self.n
        self.routers: list[_Router] = []
        for i in range(self.g):
            for j in range(self.c):
                for k in range(self.r):
                    limiter = None
                    if base.limiter_bw is not None:
                        ident -= 1
                        limiter = base.limiter(ident)
                    self.routers.append(_Router(i, j, k, limiter))
        self._links(blue, black, green)

    def _links(self, blue: int, black: int, green: int) -> None:
        unique, per_group = 0, self.c * self.r
        for i, router in enumerate(self.routers):
            for j in range(self.n):
                up, down = self.base.link(f"local_link_from_router_{i}_to_node_{j}_{unique}")
                router.nodes.append((up, down))
                unique += 1
        for i in range(self.g * self.c):
            for j in range(self.r):
                for k in range(j + 1, self.r):
                    up, down = self.base.link(f"green_link_in_chassis_{i % self.c}_between_"
                                              f"routers_{j}_and_{k}_{unique}", green)
                    self.routers[i * self.r + j].green[k] = up
                    self.routers[i * self.r + k].green[j] = down
                    unique += 1
        for i in range(self.g):
            for j in range(self.c):
                for k in range(j + 1, self.c):
                    for blade in range(self.r):
                        up, down = self.base.link(
                            f"black_link_in_group_{i}_between_chassis_{j}_and_{k}_blade_{blade}_"
                            f"{unique}", black)
                        self.routers[i * per_group + j * self.r + blade].black[k] = up
                        self.routers[i * per_group + k * self.r + blade].black[j] = down
                        unique += 1
        for i in range(self.g):
            for j in range(i + 1, self.g):
                a, b = i * per_group + j, j * per_group + i
                if max(a, b) >= len(self.routers) or j >= per_group:
                    raise TopologyUnmodelled(f"dragonfly {self.base.cid!r}: {self.g} groups need "
                                             f"at least {self.g} routers per group")
                up, down = self.base.link(f"blue_link_between_group_{i}_and_{j}_routers_{a}_"
                                          f"and_{b}_{unique}", blue)
                self.routers[a].blue, self.routers[b].blue = up, down
                unique += 1

    def _coords(self, rank: int) -> tuple[int, int, int, int]:
        group, rest = divmod(rank, self.c * self.r * self.n)
        chassis, rest = divmod(rest, self.r * self.n)
        blade, node = divmod(rest, self.n)
        return group, chassis, blade, node

    def _at(self, group: int, index: int) -> _Router:
        return self.routers[group * self.c * self.r + index]

    def _route(self, s: int, d: int) -> list[LinkSpec]:
        mg, mc, mb, mn = self._coords(s)
        tg, tc, tb, tn = self._coords(d)
        mine, target = self._at(mg, mc * self.r + mb), self._at(tg, tc * self.r + tb)
        limiter = self.base.limiter if self.base.limiter_bw is not None else None
        route: list[LinkSpec] = [limiter(s)] if limiter else []
        route.append(mine.nodes[mn][0])
        current = mine

        def hop(link: LinkSpec | None, after: bool = False) -> None:
            if link is None:
                raise TopologyUnmodelled(f"dragonfly {self.base.cid!r}: a hop without a link")
            if current.limiter is not None and not after:
                route.append(current.limiter)
            route.append(link)
            if current.limiter is not None and after:
                route.append(current.limiter)

        if target is not mine:
            if target.group != current.group:
                if current.blade != tg:
                    hop(current.green.get(tg))
                    current = self._at(mg, mc * self.r + tg)
                if current.chassis != 0:
                    hop(current.black.get(0))
                    current = self._at(mg, tg)
                hop(current.blue, after=True)
                current = self._at(tg, mg)
            if target.blade != current.blade:
                hop(current.green.get(tb))
                current = self._at(tg, tb)
            if target.chassis != current.chassis:
                hop(current.black.get(tc))
        if target.limiter is not None:
            route.append(target.limiter)
        route.append(target.nodes[tn][1])
        if limiter:
            route.append(limiter(d))
        return route
