"""When the capture's threads were runnable but not running: the kernel's scheduler events.

On a busy machine a thread is preempted inside an op, and the profiler's wall-clock event grows
by the time other processes ran. The scheduler knows exactly when: around the child that runs
the steps, the capture records Linux's `sched:sched_switch` and `sched:sched_wakeup` events of
its own process tree in a private ftrace instance (tracefs `instances/irprof-<pid>`, following
forks with `set_event_pid` and `options/event-fork`, clock `mono`), and keeps, per thread, the
intervals it was on a CPU, the intervals it was runnable and waiting for one (switched out
while runnable, or woken and not yet switched in), and its sleeps that another thread of the
tree ended (the thread it was blocked on: a worker it waited for). `analyses/preemption.py`
subtracts the waits from the events they overlap. A voluntary sleep (a lock, I/O,
`time.sleep`) is not a wait and stays in the op's time; only while another thread of the
capture was preempted before waking it does that thread's wait count (a caller waiting for a
preempted worker).

This needs tracefs and the right to use it (root, usually); when it is missing the record says
why and nothing is subtracted. When tracefs is not mounted, the capture mounts it on a private
temporary mount point and unmounts it after. Times are converted to CLOCK_REALTIME ns (the
profilers' clock) with an offset read before and after the steps; its drift is recorded.
Events the ring buffer dropped are counted: a full buffer overwrites its oldest events, and
the record is used only for events after the oldest one every buffer kept. Docs:
docs/views.md, "Preempted time".
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

TRACEFS_MOUNTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
BUFFER_KB_PER_CPU = 8192
SCHED_EVENTS = ("sched_switch", "sched_wakeup", "sched_process_fork")
SCHED_FILE = "sched.json"
SCHED_VERSION = 1
MOUNT_PREFIX = "irprof-tracefs-"

# `comm-pid [cpu] flags 12345.678901: sched_switch: prev_comm=a prev_pid=1 prev_prio=120
# prev_state=R+ ==> next_comm=b next_pid=2 next_prio=120` (comm may hold spaces).
_TIME = r"\s(\d+)\.(\d{6}):\s"
SWITCH = re.compile(
    _TIME + r"sched_switch: prev_comm=(.*) prev_pid=(\d+) prev_prio=-?\d+ prev_state=(\S+) "
    r"==> next_comm=(.*) next_pid=(\d+) next_prio=-?\d+"
)
# The waker is the line's task; the flags' third character is `.` in process context (`h`, `s`:
# an interrupt woke the thread, e.g. a timer ending a sleep, whatever task it interrupted).
WAKEUP = re.compile(
    r"^\s*.*?-(\d+)\s+\[\d+\]\s+(\S+)\s+(\d+)\.(\d{6}):\s"
    r"sched_wakeup: comm=(.*) pid=(\d+) prio=-?\d+"
)
FORK = re.compile(_TIME + r"sched_process_fork: comm=.* pid=(\d+) child_comm=(.*) child_pid=(\d+)")


class ThreadSched(msgspec.Struct, frozen=True):
    """One thread's intervals, flat [start0, end0, start1, end1, ...] realtime ns; `blocked`:
    flat [start, end, waker tid, ...], the sleeps another thread of the tree ended."""

    tid: int
    comm: str
    oncpu: list[int]
    runnable: list[int]
    blocked: list[int] = []


class SchedRecord(msgspec.Struct, frozen=True):
    """`RUN/sched.json`: the capture's threads, their CPU and runnable-wait intervals."""

    version: int
    clock: str
    offset_ns: int  # realtime - monotonic, read before the steps
    offset_drift_ns: int  # |offset after - offset before|
    lost_events: int
    threads: list[ThreadSched]
    # With lost events: from this realtime ns on, no CPU's buffer had dropped any (a full ring
    # buffer overwrites its oldest events: a long capture keeps its last seconds, the steps).
    complete_from_ns: int = 0


@dataclass
class _State:
    comm: str
    oncpu_since: int | None = None
    runnable_since: int | None = None
    asleep_since: int | None = None
    oncpu: list[int] = field(default_factory=list)
    runnable: list[int] = field(default_factory=list)
    blocked: list[int] = field(default_factory=list)


def parse_sched_text(text: str, offset_ns: int, root: int) -> list[ThreadSched]:
    """Per-thread intervals of `root`'s descendants (processes and threads, from the
    sched_process_fork events) from ftrace's text output (`trace` file, time order, microsecond
    stamps), shifted by `offset_ns` (monotonic to realtime).

    A thread switched out with a state starting `R` (preempted) is runnable until it is switched
    in again; one woken is runnable from the wakeup until switched in. A sleep that another
    thread of the tree ended (a wakeup in process context: a worker finishing, a lock released)
    is kept as blocked on that thread. Other tasks appear in the switches too (what ran
    instead); they are left out."""
    threads: dict[int, _State] = {}
    tree = {root}

    def state(tid: int, comm: str) -> _State:
        found = threads.get(tid)
        if found is None:
            found = threads[tid] = _State(comm)
        return found

    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if match := FORK.search(line):
            if int(match[3]) in tree:
                tree.add(int(match[5]))
                state(int(match[5]), match[4])
        elif match := SWITCH.search(line):
            now = int(match[1]) * 1_000_000_000 + int(match[2]) * 1000 + offset_ns
            prev, nxt = int(match[4]), int(match[7])
            if prev:
                out = state(prev, match[3])
                if out.oncpu_since is not None:
                    out.oncpu += (out.oncpu_since, now)
                out.oncpu_since = None
                preempted = match[5].startswith("R")
                out.runnable_since = now if preempted else None
                out.asleep_since = None if preempted else now
            if nxt:
                into = state(nxt, match[6])
                if into.runnable_since is not None and into.runnable_since < now:
                    into.runnable += (into.runnable_since, now)
                into.runnable_since = None
                into.oncpu_since = now
        elif match := WAKEUP.search(line):
            now = int(match[3]) * 1_000_000_000 + int(match[4]) * 1000 + offset_ns
            woken, waker, flags = int(match[6]), int(match[1]), match[2]
            if woken:
                target = state(woken, match[5])
                if target.oncpu_since is None and target.runnable_since is None:
                    target.runnable_since = now
                    since = target.asleep_since
                    in_process = len(flags) > 2 and flags[2] == "."
                    if since is not None and in_process and waker in tree and waker != woken:
                        target.blocked += (since, now, waker)
                    target.asleep_since = None
    return [
        ThreadSched(tid, item.comm, item.oncpu, item.runnable, item.blocked)
        for tid, item in sorted(threads.items())
        if tid in tree
    ]


def clock_offset_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC now, from the tightest of a few bracketed readings."""
    best: tuple[int, int] | None = None
    for _ in range(5):
        before = time.clock_gettime_ns(time.CLOCK_REALTIME)
        mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        after = time.clock_gettime_ns(time.CLOCK_REALTIME)
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) // 2 - mono)
    assert best is not None
    return best[1]


class _Instance:
    """A private ftrace instance recording the scheduler events of this process's tree."""

    def __init__(self, root: Path, pid: int | None = None) -> None:
        self.path = root / "instances" / f"irprof-{os.getpid() if pid is None else pid}"

    def write(self, name: str, value: str) -> None:
        (self.path / name).write_text(value, encoding="ascii")

    def start(self) -> None:
        _sweep_instances(self.path.parents[1])
        self.path.mkdir()
        self.write("trace_clock", "mono")
        self.write("buffer_size_kb", str(BUFFER_KB_PER_CPU))
        self.write("set_event_pid", str(os.getpid()))
        self.write("options/event-fork", "1")
        for event in SCHED_EVENTS:
            self.write(f"events/sched/{event}/enable", "1")
        self.write("tracing_on", "1")

    def stop(self) -> tuple[str, int, int]:
        """The recorded text, the number of events the buffers dropped, and the monotonic ns
        from which every CPU's buffer is complete (0: complete throughout)."""
        self.write("tracing_on", "0")
        text = (self.path / "trace").read_text(encoding="utf-8", errors="replace")
        lost = complete_from = 0
        for stats in sorted((self.path / "per_cpu").glob("cpu*/stats")):
            fields = dict(
                (name.strip(), value.strip())
                for name, _, value in (
                    line.partition(":") for line in stats.read_text(encoding="ascii").splitlines()
                )
            )
            dropped = int(fields.get("overrun", "0") or 0) + int(
                fields.get("dropped events", "0") or 0
            )
            lost += dropped
            if dropped:  # a full buffer overwrote its oldest events: complete from its oldest kept
                seconds, _, micros = fields.get("oldest event ts", "0.0").partition(".")
                oldest = int(seconds or 0) * 1_000_000_000 + int(micros or 0) * 1000
                complete_from = max(complete_from, oldest)
        return text, lost, complete_from

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            for event in SCHED_EVENTS:
                self.write(f"events/sched/{event}/enable", "0")
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _tracefs() -> tuple[Path | None, bool, str]:
    """A usable tracefs root, whether this process mounted it (privately), or why there is
    none."""
    if os.name != "posix" or not Path("/proc/self").exists():
        return None, False, "not Linux"
    if os.geteuid() == 0:
        _sweep_mounts()
    for root in TRACEFS_MOUNTS:
        if (root / "instances").is_dir():
            return (root, False, "") if os.access(root / "instances", os.W_OK) else (
                None, False, f"{root} is not writable (scheduler events need root)")  # fmt: skip
    if os.geteuid() != 0:
        return None, False, "tracefs is not mounted (scheduler events need root)"
    # A mount point of our own: another capture unmounting its own cannot take ours away. It is
    # named by our pid, so a later capture can clean up after one that was killed.
    try:
        root = Path(tempfile.mkdtemp(prefix=f"{MOUNT_PREFIX}{os.getpid()}-"))
    except OSError as exc:
        return None, False, f"no mount point for tracefs ({exc.strerror or exc})"
    if (
        not _run(["mount", "-t", "tracefs", "nodev", str(root)])
        or not (root / "instances").is_dir()
    ):
        _unmount(root)
        return None, False, "tracefs could not be mounted"
    return root, True, ""


def _run(command: list[str]) -> bool:
    """Run a system command quietly; whether it succeeded (False when it is not installed)."""
    try:
        return subprocess.run(command, capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _sweep_mounts() -> None:
    """Unmount and remove the private mount points of captures that died without doing it (a
    killed capture runs no cleanup)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{MOUNT_PREFIX}*"):
        owner = folder.name[len(MOUNT_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            _unmount(folder)


def _sweep_instances(root: Path) -> None:
    """Remove the ftrace instances of captures that died (each holds ring buffers and keeps
    filtering on pids that may be reused)."""
    for path in (root / "instances").glob("irprof-*"):
        owner = path.name[len("irprof-") :]
        if owner.isdigit() and not _alive(int(owner)):
            _Instance(root, int(owner)).remove()


def _unmount(root: Path) -> None:
    _run(["umount", "-l", str(root)])
    with contextlib.suppress(OSError):
        root.rmdir()


@contextlib.contextmanager
def recording_sched(out: Path) -> Iterator[dict[str, Any]]:
    """Record the scheduler events of this process's children during the block; write them to
    `out` (a SchedRecord) when they were recorded. The yielded dict becomes the manifest's
    `options.sched` status: whether the record exists, and why not. Recording never fails the
    block: without tracefs, rights or a readable buffer, the status says why."""
    status: dict[str, Any] = {"recorded": False}
    root, mounted, reason = _tracefs()
    instance = _Instance(root) if root is not None else None
    try:
        if instance is not None:
            try:
                instance.start()
            except OSError as exc:
                instance.remove()
                instance, reason = None, f"ftrace instance refused: {exc.strerror or exc}"
        before = clock_offset_ns()
        yield status
        if instance is None:
            status["reason"] = reason
            return
        after = clock_offset_ns()
        try:
            text, lost, complete_from = instance.stop()
        except (OSError, ValueError) as exc:  # the capture itself succeeded: say why, go on
            status["reason"] = f"scheduler events could not be read: {exc}"
            return
        record = SchedRecord(
            SCHED_VERSION,
            "CLOCK_REALTIME ns (ftrace mono + offset_ns)",
            before,
            abs(after - before),
            lost,
            parse_sched_text(text, before, os.getpid()),
            complete_from + before if complete_from else 0,
        )
        out.write_bytes(msgspec.json.encode(record))
        status.update(recorded=True, file=out.name, lost_events=lost,
                      threads=len(record.threads))  # fmt: skip
    finally:
        if instance is not None:
            instance.remove()
        if mounted and root is not None:
            _unmount(root)
