"""Watermarks after a restore (docs/decisions.md, "Watermarks after a restore"): with
``params.watermark_bound`` a source's watermark steps are emission points of a bounded-out-of-
orderness generator that restarts with the source task; a source that had ended before the
checkpoint is restored as finished (FLIP-147)."""

import random
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from streamproof.impl.graph.job import JobSpec, PeriodicWatermark
from streamproof.impl.graph.sources import SourceTask
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.graph.sim import Fault, ObservedGraphJob, graph_spec_of, simulate
from streamproof.impl.tasks.stream_task import EndOfData, TaskConfig, Watermark
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK
from streamproof.properties.job.functions import WindowSum
from streamproof.properties.job.steps import job_params, sources_of, task_config
from streamproof.properties.scenario import ScenarioError, scenario_from_dict


def scenario(steps, **params):
    return scenario_from_dict({"family": "job", "steps": steps,
                               "params": {"operator": "window_sum", "sources": 1, "parallelism": 1, **params}})


def record(ts, key="a", source=0, value=1):
    return {"op": "record", "source": source, "key": key, "value": value, "ts": ts}


def watermark(ts, source=0):
    return {"op": "watermark", "source": source, "ts": ts}


def spec_of(s, **overrides):
    params = job_params(s)
    fields = dict(parallelism=params["parallelism"], max_parallelism=params["max_parallelism"],
                  checkpoint_interval=params["checkpoint_interval"], config=task_config(params),
                  channel_capacity=params["channel_capacity"], async_mail_rate=params["async_mail_rate"])
    return JobSpec(sources_of(s), lambda: WindowSum(10), **{**fields, **overrides})


# -- a hand-driven job: the checkpoint lands exactly where the test wants it ----------------------
def pump(job):
    while any(t.is_runnable() for t in job.tasks):
        for task in job.tasks:
            if task.is_runnable():
                task.run_step()


def emit(job, source, n):
    for _ in range(n):
        job.sources[source].emit_next()
        pump(job)


def checkpoint(job):
    job.coordinator.trigger(job.now)
    pump(job)
    assert not job.coordinator.pending


def finish(job):
    """Every source to its end, then the final checkpoint that commits."""
    while not job.done:
        job.advance_clock(job.now + 1)
        for source in job.sources:
            if source.is_runnable():
                source.emit_next()
        pump(job)
        job.coordinator.maybe_trigger(job.now)
        pump(job)


def one_stage_job(spec: JobSpec) -> ObservedGraphJob:
    """The one-stage job as it runs: its one-operator job graph on the job runtime."""
    return ObservedGraphJob(graph_spec_of(spec))


# a tick after the first two records (watermark 4), a record, [checkpoint], then records only
STEPS = [record(1), record(5), watermark(4), record(12, "b"), record(30, "c"), record(31, "c"), record(40, "d")]
REFERENCE = Counter([("a", 9, 2), ("b", 19, 1), ("c", 39, 2), ("d", 49, 1)])


def restored_after_last_tick(s):
    job = one_stage_job(spec_of(s, checkpoint_interval=10**9, async_mail_rate=0.0))
    emit(job, 0, 4)  # r1 r5 tick r12
    checkpoint(job)
    emit(job, 0, 1)  # r30, lost with the failure
    job.failover(0, "fail")
    assert job.coordinator.latest().source_offsets == [4]  # past the source's last emission point
    restored = job.tasks[0]
    assert restored.restored_timers == 2  # the windows ending at 9 and 19
    finish(job)
    return job, restored


def test_restored_timers_fire_at_the_regenerated_watermark_before_end_of_input():
    job, restored = restored_after_last_tick(scenario(STEPS, watermark_bound=0))
    assert Counter(job.external.output()) == REFERENCE
    log = restored.keyed[0].log  # the keyed operator's output (the chain's tail is its sink)
    # the restarted generator ticks after the first replayed record (30): 30 - 0 - 1
    marks = [e[1] for e in log if e[0] == "watermark"]
    assert marks == [29, MAX_WATERMARK]
    assert restored.timers_fired_before_end_of_input() == 2
    at_29 = log.index(("watermark", 29))
    assert {e[1] for e in log[:at_29] if e[0] == "record"} == {("a", 9, 2), ("b", 19, 1)}


def test_without_the_param_restored_timers_wait_for_end_of_input():
    job, restored = restored_after_last_tick(scenario(STEPS))
    assert Counter(job.external.output()) == REFERENCE
    assert [e[1] for e in restored.keyed[0].log if e[0] == "watermark"] == [MAX_WATERMARK]
    assert restored.timers_fired_before_end_of_input() == 0


def test_emission_points_after_the_offset_regenerate_from_the_replayed_records():
    # bound 5; the second tick emits nothing in a failure-free run (50 - 6 = 44 already emitted),
    # after a restore behind the first tick it emits what the replayed records give: 40 - 6 = 34
    s = scenario([record(10), record(50), watermark(44), record(30), record(40), watermark(44)],
                 watermark_bound=5, late_records=True)
    elements = sources_of(s)[0]
    assert [e for e in elements if isinstance(e, Watermark)] == [PeriodicWatermark(44, 5)] * 2
    assert emitted(elements, 0) == [44]
    assert emitted(elements, 3) == [34]
    assert emitted(elements, 4) == [34]  # replays 40 only: 40 - 6
    assert emitted(elements, 5) == []  # nothing since the restart: nothing at the tick


class Recording:
    """What a SourceTask needs of its job, recording the watermarks it broadcasts."""

    class spec:
        class config:
            drain = True

    def __init__(self):
        self.watermarks = []

    def has_capacity(self, source, target):
        return True

    def route(self, record):
        return 0

    def send(self, source, target, element):
        pass

    def broadcast(self, source, element):
        if isinstance(element, Watermark) and element.timestamp < MAX_WATERMARK:
            self.watermarks.append(element.timestamp)


def emitted(elements, offset):
    job = Recording()
    source = SourceTask(0, elements, offset, job)
    while not source.ended:
        source.emit_next()
    return job.watermarks


def test_the_restart_tick_only_where_the_restart_took_a_watermark_and_no_emission_point_is_left():
    r = lambda ts: StreamRecord("k", 1, ts)  # noqa: E731
    tick = PeriodicWatermark(0, 2)
    assert emitted([r(10), tick, r(20), r(30)], 2) == [17]  # after the first replayed record: 20 - 2 - 1
    assert emitted([r(10), tick, r(20), tick, r(30)], 2) == [17]  # the scenario's tick, no extra one
    assert emitted([r(10), tick, r(20), r(30), tick], 2) == [27]  # ... even when it comes late
    assert emitted([tick, r(10), r(20), r(30)], 2) == []  # no watermark before the offset: none taken away
    assert emitted([r(10), r(20), r(30)], 1) == []  # no generator at all
    assert emitted([r(10), tick, r(20)], 3) == []  # no record left
    assert emitted([r(10), tick, r(20), r(30)], 0) == [7]  # not restored: the scenario's ticks only


# -- failure-free runs: the generator reproduces the values certification writes ------------------
@st.composite
def certify_like(draw):
    """Steps as certification writes them: per record maybe a watermark "highest record ts of the
    source so far - bound - 1" when it rises (certify_input.user_scenarios)."""
    sources = draw(st.integers(1, 3))
    bound = draw(st.sampled_from([0, 3, 17]))
    steps, highest, last = [], {}, {}
    for _ in range(draw(st.integers(1, 20))):
        source, ts = draw(st.integers(0, sources - 1)), draw(st.integers(-50, 200))
        steps.append(record(ts, draw(st.sampled_from("abcd")), source))
        highest[source] = max(ts, highest.get(source, ts))
        candidate = highest[source] - bound - 1
        if draw(st.booleans()) and candidate > last.get(source, candidate - 1):
            last[source] = candidate
            steps.append(watermark(candidate, source))
    return steps, sources, bound


@settings(max_examples=200, deadline=None)
@given(certify_like())
def test_the_generator_reproduces_the_written_watermarks(case):
    steps, sources, bound = case
    explicit = scenario(steps, sources=sources, late_records=True)
    periodic = scenario(steps, sources=sources, late_records=True, watermark_bound=bound)
    plain, generated = sources_of(explicit), sources_of(periodic)
    assert [[e.timestamp for e in s if isinstance(e, Watermark)] for s in plain] == \
           [[e.timestamp for e in s if isinstance(e, Watermark)] for s in generated]
    assert all(type(e) is PeriodicWatermark for s in generated for e in s if isinstance(e, Watermark))
    for elements, expected in zip(generated, plain):
        assert emitted(elements, 0) == [e.timestamp for e in expected if isinstance(e, Watermark)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("interruptible", [False, True])
def test_failure_free_runs_are_unchanged_with_the_param(seed, interruptible):
    rng = random.Random(seed)
    steps, highest, last = [], {}, {}
    for _ in range(24):
        source, ts = rng.randrange(2), rng.randrange(0, 60)
        steps.append(record(ts, rng.choice("abc"), source, rng.randrange(1, 5)))
        highest[source] = max(ts, highest.get(source, ts))
        if rng.random() < 0.5 and highest[source] - 4 > last.get(source, -10**9):
            last[source] = highest[source] - 4
            steps.append(watermark(last[source], source))
    common = dict(sources=2, parallelism=2, late_records=True, interruptible_timers=interruptible, seed=seed)
    one = simulate(spec_of(scenario(steps, **common)), seed)
    other = simulate(spec_of(scenario(steps, watermark_bound=3, **common)), seed)
    assert one.committed == other.committed and one.steps == other.steps and one.events == other.events
    assert one.output_logs == other.output_logs


def test_without_the_param_the_elements_are_the_plain_watermarks():
    assert sources_of(scenario(STEPS)) == [[StreamRecord("a", 1, 1), StreamRecord("a", 1, 5), Watermark(4),
                                            StreamRecord("b", 1, 12), StreamRecord("c", 1, 30),
                                            StreamRecord("c", 1, 31), StreamRecord("d", 1, 40)]]
    assert type(sources_of(scenario(STEPS))[0][2]) is Watermark


# -- faults: exactly-once holds, aligned and unaligned (replayed channel state) --------------------
@pytest.mark.parametrize("unaligned", [False, True])
@pytest.mark.parametrize("faults", [
    (Fault("fail", at=20),),
    (Fault("fail", at=12), Fault("fail", at=40)),
    (Fault("rescale", at=25, parallelism=3),),
    (Fault("fail_in_interrupted_firing", nth=1),),
])
def test_faults_lose_and_duplicate_nothing_with_generated_watermarks(faults, unaligned):
    steps = [record(1, "a"), record(3, "b", 1), watermark(0), record(12, "a"), watermark(8), record(15, "c"),
             record(2, "b", 1, 5), record(9, "c", 1), watermark(6, 1), record(21, "a", 1), record(25, "b"),
             record(33, "c", 1), record(41, "a")]
    s = scenario(steps, sources=2, parallelism=2, checkpoint_interval=5, watermark_bound=3,
                 unaligned=unaligned, late_records=True)
    reference = Counter(simulate(spec_of(s), 0).committed)
    for seed in range(8):
        run = simulate(spec_of(s), seed, faults)
        assert Counter(run.committed) == reference, (seed, run.events)


# -- sources that ended before the checkpoint: restored as finished (FLIP-147) --------------------
ENDED = [record(1, "a"), record(4, "b", 1), watermark(3, 1), record(12, "a"), watermark(11), record(20, "b")]


def ended_before_the_checkpoint(s, **overrides):
    job = one_stage_job(spec_of(s, checkpoint_interval=10**9, async_mail_rate=0.0, **overrides))
    emit(job, 1, 3)  # source 1: its record, its watermark, then MAX_WATERMARK and EndOfData
    assert job.sources[1].ended
    emit(job, 0, 1)
    checkpoint(job)
    assert job.coordinator.latest().sources_ended == [False, True]
    emit(job, 0, 1)
    job.failover(0, "fail")
    return job


@pytest.mark.parametrize("how", ["watermark_bound", "JobSpec"])
def test_a_source_that_ended_before_the_checkpoint_ends_first_after_the_restore(how):
    if how == "watermark_bound":  # generated watermarks (here the same values) switch it on
        job = ended_before_the_checkpoint(scenario(ENDED, sources=2, parallelism=2, watermark_bound=0))
    else:
        job = ended_before_the_checkpoint(scenario(ENDED, sources=2, parallelism=2),
                                          ended_sources_finished_on_restore=True)
    assert job.sources[1].ended and not job.sources[1].is_runnable()
    for task in job.tasks:  # before any source emitted: the finished channel's end is queued
        assert list(task.inputs[1]) == [Watermark(MAX_WATERMARK), EndOfData()] and not task.inputs[0]
    job.sources[0].emit_next()  # a record of the other source arrives first ...
    pump(job)
    for task in job.tasks:  # ... the finished channel is consumed before it
        assert task.picks[:2] == [1, 1] and task.channels_ended == [False, True]
    job.sources[0].emit_next()  # watermark 11: the only live channel's, it goes through at once
    pump(job)
    assert all(task.valve.last_output == 11 for task in job.tasks)
    finish(job)
    assert Counter(job.external.output()) == Counter([("a", 9, 1), ("b", 9, 1), ("a", 19, 1), ("b", 29, 1)])


@pytest.mark.parametrize("s, overrides", [
    (scenario(ENDED, sources=2, parallelism=2), {}),  # without the param: as every run before
    (scenario(ENDED, sources=2, parallelism=2, watermark_bound=0), {"ended_sources_finished_on_restore": False}),
])
def test_off_an_ended_source_ends_again_when_the_scheduler_picks_it(s, overrides):
    job = ended_before_the_checkpoint(s, **overrides)
    assert not job.sources[1].ended and job.sources[1].is_runnable()
    assert all(not task.inputs[1] for task in job.tasks)
    finish(job)
    assert Counter(job.external.output()) == Counter([("a", 9, 1), ("b", 9, 1), ("a", 19, 1), ("b", 29, 1)])


def test_a_source_that_ended_after_the_trigger_is_not_finished_on_restore():
    s = scenario([record(1, "a"), record(4, "b", 1)], sources=2, parallelism=1)
    job = one_stage_job(spec_of(s, checkpoint_interval=10**9, async_mail_rate=0.0, ended_sources_finished_on_restore=True))
    emit(job, 1, 1)
    job.coordinator.trigger(job.now)  # barriers go out; source 1 ends after its barrier
    emit(job, 1, 1)
    pump(job)
    emit(job, 0, 1)
    pump(job)
    assert job.coordinator.latest().sources_ended == [False, False]
    job.failover(0, "fail")
    assert not job.sources[1].ended and job.sources[1].is_runnable()
    finish(job)
    assert Counter(job.external.output()) == Counter([("a", 9, 1), ("b", 9, 1)])


# -- the param -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bound, message", [
    (-1, "watermark_bound: null, an integer in"),
    (True, "watermark_bound: null, an integer in"),
    (1.5, "watermark_bound: null, an integer in"),
    ([1], "a list of 2 \\(params.sources\\)"),
    ([1, "x"], "watermark_bound: null, an integer in"),
])
def test_bad_watermark_bounds_are_clear_errors(bound, message):
    with pytest.raises(ScenarioError, match=message):
        scenario([record(1)], sources=2, watermark_bound=bound)


def test_a_bound_per_source_and_not_with_a_graph():
    s = scenario([record(10), watermark(9), record(10, source=1), watermark(9, 1)], sources=2,
                 watermark_bound=[2, None])
    assert [type(e) for e in sources_of(s)[0]] == [StreamRecord, PeriodicWatermark]
    assert sources_of(s)[0][1] == PeriodicWatermark(7, 2)
    assert [type(e) for e in sources_of(s)[1]] == [StreamRecord, Watermark]
    graph = {"operators": [{"name": "source", "kind": "source"},
                           {"name": "windows", "kind": "keyed_process", "parallelism": 1, "function": "window_sum"},
                           {"name": "sink", "kind": "sink", "parallelism": 1}],
             "edges": [{"from": "source", "to": "windows", "partitioning": "keyed"},
                       {"from": "windows", "to": "sink", "partitioning": "forward"}]}
    scenario([record(1)], graph=graph)
    with pytest.raises(ScenarioError, match="one-stage job only"):
        scenario([record(1)], graph=graph, watermark_bound=1)


def test_late_records_are_judged_by_the_generated_watermarks():
    # the generator emits 10 - 0 - 1 = 9 whatever the step says: a record at 9 is late
    with pytest.raises(ScenarioError, match="above the source's last watermark \\(9\\)"):
        scenario([record(10), watermark(2), record(9)], watermark_bound=0)
    scenario([record(10), watermark(2), record(9)])  # as written: 2, so 9 is on time
