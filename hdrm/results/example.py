"""A tiny, hand-made run folder with every result file, to try the plots and test them.

:func:`write_example_run` writes a run of 5 jobs on 4 cores (one of them rejected, one out of
walltime) with a timeline, contention events and a 6-episode learning log. Every number is small
enough to check by hand:

======  ======  =====  ========  =======  =========  ==========  ===========================
job     submit  cores  start     run (s)  cores      energy (J)  final state
======  ======  =====  ========  =======  =========  ==========  ===========================
``1``   0       2      0         10       ``0-1``    2000        COMPLETED_SUCCESSFULLY
``2``   0       2      0         20       ``2-3``    4000        COMPLETED_SUCCESSFULLY
``3``   5       2      10        10       ``0-1``    2000        COMPLETED_SUCCESSFULLY
``4``   6       4      22        5        ``0-3``    2000        COMPLETED_WALLTIME_REACHED
``5``   7       8      (never)                                   REJECTED
======  ======  =====  ========  =======  =========  ==========  ===========================

Makespan 27 s, mean waiting time (16 + 5) / 5 = 4.2 s, utilisation 100 / (4 x 27), platform energy
10240 J (the jobs' 10000 J plus 240 J of idle power between 20 s and 22 s).
"""

from __future__ import annotations

from pathlib import Path

from hdrm.errors import ConfigError
from hdrm.results.csvio import write_jobs_csv, write_schedule_csv
from hdrm.results.learning import write_actions_csv, write_episodes_csv
from hdrm.results.metrics import summarize
from hdrm.results.overutil import (
    BandwidthSpan,
    CoreShortage,
    MemoryShortage,
    Overutilizations,
    write_overutilizations,
)
from hdrm.results.records import COMPLETED_WALLTIME_REACHED, REJECTED, JobResult
from hdrm.results.timeline import TimelineRow, write_timeline_csv

#: Cores of the example platform.
NB_CORES = 4
#: Energy the example platform consumed, in joules.
ENERGY_J = 10240.0

#: Action names of the example learning log, by action number.
ACTION_NAMES = ("FCFS-high_gflops", "SJF-high_mem_bw", "LJF-low_power")
#: Actions chosen in episodes 1, 2 and 3 of the example.
ACTIONS_BY_EPISODE = ((0, 0, 0), (0, 1, 1, 2), (2, 2, 2, 0))


def example_jobs() -> list[JobResult]:
    """The five job results of the example run, in completion order (rejected last)."""

    def job(job_id: str, submit: float, res: int, start: float, run: float, cores: str,
            energy: float, user: str, **extra) -> JobResult:
        """One job that ran."""
        return JobResult(job_id=job_id, profile="delay", submission_time=submit,
                         requested_number_of_resources=res, requested_time=100.0,
                         starting_time=start, execution_time=run, allocated_resources=cores,
                         consumed_energy=energy, metadata=f"user={user}", **extra)

    return [
        job("1", 0.0, 2, 0.0, 10.0, "0-1", 2000.0, "alice"),
        job("2", 0.0, 2, 0.0, 20.0, "2-3", 4000.0, "bob"),
        job("3", 5.0, 2, 10.0, 10.0, "0-1", 2000.0, "alice"),
        job("4", 6.0, 4, 22.0, 5.0, "0-3", 2000.0, "carol", success=0,
            final_state=COMPLETED_WALLTIME_REACHED),
        JobResult(job_id="5", profile="delay", submission_time=7.0,
                  requested_number_of_resources=8, requested_time=100.0, success=0,
                  final_state=REJECTED, consumed_energy=None, metadata="user=bob"),
    ]


def example_timeline() -> list[TimelineRow]:
    """One row per decision instant: 100 W per running core, 30 W per idle core."""
    rows = (  # time, queue, running, busy, contended, power, energy so far
        (0.0, 0, 2, 4, 2, 400.0, 0.0),
        (5.0, 1, 2, 4, 2, 400.0, 2000.0),
        (6.0, 2, 2, 4, 2, 400.0, 2400.0),
        (7.0, 2, 2, 4, 2, 400.0, 2800.0),
        (10.0, 1, 2, 4, 0, 400.0, 4000.0),
        (20.0, 1, 0, 0, 0, 120.0, 8000.0),
        (22.0, 0, 1, 4, 4, 400.0, 8240.0),
        (27.0, 0, 0, 0, 0, 120.0, 10240.0),
    )
    return [TimelineRow(*row) for row in rows]


def example_overutilizations() -> Overutilizations:
    """Three oversubscribed spans on two processors, one memory and two core shortages."""
    return Overutilizations(
        core_shortage=[CoreShortage(6.0, "4", 4, 0), CoreShortage(7.0, "5", 8, 0)],
        memory_shortage=[MemoryShortage(6.0, "4", 0, 4096.0, 2048.0)],
        bandwidth=[
            BandwidthSpan(0, 0, 0.0, 10.0, 30.0, 20.0),
            BandwidthSpan(1, 0, 0.0, 10.0, 25.0, 20.0),
            BandwidthSpan(0, 0, 22.0, 27.0, 40.0, 20.0),
        ],
    )


def example_episodes() -> list[dict]:
    """Six episodes of a learning log; episode 3 has no loss."""
    returns = (-10.0, -8.0, -9.0, -6.0, -5.0, -4.0)
    losses = (1.0, 0.8, None, 0.5, 0.4, 0.3)
    makespans = (40.0, 36.0, 38.0, 31.0, 29.0, 27.0)
    return [
        {"episode": i + 1, "return": returns[i], "loss": losses[i], "makespan": makespans[i],
         "mean_waiting": makespans[i] / 10, "mean_bounded_slowdown": 1.0 + (5 - i) / 10,
         "energy_j": 400.0 * makespans[i], "wall_s": 0.5}
        for i in range(6)
    ]


def example_actions() -> list[dict]:
    """The decisions of episodes 1 to 3 (11 in all: action 0 five times, 1 twice, 2 four)."""
    rows = []
    for episode, chosen in enumerate(ACTIONS_BY_EPISODE, start=1):
        for step, action in enumerate(chosen):
            rows.append({"episode": episode, "step": step, "time": 5.0 * step,
                         "action": action, "action_name": ACTION_NAMES[action]})
    return rows


def write_example_run(run_dir: str | Path) -> Path:
    """Write the example run (every result file) into ``run_dir``, creating the folder.

    Returns:
        The folder.

    Raises:
        ConfigError: the folder cannot be created.
    """
    run_dir = Path(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create run folder {run_dir}: {exc.strerror or exc}") from None
    jobs = example_jobs()
    write_jobs_csv(jobs, run_dir / "out_jobs.csv")
    write_schedule_csv(summarize(jobs, NB_CORES, ENERGY_J), run_dir / "out_schedule.csv")
    write_timeline_csv(example_timeline(), run_dir / "out_timeline.csv")
    write_overutilizations(example_overutilizations(), run_dir / "overutilizations.json")
    write_episodes_csv(example_episodes(), run_dir / "episodes.csv")
    write_actions_csv(example_actions(), run_dir / "actions.csv")
    return run_dir
