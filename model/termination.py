"""Specification of the end-of-input flush of processing-time timers (FLIP-269; DESIGN.md §3.4).

What is modelled (one timer service)
  * Actions: CANCEL (0), TRIGGER (1), WAIT (2). A pending processing-time timer ``(ts, key,
    namespace)`` has a registered action (CANCEL unless given; registering a pending timer again
    replaces it); an override, when set, is every timer's effective action, whenever it was set
    (``set_override``: timers registered or restored before it get it too).
  * Phases RUNNING -> FLUSHING -> FLUSHED.
  * ``handle(timer)``: precondition FLUSHING and ``timer`` is a pending timer of minimal
    timestamp (which of several equal ones is not chosen by the model: the checker passes the
    implementation's). While the flush is in its *due* part, a timer with ``ts <= clock`` was
    already due (in Flink its callback is in the mailbox): it fires as usual, whatever its
    action, reading the clock. The first timer after the clock ends the due part and fixes the
    *horizon*: the largest pending timestamp. Then a timer after the horizon is dropped and
    counted; else CANCEL drops it, TRIGGER fires it with the processing time reading MAX_TIME,
    WAIT moves the clock to ``max(clock, ts)`` and fires it reading that clock.
  * ``register(timer, action)`` while FLUSHING adds a pending timer (a callback of a fired timer);
    in FLUSHED it is dropped and counted (nothing fires after ``finish()``).
  * ``end_flush``: precondition FLUSHING and nothing pending.

Invariants (``check``)
  * every timer pending at flush start whose effective action was TRIGGER or WAIT when handled
    fired exactly once per time it was pending; no timer fired with effective action CANCEL
    unless it was already due;
  * the clock never goes back; FLUSHED has nothing pending;
  * the flush terminates: each ``handle`` removes one pending timer, and timers registered after
    the horizon are never fired, so with a budget ``b`` at most ``b`` firings happen.

What is left out: physical timers, key groups, snapshots (model/snapshot.py), the task.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CANCEL, TRIGGER, WAIT = 0, 1, 2
DUE = -1  # how a timer already due at flush start fired (as usual, whatever its action)
MAX_TIME = 2**63 - 1

Timer = tuple  # (ts, key, namespace)


class Rejected(Exception):
    """A step whose precondition does not hold."""


@dataclass
class FlushSpec:
    clock: int = 0
    override: int | None = None
    actions: dict = field(default_factory=dict)  # pending timer -> registered action
    phase: str = "RUNNING"
    due_part: bool = False  # FLUSHING, and no timer after the clock handled yet
    horizon: int | None = None
    fired: list = field(default_factory=list)  # (timer, action, processing time read)
    cancelled: list = field(default_factory=list)
    dropped_after_horizon: int = 0
    dropped_after_flush: int = 0
    budget: int | None = None

    def effective(self, timer: Timer) -> int:
        return self.override if self.override is not None else self.actions[timer]

    def set_override(self, action: int | None) -> None:
        """The override may change at any time (None removes it): from then on it is the
        effective action of every pending timer, the ones registered or restored before included."""
        self.override = action

    def outcome(self, timer: Timer) -> int | None:
        """What :meth:`handle` would do with a pending ``timer`` now, without doing it: the
        action it fires with (DUE: already due) or None (dropped)."""
        if self.due_part and timer[0] <= self.clock:
            return DUE
        horizon = max((t[0] for t in self.actions), default=None) if self.due_part else self.horizon
        if horizon is None or timer[0] > horizon:
            return None
        action = self.effective(timer)
        return None if action == CANCEL else action

    def register(self, timer: Timer, action: int | None = None) -> None:
        if self.phase == "FLUSHED":
            self.dropped_after_flush += 1
            return
        self.actions[timer] = CANCEL if action is None else action

    def delete(self, timer: Timer) -> None:
        self.actions.pop(timer, None)

    def start_flush(self) -> None:
        if self.phase != "RUNNING":
            raise Rejected("a service is flushed once")
        self.phase = "FLUSHING"
        self.due_part = True

    def _end_due_part(self) -> None:
        if self.due_part:
            self.due_part = False
            self.horizon = max((t[0] for t in self.actions), default=None)

    def candidates(self) -> list:
        if not self.actions:
            return []
        least = min(t[0] for t in self.actions)
        return [t for t in self.actions if t[0] == least]

    def handle(self, timer: Timer) -> tuple[int, int] | None:
        """Handles ``timer``; returns ``(action, processing time read)`` if it fires, else None."""
        if self.phase != "FLUSHING":
            raise Rejected("handle outside the flush")
        if timer not in self.candidates():
            raise Rejected(f"{timer} is not a pending timer of minimal timestamp")
        if self.due_part and timer[0] <= self.clock:
            del self.actions[timer]
            self._check_budget()
            self.fired.append((timer, DUE, self.clock))
            return DUE, self.clock
        self._end_due_part()
        action = self.effective(timer)
        del self.actions[timer]
        if self.horizon is None or timer[0] > self.horizon:
            self.dropped_after_horizon += 1
            return None
        if action == CANCEL:
            self.cancelled.append(timer)
            return None
        self._check_budget()
        if action == WAIT:
            self.clock = max(self.clock, timer[0])
            now = self.clock
        else:
            now = MAX_TIME
        self.fired.append((timer, action, now))
        return action, now

    def _check_budget(self) -> None:
        if self.budget is not None and len(self.fired) >= self.budget:
            raise Rejected("flush budget exceeded")

    def end_flush(self) -> None:
        if self.phase != "FLUSHING" or self.actions:
            raise Rejected("the flush ends when nothing is pending")
        self._end_due_part()
        self.phase = "FLUSHED"

    def check(self) -> None:
        assert all(action != CANCEL for _, action, _ in self.fired), "a CANCEL timer fired"
        assert all(now == (MAX_TIME if a == TRIGGER else now) for _, a, now in self.fired)
        assert all(now >= t[0] for t, a, now in self.fired if a in (WAIT, DUE)), "a timer fired before its time"
        waits = [now for _, a, now in self.fired if a in (WAIT, DUE)]
        assert waits == sorted(waits), "the clock went back"
        if self.phase == "FLUSHED":
            assert not self.actions, "a timer is pending after the flush"
        if self.horizon is not None:
            assert all(t[0] <= self.horizon for t, a, _ in self.fired if a != DUE), "a timer after the horizon fired"
