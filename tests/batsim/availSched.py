"""A pybatsim FCFS scheduler that follows Batsim's external events (for the tests of
``hdrm serve --events``; run it as ``pybatsim /abs/path/availSched.py``).

It starts jobs in submission order on the lowest free machines that are not unavailable, keeps
the unavailable ones out of its allocations, kills the jobs running on machines that go down when
Batsim's ``--sched-cfg`` is ``kill``, and asks for a call one second after each generic event
(so that forwarded events change the session).
"""

from batsim.batsim import BatsimScheduler
from procset import ProcSet


class AvailSched(BatsimScheduler):
    def onSimulationBegins(self):
        self.free = ProcSet((0, self.bs.nb_compute_resources - 1))
        self.down = ProcSet()
        self.queue = []
        self.running = {}
        self.kill = self.bs.batconf.get("sched-config") == "kill"

    def onJobSubmission(self, job):
        self.queue.append(job)

    def onJobCompletion(self, job):
        self.free |= job.allocation
        self.running.pop(job.id, None)

    def onJobsKilled(self, jobs):
        pass

    def onRequestedCall(self):
        pass

    def onNotifyEventMachineUnavailable(self, machines):
        self.down |= machines

    def onNotifyEventMachineAvailable(self, machines):
        self.down -= machines

    def onNotifyGenericEvent(self, event_data):
        self.bs.wake_me_up_at(self.bs.time() + 1)

    def onNoMoreEvents(self):
        if self.kill:
            doomed = [job for job in self.running.values() if job.allocation & self.down]
            for job in doomed:
                del self.running[job.id]
            if doomed:
                self.bs.kill_jobs(doomed)
        started = []
        usable = self.free - self.down
        while self.queue and self.queue[0].requested_resources <= len(usable):
            job = self.queue.pop(0)
            job.allocation = ProcSet(*list(usable)[:job.requested_resources])
            usable -= job.allocation
            self.free -= job.allocation
            self.running[job.id] = job
            started.append(job)
        if started:
            self.bs.execute_jobs(started)
