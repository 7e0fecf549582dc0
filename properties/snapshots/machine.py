"""Hypothesis state machines: copy-on-write timer snapshots against their model.

Every rule is a step of the ``snapshots`` family applied to both sides by
:class:`~streamproof.properties.snapshots.check.DifferentialSnapshots`, which checks the property's
invariants after each step. Registrations, deletions (also of a timer deleted and registered
again at once, the case the seed's design gets wrong) and firings in both domains interleave with
several snapshots started, advanced key group by key group and finished or cancelled in any
order; finished snapshots are corrupted (one byte anywhere, or one byte of one key group's section
payload with the file CRC recomputed, so only the section CRC can catch it) or restored into 1-3
subtasks (rescaling). The steps are
recorded, so a failure is the minimal scenario that ``streamproof replay`` reproduces.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, precondition, rule

from streamproof.impl.state.key_groups import Int32
from streamproof.properties import scenario as sc
from streamproof.properties.timers import steps as timer_steps
from streamproof.properties.snapshots import steps as ss
from streamproof.properties.reach import note
from streamproof.properties.snapshots.check import ALL_INVARIANTS, INVARIANTS, DifferentialSnapshots, names_key_group, section_spans

KEYS = st.sampled_from(["a", "b", "c", "key1", "日本", 1, 2, -7, Int32(1), Int32(-7)])
NAMESPACES = st.sampled_from(["n", "w"])
SERVICES = st.sampled_from([None, None, "other"])
DOMAINS = st.sampled_from(["event", "processing"])
ACTIONS = st.sampled_from([None, "CANCEL", "TRIGGER", "WAIT"])
# Long.MAX_VALUE is left out: a processing-time head there gets no physical timer (a Flink quirk
# the timers family covers); here an advance must fire every due timer.
TIMESTAMPS = st.one_of(st.integers(0, 12), st.integers(0, 12), st.sampled_from([-(2**63), 2**63 - 2]))

FORMATS = st.sampled_from([None, None, 1, 2])  # None: the current format (2)

REACHABILITY = (
    "timer deleted and registered again while a snapshot runs",
    "timer fired while a snapshot runs",
    "timer registered while a snapshot runs",
    "snapshot written key group by key group",
    "snapshot finished while another runs",
    "snapshots finished out of start order",
    "three snapshots running at once",
    "snapshot holds a TRIGGER or WAIT action",
    "format-1 snapshot restored",
    "format-1 snapshot restored with a processing-time timer",
    "rescaled restore (N -> M, N != M)",
    "restored timers fired",
    "corrupted snapshot rejected",
    "one section corrupted with the file checksum recomputed",
    "section corruption rejected naming its key group",
    "versioning dropped after the last snapshot",
    "history compacted while another snapshot reads it",
)


class SnapshotMachine(RuleBasedStateMachine):
    """Explores one property's invariants (:attr:`PROPERTY`; None: every invariant)."""

    PROPERTY: str | None = None
    timers = Bundle("timers")

    def __init__(self) -> None:
        super().__init__()
        self.run = DifferentialSnapshots(ALL_INVARIANTS if self.PROPERTY is None else INVARIANTS[self.PROPERTY])
        self.steps: list = []
        self.count = 0
        self.running: list[str] = []    # in start order
        self.finished: list[str] = []
        self.parallelism = {}           # snapshot id -> parallelism of its job
        self.formats = {}
        self.max_parallelism = 1
        self.job_parallelism = 1
        self.restored_ids: set = set()

    # -- recording ---------------------------------------------------------------------------
    def do(self, step) -> list[dict]:
        self.steps.append(step)
        try:
            return self.run.apply(step)
        except Exception as e:
            e.streamproof_steps = list(self.steps)  # the reporter turns these into a scenario
            raise

    def _new_id(self) -> str:
        self.count += 1
        return f"c{self.count}"

    # -- rules ---------------------------------------------------------------------------------
    @initialize(max_parallelism=st.sampled_from([4, 16, 128, 1]), parallelism=st.integers(1, 3))
    def new_job(self, max_parallelism, parallelism):
        self.max_parallelism, self.job_parallelism = max_parallelism, min(parallelism, max_parallelism)
        self.do(ss.NewJob(max_parallelism, self.job_parallelism))

    @rule(target=timers, key=KEYS, domain=DOMAINS, namespace=NAMESPACES, ts=TIMESTAMPS, action=ACTIONS,
          service=SERVICES)
    def register(self, key, domain, namespace, ts, action, service):
        self.do(timer_steps.SetKey(key))
        self.do(timer_steps.Register(domain, namespace, ts, action if domain == "processing" else None, service))
        if self.running:
            note("timer registered while a snapshot runs")
        return (key, domain, namespace, ts, service)

    @rule(timer=timers, absent=st.sampled_from([False, False, False, True]), data=st.data())
    def delete(self, timer, absent, data):
        """Deletes a registered timer (or, sometimes, one that was never registered)."""
        key, domain, namespace, ts, service = timer
        if absent:
            key, ts = data.draw(KEYS, label="key"), data.draw(TIMESTAMPS, label="ts")
        self.do(timer_steps.SetKey(key))
        self.do(timer_steps.Delete(domain, namespace, ts, service))

    @rule(timer=timers, action=ACTIONS)
    def delete_and_register_again(self, timer, action):
        """A window operator moving a cleanup timer: the case one create/delete pair gets wrong."""
        key, domain, namespace, ts, service = timer
        self.do(timer_steps.SetKey(key))
        self.do(timer_steps.Delete(domain, namespace, ts, service))
        self.do(timer_steps.Register(domain, namespace, ts, action if domain == "processing" else None, service))
        if self.running:
            note("timer deleted and registered again while a snapshot runs")

    @rule(domain=DOMAINS, to=TIMESTAMPS)
    def advance(self, domain, to):
        step = timer_steps.AdvanceWatermark(to) if domain == "event" else timer_steps.AdvanceProcessingTime(to)
        if any(e["event"] == "fire" for e in self.do(step)):
            if self.running:
                note("timer fired while a snapshot runs")
            if self.restored_ids:
                note("restored timers fired")

    @precondition(lambda self: len(self.running) < 3)
    @rule(format=FORMATS)
    def start_snapshot(self, format):
        snapshot_id = self._new_id()
        self.do(ss.StartSnapshot(snapshot_id, format))
        self.running.append(snapshot_id)
        self.parallelism[snapshot_id] = self.job_parallelism
        self.formats[snapshot_id] = format or 2
        if len(self.running) >= 3:
            note("three snapshots running at once")
        if self.formats[snapshot_id] == 2 and any(
                a in ("TRIGGER", "WAIT") for a in self.run.model.model.live.values()):
            note("snapshot holds a TRIGGER or WAIT action")

    @precondition(lambda self: self.running)
    @rule(data=st.data(), steps=st.integers(1, 8))
    def snapshot_step(self, data, steps):
        snapshot_id = data.draw(st.sampled_from(self.running), label="id")
        self.do(ss.SnapshotStep(snapshot_id, steps))
        note("snapshot written key group by key group")

    @precondition(lambda self: self.running)
    @rule(data=st.data(), cancel=st.sampled_from([False, False, False, True]))
    def end_snapshot(self, data, cancel):
        """Finishes (or cancels) any running snapshot, not necessarily the oldest."""
        snapshot_id = data.draw(st.sampled_from(self.running), label="id")
        self.running.remove(snapshot_id)
        if cancel:
            self.do(ss.CancelSnapshot(snapshot_id))
            return
        if snapshot_id != self._started_first(snapshot_id):
            note("snapshots finished out of start order")
        if self.running:
            note("snapshot finished while another runs")
        elif self._had_history():
            note("versioning dropped after the last snapshot")
        self.do(ss.FinishSnapshot(snapshot_id))
        self.finished.append(snapshot_id)

    @precondition(lambda self: len(self.running) <= 1)
    @rule(timer=timers, action=ACTIONS, delete_first=st.booleans(), formats=st.tuples(FORMATS, FORMATS))
    def compaction_probe(self, timer, action, delete_first, formats):
        """Issue 31: a timer changed before and after a second snapshot starts, then the first
        snapshot finishes: compaction must keep, of the timer's history, what the second still
        reads (it ends later, through any rule)."""
        key, domain, namespace, ts, service = timer
        action = action if domain == "processing" else None
        change = [timer_steps.Delete(domain, namespace, ts, service), timer_steps.Register(domain, namespace, ts,
                                                                                           action, service)]
        if not delete_first:
            change.reverse()
        first = self._new_id()
        self.do(ss.StartSnapshot(first, formats[0]))
        self.parallelism[first], self.formats[first] = self.job_parallelism, formats[0] or 2
        self.do(timer_steps.SetKey(key))
        self.do(change[0])
        second = self._new_id()
        self.do(ss.StartSnapshot(second, formats[1]))
        self.parallelism[second], self.formats[second] = self.job_parallelism, formats[1] or 2
        self.running.append(second)
        self.do(timer_steps.SetKey(key))
        self.do(change[1])
        if self._had_history():
            note("history compacted while another snapshot reads it")
        self.do(ss.FinishSnapshot(first))
        self.finished.append(first)

    @rule(key=KEYS, namespace=NAMESPACES, ts=TIMESTAMPS, action=ACTIONS, service=SERVICES,
          parallelism=st.integers(1, 3))
    def format_1_probe(self, key, namespace, ts, action, service, parallelism):
        """Issue 31: a pending processing-time timer in a format-1 snapshot (written before
        FLIP-269's actions existed), restored: the timer comes back with CANCEL, whatever action
        it was registered with."""
        self.do(timer_steps.SetKey(key))
        self.do(timer_steps.Register("processing", namespace, ts, action, service))
        snapshot_id = self._new_id()
        self.do(ss.StartSnapshot(snapshot_id, 1))
        self.parallelism[snapshot_id], self.formats[snapshot_id] = self.job_parallelism, 1
        self.do(ss.FinishSnapshot(snapshot_id))
        self.finished.append(snapshot_id)
        parallelism = min(parallelism, self.max_parallelism)
        if any(domain == "processing" for _, domain, *_ in self.run.model.model.live):
            note("format-1 snapshot restored with a processing-time timer")
        self.do(ss.RestoreJob(snapshot_id, parallelism))
        self.running = []
        self.job_parallelism = parallelism
        self.restored_ids.add(snapshot_id)

    def _started_first(self, snapshot_id: str) -> str:
        return min([snapshot_id, *self.running], key=lambda i: int(i[1:]))

    def _had_history(self) -> bool:
        return any(v.layers and any(layer.history for layer in v.layers)
                   for v in (s.manager.snapshot_versions for s in self.run.impl.subtasks) if v is not None)

    @precondition(lambda self: self.finished)
    @rule(data=st.data(), parallelism=st.integers(1, 3), corrupt=st.sampled_from([False, False, True]))
    def restore(self, data, parallelism, corrupt):
        """Restores a finished snapshot into 1-3 subtasks, or first flips bits of one of its files
        (then the restore must be rejected and the job go on unchanged)."""
        snapshot_id = data.draw(st.sampled_from(self.finished), label="id")
        parallelism = min(parallelism, self.max_parallelism)
        if corrupt:
            subtask = data.draw(st.integers(0, self.parallelism[snapshot_id] - 1), label="subtask")
            offset, xor = data.draw(st.integers(0, 2**16), label="offset"), data.draw(st.integers(1, 255), label="xor")
            self.do(ss.Corrupt(snapshot_id, subtask, offset, xor))
            self.finished.remove(snapshot_id)  # never restored successfully again
            observed = self._restore_corrupted(snapshot_id)
            if observed and observed[-1]["event"] == "rejected":
                note("corrupted snapshot rejected")
            return
        if parallelism != self.parallelism[snapshot_id]:
            note("rescaled restore (N -> M, N != M)")
        if self.formats[snapshot_id] == 1:
            note("format-1 snapshot restored")
        self.do(ss.RestoreJob(snapshot_id, parallelism))
        self.running = []  # a restore abandons the snapshots in flight
        self.job_parallelism = parallelism
        self.restored_ids.add(snapshot_id)

    @precondition(lambda self: self.finished)
    @rule(data=st.data(), xor=st.integers(1, 255))
    def corrupt_section_and_restore(self, data, xor):
        """Flips bits of one byte of one key group's section payload, recomputes the file CRC (only
        the section CRC can tell), and restores: rejected, naming the key group, the job unchanged.
        The byte is anywhere in the payload, or among its first or last few bytes."""
        sections = [(snapshot_id, subtask, key_group) for snapshot_id in self.finished
                    for subtask in range(self.parallelism[snapshot_id])
                    for key_group in self.run.model.section_key_groups(snapshot_id, subtask)]
        if not sections:
            return
        snapshot_id, subtask, key_group = data.draw(st.sampled_from(sections), label="section")
        length = self._payload_length(snapshot_id, subtask, key_group)
        offset = data.draw(st.one_of(st.integers(0, max(length - 1, 0)), st.integers(0, 3),
                                     st.integers(max(length - 4, 0), max(length - 1, 0))), label="offset")
        if self.do(ss.CorruptSection(snapshot_id, subtask, key_group, offset, xor))[-1]["event"] == "corrupted":
            note("one section corrupted with the file checksum recomputed")
        self.finished.remove(snapshot_id)  # never restored successfully again
        observed = self._restore_corrupted(snapshot_id)
        if observed and observed[-1]["event"] == "rejected":
            note("corrupted snapshot rejected")
            if names_key_group(observed[-1]["message"], key_group):
                note("section corruption rejected naming its key group")

    def _restore_corrupted(self, snapshot_id: str) -> list[dict]:
        """A rejected restore changes nothing: the job keeps its parallelism and its snapshots in
        flight. The scenario rules, which cannot know a restore will be rejected, count every
        ``restore`` as setting the parallelism and abandoning the running snapshots; so the restore
        asks for the job's own parallelism, and the recorded steps name the running ones no more."""
        observed = self.do(ss.RestoreJob(snapshot_id, self.job_parallelism))
        self.running = []
        return observed

    def _payload_length(self, snapshot_id: str, subtask: int, key_group: int) -> int:
        """The payload length of the section as written (a choice of offsets only; 1 if absent)."""
        files = self.run.impl.snapshots[snapshot_id]["files"]
        for group, start, end in section_spans(files[subtask % len(files)])[0]:
            if group == key_group:
                return max(end - start - 13, 1)
        return 1

    def scenario(self) -> sc.Scenario:
        return sc.Scenario(family="snapshots", steps=tuple(self.steps), property=self.PROPERTY)



class PointInTimeMachine(SnapshotMachine):
    PROPERTY = "snapshots.point-in-time"


class RestoreEquivalenceMachine(SnapshotMachine):
    PROPERTY = "snapshots.restore-equivalence"


__all__ = ["SnapshotMachine", "PointInTimeMachine", "RestoreEquivalenceMachine", "REACHABILITY"]
