"""The job scenarios a certification feeds the user's operator: its records (read as
:mod:`streamproof.properties.certify_records` says) in two shapes, *spread* and *burst* (where the
burst's watermark goes: :mod:`streamproof.properties.certify_burst`). Without records, an operator
of the ``impl.operators`` style gets the built-in ``(key, int value, timestamp)`` scenarios, their
timestamps stretched to the operator's own time constants (``span``) so that its timers fire
before end of input.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from contextlib import contextmanager, nullcontext
from typing import Any, Iterator

from streamproof.properties.job.steps import (
    RESTART_GAP, Fail, FailInInterruptedFiring, ProcessingTime, Record, Rescale, SourceWatermark, UserRecord,
)
from streamproof.properties.scenario import JSON, Scenario
from streamproof.properties.certify_burst import END, _after, _burst_choices, _burst_plan
from streamproof.properties.certify_probes import pending_timers
from streamproof.properties.certify_records import InputError, RecordSpec, _encoded, _key_and_time, _short

DEFAULT_SPAN = 60  # the built-in scenarios' time range
# processing time that passes before a record (ms): mostly none or little, sometimes a pause
PROCESSING_PAUSES = (0, 0, 0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)


# -- the operator's own time constants ---------------------------------------------------------
def time_span(cls: type) -> int:
    """How far the built-in scenarios' timestamps reach: three times the largest integer constant
    the operator's class (or a module constant it names) uses, so its timers (``ts + 60_000``)
    can fire before end of input; :data:`DEFAULT_SPAN` for small constants."""
    constants = [DEFAULT_SPAN // 3]
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        module = inspect.getmodule(cls)
    except (OSError, TypeError, SyntaxError):
        return DEFAULT_SPAN
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            constants.append(node.value)
        elif isinstance(node, ast.Name) and module is not None:
            value = getattr(module, node.id, None)
            if isinstance(value, int) and not isinstance(value, bool):
                constants.append(value)
    largest = max(c for c in constants if 0 < c <= 10**12)
    return max(DEFAULT_SPAN, 3 * largest)


# -- scenarios ---------------------------------------------------------------------------------
def _faults(draw, st, inputs: int = 100) -> list:
    """Failures, a failure inside an interrupted firing, a rescale; each at a simulation step
    within the job's likely length (about four steps per input element), so it lands while the
    job runs, after checkpoints as often as before them."""
    last = 10 + 4 * inputs
    steps: list = []
    # "right after the n-th completed checkpoint" (at step 1, not before n checkpoints) half the
    # time: a failure between a checkpoint and the timers and output that follow it
    after = st.one_of(st.none(), st.integers(1, 3))
    steps: list = []
    for _ in range(draw(st.integers(0, 2), label="failures")):
        checkpoints = draw(after, label="failure after checkpoint")
        steps.append(Fail(1 if checkpoints else draw(st.integers(1, last)), None, checkpoints))
    if draw(st.booleans()):
        steps.append(FailInInterruptedFiring(draw(st.integers(1, 6)), draw(st.sampled_from([None, True]))))
    if draw(st.booleans()):
        checkpoints = draw(after, label="rescale after checkpoint")
        steps.append(Rescale(1 if checkpoints else draw(st.integers(1, last)), draw(st.integers(1, 3)), None,
                             checkpoints))
    return steps


def _params(draw, st, operator: str, sources: int, late: bool) -> dict:
    return {
        "operator": operator, "sources": sources, "parallelism": draw(st.integers(1, 3)),
        "max_parallelism": draw(st.sampled_from([4, 8, 16])), "checkpoint_interval": draw(st.integers(3, 30)),
        "interruptible_timers": True, "unaligned": draw(st.booleans()),
        "channel_capacity": draw(st.integers(1, 4)), "async_mail_rate": draw(st.sampled_from([0.0, 0.3, 0.7, 0.7])),
        "seed": draw(st.integers(0, 2**16)), "late_records": late,
    }


def user_scenarios(operator: str, spec: RecordSpec, span: int = DEFAULT_SPAN, planned: str | None = None):
    """Scenarios of the user's records, of two shapes (drawn half and half):

    - *spread*: 1-3 sources (each record to one at random), records out of order within a
      source, bounded out-of-orderness watermarks after some records (records below them are
      late, as in a real source), processing-time pauses, faults;
    - *burst*: the shape FLIP-443 changes outputs in: one source, records in timestamp order
      (a ``--stream`` in its own order), no watermark until one or two late points, so that one
      watermark makes the timers of several keys due at once, and right after it the records of
      keys seen before it (keys whose timers it made due), then faults as above.

    ``planned`` (``"split"`` or ``"restore"``): burst scenarios only, for the searches that run
    whatever ``--examples`` (:func:`streamproof.properties.certify.explore_certification`): each
    screens up to :data:`PLANNED_INPUTS` inputs with the operator-alone probes and keeps the first
    whose split firing changes the operator's output (:func:`_planned_input`); out-of-orderness 0
    (the probes' own), and after the records processing time jumps far ahead (processing-time
    timers fire before end of input). ``"split"`` has no faults (``certify.interruptible-timers`` runs
    failure-free); ``"restore"`` one failure at a step while the records after the watermark run,
    checkpoints every 2-4 steps (a restore whose replayed records meet a reset watermark, the
    shape ``certify.same-output`` refuses operators that read ``current_watermark()`` for).
    """
    from hypothesis import strategies as st

    records = spec.strategy()
    constant = max(1, span // 3)  # the operator's largest time constant (:func:`time_span`)

    @st.composite
    def scenarios(draw) -> Scenario:
        burst = True if planned else draw(st.booleans(), label="burst shape")
        spread = False
        pool = None
        if planned:
            drawn, pool, spread = _planned_input(draw, st, operator, spec, records)
        elif spec.whole:
            # the burst shape wants several keys with due timers and their records after the
            # watermark: of STREAM_INPUTS inputs, the one where the operator's timers make that likeliest
            # (the last two spread over the range when the first two are narrower than the
            # operator's time constant: :func:`_spread_draws`)
            inputs = [_whole_input(draw, records, spec) for _ in range(STREAM_INPUTS // 2 if burst else 1)]
            if burst:
                spread = all(_time_range(spec, i) < constant for i in inputs)
                with _spread_draws(draw) if spread else nullcontext():
                    inputs += [_whole_input(draw, records, spec) for _ in range(STREAM_INPUTS - STREAM_INPUTS // 2)]
            drawn = inputs[0] if len(inputs) == 1 else max(inputs, key=lambda i: _stream_score(operator, spec, i))
        else:
            if not burst:
                drawn = draw(st.lists(records, min_size=1, max_size=24), label="records")
            else:
                # three records first: when they are closer together than the operator's time
                # constant, the rest (and the pool) are drawn spread (the list's length is ours)
                drawn = draw(st.lists(records, min_size=HEAD, max_size=HEAD), label="records")
                spread = _time_range(spec, drawn) < constant
                with _spread_draws(draw, longer=False) if spread else nullcontext():
                    drawn += draw(st.lists(records, min_size=12 - HEAD, max_size=30 - HEAD),
                                  label="records, spread" if spread else "records")
        stamped = [(r, *_key_and_time(spec, r)) for r in drawn]
        times = [t for _, _, t in stamped]
        span = max(times) - min(times) + 1
        # the burst shape wants a watermark close behind the records (timers due while records
        # of their keys are still on time): a small bound mostly
        bounds = [0, 0, span // 20] if burst else [0, span // 20, span // 5]
        bound = 0 if planned else draw(st.sampled_from(bounds), label="out-of-orderness")
        if burst:  # the bound may grow: a watermark at a due timer's time (:func:`_watermarks`)
            with _spread_draws(draw, longer=False) if spread else nullcontext():  # the pool drawn as the records were
                sources, (steps, bound) = 1, _burst(draw, st, operator, stamped, bound, spec, records, pool)
        else:
            layout = spec.source_layout
            sources = 1 if layout == "one" else draw(st.integers(1, 3), label="sources")
            steps = _spread(draw, st, stamped, bound, sources, span, layout)
        if not planned:
            steps += _faults(draw, st, len(steps))
        else:
            failure = None
            if planned == "restore":  # one failure while the records after the watermark run
                watermark_at = next(i for i, step in enumerate(steps) if isinstance(step, SourceWatermark))
                failure = Fail(draw(st.integers(STEPS_PER_ELEMENT * watermark_at, STEPS_PER_ELEMENT * len(steps)),
                                    label="failure after the watermark"), None, None)
            # a long while later in processing time: processing-time timers come due before end of input
            steps.append(ProcessingTime(0, PLANNED_PAUSE_FACTOR * max(span, constant)))
            if failure is not None:
                steps.append(failure)
        # the sources' watermark generators (bounded out-of-orderness) restart with them after a
        # restore and emit again from the replayed records (watermark steps are emission points)
        params = {**_params(draw, st, operator, sources, True), "processing_time": "input", "watermark_bound": bound}
        # every other scenario's restarts take a minute of processing time (no draw of its own: the
        # scenarios of a seed stay those of earlier versions)
        params["restart_gap"] = RESTART_GAP if params["seed"] % 2 else 0
        if not spec.late:
            steps = _on_time(steps, bound)
        if burst:
            params["parallelism"] = 1  # the keys of the burst in one subtask (the split is per subtask)
        if planned == "restore":  # checkpoints every few records: one lands between any two firings
            params["checkpoint_interval"] = draw(st.integers(2, RESTORE_INTERVAL), label="checkpoint interval")
        return Scenario(family="job", steps=tuple(steps), params=params)

    return scenarios()


SEARCH_EXAMPLES = 20  # planned burst scenarios of a planned search, whatever --examples
PLANNED_PAUSE_FACTOR = 10  # a planned scenario ends with processing time this many times its time range later
STEPS_PER_ELEMENT = 2  # simulation steps per input element of a one-source job, about (where a failure lands)
RESTORE_INTERVAL = 4  # a restore search's checkpoints: every 2 to this many steps
PLANNED_INPUTS = 16  # a planned scenario: inputs screened for a split that changes the output (every other spread)
PLANNED_SHARE = 0.4  # ... while they take less than this share of the most Hypothesis draws for one example
MERGED_INPUTS = 4  # ... and with no hit, the first this many screened together


def _planned_input(draw, st, operator: str, spec: RecordSpec, records) -> tuple[list, list | None, bool]:
    """A planned burst's input: up to :data:`PLANNED_INPUTS` inputs of the user's strategy (fewer
    when they fill :data:`PLANNED_SHARE` of an example's draws), every other one spread
    (:func:`_spread_draws`), screened in turn with the operator alone (:func:`_burst_plan`,
    out-of-orderness 0); the first where splitting the burst's firing changes the output is kept,
    else the best scored. Returns ``(records, pool, spread)``: the pool
    of later records (``--records``; None for a ``--stream``) and whether they were drawn spread."""
    best, screened = None, []
    data = draw.__self__  # the ConjectureData drawn from: its size is bounded (an overrun is an invalid example)
    for index in range(PLANNED_INPUTS):
        if best is not None and data.length > data.max_length * PLANNED_SHARE:
            break  # large records: fewer inputs screened, room left for the rest of the scenario
        spread = index % 2 == 1  # every other input spread
        with _spread_draws(draw, longer=spec.whole) if spread else nullcontext():
            if spec.whole:
                drawn, pool = _whole_input(draw, records, spec), None
            else:
                drawn = draw(st.lists(records, min_size=12, max_size=30), label="records")
                pool = draw(st.lists(records, min_size=POOL[0], max_size=POOL[1]), label="records after it")
        stamped = [(r, *_key_and_time(spec, r)) for r in drawn]
        pooled = [] if pool is None else [(r, *_key_and_time(spec, r)) for r in pool]
        hit, score = _burst_plan(operator, stamped, 0, spec.whole, pooled)[:2]
        if hit:
            return drawn, pool, spread
        if best is None or (score, len(drawn)) > best[0]:
            best = ((score, len(drawn)), (drawn, pool, spread))
        screened.append((stamped, pooled, drawn, pool))
    if not spec.whole and len(screened) > 1:
        # records mode, no hit: the first screened inputs together (no draw more), where a burst
        # finds more keys with due timers and more of their records to come after the watermark
        screened = screened[:MERGED_INPUTS]
        merged = [x for s in screened for x in s[0]], [x for s in screened for x in s[1]]
        if _burst_plan(operator, merged[0], 0, False, merged[1])[0]:
            return [r for s in screened for r in s[2]], [r for s in screened for r in s[3]], True
    return best[1]


SPREAD_BUCKETS = 16  # a wide integer drawn spread: first one of this many equal parts of its range
SPREAD_RANGE = 1000  # integers ranging over at least this many values are drawn spread
# each part equally likely (Hypothesis's own integers favour the low end even over 0-15)
_UNIFORM_BUCKETS = {part: 1 / (SPREAD_BUCKETS + 1) for part in range(SPREAD_BUCKETS)}
LONGER = 3  # spread: a list goes on with this many times less chance of ending after each element


@contextmanager
def _spread_draws(draw, longer: bool = True) -> Iterator[None]:
    """While it is open, the user's strategies draw wide bounded integers (``st.integers(0, 3 *
    HOUR)``, timestamps mostly) spread over their range, a part of the range first, then a value
    in it, and lists (``st.lists(records(), max_size=30)``) about :data:`LONGER` times as long.
    Hypothesis draws most such integers near the lower bound (69 % of ``st.integers(0, 3 h)``
    below 100 s) and lists of about six elements, so a timer an hour after a record rarely comes
    due while records of its key are still on time (CountNewsClicks: its shape in 3 % of spread
    inputs, 16 % of spread and longer ones). Every value is still one the user's strategy can
    draw; replay and shrinking work as before (every draw is a choice). ``longer=False``: lists
    as Hypothesis draws them (records mode: the burst's own list of records has its own sizes)."""
    data = draw.__self__  # the ConjectureData the composite draws from
    draw_integer, draw_boolean = data.draw_integer, data.draw_boolean

    def spread_integer(min_value=None, max_value=None, *, weights=None, shrink_towards=0, forced=None, observe=True):
        if forced is None and min_value is not None and max_value is not None \
                and max_value - min_value >= SPREAD_RANGE:
            width = -(-(max_value - min_value + 1) // SPREAD_BUCKETS)
            low = min_value + width * draw_integer(0, SPREAD_BUCKETS - 1, weights=_UNIFORM_BUCKETS)
            return draw_integer(low, min(max_value, low + width - 1))
        return draw_integer(min_value, max_value, weights=weights, shrink_towards=shrink_towards, forced=forced,
                            observe=observe)

    def longer_list(p=0.5, *, forced=None, observe=True):
        # a list's "one more element" (st.booleans() is 0.5; weighted sampling's own draws are unobserved)
        if longer and forced is None and observe and 0.6 < p < 0.99:
            p = 1 - (1 - p) / LONGER
        return draw_boolean(p, forced=forced, observe=observe)

    data.draw_integer, data.draw_boolean = spread_integer, longer_list
    try:
        yield
    finally:
        del data.draw_integer, data.draw_boolean


def _whole_input(draw, records, spec: RecordSpec) -> list:
    drawn = draw(records, label="input")
    if not isinstance(drawn, (list, tuple)) or not drawn:
        raise InputError(f"--stream {spec.names.get('stream')!r} drew {type(drawn).__name__} "
                         f"{_short(drawn)}: a whole input is a non-empty list of records")
    return drawn


def _time_range(spec: RecordSpec, drawn: list) -> int:
    times = [_key_and_time(spec, r)[1] for r in drawn]
    return max(times) - min(times)


def _on_time(steps: list, bound: int) -> list:
    """The steps without the records at or below a watermark their source emitted before them
    (the generator's values: highest timestamp so far - bound - 1)."""
    kept, highest, emitted = [], {}, {}
    for step in steps:
        if isinstance(step, SourceWatermark) and step.source in highest:
            emitted[step.source] = max(emitted.get(step.source, highest[step.source] - bound - 1),
                                       highest[step.source] - bound - 1)
        elif isinstance(step, UserRecord):
            if step.source in emitted and step.ts <= emitted[step.source]:
                continue
            highest[step.source] = max(step.ts, highest.get(step.source, step.ts))
        kept.append(step)
    return kept


def _record_step(source: int, record: Any, key: Any, ts: int) -> UserRecord | Record:
    if isinstance(record, BuiltinRecord):  # the built-in input: the operator is given the value
        return Record(source, record.key, record.value, ts)
    return UserRecord(source, JSON.freeze(_encoded(key)), JSON.freeze(_encoded(record)), ts)


def _spread(draw, st, stamped: list, bound: int, sources: int, span: int, layout: str = "spread") -> list:
    steps: list = []
    highest: dict[int, int] = {}
    watermark: dict[int, int] = {}
    clock: dict[int, int] = {}
    home: dict[str, int] = {}  # by-key: each key's source
    for record, key, ts in stamped:
        if layout == "by-key":
            if repr(key) not in home:
                home[repr(key)] = draw(st.integers(0, sources - 1))
            source = home[repr(key)]
        else:
            source = draw(st.integers(0, sources - 1))
        steps.append(_record_step(source, record, key, ts))
        highest[source] = max(ts, highest.get(source, ts))
        candidate = highest[source] - bound - 1
        if draw(st.booleans()) and candidate > watermark.get(source, candidate - 1):
            watermark[source] = candidate
            steps.append(SourceWatermark(source, candidate))
        # processing time: records come in quickly, with pauses now and then (not event time)
        pause = draw(st.sampled_from(PROCESSING_PAUSES), label="processing-time pause")
        if pause:
            clock[source] = clock.get(source, 0) + pause
            steps.append(ProcessingTime(source, clock[source]))
    for source in sorted(clock):
        if draw(st.booleans()):  # a long while later: processing-time timers come due before end of input
            steps.append(ProcessingTime(source, clock[source] + 10 * span))
    return steps


def _burst(draw, st, operator: str, stamped: list, bound: int, spec: RecordSpec, records,
           pool: list | None = None) -> list:
    """One source; the records in timestamp order (a ``--stream``: each key's records in their
    order, first every key's first record, then the seconds, ...) up to a burst
    point, then one watermark that makes several event-time timers due at once, then first the
    records of those keys (keys with a due timer that fires third or later first: a split firing's first two
    parts have no input between them; with ``--records``, more records of those keys drawn from
    the user's strategy), then the rest. Which timers are pending at each point is learnt by
    running the operator over the records (:func:`pending_timers`); the watermark is the one the
    source's bounded-out-of-orderness generator emits there (the burst point is chosen where it
    makes the most timers due; of a ``--stream``, the order of the two whose best point does)."""
    in_order = spec.whole
    if in_order and spec.source_layout == "one":
        return _burst_in_order(draw, st, operator, list(stamped), bound)
    if not in_order:  # a pool of the user's records to bring in after the watermark: those of due keys
        if pool is None:
            pool = draw(st.lists(records, min_size=POOL[0], max_size=POOL[1]), label="records after it")
        pool = [(r, *_key_and_time(spec, r)) for r in pool]
    else:
        pool = []
    _, _, ordered, pending, choices, pool = _burst_plan(operator, stamped, bound, in_order, pool)
    n = len(ordered)
    first = None
    if choices:
        point, watermark, first = draw(st.sampled_from(choices), label="burst point and watermark")
    else:
        point = draw(st.integers(max(0, n // 3), n - 1), label="burst point")
        watermark = max(ts for _, _, ts in ordered[:point + 1]) - bound - 1
    steps = [_record_step(0, record, key, ts) for record, key, ts in ordered[:point + 1]]
    steps.append(SourceWatermark(0, watermark))
    if first != END:
        steps += [_record_step(0, record, key, ts)
                  for record, key, ts in _after(ordered, pending, pool, in_order, point, watermark, first)]
    return steps, _bound(ordered, point, watermark)


def _bound(ordered: list, point: int, watermark: int) -> int:
    """The out-of-orderness bound whose generator emits ``watermark`` after ``ordered[:point + 1]``."""
    return max(ts for _, _, ts in ordered[:point + 1]) - watermark - 1


HEAD = 3  # records mode: a burst's first records, drawn as they are; narrower than the time constant: the rest spread
STREAM_INPUTS = 8  # a --stream's burst: inputs drawn, the best kept (the second half spread when narrow)
POOL = (10, 40)  # records mode: how many records of the user's strategy are drawn to come after the watermark


def _stream_score(operator: str, spec: RecordSpec, drawn: list) -> tuple:
    """How well a whole input lends itself to the burst shape (:func:`_burst_plan` with no
    out-of-orderness: a choice that splitting changes, then its score), then its length."""
    stamped = [(r, *_key_and_time(spec, r)) for r in drawn]
    hit, score = _burst_plan(operator, stamped, 0, True, [])[:2]
    return hit, score, len(drawn)


def _burst_in_order(draw, st, operator: str, ordered: list, bound: int) -> list:
    """A whole input in one source (``layout="one"``): in its order, one watermark where the most
    records right after it meet a due timer of their key."""
    pending = pending_timers(operator, ordered)
    _, choices = _burst_choices(ordered, pending, bound, in_order=True)
    if choices:
        point, watermark = draw(st.sampled_from(choices), label="burst point and watermark")
    else:
        point = draw(st.integers(max(0, len(ordered) // 3), len(ordered) - 1), label="burst point")
        watermark = max(ts for _, _, ts in ordered[:point + 1]) - bound - 1
    steps = [_record_step(0, record, key, ts) for record, key, ts in ordered[:point + 1]]
    steps.append(SourceWatermark(0, watermark))
    return steps + [_record_step(0, record, key, ts) for record, key, ts in ordered[point + 1:]], \
        _bound(ordered, point, watermark)


@dataclasses.dataclass(frozen=True)
class BuiltinRecord:
    """A record of the built-in input, for the planned searches: the operator is given ``value``
    under ``key`` at ``ts`` (a job scenario's ``Record`` step)."""

    key: Any
    value: int
    ts: int


def builtin_records(span: int) -> RecordSpec:
    """The built-in input as records (the job scenarios' keys, values 1-5, timestamps over
    ``span``): what the planned searches screen for an operator without records of its own, so
    that its refusals too do not depend on ``--examples``."""
    from hypothesis import strategies as st

    from streamproof.properties.job.inputs import KEYS

    strategy = st.builds(BuiltinRecord, st.sampled_from(KEYS), st.integers(1, 5), st.integers(0, max(1, span) - 1))
    return RecordSpec(lambda: strategy, key=lambda r: r.key, timestamp=lambda r: r.ts,
                      names={"records": "built-in"})


def builtin_scenarios(operator: str, span: int):
    """The built-in ``(key, int value, ts)`` scenarios, timestamps stretched to ``span``."""
    from streamproof.properties.job.catalogue import job_scenarios

    scale = max(1, span // DEFAULT_SPAN)

    def stretch(step):
        if isinstance(step, (Record, SourceWatermark)):
            return dataclasses.replace(step, ts=step.ts * scale + (scale - 1 if isinstance(step, SourceWatermark) else 0))
        return step

    return job_scenarios().map(lambda s: dataclasses.replace(
        s, steps=tuple(stretch(step) for step in s.steps),
        params={**s.params, "operator": operator, "interruptible_timers": True}))
