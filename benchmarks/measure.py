"""A process's own peak memory, and a whole command measured from outside.

Why not ``ru_maxrss``: on Linux, when a process calls ``exec``, the kernel folds the peak RSS
of the memory image it leaves into the new program's ``ru_maxrss``. ``subprocess`` starts a
child by ``vfork`` + ``exec``, so the image left is the parent's: a command started by a
benchmark process that once held 200 MB reports a peak of at least 200 MB, from ``os.wait4``
and from its own ``getrusage(RUSAGE_SELF)`` alike. (Measured: a parent that touched 500 MB and
freed it; its child ``python -c pass`` reported 514 MB, against 14 MB when started by a small
parent.) The ladder benchmark's chain rows showed this as the same 199 MB at every size.

So:

* a worker reads its own high-water mark, ``VmHWM`` in ``/proc/self/status``, which belongs
  to the program's own memory image and starts afresh at ``exec``
  (:data:`PEAK_RSS_SOURCE`, pasted into worker scripts, and :func:`peak_rss_mb`);
* a command timed from outside is started by a small launcher process
  (:func:`run_measured`), so what ``os.wait4`` folds in is the launcher's own peak, a bare
  interpreter's (about 10 MB, less than any command here needs), and that floor is recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

#: Source of ``peak_rss_mb()`` for worker scripts run with ``python -c``.
PEAK_RSS_SOURCE = r'''
def peak_rss_mb():
    """This process's own peak RSS in MiB (VmHWM; ru_maxrss where /proc is missing)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
'''

_namespace: dict[str, Any] = {}
exec(PEAK_RSS_SOURCE, _namespace)  # one source for the workers and this module
peak_rss_mb = _namespace["peak_rss_mb"]

# Started as `python -c LAUNCHER result.json timeout cmd...`: spawns the command (inheriting
# stdin/stdout/stderr), waits, kills it at the timeout, and writes what os.wait4 reports.
LAUNCHER = r'''
import json, os, signal, sys, time
out, timeout, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
floor = PEAK()
start = time.perf_counter()
pid = os.posix_spawnp(cmd[0], cmd, os.environ)
killed = False
while True:
    got, status, usage = os.wait4(pid, os.WNOHANG if timeout > 0 else 0)
    if got:
        break
    if time.perf_counter() - start > timeout:
        os.kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
        killed = True
        break
    time.sleep(0.02)
wall = time.perf_counter() - start
with open(out, "w", encoding="utf-8") as fh:
    json.dump({"returncode": os.waitstatus_to_exitcode(status), "wall_s": wall,
               "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
               "rss_floor_mb": floor, "killed": killed}, fh)
'''.replace("PEAK()", "peak_rss_mb()")


@dataclass(frozen=True)
class Measured:
    """One command measured from outside by :func:`run_measured`.

    ``rss_mb`` is the command's peak RSS as ``os.wait4`` reports it; it may include up to
    ``rss_floor_mb``, the launcher's own peak at the spawn (see the module docstring).
    """

    returncode: int
    wall_s: float
    cpu_s: float
    rss_mb: float
    rss_floor_mb: float
    killed: bool
    stdout: bytes
    stderr: bytes


def run_measured(cmd: list[str], *, cwd: str | os.PathLike[str] | None = None,
                 env: dict[str, str] | None = None, timeout: float | None = None,
                 capture: bool = True) -> Measured:
    """Run ``cmd`` through the small launcher; wall and CPU time, peak RSS, exit status.

    The wall time starts at the spawn, so the launcher's own start-up is not counted. A
    command still running after ``timeout`` seconds is killed (``killed=True``).
    """
    with tempfile.TemporaryDirectory(prefix="bench-measure-") as tmp:
        result = os.path.join(tmp, "measured.json")
        launcher = [sys.executable, "-c", PEAK_RSS_SOURCE + LAUNCHER, result,
                    repr(float(timeout or 0)), *map(str, cmd)]
        proc = subprocess.run(launcher, cwd=cwd, env=env, capture_output=capture, check=False)
        if not os.path.exists(result):
            raise RuntimeError(f"the launcher failed (exit {proc.returncode}): "
                               + (proc.stderr or b"").decode("utf-8", "replace")[-500:])
        with open(result, encoding="utf-8") as fh:
            d = json.load(fh)
    return Measured(returncode=d["returncode"], wall_s=d["wall_s"], cpu_s=d["cpu_s"],
                    rss_mb=d["rss_mb"], rss_floor_mb=d["rss_floor_mb"], killed=d["killed"],
                    stdout=proc.stdout or b"", stderr=proc.stderr or b"")
