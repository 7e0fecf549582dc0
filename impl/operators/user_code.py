"""User code under guard: the errors a user callback raises and the watchdog that bounds its time
(a SIGALRM timer, SIGPROF when another owner holds SIGALRM)."""

from __future__ import annotations

import atexit
import signal
import threading
import time


# -- user-code failures --------------------------------------------------------------------------
class UserCodeError(RuntimeError):
    """The operator's own code did something the runtime cannot go on from (one line naming the
    operator class and callback), e.g. ``HourlyAlert.on_timer called sys.exit(3)``."""


class CallbackLimitExceeded(UserCodeError):
    """One callback emitted too many outputs, registered too many timers or ran too long (see
    :class:`KeyedProcessOperator`'s ``max_*_per_callback``)."""


_PER = {"open": "call", "process_element": "element", "on_timer": "timer", "end_input": "call",
        "finish": "call", "close": "call"}


class _CallbackAbort(BaseException):
    """The time limit again, after the user's code swallowed the CallbackLimitExceeded: a
    BaseException, so ``except Exception`` cannot; the operator turns it back into one."""


BLOCKED_FACTOR = 12  # a callback that uses no CPU (sleep, I/O) is stopped after this many times its limit


class _Watchdog:
    """The time limit of callbacks that loop without ever calling back into the runtime: one
    SIGALRM interval timer for the process, armed lazily in the main thread and only when nobody
    else uses SIGALRM (e.g. the Spark harness's per-seed deadline); when someone does (pytest-timeout's
    signal method), a SIGPROF timer of CPU time instead (a loop burns CPU). It stays armed across
    callbacks (no system call per callback); when it fires it checks the running callback's
    elapsed time, re-arms for the rest, or -- no callback running -- gives the previous handler
    back."""

    current = None  # the KeyedProcessOperator whose callback runs now (innermost)
    fire_at = 0.0  # perf_counter() when our alarm fires; 0.0: not armed
    raised_for = None  # (operator, callback start) the time limit was raised in
    installed = False
    previous = None
    signum, which = signal.SIGALRM, signal.ITIMER_REAL  # the timer in use once installed
    main_ident = threading.main_thread().ident

    @classmethod
    def arm(cls, seconds: float, now: float) -> bool:
        if threading.get_ident() != cls.main_ident:
            return False
        if cls.installed and signal.getsignal(cls.signum) is not _on_alarm:
            cls.installed, cls.fire_at = False, 0.0  # replaced behind our back: leave it to them
        if not cls.installed:
            for signum, which in ((signal.SIGALRM, signal.ITIMER_REAL), (signal.SIGPROF, signal.ITIMER_PROF)):
                if signal.getsignal(signum) in (signal.SIG_DFL, None) and signal.getitimer(which)[0] == 0:
                    break
            else:
                return False  # someone else's alarms: do not clobber them
            cls.signum, cls.which = signum, which
            cls.previous = signal.signal(signum, _on_alarm)
            cls.installed = True
        signal.setitimer(cls.which, max(seconds, 0.001))
        cls.fire_at = now + seconds
        return True

    @classmethod
    def release(cls) -> None:
        if cls.installed and signal.getsignal(cls.signum) is _on_alarm:
            signal.setitimer(cls.which, 0)
            signal.signal(cls.signum, cls.previous if cls.previous is not None else signal.SIG_DFL)
        cls.installed, cls.fire_at, cls.previous = False, 0.0, None

    marked_for = None  # (operator, callback start) whose CPU time is measured since cpu_mark
    cpu_mark = 0.0

    @classmethod
    def wait_before_stopping(cls, operator, now: float) -> float:
        """Seconds to look again before ``operator``'s running callback counts as over its limit
        ``L``; 0.0 once it is. Past ``L`` seconds of wall-clock time the callback must also use ``L``
        seconds of this process's CPU time from then on (a loop burns CPU; a busy machine or a
        garbage collection only pauses a callback, and must not change a verdict), or still run
        after :data:`BLOCKED_FACTOR` times ``L`` (a callback blocked in a sleep or I/O)."""
        limit = operator.max_seconds_per_callback
        wall_left = operator._started + limit - now
        if wall_left > 0:
            return wall_left
        blocked_left = operator._started + BLOCKED_FACTOR * limit - now
        if blocked_left <= 0:
            return 0.0
        key = (operator, operator._started)
        if cls.marked_for != key:
            cls.marked_for, cls.cpu_mark = key, time.process_time()
            return min(limit, blocked_left)
        cpu_left = cls.cpu_mark + limit - time.process_time()
        return 0.0 if cpu_left <= 0 else min(max(cpu_left, 0.01), blocked_left)

    @classmethod
    def fire(cls, signum, frame) -> None:
        cls.fire_at = 0.0
        operator = cls.current
        if operator is None or operator._callback is None or operator.max_seconds_per_callback is None:
            cls.release()  # armed for a callback that has ended, or one without a time limit
            return
        now = time.perf_counter()
        left = cls.wait_before_stopping(operator, now)
        if left > 0:
            cls.arm(left, now)
            return
        cls.arm(0.25, now)  # again if the user's code swallows it
        if cls.raised_for == (operator, operator._started):
            raise _CallbackAbort()  # swallowed once (``except Exception``): not an Exception now
        cls.raised_for = (operator, operator._started)
        raise operator._limit_error("ran longer than", f"{operator.max_seconds_per_callback:g} s")


def release_callback_watchdog() -> None:
    """Gives SIGALRM back if the callback time limit holds it (after a certification)."""
    _Watchdog.release()


# At exit, before the interpreter resets its signal handlers: an interval timer still armed would
# otherwise kill a process whose shutdown takes longer than the rest of the limit ("Alarm clock",
# exit 142), e.g. a pytest worker that explored certify properties without certify().
atexit.register(release_callback_watchdog)


def _on_alarm(signum, frame) -> None:  # one function object: the handler is recognised by identity
    _Watchdog.fire(signum, frame)
