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
    def __init__(self, spark, progress: TaskProgress):
        self.spark = spark
        self.progress = progress
        spark.registerProgressHandler(self)

    def __call__(self, stages, inflight_tasks, operation_id, done) -> None:
        total = completed = 0
        for stage in stages or ():
            total += stage.num_tasks
            completed += stage.num_completed_tasks
        if total:
            self.progress.update(completed, total)

    def close(self) -> None:
        try:
            self.spark.removeProgressHandler(self)
        except Exception:  # noqa: BLE001
            pass


def attach(spark, progress: TaskProgress, interval: float = 0.5):
    """Starts feeding ``progress`` from ``spark``; returns an object with ``close()``."""
    from spark_harness.session import is_connect

    if is_connect(spark):
        return _ConnectHandler(spark, progress)
    return _ClassicPoller(spark, progress, interval)


class Bar:
    """A one-line progress display on a terminal (``\\r``), or a line per wave elsewhere."""

    def __init__(self, stream, total_seeds: int, tty: bool, label: str = "campaign"):
        self.stream = stream
        self.total = max(1, total_seeds)
        self.tty = tty
        self.label = label
        self.started = time.perf_counter()
        self.done_before = 0   # seeds committed by earlier waves (and earlier runs)
        self.wave_seeds = 0
        self.wave = (0, 0)
        self._last = ""

    def start_wave(self, number: int, waves: int, seeds: int) -> None:
        self.wave = (number, waves)
        self.wave_seeds = seeds
        self.tasks(0, 1)

    def tasks(self, completed: int, total: int) -> None:
        if not self.tty:
            return
        seeds = self.done_before + int(self.wave_seeds * (completed / total if total else 0))
        self._draw(seeds)

    def end_wave(self, seeds: int) -> None:
        self.done_before += seeds
        if self.tty:
            self._draw(self.done_before)
        else:
            number, waves = self.wave
            elapsed = time.perf_counter() - self.started
            self.stream.write(f"{self.label}: wave {number}/{waves} committed, {self.done_before}/{self.total} "
                              f"seeds ({100 * self.done_before / self.total:.0f}%), {elapsed:.0f} s\n")
            self.stream.flush()

    def _draw(self, seeds: int) -> None:
        width = 30
        filled = int(width * min(1.0, seeds / self.total))
        number, waves = self.wave
        line = (f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {seeds}/{self.total} seeds  "
                f"wave {number}/{waves}  {time.perf_counter() - self.started:.0f} s")
        if line != self._last:
            self.stream.write(line)
            self.stream.flush()
            self._last = line

    def close(self) -> None:
        if self.tty and self._last:
            self.stream.write("\n")
            self.stream.flush()
