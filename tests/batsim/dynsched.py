"""A pybatsim 3.2.1 scheduler using its dynamic-job API (register_profiles, register_job,
resubmit_job after a kill, notify_registration_finished), for test_real_batsim_dynamic_jobs.py:
FCFS on the lowest free hosts; three jobs registered at the start, a kill at 3.25 s whose job
is registered again (w0!N#1), one more job then."""
from batsim.batsim import BatsimScheduler
from procset import ProcSet


class Dynsched(BatsimScheduler):  # (pybatsim loads the class named after the file)
    def onSimulationBegins(self):
        self.free = ProcSet((0, self.bs.nb_compute_resources - 1))
        self.queue, self.running = [], {}
        self.static_done = self.finished = False
        self.killed_once = False
        self.bs.register_profiles("dyn", {"d1": {"type": "delay", "delay": 1.5},
                                          "c": {"type": "parallel_homogeneous", "cpu": 2e9,
                                                "com": 0}})
        for i, prof in enumerate(["d1", "c", "d1"]):
            self._mine(self.bs.register_job(f"dyn!{i}", 1 + i % 2, -1, prof))
        self.bs.wake_me_up_at(3.25)

    def onJobSubmission(self, job):
        self.queue.append(job)

    def onJobCompletion(self, job):
        self.free |= job.allocation
        self.running.pop(job.id, None)

    def onJobsKilled(self, jobs):
        for job in jobs:
            self._mine(self.bs.resubmit_job(job))

    def onRequestedCall(self):
        if self.running:
            victim = sorted(self.running)[0]
            self.bs.kill_jobs([self.running[victim]])
        self._mine(self.bs.register_job("dyn!late", 2, 10, "c"))

    def _mine(self, job):
        if not self.bs.ack_of_dynamic_jobs:  # no JOB_SUBMITTED will come
            self.queue.append(job)

    def onNoMoreJobsInWorkloads(self):
        self.static_done = True

    def onNoMoreEvents(self):
        started = []
        while self.queue and self.queue[0].requested_resources <= len(self.free):
            job = self.queue.pop(0)
            job.allocation = ProcSet(*list(self.free)[:job.requested_resources])
            self.free -= job.allocation
            self.running[job.id] = job
            started.append(job)
        if started:
            self.bs.execute_jobs(started)
        if (self.static_done and not self.queue and not self.running and not self.finished
                and self.bs.time() > 3.25):
            self.finished = True
            self.bs.notify_registration_finished()
