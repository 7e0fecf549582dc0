"""Specification of Flink's keyed timer service (``InternalTimerServiceImpl``).

What is modelled
  * Timers ``(ts, key, namespace)``: per named service and time domain a *set*; registering a
    present timer or deleting an absent one changes nothing. The key comes from the key context.
  * Key groups: an instance owns ``[start, end]``; a timer whose key is outside it is rejected.
  * Event time: advancing sets the watermark first, then fires minimal due timers one at a time
    while any timer <= watermark remains (callbacks may add due timers: they fire in the same
    advance). The key context is the firing timer's key and stays there.
  * Interruptible advance (FLIP-443): after each fired timer ``should_stop`` is asked; named
    services are advanced in *map order* (below) and the advance stops at the first interrupted
    one: the services after it keep their old watermark.
  * Map order: Flink keeps the named services in a ``java.util.HashMap<String, ...>`` and visits
    them in its iteration order: by bucket ``spread(name) & (capacity - 1)``, where
    ``spread = h ^ (h >>> 16)`` of ``h = String.hashCode()``, and within a bucket by the order the
    names entered the map. The capacity starts at 16 and doubles when the map holds more than
    3/4 of it, or when a bucket reaches 9 names below capacity 64. (A bucket of 9 names at
    capacity 64 or more is a tree in Java, ordered otherwise: not modelled, it needs 9 service
    names colliding in 6 hash bits.) A snapshot lists its services in map order; a restore puts
    them into the new map in that order.
  * Processing time: one simulated clock per instance with physical timers. Per service at most
    one physical timer is scheduled; it is (re)registered only when a timer strictly earlier
    than the head arrives or after a firing left a head and no new physical timer. Deletes never
    reschedule (spurious wake-ups).
  * ``snapshot`` is what Flink's ``snapshotTimersForKeyGroup`` returns: *views* of the services'
    live timer sets, read when a restore uses them (Flink 2.3 shows this: vector
    ``snapshot_is_point_in_time`` restores a timer registered after the snapshot and not one
    deleted after it). A restore keeps the timers of its key groups. Point-in-time checkpoints
    are the copy-on-write snapshots of ``model/snapshot.py``.
  * A firing budget: a service that would fire more than ``budget`` timers in one call fails.

What is left out
  * Which of several equal-timestamp timers fires first: the model does not choose. Every firing
    asks ``choose(candidates)``; a checker passes the implementation's choice and the model
    verifies it is one of the allowed candidates.
  * Costs, data structures, serialization, concurrency: a snapshot is a set, time is a number.

Checked by ``tests/test_timer_vectors.py`` (all 25 Flink 2.3 traces) and by the differential
state machine ``properties/timers/machine.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from streamproof.model.keygroups import java_hash, key_group

MIN_TIME, MAX_TIME = -(2**63), 2**63 - 1
DEFAULT_SERVICE = "timers"

Timer = tuple  # (ts, key, namespace)
Chooser = Callable[[str, str, list], Timer]  # (service, domain, candidates) -> the one that fires


class Rejected(Exception):
    """The step is rejected as Flink would reject it (the run goes on)."""


class BudgetExceeded(Exception):
    """A service would fire more than its budget in one call (the run ends)."""


@dataclass
class Service:
    name: str
    event: set = field(default_factory=set)       # pending event-time timers
    processing: set = field(default_factory=set)  # pending processing-time timers
    watermark: int = MIN_TIME
    physical: int | None = None                   # id of this service's scheduled physical timer


@dataclass
class Instance:
    max_parallelism: int
    key_groups: tuple[int, int]
    services: dict = field(default_factory=dict)  # name -> Service, in the order names entered the map
    current_key: object = None
    clock: int = MIN_TIME
    physical: dict = field(default_factory=dict)  # id -> (ts, service name): pending physical timers
    next_physical_id: int = 0

    def owns(self, key) -> bool:
        start, end = self.key_groups
        return start <= key_group(key, self.max_parallelism) <= end


def map_order(names: list) -> list:
    """The iteration order of a Java ``HashMap`` whose String keys were put in the order of ``names``."""
    def spread(name):
        h = java_hash(name) & 0xFFFFFFFF
        return h ^ (h >> 16)

    capacity = 16
    for size in range(1, len(names) + 1):
        bucket = spread(names[size - 1]) & (capacity - 1)
        if capacity < 64 and sum(spread(n) & (capacity - 1) == bucket for n in names[:size]) >= 9:
            capacity *= 2
        if size > capacity * 3 // 4:
            capacity *= 2
    return sorted(names, key=lambda name: (spread(name) & (capacity - 1), names.index(name)))


def in_map_order(inst: "Instance") -> list:
    """The instance's services in map order."""
    return [inst.services[name] for name in map_order(list(inst.services))]


@dataclass(frozen=True)
class Snapshot:
    max_parallelism: int
    timers: dict  # service name -> (event set, processing set): the live sets, not copies; map order


class TimerModel:
    """The timer-service state of a scenario and its actions. ``emit`` receives observations."""

    def __init__(self, choose: Chooser, emit: Callable[[dict], None], budget: int, encode_key=lambda k: k):
        self.instances: list[Instance] = []
        self.current: Instance | None = None
        self.snapshots: dict[str, Snapshot] = {}
        self.reactions: dict[tuple, list] = {}
        self.choose, self.emit, self.budget, self.encode_key = choose, emit, budget, encode_key
        self.fired_in_call = 0

    # -- instances ------------------------------------------------------------------------
    def new_instance(self, max_parallelism: int, key_groups: tuple[int, int]) -> None:
        self._start(Instance(max_parallelism, tuple(key_groups)), [DEFAULT_SERVICE], {})

    def restore(self, snapshot_id: str, max_parallelism: int, key_groups: tuple[int, int]) -> None:
        snapshot = self.snapshots[snapshot_id]
        if snapshot.max_parallelism != max_parallelism:
            raise Rejected(f"snapshot {snapshot_id!r} has max_parallelism {snapshot.max_parallelism}")
        instance = Instance(max_parallelism, tuple(key_groups))
        restored = {
            name: ({t for t in ev if instance.owns(t[1])}, {t for t in pr if instance.owns(t[1])})
            for name, (ev, pr) in snapshot.timers.items()
        }
        self._start(instance, [DEFAULT_SERVICE, *restored], restored)

    def _start(self, instance: Instance, names: list[str], restored: dict) -> None:
        """Creates the services; each restored service schedules a physical timer for its head."""
        self.instances.append(instance)
        self.current = instance
        for name in dict.fromkeys(names):
            event, processing = restored.get(name, (set(), set()))
            service = self._service(name)
            service.event |= event
            service.processing |= processing
            if service.processing:
                self._schedule(service, min(t[0] for t in service.processing))
        self.emit({"event": "instance", "index": len(self.instances) - 1})

    def use_instance(self, index: int) -> None:
        if index >= len(self.instances):  # the restore that would have created it was rejected
            raise Rejected(f"no instance {index}: only {len(self.instances)} were created")
        self.current = self.instances[index]

    def _service(self, name: str | None) -> Service:
        name = name or DEFAULT_SERVICE
        return self.current.services.setdefault(name, Service(name))

    # -- key context and registration ----------------------------------------------------
    def set_key(self, key) -> None:
        self.current.current_key = key

    def _timer(self, namespace, ts) -> Timer:
        key = self.current.current_key
        if key is None:
            raise Rejected("no current key: set a key before registering or deleting a timer")
        if not self.current.owns(key):
            raise Rejected(f"key {key!r} is outside key groups {self.current.key_groups}")
        return (ts, key, namespace)

    def register(self, service: str | None, domain: str, namespace, ts: int) -> None:
        svc, timer = self._service(service), self._timer(namespace, ts)
        if domain == "event":
            svc.event.add(timer)
            return
        old_head = min((t[0] for t in svc.processing), default=None)
        if timer in svc.processing:
            return
        svc.processing.add(timer)
        # Only a strictly earlier head moves the single physical timer.
        if ts < (old_head if old_head is not None else MAX_TIME):
            if svc.physical is not None:
                self._cancel(svc)
            self._schedule(svc, ts)

    def delete(self, service: str | None, domain: str, namespace, ts: int) -> None:
        svc, timer = self._service(service), self._timer(namespace, ts)
        (svc.event if domain == "event" else svc.processing).discard(timer)  # never reschedules

    # -- physical timers -------------------------------------------------------------------
    def _schedule(self, svc: Service, ts: int) -> None:
        inst = self.current
        svc.physical = inst.next_physical_id
        inst.physical[svc.physical] = (ts, svc.name)
        inst.next_physical_id += 1
        self.emit({"event": "physical_register", "ts": ts})

    def _cancel(self, svc: Service) -> None:
        ts, _ = self.current.physical.pop(svc.physical)
        svc.physical = None
        self.emit({"event": "physical_cancel", "ts": ts})

    # -- firing ----------------------------------------------------------------------------
    def _fire(self, svc: Service, domain: str, due: set) -> None:
        """Fires one minimal timer of ``due`` (the model accepts any of equal timestamps)."""
        low = min(t[0] for t in due)
        candidates = sorted((t for t in due if t[0] == low), key=repr)
        timer = self.choose(svc.name, domain, candidates)
        assert timer in candidates, f"{timer} is not a minimal due timer of {svc.name}/{domain}"
        due.remove(timer)
        self.current.current_key = timer[1]
        event = {"event": "fire", "domain": domain, "key": self.encode_key(timer[1]), "namespace": timer[2],
                 "ts": timer[0], "current_key": self.encode_key(timer[1]), "watermark": svc.watermark}
        if svc.name != DEFAULT_SERVICE:
            event["service"] = svc.name
        self.emit(event)
        self.fired_in_call += 1
        for step in self.reactions.get((svc.name, domain, timer[1], timer[2], timer[0]), []):
            step(self)

    def _check_budget(self, svc: Service, fired: int, due_left: bool, call: str, time: int) -> None:
        if fired >= self.budget and due_left:
            raise BudgetExceeded(f"service {svc.name!r} exceeds budget {self.budget} in {call}({time})")

    def try_advance_watermark(self, to: int, should_stop: Callable[[], bool]) -> bool:
        self.fired_in_call = 0
        for svc in in_map_order(self.current):
            svc.watermark = to
            fired = 0
            while any(t[0] <= to for t in svc.event):
                self._check_budget(svc, fired, True, "advance_watermark", to)
                self._fire(svc, "event", svc.event)
                fired += 1
                if should_stop():
                    return False
        return True

    def advance_watermark(self, to: int) -> None:
        self.try_advance_watermark(to, lambda: False)

    def advance_processing_time(self, to: int) -> None:
        """The clock jumps to ``to``; physical timers <= ``to`` fire one by one, earliest first."""
        inst = self.current
        inst.clock = to
        fired = 0
        while due := [(ts, pid) for pid, (ts, _) in inst.physical.items() if ts <= to]:
            ts, pid = min(due)
            _, name = inst.physical.pop(pid)
            fired += 1
            if fired > self.budget:
                raise BudgetExceeded(f"more than {self.budget} physical timers while advancing to {to}")
            self._on_processing_time(inst.services[name], ts)

    def _on_processing_time(self, svc: Service, time: int) -> None:
        svc.physical = None
        fired = 0
        while any(t[0] <= time for t in svc.processing):
            self._check_budget(svc, fired, True, "on_processing_time", time)
            self._fire(svc, "processing", svc.processing)
            fired += 1
        if svc.processing and svc.physical is None:
            self._schedule(svc, min(t[0] for t in svc.processing))

    # -- snapshots and observations ----------------------------------------------------------
    def snapshot(self, snapshot_id: str) -> None:
        inst = self.current
        self.snapshots[snapshot_id] = Snapshot(
            inst.max_parallelism,
            {s.name: (s.event, s.processing) for s in in_map_order(inst)},  # views, as Flink
        )

    def count(self) -> None:
        inst = self.current
        self.emit({
            "event": "count",
            "event_timers": sum(len(s.event) for s in inst.services.values()),
            "processing_timers": sum(len(s.processing) for s in inst.services.values()),
            "physical_timers": len(inst.physical),
        })

    def pending_by_key_group(self) -> dict:
        """Invariant view: (service, domain, key group) -> set of pending timers."""
        inst, view = self.current, {}
        for svc in inst.services.values():
            for domain, timers in (("event", svc.event), ("processing", svc.processing)):
                for t in timers:
                    view.setdefault((svc.name, domain, key_group(t[1], inst.max_parallelism)), set()).add(t)
        return view


# -- invariants (checked after every step by the state machine) ------------------------------
def at_most_one_physical_timer_at_head(inst: Instance) -> bool:
    """Each service has at most one physical timer; with timers pending it has one, at or before its head."""
    owners = [name for _, name in inst.physical.values()]
    if len(owners) != len(set(owners)):
        return False
    for svc in inst.services.values():
        if svc.processing:
            if svc.physical is None:
                # Flink compares a new head against Long.MAX_VALUE meaning "no head": a timer at
                # MAX registered into an empty queue schedules no physical timer.
                if min(t[0] for t in svc.processing) == MAX_TIME:
                    continue
                return False
            if inst.physical[svc.physical][0] > min(t[0] for t in svc.processing):
                return False
    return True


def reaction(kind: str, service: str | None, domain: str, namespace, ts: int):
    """A reaction step (register or delete) as a callable on the model."""
    def run(model: TimerModel) -> None:
        getattr(model, kind)(service, domain, namespace, ts)
    return run


def add_reaction(model: TimerModel, service: str | None, domain: str, key, namespace, ts: int,
                 then: Iterable) -> None:
    model.reactions.setdefault((service or DEFAULT_SERVICE, domain, key, namespace, ts), []).extend(then)
