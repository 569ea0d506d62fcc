"""Fixtures of the DAG tests: the sample DAG of Topcuoglu, Hariri and Wu (IEEE TPDS 2002,
Fig. 2), 10 tasks on 3 processors.

Edge weights are the paper's mean transfer times; with one link of 1 MB/s between every pair of
processors, the data in MB are those times.
"""

import pytest

from hdrm.dag.model import Dag, Network

COSTS = {
    "n1": (14, 16, 9), "n2": (13, 19, 18), "n3": (11, 13, 19), "n4": (13, 8, 17),
    "n5": (12, 13, 10), "n6": (13, 16, 9), "n7": (7, 15, 11), "n8": (5, 11, 14),
    "n9": (18, 12, 20), "n10": (21, 7, 16),
}
EDGES = [
    ("n1", "n2", 18), ("n1", "n3", 12), ("n1", "n4", 9), ("n1", "n5", 11), ("n1", "n6", 14),
    ("n2", "n8", 19), ("n2", "n9", 16), ("n3", "n7", 23), ("n4", "n8", 27), ("n4", "n9", 23),
    ("n5", "n9", 13), ("n6", "n8", 15), ("n7", "n10", 17), ("n8", "n10", 11), ("n9", "n10", 13),
]


def classic_dag() -> Dag:
    """The paper's DAG on processors P1, P2, P3."""
    return Dag.from_names(COSTS, EDGES, Network.uniform(["P1", "P2", "P3"]), "topcuoglu")


@pytest.fixture
def classic() -> Dag:
    """The paper's sample DAG (:func:`classic_dag`)."""
    return classic_dag()
