"""Specification of point-in-time timer snapshots, restore and rescaling (DESIGN.md §3.3).

What is modelled
  * The live timers of a keyed job, whatever its parallelism: a set of entries
    ``(service, domain, timer)`` with a payload, the termination action of a processing-time
    timer (FLIP-269: CANCEL, TRIGGER or WAIT; registered with the timer, kept while it is live;
    registering a live timer again changes nothing, its action included). Event-time timers
    carry no action (None).
  * Firing, as far as snapshots care: advancing a domain to ``t`` fires exactly the live timers of
    that domain with timestamp <= t, each once, and they stop being live.
  * A snapshot *is* the set of live timers at the moment it starts. What happens while it runs
    (registrations, deletions, firings, other snapshots starting and finishing in any order)
    does not change it. Finishing hands it out; cancelling drops it.
  * Restore: the job's live timers become the snapshot's, whatever the old and new parallelism
    (N -> M loses and duplicates nothing); snapshots still running are abandoned (a failover
    aborts in-flight checkpoints). A format-1 snapshot has no actions: every restored
    processing-time timer gets CANCEL. A corrupted snapshot is rejected and the job is unchanged.

What is left out
  * Versions, tombstones, locks, threads, bytes and key groups: how a snapshot is taken and where
    a timer lives are the implementation's business (``impl/timers/snapshots.py``); the model states only
    what every snapshot must contain.
  * Which timer fires first among those due, watermarks, physical timers and callbacks: the
    ``timers`` family (``model/timers.py``) specifies those. Here an advance is a set operation.

Checked by the differential state machine ``properties/snapshots/machine.py`` against the
implementation (jobs of 1-3 subtasks, up to three concurrent snapshots, restores into 1-3
subtasks): 300 examples of 40 steps in the default test run, 20,000 examples of 60 steps on the
``campaign`` profile, every invariant held; the reachability counts are in docs/properties.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

CANCEL, TRIGGER, WAIT = "CANCEL", "TRIGGER", "WAIT"
ACTIONS = (CANCEL, TRIGGER, WAIT)
DOMAINS = ("event", "processing")

Timer = tuple  # (ts, key, namespace)
Entry = tuple  # (service, domain, timer)


class Rejected(Exception):
    """The step is refused; the state is unchanged."""


@dataclass
class Snapshot:
    contents: dict   # Entry -> payload: the live timers when the snapshot started
    format: int      # 1: no actions; 2: with actions
    state: str = "running"  # running | finished | cancelled
    corrupted: bool = False


@dataclass
class SnapshotModel:
    live: dict = field(default_factory=dict)       # Entry -> payload (action, or None for event time)
    snapshots: dict = field(default_factory=dict)  # id -> Snapshot

    # -- timers ----------------------------------------------------------------------------
    def register(self, service: str, domain: str, timer: Timer, action: str | None) -> None:
        """Adds the timer unless it is live (then nothing changes, its action included)."""
        entry = (service, domain, timer)
        if entry not in self.live:
            self.live[entry] = (action or CANCEL) if domain == "processing" else None

    def delete(self, service: str, domain: str, timer: Timer) -> None:
        self.live.pop((service, domain, timer), None)

    def advance(self, domain: str, to: int) -> Counter:
        """Fires every live timer of ``domain`` due at ``to``; returns them (a multiset)."""
        due = [entry for entry in self.live if entry[1] == domain and entry[2][0] <= to]
        for entry in due:
            del self.live[entry]
        return Counter(due)

    # -- snapshots -------------------------------------------------------------------------
    def start(self, snapshot_id: str, format: int) -> None:
        """A snapshot is the set of live timers at the moment it starts."""
        if snapshot_id in self.snapshots:
            raise Rejected(f"snapshot {snapshot_id!r} exists")
        self.snapshots[snapshot_id] = Snapshot(dict(self.live), format)

    def finish(self, snapshot_id: str) -> dict:
        """Ends a running snapshot; its contents as a restore will read them back."""
        snapshot = self._running(snapshot_id)
        snapshot.state = "finished"
        return self.readable(snapshot_id)

    def cancel(self, snapshot_id: str) -> None:
        self._running(snapshot_id).state = "cancelled"

    def corrupt(self, snapshot_id: str) -> None:
        """A byte of one of its files changes: it can no longer be restored."""
        snapshot = self.snapshots.get(snapshot_id)
        if snapshot is None or snapshot.state != "finished":
            raise Rejected(f"snapshot {snapshot_id!r} is not finished")
        snapshot.corrupted = True

    def readable(self, snapshot_id: str) -> dict:
        """What restoring the snapshot yields: format 1 carries no action, so CANCEL."""
        snapshot = self.snapshots[snapshot_id]
        if snapshot.format == 1:
            return {e: (CANCEL if e[1] == "processing" else None) for e in snapshot.contents}
        return dict(snapshot.contents)

    def restore(self, snapshot_id: str) -> None:
        """The job restarts from a finished snapshot; running snapshots are abandoned."""
        snapshot = self.snapshots.get(snapshot_id)
        if snapshot is None or snapshot.state != "finished":
            raise Rejected(f"snapshot {snapshot_id!r} is not finished")
        if snapshot.corrupted:
            raise Rejected(f"snapshot {snapshot_id!r} is corrupted")
        self.live = self.readable(snapshot_id)
        for other in self.snapshots.values():
            if other.state == "running":
                other.state = "cancelled"

    def running(self) -> list[str]:
        return [i for i, s in self.snapshots.items() if s.state == "running"]

    def _running(self, snapshot_id: str) -> Snapshot:
        snapshot = self.snapshots.get(snapshot_id)
        if snapshot is None or snapshot.state != "running":
            raise Rejected(f"snapshot {snapshot_id!r} is not running")
        return snapshot


# -- invariants --------------------------------------------------------------------------------
def point_in_time(model: SnapshotModel, snapshot_id: str, restored: Counter) -> bool:
    """A finished snapshot reads back as exactly the live timers at its start, each once."""
    return restored == Counter(model.readable(snapshot_id).items())


def same_live_timers(model: SnapshotModel, observed: Counter) -> bool:
    """The job holds exactly the model's live timers, each once, with their actions."""
    return observed == Counter(model.live.items())


def same_firings(expected: Counter, fired: Counter) -> bool:
    """An advance fired exactly the due timers, each once."""
    return expected == fired
