"""Entry point for pybatsim's launcher: ``pybatsim /path/to/hdrm/batsim/hdrmScheduler.py -o '{...}'``.

pybatsim's launcher loads a scheduler file and instantiates the class named after the file
(``hdrmScheduler.py`` -> ``HdrmScheduler``), passing the ``-o`` JSON as the options dict:
``{"platform": "platforms/tiny4.json", "policy": "shortest-high_gflops", "contention": "hdeeprm",
"backfilling": "easy", "decision": "event", "seed": 0}``. The scheduler itself lives in
:mod:`hdrm.batsim.adapter`; this file only names it the way the launcher expects.
"""

from hdrm.batsim.adapter import HdrmScheduler

__all__ = ["HdrmScheduler"]
