"""Hand-written samples of the Philly, Helios and PAI traces, shaped as the published files, and
the jobs they must give (worked out by hand in the comments)."""

from __future__ import annotations

import json

#: Philly cluster_job_log: a JSON array, as msr-fiddle/philly-traces publishes it.
PHILLY_JOBS = [
    # a: submitted 09:00:00; two attempts of 4 GPUs (2 servers x 2); run = 10:00:00 - 09:00:30
    {"status": "Pass", "vc": "vc1", "jobid": "application_a", "user": "u1",
     "submitted_time": "2017-11-02 09:00:00",
     "attempts": [{"start_time": "2017-11-02 09:00:30", "end_time": "2017-11-02 09:10:30",
                   "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]},
                              {"ip": "m2", "gpus": ["gpu4", "gpu5"]}]},
                  {"start_time": "2017-11-02 09:11:00", "end_time": "2017-11-02 10:00:00",
                   "detail": [{"ip": "m3", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]}]},
    # b: failed after 45 s on 1 GPU, submitted 300 s after a
    {"status": "Failed", "vc": "vc2", "jobid": "application_b", "user": "u2",
     "submitted_time": "2017-11-02 09:05:00",
     "attempts": [{"start_time": "2017-11-02 09:06:00", "end_time": "2017-11-02 09:06:45",
                   "detail": [{"ip": "m1", "gpus": ["gpu2"]}]}]},
    # c: killed before any attempt: left out ("no attempt")
    {"status": "Killed", "vc": "vc1", "jobid": "application_c", "user": "u1",
     "submitted_time": "2017-11-02 09:07:00", "attempts": []},
    # d: first attempt without its start (a logging error): left out
    {"status": "Pass", "vc": "vc1", "jobid": "application_d", "user": "u3",
     "submitted_time": "2017-11-02 09:08:00",
     "attempts": [{"start_time": None, "end_time": "2017-11-02 09:30:00",
                   "detail": [{"ip": "m2", "gpus": ["gpu0"]}]}]},
    # e: still running when the log was taken ("None" as the notebook also accepts): left out
    {"status": "Killed", "vc": "vc2", "jobid": "application_e", "user": "u3",
     "submitted_time": "2017-11-02 09:09:00",
     "attempts": [{"start_time": "2017-11-02 09:09:30", "end_time": "None",
                   "detail": [{"ip": "m4", "gpus": ["gpu0", "gpu1"]}]}]},
    # f: killed, no GPU ids in its attempt: a CPU-only job of 10 s, submitted 1140 s after a
    {"status": "Killed", "vc": "vc2", "jobid": "application_f", "user": "u2",
     "submitted_time": "2017-11-02 09:19:00",
     "attempts": [{"start_time": "2017-11-02 09:20:00", "end_time": "2017-11-02 09:20:10",
                   "detail": []}]},
]
#: (id, submit_s, run_time_s, GPUs) of the kept jobs, by submission.
PHILLY_EXPECTED = [("application_a", 0.0, 3570.0, 4), ("application_b", 300.0, 45.0, 1),
                   ("application_f", 1140.0, 10.0, 0)]
PHILLY_SKIPPED = {"no attempt": 1, "first attempt without start_time": 1,
                  "still running: last attempt without end_time": 1}


def philly_text(jobs: list | None = None) -> str:
    """The log as the published file lays it out: one job object after another in an array."""
    return json.dumps(PHILLY_JOBS if jobs is None else jobs, indent=4)


HELIOS_HEADER = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
                 "duration,queue\n")
#: Helios cluster_log.csv rows (submission order, as Slurm numbers them).
HELIOS_ROWS = [
    # 2 GPUs, 8 CPUs, waited 5 s, ran 1 h
    "7001,uA,vcX,2,8,1,COMPLETED,2020-07-01 10:00:00,2020-07-01 10:00:05,2020-07-01 11:00:05,"
    "3600,5",
    # a CPU job that failed after 100 s
    "7002,uB,vcY,0,4,1,FAILED,2020-07-01 10:01:00,2020-07-01 10:01:00,2020-07-01 10:02:40,100,0",
    # 16 GPUs on 2 nodes, cancelled after 2 h
    "7003,uA,vcX,16,64,2,CANCELLED,2020-07-01 10:02:00,2020-07-01 10:30:00,2020-07-01 12:30:00,"
    "7200,1680",
    # cancelled while queued: no start, no end: left out ("never started")
    "7004,uC,vcX,1,2,1,CANCELLED,2020-07-01 10:03:00,,,,",
    # started, no end recorded: left out ("no end_time")
    "7005,uC,vcZ,1,2,1,COMPLETED,2020-07-01 10:03:30,2020-07-01 10:04:00,,,30",
    # 8 GPUs, hit its time limit after 600 s; 0 CPUs recorded: 1 core
    "7006,uD,vcZ,8,0,1,TIMEOUT,2020-07-01 10:05:00,2020-07-01 10:05:00,2020-07-01 10:15:00,600,0",
]
#: (id, submit_s, run_time_s, GPUs, cores)
HELIOS_EXPECTED = [("7001", 0.0, 3600.0, 2, 8), ("7002", 60.0, 100.0, 0, 4),
                   ("7003", 120.0, 7200.0, 16, 64), ("7006", 300.0, 600.0, 8, 1)]
HELIOS_SKIPPED = {"never started": 1, "no end_time": 1}


def helios_text(rows: list[str] | None = None) -> str:
    return HELIOS_HEADER + "\n".join(HELIOS_ROWS if rows is None else rows) + "\n"


#: pai_task_table.csv rows (no header line, as published): job, task, inst_num, status, start,
#: end, plan_cpu (%), plan_mem (GB), plan_gpu (%), gpu_type
PAI_TASKS = [
    "j1,worker,2.0,Terminated,1000.0,1600.0,400.0,10.0,50.0,T4",  # 2 x (half a GPU, 4 cores)
    "j1,ps,1.0,Terminated,1000.0,1600.0,600.0,24.0,,",  # CPU only: 6 cores, 24 GB
    "j2,tensorflow,1.0,Failed,2100.0,2200.0,800.0,32.0,250.0,V100",  # 250%: 3 GPUs (rounded)
    "j3,worker,1.0,Running,2500.0,,100.0,1.0,100.0,P100",  # running: no end -> left out
    "j4,worker,1.0,Waiting,0.0,0.0,100.0,1.0,100.0,",  # never launched (0 = not recorded)
    "j5,evaluator,1.0,Terminated,2460.0,2470.0,50.0,0.5,200.0,MISC",  # 2 GPUs, 1 core, 10 s
]
#: pai_job_table.csv rows: job, inst_id, user, status, submission, end
PAI_JOBS = [
    "j1,i1,u1,Terminated,900.0,1600.0",
    "j2,i2,u1,Failed,2000.0,2200.0",
    "j3,i3,u2,Running,2400.0,",
    "j4,i4,u2,Waiting,2450.0,",
    "j5,i5,u3,Terminated,2455.0,2470.0",
]
#: pai_group_tag_table.csv rows: inst_id, user, gpu_type_spec (empty: any model), group, workload
PAI_GROUPS = [
    "i1,u1,,g1,",
    "i2,u1,V100M32,g2,nmt",
    "i5,u3,T4,g3,ctr",
    "i5,u3,T4,g3,ctr",  # the same requirement again: accepted
]
#: (id, submit_s, run_time_s, GPUs, milli, cores, mem MB per core) with the job table: submission
#: = the job's (from 900 s)
PAI_EXPECTED = [
    ("j1/worker/0", 0.0, 600.0, 1, 500, 4, 10 * 1024 / 4),
    ("j1/worker/1", 0.0, 600.0, 1, 500, 4, 10 * 1024 / 4),
    ("j1/ps/0", 0.0, 600.0, 0, 0, 6, 24 * 1024 / 6),
    ("j2/tensorflow/0", 1100.0, 100.0, 3, 1000, 8, 32 * 1024 / 8),
    ("j5/evaluator/0", 1555.0, 10.0, 2, 1000, 1, 0.5 * 1024),
]
PAI_SKIPPED = {"never started": 1, "no end_time": 1}


def pai_text(rows: list[str]) -> str:
    return "\n".join(rows) + "\n"
