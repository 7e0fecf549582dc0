"""Hypothesis state machine: the timer service implementation against its model.

Every rule is a step of the ``timers`` scenario family, applied to both sides by
:class:`~streamproof.properties.timers.check.DifferentialTimers` (which checks the invariants after each
step). The steps are recorded, so a failure is reported as the minimal scenario that
``streamproof replay`` reproduces.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, precondition, rule

from streamproof.impl.state.key_groups import Int32, compute_key_group_range_for_operator_index
from streamproof.properties import scenario as sc
from streamproof.properties.timers import steps as timer_steps
from streamproof.properties.reach import note
from streamproof.properties.timers.check import DifferentialTimers
from streamproof.properties.verdict import Violation

BUDGET = 64  # a runaway callback fails fast
KEYS = st.sampled_from(["a", "b", "c", "key1", "日本", 1, 2, -7, Int32(1), Int32(-7)])
NAMESPACES = st.sampled_from(["n", "w"])
SERVICES = st.sampled_from([None, None, None, "other"])
DOMAINS = st.sampled_from(["event", "processing"])
EXTREMES = st.sampled_from([-(2**63), 2**63 - 1])
TIMESTAMPS = st.one_of(st.integers(0, 12), st.integers(0, 12), st.integers(0, 12), EXTREMES)


class MachineFailure(Exception):
    """Carries the recorded steps of a failing run to whoever reports it."""


class TimersMachine(RuleBasedStateMachine):
    snapshots = Bundle("snapshots")
    timers = Bundle("timers")

    def __init__(self) -> None:
        super().__init__()
        self.run = DifferentialTimers(budget=BUDGET)
        self.steps: list = []
        self.max_parallelism = 128
        self.snapshot_count = 0
        self._inline: list[tuple[int, int]] = []  # the unwatched clocks' fire_inline counts

    # -- recording ---------------------------------------------------------------------------
    def do(self, step) -> list[dict]:
        self.steps.append(step)
        try:
            observed = self.run.apply(step, check_invariants=False)
        except Exception as e:
            e.streamproof_steps = list(self.steps)  # the reporter turns these into a scenario
            raise
        self._notice(step, observed)
        return observed

    def _notice(self, step, observed: list[dict]) -> None:
        fires = [e for e in observed if e["event"] == "fire"]
        if fires:
            note(f"fired {fires[0]['domain']}-time timers")
        if any(a["ts"] == b["ts"] and a["domain"] == b["domain"] for a, b in zip(fires, fires[1:])):
            note("equal-timestamp timers fired together (tie)")
        for e in observed:
            if e["event"] == "try_advance_watermark" and not e["completed"]:
                note("try_advance_watermark interrupted")
            elif e["event"] == "error":
                note("budget exceeded (fatal)" if e.get("fatal") else "step rejected")
            elif e["event"] == "physical_cancel":
                note("physical timer moved earlier")
        inline = [(i.clock.inline_fired, i.clock.inline_passed_over) for i in self.run.unwatched.instances]
        if inline != self._inline:
            if sum(a for a, _ in inline) > sum(a for a, _ in self._inline):
                note("head's physical timer fired inline (unwatched clock)")
            if sum(b for _, b in inline) > sum(b for _, b in self._inline):
                note("inline firing passed over: another physical timer due first")
            self._inline = inline
        if step.op == "count" and len(self.run.impl.instances) > 1 and observed and observed[0].get("event_timers", 0) + observed[0].get("processing_timers", 0):
            note("restored instance holds timers")

    @property
    def active(self) -> bool:
        return not self.run.ended

    # -- rules -------------------------------------------------------------------------------
    @initialize(max_parallelism=st.sampled_from([1, 2, 7, 10, 128]), key=KEYS)
    def new_instance(self, max_parallelism, key):
        self.max_parallelism = max_parallelism
        self.do(timer_steps.NewInstance(max_parallelism, (0, max_parallelism - 1)))
        self.do(timer_steps.SetKey(key))

    @precondition(lambda self: self.active)
    @rule(key=KEYS)
    def set_key(self, key):
        self.do(timer_steps.SetKey(key))

    @precondition(lambda self: self.active)
    @rule(target=timers, domain=DOMAINS, namespace=NAMESPACES, ts=TIMESTAMPS, service=SERVICES)
    def register(self, domain, namespace, ts, service):
        self.do(timer_steps.Register(domain, namespace, ts, None, service))
        return (domain, self.run.impl.current.key_context.get_current_key(), namespace, ts, service)

    @precondition(lambda self: self.active)
    @rule(domain=DOMAINS, namespace=NAMESPACES, ts=TIMESTAMPS, keys=st.lists(KEYS, min_size=2, max_size=4))
    def register_for_many_keys(self, domain, namespace, ts, keys):
        """Many keys' timers at one timestamp (a window end shared by all keys): ties."""
        for key in keys:
            self.do(timer_steps.SetKey(key))
            self.do(timer_steps.Register(domain, namespace, ts, None, None))

    def _processing_head(self):
        service = self.run.impl.current.manager.services.get("timers")
        return service.processing_time_timers_queue.peek() if service else None

    @precondition(lambda self: self.active and self._processing_head() is not None)
    @rule()
    def delete_processing_head(self):
        """Deleting the head leaves its physical timer: the next wake-up is spurious."""
        head = self._processing_head()
        self.do(timer_steps.SetKey(head.key))
        self.do(timer_steps.Delete("processing", head.namespace, head.timestamp, None))

    @precondition(lambda self: self.active)
    @rule(timer=timers)
    def delete_registered(self, timer):
        domain, key, namespace, ts, service = timer
        if key is not None:
            self.do(timer_steps.SetKey(key))
        self.do(timer_steps.Delete(domain, namespace, ts, service))

    @precondition(lambda self: self.active)
    @rule(domain=DOMAINS, namespace=NAMESPACES, ts=TIMESTAMPS)
    def delete_any(self, domain, namespace, ts):
        self.do(timer_steps.Delete(domain, namespace, ts, None))

    @precondition(lambda self: self.active)
    @rule(to=TIMESTAMPS)
    def advance_watermark(self, to):
        self.do(timer_steps.AdvanceWatermark(to))

    @precondition(lambda self: self.active)
    @rule(to=TIMESTAMPS, interrupt_after=st.integers(1, 3))
    def try_advance_watermark(self, to, interrupt_after):
        self.do(timer_steps.TryAdvanceWatermark(to, interrupt_after))

    @precondition(lambda self: self.active)
    @rule(to=TIMESTAMPS)
    def advance_processing_time(self, to):
        for service in self.run.impl.current.manager.services.values():
            physical, head = service.next_timer, service.processing_time_timers_queue.peek()
            if physical is not None and physical.pending and physical.timestamp <= to and (
                    head is None or head.timestamp > physical.timestamp):
                note("spurious wake-up (physical timer with nothing due)")
        self.do(timer_steps.AdvanceProcessingTime(to))

    @precondition(lambda self: self.active)
    @rule(keys=st.lists(KEYS, min_size=2, max_size=3, unique_by=repr), ts=st.integers(1, 12),
          reaction=st.sampled_from([-1, 0, 0, 1]), delete=st.booleans(), past=st.booleans())
    def processing_tie_probe(self, keys, ts, reaction, delete, past):
        """Issue 31: processing-time timers of several keys at one timestamp, the first one's
        callback registering another processing-time timer at (or one around) that timestamp and
        perhaps deleting a tied one, then the clock to it (and past it): the physical timer must
        be rescheduled for what the callback left due."""
        for key in keys:
            self.do(timer_steps.SetKey(key))
            self.do(timer_steps.Register("processing", "n", ts, None, None))
        then = [timer_steps.Register("processing", "w", ts + reaction, None, None)]
        if delete:
            then.append(timer_steps.Delete("processing", "n", ts, None))
        self.do(timer_steps.OnFire("processing", keys[0], "n", ts, tuple(then), None))
        fired = self.do(timer_steps.AdvanceProcessingTime(ts))
        if sum(1 for e in fired if e["event"] == "fire") > 1:
            note("processing-time tie with a callback registering a timer")
        if past and self.active:  # the advance to ts may have ended the run (an earlier callback
            # that keeps registering a due timer exceeds the firing budget)
            self.do(timer_steps.AdvanceProcessingTime(ts + 1))

    @precondition(lambda self: self.active)
    @rule(timers=st.lists(st.tuples(KEYS, st.integers(1, 12), st.sampled_from([None, "other"])),
                          min_size=2, max_size=5))
    def services_interleave_probe(self, timers):
        """Processing-time timers of two services at interleaved times, then one advance past
        them all: each service's physical timers fire in time order with the other's (an
        unwatched clock fires a service's next head inline only while nothing is due before)."""
        for key, ts, service in timers:
            self.do(timer_steps.SetKey(key))
            self.do(timer_steps.Register("processing", "n", ts, None, service))
        self.do(timer_steps.AdvanceProcessingTime(max(ts for _, ts, _ in timers)))

    @precondition(lambda self: self.active)
    @rule(timer=timers, then=st.lists(
        st.tuples(st.sampled_from(["register", "delete"]), DOMAINS, NAMESPACES, TIMESTAMPS, SERVICES),
        min_size=1, max_size=2))
    def on_fire(self, timer, then):
        domain, key, namespace, ts, service = timer
        if key is None:
            return
        steps = tuple((timer_steps.Register(d, n, t, None, s) if op == "register" else timer_steps.Delete(d, n, t, s))
                      for op, d, n, t, s in then)
        self.do(timer_steps.OnFire(domain, key, namespace, ts, steps, service))
        note("callback reaction installed")

    @precondition(lambda self: self.active)
    @rule(target=snapshots)
    def snapshot(self):
        self.snapshot_count += 1
        snapshot_id = f"s{self.snapshot_count}"
        self.do(timer_steps.Snapshot(snapshot_id))
        return (snapshot_id, self.max_parallelism)

    @precondition(lambda self: self.active)
    @rule(snapshot=snapshots, parallelism=st.integers(1, 3), data=st.data())
    def rescale(self, snapshot, parallelism, data):
        """Restore a snapshot into ``parallelism`` instances splitting its key groups."""
        snapshot_id, max_parallelism = snapshot
        parallelism = min(parallelism, max_parallelism)
        for index in range(parallelism):
            kgr = compute_key_group_range_for_operator_index(max_parallelism, parallelism, index)
            self.do(timer_steps.Restore(snapshot_id, max_parallelism, (kgr.start_key_group, kgr.end_key_group)))
            self.do(timer_steps.Count())
        self.max_parallelism = max_parallelism
        if parallelism > 1:
            note("rescaled restore into split key-group ranges")

    @precondition(lambda self: self.active and len(self.run.impl.instances) > 1)
    @rule(data=st.data())
    def use_instance(self, data):
        index = data.draw(st.integers(0, len(self.run.impl.instances) - 1), label="index")
        self.do(timer_steps.UseInstance(index))
        self.max_parallelism = self.run.impl.current.max_parallelism

    @precondition(lambda self: self.active)
    @rule()
    def count(self):
        self.do(timer_steps.Count())

    @invariant()
    def pending_timers_and_physical_timer_agree(self):
        if self.active and self.steps:
            try:
                self.run.check_invariants(len(self.steps) - 1)
            except Violation as e:
                e.streamproof_steps = list(self.steps)
                raise

    @precondition(lambda self: not self.active)
    @rule()
    def after_fatal_error(self):
        """A fatal budget error ended the run; nothing more can be applied."""
        note("run ended by the firing budget")

    def scenario(self) -> sc.Scenario:
        return steps_to_scenario(self.steps)


def steps_to_scenario(steps: list, family: str = "timers", prop: str | None = None) -> sc.Scenario:
    return sc.Scenario(family=family, steps=tuple(steps), property=prop)


__all__ = ["TimersMachine", "Violation", "steps_to_scenario"]
