"""Background jobs: planning off the request thread, with progress and cancellation.

Each job runs on its own daemon thread; the page polls its state by id. Cancelling a job
sets its :attr:`Job.cancel_event`, a cooperative stop: nothing is raised into the job's thread.
The work passes the event to :func:`quiltpriv.plan` (``cancel=``), whose searches read it where
they read the time limit and stop with the best valid plan found so far, as on Ctrl-C; the
work calls :meth:`Job.check` between its phases, which ends the job as ``cancelled`` without
using that plan. A long step the planner does not interrupt (one influence inside the compiled
kernel, say) finishes first; the time budget of the plan bounds it.
"""

from __future__ import annotations

import secrets
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, cast

from quiltpriv.errors import ParameterError, QuiltPrivError

#: Jobs running at once (a new request beyond it is refused), and finished jobs remembered.
MAX_RUNNING = 4
MAX_KEPT = 64


class JobCancelled(Exception):
    """Raised by :meth:`Job.check`, in the job's own thread, once the job was cancelled."""


class Job:
    """One background computation: its state, progress, and result or error."""

    def __init__(self, kind: str, work: Callable[[Job], dict[str, Any]]) -> None:
        self.id = secrets.token_hex(8)
        self.kind = kind
        self.state = "running"
        self.phase = "starting"
        self.done = 0
        self.total = 0
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.started = time.monotonic()
        self.finished: float | None = None
        self._work = work
        self._lock = threading.Lock()
        #: Set when the job is cancelled; the work passes it on (``plan(..., cancel=...)``).
        self.cancel_event = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"quiltpriv-job-{self.id}",
                                        daemon=True)

    # -- called from the job's own thread ---------------------------------------------------
    def progress(self, phase: str, done: int, total: int) -> None:
        with self._lock:
            self.phase, self.done, self.total = phase, int(done), int(total)

    def check(self) -> None:
        """Raise :class:`JobCancelled` if the job was cancelled (between phases)."""
        if self.cancel_event.is_set():
            raise JobCancelled

    def _run(self) -> None:
        outcome: tuple[str, Any]
        try:
            result = self._work(self)
            self.check()  # cancelled at the very end: still cancelled
            outcome = ("done", result)
        except JobCancelled:
            outcome = ("cancelled", None)
        except QuiltPrivError as exc:
            outcome = ("error", str(exc))
        except Exception as exc:  # a bug: say so on the page and in the terminal
            traceback.print_exc()
            outcome = ("error", f"internal error ({type(exc).__name__}: {exc})")
        with self._lock:
            self.state = outcome[0]
            if outcome[0] == "done":
                self.result = cast("dict[str, Any]", outcome[1])
            elif outcome[0] == "error":
                self.error = cast(str, outcome[1])
            self.finished = time.monotonic()

    # -- called from request threads ----------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        """Ask the job to stop (it stops where its work next reads :attr:`cancel_event`)."""
        self.cancel_event.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        with self._lock:
            return self.state == "running"

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            end = self.finished if self.finished is not None else time.monotonic()
            return {"id": self.id, "kind": self.kind, "state": self.state,
                    "phase": self.phase, "done": self.done, "total": self.total,
                    "seconds": round(end - self.started, 3), "result": self.result,
                    "error": self.error}


class JobManager:
    """The jobs of one explorer: start, look up, cancel."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    def start(self, kind: str, work: Callable[[Job], dict[str, Any]]) -> Job:
        with self._lock:
            running = sum(j.running for j in self._jobs.values())
            if running >= MAX_RUNNING:
                raise ParameterError(f"{running} jobs are running already; cancel one first")
            job = Job(kind, work)
            self._jobs[job.id] = job
            finished = [k for k, j in self._jobs.items() if not j.running]
            for k in finished[:max(0, len(self._jobs) - MAX_KEPT)]:
                del self._jobs[k]
        job.start()
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def cancel_all(self, wait: float = 2.0) -> None:
        with self._lock:
            jobs = [j for j in self._jobs.values() if j.running]
        for j in jobs:
            j.cancel()
        for j in jobs:
            j.join(wait)
