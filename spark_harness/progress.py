"""A campaign's progress: the display (the driver), the Spark task counts feeding it, and the
executors' reports of a seed shrinking.

Task progress of the running jobs comes from either API behind one small adapter: classic sessions
poll ``sparkContext.statusTracker()`` (active stages: tasks done / tasks) from a daemon thread; Spark
Connect sessions register a handler with ``spark.registerProgressHandler``. Both feed
:class:`TaskProgress`, which :class:`CampaignDisplay` turns into runs done (a run: one property on one
seed). When the executors run on this machine, they say which seed is shrinking through files in a
directory (:func:`reporting_partition`); the display reads them every second.

Nothing here imports rich or pyspark at module level (progress_display imports rich when it draws):
the executors import this module.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Iterable, Iterator

from streamproof.properties.progress_display import Display, duration, plural, stderr_console


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


# ------------------------------------------------------------------ executors: which seed shrinks

def reporting_partition(channel: str, config: dict, batches: Iterable) -> Iterator:
    """``executor.run_partition`` (the ``mapInArrow`` function) that also writes
    ``CHANNEL/PID.json`` (property, seed, since when) while a seed's failure is shrinking, and removes
    it when that seed ends. ``channel`` is a directory of the driver's machine: only for executors
    running there. The rows are the same."""
    from streamproof.properties import explore as module
    from streamproof.spark_harness import executor

    original = module.explore
    module.explore = reporting_explore(original, os.path.join(channel, f"{os.getpid()}.json"))
    try:
        yield from executor.run_partition(config, batches)
    finally:
        module.explore = original


def reporting_explore(explore: Callable, path: str) -> Callable:
    """``explore`` writing ``path`` when its failure starts shrinking (once), removing it at the end."""

    def reporting(prop, *args, progress=None, **kwargs):
        written = []

        def report(done: int, shrinking: bool) -> None:
            if shrinking and not written:
                written.append(path)
                _write_json(path, {"property": prop.name, "seed": kwargs.get("seed"), "since": time.time(),
                                   "pid": os.getpid()})
            if progress is not None:
                progress(done, shrinking)

        try:
            return explore(prop, *args, progress=report, **kwargs)
        finally:
            if written:
                try:
                    os.remove(path)
                except OSError:
                    pass

    return reporting


def _write_json(path: str, obj: dict) -> None:
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(obj, f)
        os.replace(path + ".tmp", path)
    except OSError:  # the directory is gone (the driver ended) or elsewhere: nothing to say
        pass


def read_shrinking(channel: str, now: float, limit: float | None) -> list[tuple[str, int, float]]:
    """(property, seed, since) of the seeds shrinking now, oldest first: a report older than the
    per-seed ``limit`` (that seed was cut) or of a process that is gone is left out."""
    found = []
    try:
        names = os.listdir(channel)
    except OSError:
        return []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(channel, name), encoding="utf-8") as f:
                r = json.load(f)
            if os.name == "posix":  # the process is still there (elsewhere os.kill would end it)
                os.kill(int(r["pid"]), 0)
        except (OSError, ValueError, KeyError, TypeError):  # half-written, removed, or its process gone
            continue
        if limit is None or now - r["since"] <= limit:
            found.append((str(r["property"]), r["seed"], float(r["since"])))
    return sorted(found, key=lambda r: r[2])


# ------------------------------------------------------------------------------- driver: display

class CampaignDisplay:
    """The campaign's progress on stderr (:class:`streamproof.properties.progress_display.Display`:
    a live status on a terminal, plain lines elsewhere), from start-up to the read-back.

    Counts are in runs, one property on one seed: ``4 seeds x 24 properties: 7/96 runs done, 16
    queued or running, 0/2 waves committed``. Runs done are the committed runs plus the finished
    share of the tasks of the waves in flight (an estimate until their wave commits: a task reports
    when its whole chunk is done); queued or running are the runs of the waves in flight not done
    yet. Before the runs, ``step`` says what happens (starting Spark, measuring costs) with its
    elapsed time; while a seed's failure shrinks (executors on this machine: ``local``), a line says
    which one and for how long. Not on a terminal: a line when the runs begin, one per wave, and the
    status as a heartbeat after ``heartbeat`` seconds without a line (so a failure to start is one
    line: the error's)."""

    def __init__(self, name: str, *, local: bool = False, console: Any = None, heartbeat: float | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.name, self.clock = name, clock
        self._lock = threading.RLock()
        self.step_text, self.step_started = "", clock()
        self.began = clock()  # when the runs began
        self.running = False
        self.seeds = self.properties = self.total = 0
        self.unit, self.timeout = "seeds", None
        self.committed = self.in_flight = self.waves = self.waves_done = 0
        self.task_counts = (0, 0)
        self.shrinking: list[tuple[str, int, float]] = []
        self.channel = tempfile.mkdtemp(prefix="streamproof-progress-") if local else None
        self._stderr = _own_stderr() if console is None else None
        self.display = Display(self.lines, self.fraction, clock=clock, poll=self.poll, heartbeat=heartbeat,
                               console=console if console is not None else stderr_console(self._stderr))
        self.tty = self.display.tty

    def open(self) -> "CampaignDisplay":
        self.display.__enter__()
        return self

    def close(self) -> None:
        self.display.__exit__(None, None, None)
        if self.channel is not None:
            shutil.rmtree(self.channel, ignore_errors=True)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> "CampaignDisplay":
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def step(self, text: str) -> None:
        """A stage before or after the runs (starting Spark, measuring a property's cost, reading
        back), shown with its elapsed time (not on a terminal: in the heartbeat)."""
        with self._lock:
            self.step_text, self.step_started, self.running = text, self.clock(), False

    def say(self, text: str) -> None:
        self.display.say(f"{self.name}: {text}")

    def begin(self, spec, kept: int, waves: int) -> None:
        """The runs start: ``spec``'s seeds x properties, ``kept`` runs complete from earlier runs."""
        with self._lock:
            self.seeds, self.properties = spec.seeds, len(spec.properties)
            self.unit = "scenarios" if getattr(spec, "mode", "") == "exhaustive" else "seeds"
            self.timeout = getattr(spec, "timeout", None)
            self.total = self.seeds * self.properties
            self.committed, self.waves, self.running = kept, waves, True
            self.began = self.clock()
        kept_text = f", {kept} kept from earlier runs" if kept else ""
        self.say(f"{self._size()}: {self.total} runs{kept_text}, about {plural(waves, 'wave')}")

    def started(self, runs: int) -> None:
        """A wave of ``runs`` runs was submitted."""
        with self._lock:
            self.in_flight += runs

    def tasks(self, completed: int, total: int) -> None:
        with self._lock:
            self.task_counts = (completed, total)

    def ended(self, runs: int, ok: bool, number: int) -> None:
        with self._lock:
            self.in_flight -= runs
            self.task_counts = (0, 0)  # they counted the wave that ended: the next poll says the others'
            if ok:
                self.committed += runs
                self.waves_done += 1
        if not ok:
            self.say(f"wave {number} failed; running it again")
        elif not self.tty:
            self.say(f"wave {number} committed: {self._counts()}")

    def poll(self) -> None:
        if self.channel is not None and self.running:
            found = read_shrinking(self.channel, self.clock(), self.timeout)
            with self._lock:
                self.shrinking = found

    def done(self) -> int:
        completed, total = self.task_counts
        finished = int(self.in_flight * min(1.0, completed / total)) if total else 0
        return self.committed + finished

    def fraction(self) -> float | None:
        return self.done() / self.total if self.running and self.total else None

    def _size(self) -> str:
        unit = self.unit if self.seeds != 1 else self.unit[:-1]
        return f"{self.seeds} {unit} x {self.properties} {'property' if self.properties == 1 else 'properties'}"

    def _counts(self) -> str:
        with self._lock:
            done = self.done()
            return (f"{done}/{self.total} runs done, {self.in_flight - (done - self.committed)} queued or running, "
                    f"{self.waves_done}/{max(self.waves, self.waves_done)} waves committed, "
                    f"{duration(self.clock() - self.began)}")

    def lines(self) -> list[str]:
        now = self.clock()
        with self._lock:
            if not self.running:
                return [f"{self.name}: {self.step_text} ... {duration(now - self.step_started)}"] if self.step_text else []
            shrinking = [f"shrinking {prop} seed {seed} ({duration(now - since)})"
                         for prop, seed, since in self.shrinking[:3]]
            if len(self.shrinking) > 3:
                shrinking.append(f"and {len(self.shrinking) - 3} more seeds shrinking")
            return [f"{self.name}: {self._size()}: {self._counts()}", *shrinking]


def _own_stderr():
    """A file on a copy of this process's stderr descriptor (None without one): the display's lines
    reach the terminal or log even while Spark's start-up sends fds 1 and 2 to its log file."""
    try:
        fd = os.dup(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's capture)
        return None
    return os.fdopen(fd, "w", encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
                     errors="backslashreplace", buffering=1)
