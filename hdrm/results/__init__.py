"""Run results: Batsim-compatible job and schedule files, metrics, timelines and learning logs.

Layer L1 (numpy and the standard library). The modules:

* :mod:`~hdrm.results.records`: :class:`JobResult` (one out_jobs.csv row) and interval sets;
* :mod:`~hdrm.results.csvio`: out_jobs.csv and out_schedule.csv, byte-compatible with Batsim 4.2.1;
* :mod:`~hdrm.results.metrics`: every out_schedule.csv column and the objective helpers;
* :mod:`~hdrm.results.timeline`: out_timeline.csv, or a timeline derived from out_jobs.csv;
* :mod:`~hdrm.results.overutil`: overutilizations.json (contention and shortage events);
* :mod:`~hdrm.results.learning`: episodes.csv and actions.csv of a learning run;
* :mod:`~hdrm.results.run`: a run folder and the files in it;
* :mod:`~hdrm.results.compare`: one row of headline metrics per run, as Markdown or CSV.
"""

from hdrm.results.csvio import read_jobs_csv, read_schedule_csv, write_jobs_csv, write_schedule_csv
from hdrm.results.metrics import summarize
from hdrm.results.records import JobResult, format_interval_set, parse_interval_set

__all__ = [
    "JobResult",
    "format_interval_set",
    "parse_interval_set",
    "read_jobs_csv",
    "read_schedule_csv",
    "summarize",
    "write_jobs_csv",
    "write_schedule_csv",
]
