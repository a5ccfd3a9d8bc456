"""The scheduler record: ftrace's sched_switch/sched_wakeup text read into per-thread intervals,
and a real recording around child processes competing for the cores.

The parsing cases are hand-written ftrace lines whose intervals are worked out below each one.
The recording case runs real children under the kernel's scheduler: one spins while as many
spinners as cores compete with it (it must have waited for a CPU), one sleeps (a voluntary
sleep is no wait).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import pytest

from irprof.capture import sched_trace
from irprof.capture.sched_trace import (
    SchedRecord,
    ThreadSched,
    parse_sched_text,
    recording_sched,
)

S = 1_000_000_000
US = 1000
OFFSET = 1_700_000_000 * S  # realtime - monotonic, as if the machine booted at that epoch


def line(task: str, cpu: int, stamp: str, body: str) -> str:
    return f"          {task} [{cpu:03d}] d..2. {stamp}: {body}"


def switch(prev: str, prev_pid: int, state: str, nxt: str, next_pid: int) -> str:
    return (
        f"sched_switch: prev_comm={prev} prev_pid={prev_pid} prev_prio=120 prev_state={state} "
        f"==> next_comm={nxt} next_pid={next_pid} next_prio=120"
    )


def ns(stamp: str) -> int:
    seconds, micros = stamp.split(".")
    return int(seconds) * S + int(micros) * US + OFFSET


TEXT = "\n".join(
    [
        "# tracer: nop",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
        line("irprof-100", 0, "10.000000",
             "sched_process_fork: comm=irprof pid=100 child_comm=irprof child_pid=200"),
        line("irprof-200", 1, "10.000100",
             "sched_process_fork: comm=irprof pid=200 child_comm=my worker child_pid=201"),
        # 200 runs from 10.000200, is preempted (R) at 10.001000 by a spinner (900, not ours)
        line("<idle>-0", 1, "10.000200", switch("swapper/1", 0, "R", "irprof", 200)),
        line("irprof-200", 1, "10.001000", switch("irprof", 200, "R", "spin", 900)),
        # ... and runs again at 10.004000: runnable 10.001000-10.004000
        line("spin-900", 1, "10.004000", switch("spin", 900, "R+", "irprof", 200)),
        # the worker (comm with a space) sleeps (S) at 10.004500: no wait while asleep
        line("<idle>-0", 0, "10.004100", switch("swapper/0", 0, "R", "my worker", 201)),
        line("my worker-201", 0, "10.004500", switch("my worker", 201, "S", "swapper/0", 0)),
        # woken at 10.006000, switched in at 10.006250: runnable 10.006000-10.006250
        line("irprof-200", 1, "10.006000",
             "sched_wakeup: comm=my worker pid=201 prio=120 target_cpu=000"),
        line("spin-900", 0, "10.006250", switch("spin", 900, "R", "my worker", 201)),
        # a wakeup of a running thread changes nothing
        line("irprof-200", 1, "10.006300",
             "sched_wakeup: comm=irprof pid=200 prio=120 target_cpu=001"),
        line("irprof-200", 1, "10.007000", switch("irprof", 200, "D", "spin", 900)),
    ]
)  # fmt: skip


def test_parse_intervals_of_the_process_tree_only() -> None:
    threads = {thread.tid: thread for thread in parse_sched_text(TEXT, OFFSET, root=100)}
    # The spinner and the idle task are not ours; the root never ran here.
    assert set(threads) == {200, 201}
    main, worker = threads[200], threads[201]
    assert main.oncpu == [ns("10.000200"), ns("10.001000"), ns("10.004000"), ns("10.007000")]
    assert main.runnable == [ns("10.001000"), ns("10.004000")]
    assert worker.comm == "my worker"
    assert worker.oncpu == [ns("10.004100"), ns("10.004500")]  # still running at the end
    assert worker.runnable == [ns("10.006000"), ns("10.006250")]
    # 200 ended the worker's sleep from process context: blocked on 200 meanwhile.
    assert worker.blocked == [ns("10.004500"), ns("10.006000"), 200]
    assert main.blocked == []


def test_parse_follows_forks_from_the_root_only() -> None:
    # From 200's point of view 100 is not a descendant: only 200 and its thread.
    assert {thread.tid for thread in parse_sched_text(TEXT, OFFSET, root=200)} == {200, 201}
    assert parse_sched_text(TEXT, OFFSET, root=999) == []


def test_parse_touching_switches_leave_no_empty_wait() -> None:
    # Switched out runnable and in again at the same microsecond: no zero-length wait.
    text = "\n".join(
        [
            line("<idle>-0", 0, "5.000000", switch("swapper/0", 0, "R", "a", 7)),
            line("a-7", 0, "5.000010", switch("a", 7, "R", "b", 8)),
            line("b-8", 0, "5.000010", switch("b", 8, "R", "a", 7)),
        ]
    )
    (thread,) = parse_sched_text(text, 0, root=7)
    assert thread.runnable == []
    assert thread.oncpu == [5 * S, 5 * S + 10 * US]


def test_a_sleep_an_interrupt_or_an_outside_task_ended_is_blocked_on_no_thread() -> None:
    wake = "sched_wakeup: comm=a pid=7 prio=120 target_cpu=000"
    text = "\n".join(
        [
            line("x-1", 0, "1.000000", "sched_process_fork: comm=x pid=1 child_comm=a child_pid=7"),
            line("x-1", 0, "1.000000", "sched_process_fork: comm=x pid=1 child_comm=b child_pid=8"),
            line("a-7", 0, "1.000010", switch("a", 7, "S", "b", 8)),
            # a timer interrupt (h) while b runs: no thread of ours ended the sleep
            f"               b-8     [000] dNh3. 1.000020: {wake}",
            line("b-8", 0, "1.000030", switch("b", 8, "R", "a", 7)),
            line("a-7", 0, "1.000040", switch("a", 7, "S", "spin", 900)),
            # a task outside the tree woke it, in process context
            line("spin-900", 0, "1.000050", wake),
            line("spin-900", 0, "1.000060", switch("spin", 900, "R", "a", 7)),
            line("a-7", 0, "1.000070", switch("a", 7, "D", "b", 8)),
            # b, ours, woke it in process context: blocked on b
            line("b-8", 0, "1.000090", wake),
        ]
    )
    threads = {thread.tid: thread for thread in parse_sched_text(text, 0, root=1)}
    assert threads[7].blocked == [1 * S + 70 * US, 1 * S + 90 * US, 8]
    assert threads[7].runnable == [
        1 * S + 20 * US,
        1 * S + 30 * US,
        1 * S + 50 * US,
        1 * S + 60 * US,
    ]


SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"
NAPS = "import time\nfor _ in range(5000): time.sleep(0.0001)\n"


def test_recording_a_real_child_that_competes_for_the_cores(tmp_path: Path) -> None:
    """A child spinning for 1.5 s beside one spinner per core must wait for a CPU; a child
    sleeping 0.5 s is not waiting meanwhile (its sleep is voluntary). Where the machine cannot
    record the scheduler (no tracefs, not root), the status says why and no file is written."""
    out = tmp_path / "sched.json"
    cores = os.cpu_count() or 1
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN.format(s=4.0)]) for _ in range(cores)]
    try:
        with recording_sched(out) as status:
            spinning = subprocess.Popen([sys.executable, "-c", SPIN.format(s=1.5)])
            sleeping = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
            assert spinning.wait(timeout=60) == 0
            assert sleeping.wait(timeout=60) == 0
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    root, mounted, reason = sched_trace._tracefs()
    if mounted and root is not None:
        sched_trace._unmount(root)
    if reason:  # this machine cannot record it: the capture says why, and writes nothing
        assert status == {"recorded": False, "reason": reason}
        assert not out.exists()
        return
    assert status["recorded"] is True, status
    record = msgspec.json.decode(out.read_bytes(), type=SchedRecord)
    assert record.lost_events == 0
    threads = {thread.tid: thread for thread in record.threads}
    assert spinning.pid in threads and sleeping.pid in threads

    def total(flat: list[int]) -> int:
        return sum(end - start for start, end in zip(flat[0::2], flat[1::2], strict=True))

    def merged(thread: ThreadSched) -> list[tuple[int, int]]:
        flat = thread.oncpu + thread.runnable
        return sorted(zip(flat[0::2], flat[1::2], strict=True))

    # The spinner sleeps only while Python starts (reading files): from its first interval to
    # its last it nearly always had a CPU or waited for one, and with one more spinner than
    # cores it waited.
    spun = merged(threads[spinning.pid])
    life = spun[-1][1] - spun[0][0]
    assert sum(end - start for start, end in spun) >= 0.8 * life
    assert total(threads[spinning.pid].runnable) > 0
    assert life >= 1.4 * S
    # The sleeper's 0.5 s asleep is neither on a CPU nor a wait: a gap of about that length.
    slept = merged(threads[sleeping.pid])
    gaps = [later[0] - earlier[1] for earlier, later in itertools.pairwise(slept)]
    assert max(gaps) >= 0.45 * S, gaps
    # Realtime stamps: within the test's own realtime window.
    now = time.time_ns()
    assert now - 120 * S < spun[0][0] < now


def test_the_leftovers_of_a_killed_capture_are_cleaned_up(tmp_path: Path) -> None:
    """A capture killed mid-run leaves its ftrace instance (ring buffers, a pid filter) and
    its private tracefs mount; the next recording removes those whose owner is dead, and
    leaves a live process's alone."""
    root, mounted, reason = sched_trace._tracefs()
    if root is None:  # no tracefs here: nothing can be left over
        assert reason
        return
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    instances = root / "instances"
    leaked = instances / f"irprof-{dead.pid}"
    live = instances / f"irprof-{os.getppid()}"  # a live process's (not ours: we record now)
    leaked.mkdir()
    live_created = not live.exists()
    if live_created:
        live.mkdir()
    mount = Path(tempfile.gettempdir()) / f"{sched_trace.MOUNT_PREFIX}{dead.pid}-test"
    mount.mkdir()
    assert (
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(mount)], check=False).returncode == 0
    )
    try:
        with recording_sched(tmp_path / "sched.json") as status:
            pass
        assert status["recorded"] is True
        assert not leaked.exists()
        assert not mount.exists()
        assert str(mount) not in Path("/proc/mounts").read_text()
        assert live.exists()
    finally:
        if live_created:
            live.rmdir()
        if leaked.exists():
            leaked.rmdir()
        if mount.exists():
            sched_trace._unmount(mount)
        if mounted:
            sched_trace._unmount(root)


def test_a_full_ring_buffer_says_from_when_the_record_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a ring buffer of a few pages, a busy second overwrites the oldest events: the
    record counts them and says from which instant every CPU's buffer is complete (a
    realtime ns inside the recording), so the steps at the end of a long capture stay usable.
    The children sleep and wake 5,000 times each (a switch and a wakeup every time: far more
    than 8 KB of events however loaded the machine is; preemption alone was not, when the
    machine was so busy that the children hardly ran)."""
    monkeypatch.setattr(sched_trace, "BUFFER_KB_PER_CPU", 8)
    out = tmp_path / "sched.json"
    started = time.time_ns()
    with recording_sched(out) as status:
        children = [subprocess.Popen([sys.executable, "-c", NAPS]) for _ in range(2)]
        for child in children:
            assert child.wait(timeout=120) == 0
    if not status["recorded"]:
        assert status["reason"]
        return
    record = msgspec.json.decode(out.read_bytes(), type=SchedRecord)
    assert record.lost_events > 0, "8 KB per CPU should not hold a second of switches"
    assert started < record.complete_from_ns < time.time_ns()


def test_no_mount_command_no_record_and_the_capture_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a mounted tracefs and without `mount` on PATH (a minimal container), recording
    says why and the block runs; a block that fails still fails."""
    monkeypatch.setattr(sched_trace, "TRACEFS_MOUNTS", (tmp_path / "no-tracefs",))
    monkeypatch.setenv("PATH", str(tmp_path))
    out = tmp_path / "sched.json"
    with recording_sched(out) as status:
        ran = True
    assert ran and status["recorded"] is False and status["reason"]
    assert not out.exists()
    with pytest.raises(RuntimeError, match="the capture failed"), recording_sched(out):
        raise RuntimeError("the capture failed")
    assert not list(Path(tempfile.gettempdir()).glob(f"{sched_trace.MOUNT_PREFIX}{os.getpid()}-*"))
