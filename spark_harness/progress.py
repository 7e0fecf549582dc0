"""Task progress of the running Spark job, from either API, behind one small adapter.

Classic sessions poll ``sparkContext.statusTracker()`` (active stages: tasks done / tasks) from
a daemon thread; Spark Connect sessions register a handler with
``spark.registerProgressHandler`` (the server streams stage progress with the query's results).
Both feed :class:`TaskProgress`, which the campaign driver turns into seeds done.
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class TaskProgress:
    """The latest (completed tasks, total tasks) of the current job; ``reset`` between jobs."""

    def __init__(self, on_change: Callable[[int, int], None] | None = None):
        self._lock = threading.Lock()
        self.completed = 0
        self.total = 0
        self.updates = 0
        self.on_change = on_change

    def reset(self) -> None:
        with self._lock:
            self.completed = self.total = 0

    def update(self, completed: int, total: int) -> None:
        with self._lock:
            if (completed, total) == (self.completed, self.total):
                return
            self.completed, self.total = completed, total
            self.updates += 1
        if self.on_change is not None:
            try:
                self.on_change(completed, total)
            except Exception:  # noqa: BLE001 - a display problem must not stop a campaign
                pass


class _ClassicPoller:
    def __init__(self, spark, progress: TaskProgress, interval: float):
        self.tracker = spark.sparkContext.statusTracker()
        self.progress = progress
        self.interval = interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="streamproof-progress", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                done = total = 0
                for stage_id in self.tracker.getActiveStageIds():
                    info = self.tracker.getStageInfo(stage_id)
                    if info is not None:
                        done += info.numCompletedTasks
                        total += info.numTasks
                if total:
                    self.progress.update(done, total)
            except Exception:  # noqa: BLE001 - the session may be stopping
                if self.stopped.is_set():
                    return

    def close(self) -> None:
        self.stopped.set()


class _ConnectHandler:
    """Sums the stages of every operation in flight (a campaign runs two waves at once)."""

    def __init__(self, spark, progress: TaskProgress):
        self.spark = spark
        self.progress = progress
        self.lock = threading.Lock()
        self.operations: dict = {}
        spark.registerProgressHandler(self)

    def __call__(self, stages, inflight_tasks, operation_id, done) -> None:
        total = completed = 0
        for stage in stages or ():
            total += stage.num_tasks
            completed += stage.num_completed_tasks
        with self.lock:
            if done:
                self.operations.pop(operation_id, None)
            elif total:
                self.operations[operation_id] = (completed, total)
            completed = sum(c for c, _ in self.operations.values())
            total = sum(t for _, t in self.operations.values())
        self.progress.update(completed, total)

    def close(self) -> None:
        try:
            self.spark.removeProgressHandler(self)
        except Exception:  # noqa: BLE001
            pass


def attach(spark, progress: TaskProgress, interval: float = 0.5):
    """Starts feeding ``progress`` from ``spark``; returns an object with ``close()``."""
    from streamproof.spark_harness.session import is_connect

    if is_connect(spark):
        return _ConnectHandler(spark, progress)
    return _ClassicPoller(spark, progress, interval)


class Bar:
    """A one-line progress display on a terminal (``\\r``), or lines elsewhere: one per committed
    wave and, while waves run, a heartbeat at least every ``heartbeat`` seconds (seeds done,
    running, elapsed), fed by :class:`Heartbeat`. Seeds done = seeds committed + the finished
    fraction of the tasks in flight (an estimate until their wave commits)."""

    def __init__(self, stream, total_seeds: int, tty: bool, label: str = "campaign", heartbeat: float = 5.0):
        self.stream = stream
        self.total = max(1, total_seeds)
        self.tty = tty
        self.label = label
        self.heartbeat = heartbeat
        self.started_at = time.perf_counter()
        self.committed = 0
        self.kept = 0
        self.in_flight = 0
        self.waves = 0
        self.waves_done = 0
        self.task_counts = (0, 0)
        self._last = ""
        self._last_line_at = time.perf_counter()
        self._lock = threading.RLock()

    def begin(self, committed: int, waves: int) -> None:
        with self._lock:
            self.committed, self.kept, self.waves = committed, committed, waves
            self.started_at = self._last_line_at = time.perf_counter()
            self._draw(self.committed)

    def started(self, seeds: int) -> None:
        with self._lock:
            self.in_flight += seeds

    def done_estimate(self) -> int:
        completed, total = self.task_counts
        return self.committed + (int(self.in_flight * min(1.0, completed / total)) if total else 0)

    def tasks(self, completed: int, total: int) -> None:
        with self._lock:
            self.task_counts = (completed, total)
            if self.tty and total:
                self._draw(self.done_estimate())

    def tick(self) -> None:
        """Called about every second while waves run: redraws the bar (the clock moves), or
        prints a heartbeat line when nothing was printed for ``heartbeat`` seconds."""
        with self._lock:
            if self.tty:
                self._draw(self.done_estimate())
            elif time.perf_counter() - self._last_line_at >= self.heartbeat:
                done = self.done_estimate()
                completed, total = self.task_counts
                tasks = f" ({completed}/{total} tasks of the running waves done)" if total else ""
                self._line(f"{done}/{self.total} seeds done, {max(0, self.in_flight - (done - self.committed))} "
                           f"in flight{tasks}, {self.waves_done} waves committed, {self._elapsed()} s")

    def ended(self, seeds: int, ok: bool, number: int) -> None:
        with self._lock:
            self.in_flight -= seeds
            self.task_counts = (0, 0) if not self.in_flight else self.task_counts
            if not ok:
                if not self.tty:
                    self._line(f"wave {number} failed; running it again")
                return
            self.committed += seeds
            self.waves_done += 1
            if self.tty:
                self._draw(self.committed)
            else:
                self._line(f"{self.waves_done}/{max(self.waves, self.waves_done)} waves committed, "
                           f"{self.committed}/{self.total} seeds ({100 * self.committed / self.total:.0f}%), "
                           f"{self._elapsed()} s")

    def _elapsed(self) -> str:
        return f"{time.perf_counter() - self.started_at:.0f}"

    def _line(self, text: str) -> None:
        self.stream.write(f"{self.label}: {text}\n")
        self.stream.flush()
        self._last_line_at = time.perf_counter()

    def _draw(self, seeds: int) -> None:
        if not self.tty:
            return
        width = 30
        filled = int(width * min(1.0, seeds / self.total))
        line = (f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {seeds}/{self.total} seeds  "
                f"{self.in_flight} in flight  waves {self.waves_done}/{max(self.waves, self.waves_done)}  "
                f"{self._elapsed()} s")
        if line != self._last:
            self.stream.write(line)
            self.stream.flush()
            self._last = line

    def close(self) -> None:
        with self._lock:
            if self.tty and self._last:
                self.stream.write("\n")
                self.stream.flush()
                self._last = ""


class Heartbeat:
    """A daemon thread calling ``bar.tick()`` every ``interval`` seconds until ``close()``."""

    def __init__(self, bar: Bar, interval: float = 1.0):
        self.bar = bar
        self.interval = interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="streamproof-heartbeat", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                self.bar.tick()
            except Exception:  # noqa: BLE001 - a display problem must not stop a campaign
                pass

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
