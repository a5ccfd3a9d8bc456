"""How many threads of a child process did real work: the child runs a framework's workload
after setting its threads up, and reports each thread's CPU ticks from `/proc/self/task/*/stat`
(Linux: utime + stime, fields 14 and 15 of the task's stat line)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

HARNESS = textwrap.dedent(
    """
    import json, os

    def cpu_ticks():
        ticks = {}
        for task in os.listdir("/proc/self/task"):
            try:
                stat = open(f"/proc/self/task/{task}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks[task] = int(fields[11]) + int(fields[12])  # utime + stime
        return ticks

    run_once()  # compile and warm up outside the count
    before = cpu_ticks()
    # Enough CPU time that a thread's share is measured in many ticks (100 per second): a
    # fixed count of runs gave ~10 ticks on a fast machine, where the Python thread's
    # dispatching alone reached the threshold.
    start = sum(os.times()[:2])
    runs = 0
    while runs < 10 or sum(os.times()[:2]) - start < 2.0:
        run_once()
        runs += 1
    after = cpu_ticks()
    print(json.dumps([after[t] - before.get(t, 0) for t in after]))
    """
)


def busy_threads(
    workload: str, argv: list[str] | None = None, env: dict[str, str] | None = None
) -> tuple[int, list[int]]:
    """Threads that did at least a fifth of the child's CPU time, and every thread's ticks.
    `workload` is Python source that sets the threads up and defines `run_once()`."""
    script = textwrap.dedent(workload) + HARNESS
    done = subprocess.run(
        [sys.executable, "-c", script, *(argv or [])],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env=env,
    )
    ticks: list[int] = json.loads(done.stdout.strip().splitlines()[-1])
    total = sum(ticks)
    return sum(1 for t in ticks if t >= total / 5), sorted(ticks, reverse=True)
