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
    """A one-line progress display on a terminal (``\\r``), or a line per committed wave
    elsewhere. Seeds done = seeds committed + the finished fraction of the tasks in flight."""

    def __init__(self, stream, total_seeds: int, tty: bool, label: str = "campaign"):
        self.stream = stream
        self.total = max(1, total_seeds)
        self.tty = tty
        self.label = label
        self.started_at = time.perf_counter()
        self.committed = 0
        self.in_flight = 0
        self.waves = 0
        self.waves_done = 0
        self._last = ""

    def begin(self, committed: int, waves: int) -> None:
        self.committed, self.waves = committed, waves
        self._draw(self.committed)

    def started(self, seeds: int) -> None:
        self.in_flight += seeds

    def tasks(self, completed: int, total: int) -> None:
        if self.tty and total:
            self._draw(self.committed + int(self.in_flight * min(1.0, completed / total)))

    def ended(self, seeds: int, ok: bool, number: int) -> None:
        self.in_flight -= seeds
        if not ok:
            if not self.tty:
                self._line(f"wave {number} failed; running it again")
            return
        self.committed += seeds
        self.waves_done += 1
        if self.tty:
            self._draw(self.committed)
        else:
            self._line(f"{self.waves_done}/{self.waves} waves committed, {self.committed}/{self.total} seeds "
                       f"({100 * self.committed / self.total:.0f}%), {time.perf_counter() - self.started_at:.0f} s")

    def _line(self, text: str) -> None:
        self.stream.write(f"{self.label}: {text}\n")
        self.stream.flush()

    def _draw(self, seeds: int) -> None:
        if not self.tty:
            return
        width = 30
        filled = int(width * min(1.0, seeds / self.total))
        line = (f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {seeds}/{self.total} seeds  "
                f"waves {self.waves_done}/{self.waves}  {time.perf_counter() - self.started_at:.0f} s")
        if line != self._last:
            self.stream.write(line)
            self.stream.flush()
            self._last = line

    def close(self) -> None:
        if self.tty and self._last:
            self.stream.write("\n")
            self.stream.flush()
            self._last = ""
