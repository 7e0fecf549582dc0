"""What every valve protocol runs on: the JobManager's side of Flink's RPC, in small.

Flink's exceptions, a small ``CompletableFuture`` with the ``FutureUtils`` the holders use
(:func:`forward`, :func:`wait_for_all`, :func:`assert_no_exception`), the JobMaster's main thread
(:class:`MainThreadExecutor`), the ``IncompleteFuturesTracker`` of unconfirmed events, and how a
gateway sends one event (:class:`BlockedEvent`, :func:`_call_send_action`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable

NO_CHECKPOINT = -(2**63)  # Long.MIN_VALUE
EVENT_LOSS_ERROR_MESSAGE = ("An OperatorEvent from an OperatorCoordinator to a task was lost. "
                            "Triggering task failover to ensure consistency. Event: '%s', targetTask: %s")


# ------------------------------------------------------------------------------------- errors


class FlinkException(Exception):
    pass


class FlinkRuntimeException(RuntimeError):
    pass


class IllegalStateException(RuntimeError):
    pass


class TaskNotRunningException(FlinkException):
    pass


# ------------------------------------------------------------------------------------ futures


class CompletableFuture:
    """A small ``java.util.concurrent.CompletableFuture``: completed once, with a value or an
    error; dependent actions run in the completing thread, in registration order (Java runs them
    last-registered first; nothing here depends on that order)."""

    __slots__ = ("_done", "_value", "_error", "_callbacks")

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Any, BaseException | None], None]] = []

    @staticmethod
    def completed(value: Any = None) -> CompletableFuture:
        future = CompletableFuture()
        future.complete(value)
        return future

    @staticmethod
    def failed(error: BaseException) -> CompletableFuture:
        future = CompletableFuture()
        future.complete_exceptionally(error)
        return future

    def is_done(self) -> bool:
        return self._done

    def is_completed_exceptionally(self) -> bool:
        return self._done and self._error is not None

    def state(self) -> str:
        """``pending``, ``done`` or ``failed`` (the vectors' words)."""
        return "pending" if not self._done else ("failed" if self._error is not None else "done")

    def complete(self, value: Any = None) -> bool:
        return self._finish(value, None)

    def complete_exceptionally(self, error: BaseException) -> bool:
        return self._finish(None, error)

    def _finish(self, value: Any, error: BaseException | None) -> bool:
        if self._done:
            return False
        self._done, self._value, self._error = True, value, error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(value, error)
        return True

    def _on_done(self, callback: Callable[[Any, BaseException | None], None]) -> None:
        if self._done:
            callback(self._value, self._error)
        else:
            self._callbacks.append(callback)

    def when_complete(self, action: Callable[[Any, BaseException | None], None]) -> CompletableFuture:
        """Runs ``action`` when done; the returned future completes like this one afterwards."""
        out = CompletableFuture()

        def run(value, error):
            try:
                action(value, error)
            except Exception as e:  # noqa: BLE001 - as in Java: the dependent future fails
                out.complete_exceptionally(error or e)
                return
            out._finish(value, error)

        self._on_done(run)
        return out

    def when_complete_async(self, action, executor: MainThreadExecutor) -> CompletableFuture:
        out = CompletableFuture()

        def run(value, error):
            def task():
                try:
                    action(value, error)
                except Exception as e:  # noqa: BLE001
                    out.complete_exceptionally(error or e)
                    return
                out._finish(value, error)
            executor.execute(task)

        self._on_done(run)
        return out

    def handle_async(self, fn: Callable[[Any, BaseException | None], Any], executor: MainThreadExecutor) -> CompletableFuture:
        """Runs ``fn(value, error)`` on ``executor``; the returned future holds its result, or fails
        with what it raised."""
        out = CompletableFuture()

        def run(value, error):
            def task():
                try:
                    result = fn(value, error)
                except Exception as e:  # noqa: BLE001
                    out.complete_exceptionally(e)
                    return
                out.complete(result)
            executor.execute(task)

        self._on_done(run)
        return out


def forward(source: CompletableFuture, target: CompletableFuture) -> None:
    """``FutureUtils.forward``: complete ``target`` like ``source``."""
    source._on_done(lambda v, e: target.complete_exceptionally(e) if e is not None else target.complete(v))


def wait_for_all(futures: Iterable[CompletableFuture]) -> CompletableFuture:
    """``FutureUtils.waitForAll``: completes once every future is done; fails if any failed."""
    futures = list(futures)
    out = CompletableFuture()
    state = {"left": len(futures), "error": None}
    if not futures:
        out.complete()
        return out

    def one_done(_value, error):
        if error is not None and state["error"] is None:
            state["error"] = error
        state["left"] -= 1
        if state["left"] == 0:
            out.complete_exceptionally(state["error"]) if state["error"] is not None else out.complete()

    for future in futures:
        future._on_done(one_done)
    return out


def assert_no_exception(future: CompletableFuture, fatal_error_handler: Callable[[BaseException], None]) -> None:
    """``FutureUtils.assertNoException``: a failure is a fatal error (Flink's
    ``FatalExitExceptionHandler`` stops the JobManager process)."""
    future._on_done(lambda _v, e: fatal_error_handler(e) if e is not None else None)


class MainThreadExecutor:
    """The JobMaster's main thread: one FIFO queue. A task submitted while another runs waits its
    turn; a task submitted from outside runs at once (with whatever it queued) before ``execute``
    returns. An exception escaping a task goes to ``uncaught`` (Flink's RPC endpoint logs it and
    goes on)."""

    def __init__(self, uncaught: Callable[[BaseException], None] | None = None) -> None:
        self._queue: deque[Callable[[], None]] = deque()
        self._running = False
        self.uncaught = uncaught

    def execute(self, runnable: Callable[[], None]) -> None:
        self._queue.append(runnable)
        if self._running:
            return
        self._running = True
        try:
            while self._queue:
                task = self._queue.popleft()
                try:
                    task()
                except Exception as e:  # noqa: BLE001 - the main thread goes on
                    if self.uncaught is None:
                        raise
                    self.uncaught(e)
        finally:
            self._running = False

    def assert_running_in_main_thread(self) -> None:
        """Single-threaded simulation: every call already runs on the main thread."""


class IncompleteFuturesTracker:
    """Remembers futures while they are incomplete (Flink's ``IncompleteFuturesTracker``)."""

    def __init__(self) -> None:
        self.incomplete_futures: dict[int, CompletableFuture] = {}  # insertion-ordered set
        self.failure_cause: BaseException | None = None

    def track_future_while_incomplete(self, future: CompletableFuture) -> None:
        if future.is_done():
            return
        if self.failure_cause is not None:
            future.complete_exceptionally(self.failure_cause)
            return
        self.incomplete_futures[id(future)] = future
        future._on_done(lambda _v, _e: self.incomplete_futures.pop(id(future), None))

    def get_current_incomplete(self) -> list[CompletableFuture]:
        return list(self.incomplete_futures.values())

    def get_current_incomplete_and_reset(self) -> list[CompletableFuture]:
        futures = list(self.incomplete_futures.values())
        self.incomplete_futures.clear()
        return futures

    def fail_all_futures(self, cause: BaseException) -> None:
        if self.failure_cause is not None:
            return
        self.failure_cause = cause
        futures = list(self.incomplete_futures.values())
        self.incomplete_futures.clear()
        for future in futures:
            future.complete_exceptionally(cause)


# ---------------------------------------------------------------------------- sending an event


@dataclass
class BlockedEvent:
    send_action: Callable[[], CompletableFuture]
    future: CompletableFuture
    event: Any = None  # kept for inspection (Flink's BlockedEvent holds only the action)


def _call_send_action(send_action: Callable[[], CompletableFuture], result: CompletableFuture) -> None:
    try:
        forward(send_action(), result)
    except Exception as e:  # noqa: BLE001 - SubtaskGatewayImpl.callSendAction
        result.complete_exceptionally(e)
