"""The runs a certification compares, made once per scenario (:class:`Runs`): the faulty run and the
failure-free references of the same input (other schedules, timer firings split or not, the
faulty run's own lineage, per key group its history), their outputs compared and shown, and what
they say about the input (split- or order-sensitive)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from functools import lru_cache
from typing import Any

from streamproof.flink.common.typeinfo import float_writes, floats_rounded
from streamproof.impl.operators.user_clock import wall_clock_is_frozen
from streamproof.impl.graph.job import JobSpec
from streamproof.impl.graph.sim import simulate
from streamproof.impl.graph.sim import SimulationResult
from streamproof.properties.bugzoo import clears_on_patch
from streamproof.properties.certify_probes import firing_budget
from streamproof.properties.job.functions import FUNCTIONS
from streamproof.properties.job.steps import faults_of, job_params, sources_of, task_config
from streamproof.properties.job.values import canonical, encode
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario, dump_scenario, load_scenario

OTHER_SCHEDULES = 7      # failure-free schedules besides the scenario's own (made only when needed)
SPLIT_MAIL_RATE = 0.8    # foreign mail while a timer fires: how often interruptible firings split
EVERY_CHANCE = 1.0       # foreign mail at every chance (every timer a part of its own), the input
                         # already queued (eager sources: a record after a watermark is there to run
                         # between the parts of its firing)
# the split schedules every input is tried under: (mail rate, schedule): at every chance, then at
# random points under the scenario's schedule (the input arriving as the schedule has it); a second
# random schedule was dropped: all 189 split-sensitive scenarios of 9 corpus operators (seeds 0-4)
# differed at every chance already
SPLIT_PLANS = ((EVERY_CHANCE, 0), (SPLIT_MAIL_RATE, 0))
CHECKPOINTED_REFERENCES = False  # failure-free runs without checkpoints (they commit the same at the end)
OTHER_TIE_ORDERS = ("key-group", "reversed")  # equal-timestamp timer orders besides insertion order
CALLBACK_SECONDS = 5.0   # a user callback running longer is stopped with one line
# reach label (as those of certify_checks): a lineage the failure-free replay could not follow
LINEAGE_REJECTED = "lineage that no failure-free run follows"


def _spec(scenario: Scenario, interruptible: bool, mail_rate: float | None = None, lineage: list | None = None,
          tie: str = "insertion") -> JobSpec:
    if lineage is None:
        spec = _job_spec(scenario, interruptible, mail_rate)
        budget = firing_budget(sum(type(s).__name__ in ("Record", "UserRecord") for s in scenario.steps))
        return dataclasses.replace(spec, config=dataclasses.replace(spec.config, callback_seconds=CALLBACK_SECONDS,
                                                                    firing_budget=budget), timer_tie_order=tie)
    # a failure-free replay of a run's lineage: no back-pressure, no checkpoints
    # at the parallelism the lineage was recorded at (a rescale before the first completed
    # checkpoint restarted the job from scratch at the new parallelism)
    spec = _spec(scenario, interruptible, mail_rate, tie=tie)
    return dataclasses.replace(spec, forced_lineage=lineage, channel_capacity=10**9, checkpoint_interval=10**9,
                               parallelism=len(lineage), eager_sources=mail_rate == EVERY_CHANCE)


def _job_spec(scenario: Scenario, interruptible: bool, mail_rate: float | None) -> JobSpec:
    params = job_params(scenario)
    return JobSpec(sources_of(scenario), FUNCTIONS[params["operator"]], parallelism=params["parallelism"],
                   max_parallelism=params["max_parallelism"], checkpoint_interval=params["checkpoint_interval"],
                   config=task_config(params, interruptible), channel_capacity=params["channel_capacity"],
                   async_mail_rate=params["async_mail_rate"] if mail_rate is None else mail_rate,
                   processing_time=params["processing_time"],
                   restore_clock_gap=params["restart_gap"])


def _run(scenario: Scenario, interruptible: bool, seed: int, faults: tuple = (),
         mail_rate: float | None = None, lineage: list | None = None, tie: str = "insertion",
         restore_watermarks: bool = False, checkpoints: bool = True) -> SimulationResult | str:
    try:
        spec = _spec(scenario, interruptible, mail_rate, lineage, tie)
        if restore_watermarks:
            spec = dataclasses.replace(spec, restore_watermarks=True)
        if not checkpoints:
            spec = dataclasses.replace(spec, checkpoint_interval=10**9)
        return simulate(spec, seed, faults)
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything: a verdict, not a crash
        return f"{type(e).__name__}: {' '.join(str(e).split())}"


class Runs:
    """The runs of one scenario, each made on first use (a correct operator needs three)."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        seed = job_params(scenario)["seed"]
        self.seeds = [seed] + [seed * 7919 + k + 1 for k in range(OTHER_SCHEDULES)]
        self._cache: dict = {}

    def _get(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def faulty(self):
        """Interruptible timers on, the scenario's faults and schedule."""
        return self._get("faulty", self._faulty)

    def _faulty(self):
        floats = float_writes()
        run = _run(self.scenario, True, self.seeds[0], faults_of(self.scenario))
        self.wrote_floats = float_writes() > floats  # Types.FLOAT() state kept as written
        return run

    def off(self, i: int):
        """Failure-free, interruptible timers off, schedule ``i`` (0: the scenario's)."""
        return self._get(("off", i), lambda: _run(self.scenario, False, self.seeds[i], checkpoints=CHECKPOINTED_REFERENCES))

    def on(self, i: int):
        """Failure-free, interruptible timers on, schedule ``i``."""
        return self._get(("on", i), lambda: _run(self.scenario, True, self.seeds[i], checkpoints=CHECKPOINTED_REFERENCES))

    def splits(self):
        """Failure-free runs of the input in exactly ``off(0)``'s order (its lineage), timer firings
        split by interruptible timers (FLIP-443): first at every chance (each timer a part of its
        own, one input element between two parts, as Flink's mailbox allows), then at random
        points (:data:`SPLIT_MAIL_RATE`): :data:`SPLIT_PLANS`. Made one by one."""
        base = self.off(0)
        if isinstance(base, str) or base.lineage is None:
            return
        for plan in SPLIT_PLANS:
            yield self._get(("split", plan), lambda: _run(self.scenario, True, self.seeds[plan[1]],
                                                         mail_rate=plan[0], lineage=base.lineage))

    def lineage(self, interruptible: bool, mail_rate: float | None = None, k: int = 0, tie: str = "insertion"):
        """Failure-free, each task consuming its input in the order the faulty run's committed
        state and output did (its lineage): the failure-free run Flink's promise points at; with
        ``mail_rate``, its firings split as :meth:`splits` splits them. None when the faulty run has
        no lineage (a rescale merged tasks) or did not finish."""
        def make():
            if isinstance(self.faulty, str) or self.faulty.lineage is None:
                return None
            run = _run(self.scenario, interruptible, self.seeds[k], mail_rate=mail_rate, lineage=self.faulty.lineage,
                       tie=tie)
            if not isinstance(run, str) and run.lineage != self.faulty.lineage:
                # the replay could not consume the input in that order: the lineage does not describe
                # an order of this input (it is checked, never trusted), so no reference comes from it
                note(LINEAGE_REJECTED)
                return None
            return run
        return self._get(("lineage", interruptible, mail_rate, k, tie), make)

    def lineage_references(self):
        """The failure-free runs in the faulty run's lineage: timers not split, then split, then
        with timers of equal timestamps firing in another order (Flink leaves it open: a restore
        gives key-group order)."""
        yield self.lineage(False)
        yield self.lineage(True)
        for rate, k in SPLIT_PLANS:
            yield self.lineage(True, rate, k)
        for tie in OTHER_TIE_ORDERS:
            yield self.lineage(False, tie=tie)
            yield self.lineage(True, tie=tie)

    def references(self):
        """Failure-free runs, the likeliest match first (made one by one as they are needed)."""
        yield self.off(0)
        yield self.on(0)
        for i in range(1, len(self.seeds)):
            yield self.off(i)
            yield self.on(i)


@lru_cache(maxsize=256)
def _runs(text: str, rounded: bool, frozen: bool) -> Runs:
    return Runs(load_scenario(text))


clears_on_patch(_runs.cache_clear)


def runs(scenario: Scenario) -> Runs:
    return _runs(dump_scenario(scenario), floats_rounded(), wall_clock_is_frozen())


def output(run: SimulationResult) -> Counter:
    """The committed output as a multiset compared by value (lists, NaN, sets: see job/values.py)."""
    return Counter(canonical(v) for v in run.committed)


def _first_error(*candidates) -> str | None:
    return next((c for c in candidates if isinstance(c, str)), None)


def _difference(got: Counter, want: Counter) -> str:
    def shown(items) -> str:
        return "[" + ", ".join(readable(c) for c in sorted(items)[:3]) + "]"
    return f"extra {shown(got - want)}, missing {shown(want - got)}"


def readable(text: str) -> str:
    """A canonical output shown as the value it stands for."""
    import json

    from streamproof.properties.job.values import decode

    data = json.loads(text)
    if isinstance(data, dict) and "$repr" in data:
        return data["$repr"][1]
    try:
        return repr(decode(data))
    except Exception:  # noqa: BLE001 - e.g. a Row without streamproof.flink
        return text


def observed_of(run: SimulationResult) -> list[dict]:
    """The faulty run as observations: committed outputs (encoded, any shape), then job events."""
    return [{"event": "committed", "record": _plain(v)} for v in run.committed] + \
           [{"event": e[0], "detail": [_plain(x) for x in e[1:]]} for e in run.events]


def _plain(value: Any) -> Any:
    try:
        return encode(value)
    except ValueError:
        return repr(value)


def history_reference(scenario: Scenario, run: SimulationResult) -> Counter | str | None:
    """The output of failure-free runs, one per key group, each consuming what the run's committed
    state and output of that key group consumed, in that order (:attr:`SimulationResult.histories`:
    the snapshot that owned the key group, then the task that restored it): after a rescale there
    is no single order for a task, but a key group always lived on one task at a time, and keyed
    state and timers are per key group. Watermarks are applied as they only rise in a failure-free
    run; timers are never split (splits are certify.interruptible-timers'). None when the run has
    no histories (input-driven processing time only); an error text when the operator fails."""
    from streamproof.impl.state.key_groups import KeyGroupRange
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
    from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
    from streamproof.impl.timers.internal_timer_service import MIN_WATERMARK

    params = job_params(scenario)
    if not run.histories or params["processing_time"] != "input":
        return None
    total: Counter = Counter()
    try:
        for key_group in sorted(run.histories):
            outputs: list = []
            clock = ManualProcessingTimeService(start=0)
            op = KeyedProcessOperator(FUNCTIONS[params["operator"]](), params["max_parallelism"],
                                      KeyGroupRange(key_group, key_group), clock,
                                      lambda value, ts: outputs.append(value),
                                      emit_side=lambda tag, value, ts: outputs.append(("side-output", tag, value)),
                                      max_seconds_per_callback=CALLBACK_SECONDS)
            op.open()
            watermark = MIN_WATERMARK
            for entry in run.histories[key_group]:
                if entry[0] == "r":
                    op.process_element(StreamRecord(entry[1], entry[2], entry[3]))
                elif entry[0] == "w" and entry[1] > watermark:
                    watermark = entry[1]
                    op.time_service_manager.advance_watermark(watermark)
                elif entry[0] == "p" and entry[1] > clock.get_current_processing_time():
                    clock.advance_to(entry[1])
            op.end_input()
            op.time_service_manager.flush_processing_time_timers(10**6)
            op.processing_time_service.flush(10**6)
            op.finish()
            total.update(canonical(v) for v in outputs)
    except Exception as e:  # noqa: BLE001 - the user's code: the faulty run's verdict says it
        return f"{type(e).__name__}: {e}"
    return total


def _matches_history(scenario: Scenario, run: SimulationResult, got: Counter) -> bool:
    """Does the committed output equal :func:`history_reference`? Only when the histories hold
    every input record exactly once (checked against the scenario's input, never trusted: a
    runtime that lost or replayed a record twice would otherwise explain its own output)."""
    if not _histories_hold_the_input(scenario, run):
        note(LINEAGE_REJECTED)
        return False
    reference = history_reference(scenario, run)
    return isinstance(reference, Counter) and reference == got


def _histories_hold_the_input(scenario: Scenario, run: SimulationResult) -> bool:
    from streamproof.impl.operators.keyed_process_operator import StreamRecord

    def record(key, value, ts) -> tuple:
        return canonical(key), canonical(value), ts

    want = Counter(record(e.key, e.value, e.timestamp) for elements in sources_of(scenario) for e in elements
                   if isinstance(e, StreamRecord))
    have = Counter(record(e[1], e[2], e[3]) for entries in run.histories.values() for e in entries if e[0] == "r")
    return want == have


def _matches_lineage(faulty: SimulationResult, candidates):
    """(None, refs) when the faulty run's output is one of ``candidates`` (failure-free runs, made
    lazily); ("no lineage", []) when there are none; a problem tuple when one of them fails;
    else ("different", refs)."""
    got, references = output(faulty), []
    for run in candidates:
        if run is None:
            return "no lineage", references
        if isinstance(run, str):
            return ("failure-free-run-finishes", f"the operator fails without any fault: {run}"), references
        references.append(output(run))
        if got == references[-1]:
            return None, references
    return "different", references


def _faulty_unsplit(r: Runs):
    """The faulty run's faults and schedule, interruptible timers off (firings never split)."""
    return r._get("faulty-unsplit", lambda: _run(r.scenario, False, r.seeds[0], faults_of(r.scenario)))


def _unsplit_is_exactly_once(r: Runs, got: Counter) -> bool:
    """The cheapest way :func:`_same_output` ends in :func:`_same_output_unsplit` holding, tried
    first (two runs where the failure-free runs of every schedule and lineage take ten): splitting
    firings changed the faulty run's output, and with firings never split the same faults commit
    what the failure-free run of the scenario's schedule, or of the unsplit run's own lineage,
    commits."""
    unsplit = _faulty_unsplit(r)
    if isinstance(unsplit, str) or output(unsplit) == got:
        return False
    if output(unsplit) == output(r.off(0)):
        return True
    if unsplit.lineage is None:
        return False
    reference = r._get("faulty-unsplit-reference", lambda: _run(r.scenario, False, r.seeds[0], lineage=unsplit.lineage))
    return not isinstance(reference, str) and output(reference) == output(unsplit)


def _faulty_split_sensitive(r: Runs) -> bool:
    """Did splitting firings change the faulty run's own output?"""
    unsplit = _faulty_unsplit(r)
    return not isinstance(unsplit, str) and output(unsplit) != output(r.faulty)


def _split_sensitive(r: Runs) -> bool:
    """Does splitting firings change the output of this input (in a failure-free order)?"""
    base = r.off(0)
    return any(not isinstance(x, str) and output(x) != output(base) for x in r.splits())


def _order_sensitive(r: Runs) -> bool:
    """Do failure-free runs of the same input (timers never split) differ between schedules?"""
    outputs = [r.off(i) for i in range(len(r.seeds))]
    return len({canonical(sorted(output(x).items())) for x in outputs if not isinstance(x, str)}) > 1
