"""What a certification feeds the user's operator: its records, keys and timestamps, and the job
scenarios built from them.

A :class:`RecordSpec` names a Hypothesis strategy of ONE input record (any JSON-like shape), the
key selector and the timestamp assigner (each a ``module:function``, a field index or a field
name), as the user's pipeline does with ``key_by`` and a ``TimestampAssigner``. A module that
defines ``records()``, ``key(record)`` and ``timestamp(record)`` next to its operator needs no
options. Without records, an operator of the ``impl.operators`` style gets the built-in
``(key, int value, timestamp)`` scenarios, their timestamps stretched to the operator's own time
constants (``span``) so that its timers fire before end of input.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
from bisect import bisect_left, bisect_right
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from streamproof.properties.job.steps import (
    RESTART_GAP,
    Fail, FailInInterruptedFiring, ProcessingTime, Record, Rescale, SourceWatermark, UserRecord,
)
from streamproof.properties.job.values import UnencodableValue, encode
from streamproof.properties.scenario import JSON, Scenario

DEFAULT_SPAN = 60  # the built-in scenarios' time range
PROBE_CALLBACK_SECONDS = 5.0  # a user callback of the timer probe running longer ends the probe
# processing time that passes before a record (ms): mostly none or little, sometimes a pause
PROCESSING_PAUSES = (0, 0, 0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)


LAYOUTS = ("spread", "by-key", "one")  # how records are laid out over parallel sources (RecordSpec.layout)


class InputError(ValueError):
    """The records, key selector or timestamp assigner cannot be used (one line)."""


@dataclass
class RecordSpec:
    """The user's input: ``strategy()`` draws one record, or, when ``whole`` is set, a whole
    input (a list of records, in order: for data with structure across records, e.g. one START
    and one END per ride); ``key``/``timestamp`` read a record."""

    strategy: Callable[[], Any]
    key: Callable[[Any], Any]
    timestamp: Callable[[Any], int]
    names: dict  # how each part was given, for the certificate and the replay command
    whole: bool = False
    # how records are laid out over parallel source subtasks: "spread" (each record to one at
    # random: a key's records may come from several, their order across them is Flink's to
    # choose), "by-key" (each key's records from one source, in their order: a key-partitioned
    # source), "one" (a single source, the whole input in its order). None: "by-key" for a whole
    # input (--stream), "spread" for records
    layout: str | None = None
    # False: the input is never behind its source's watermark (e.g. the results of a window
    # operator upstream, emitted before its watermark): late records are left out of scenarios
    late: bool = True

    @property
    def source_layout(self) -> str:
        return self.layout or ("by-key" if self.whole else "spread")


def resolve(ref: str, what: str) -> Any:
    module_name, sep, name = ref.partition(":")
    if not sep or not module_name or not name:
        raise InputError(f"{what} {ref!r}: expected module:name")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is bad input
        raise InputError(f"{what} {ref!r}: cannot import {module_name}: {type(e).__name__}: {e}") from None
    if not hasattr(module, name):
        raise InputError(f"{what} {ref!r}: {module_name} has no {name}")
    return getattr(module, name)


def selector(ref: str | int | Callable, what: str) -> Callable[[Any], Any]:
    """A ``module:function``, a field index (``0``) or a field name (``user_id``)."""
    if callable(ref):
        return ref
    if isinstance(ref, int) or (isinstance(ref, str) and ref.lstrip("-").isdigit()):
        index = int(ref)
        return lambda record: record[index]
    if isinstance(ref, str) and ":" in ref:
        function = resolve(ref, what)
        if not callable(function):
            raise InputError(f"{what} {ref!r} is not a function")
        return function
    name = str(ref)

    def field(record: Any) -> Any:
        if isinstance(record, dict):
            return record[name]
        try:
            return record[name]  # a named Row
        except (TypeError, KeyError, IndexError, ValueError):
            return getattr(record, name)
    return field


def record_spec(module: Any, records: Any, key: Any, timestamp: Any, stream: Any = None,
                layout: str | None = None, late: bool | None = None) -> RecordSpec | None:
    """The user's input from the options, else from the operator's module (``stream`` or
    ``records``, ``key``, ``timestamp``), else None (the built-in integer records). Each option is
    a ``module:name`` string (as the command line gives it) or the object itself: ``records`` or
    ``stream`` a Hypothesis strategy or a function returning one, ``key`` and ``timestamp`` a
    function of a record (or a field index or name). ``module`` may be None (no conventions)."""
    given = {"stream": stream, "records": records, "key": key, "timestamp": timestamp}
    given = {n: (None if v is None or (isinstance(v, str) and not v) else v) for n, v in given.items()}
    if given["records"] is not None and given["stream"] is not None:
        raise InputError("give --records (one record) or --stream (a whole input), not both")
    objects = {n: v for n, v in given.items() if v is not None and not isinstance(v, str)}
    from_module = {} if module is None else \
        {n: f"{module.__name__}:{n}" for n in given if callable(getattr(module, n, None))}
    if given["records"] is not None or given["stream"] is not None:  # an option wins over the module's convention
        from_module.pop("stream" if given["records"] is not None else "records", None)
    names = {n: (describe(given[n]) if n in objects else given[n]) or from_module.get(n) for n in given}
    if layout not in (None, *LAYOUTS):
        raise InputError(f"--layout {layout!r}: one of {', '.join(LAYOUTS)}")
    source_name = names["stream"] or names["records"]
    if source_name is None:
        if given["key"] is not None or given["timestamp"] is not None:
            raise InputError("--key and --timestamp need --records (a Hypothesis strategy of input records)")
        return None
    option = "--stream" if names["stream"] else "--records"
    missing = [n for n in ("key", "timestamp") if names[n] is None]
    if missing:
        raise InputError(f"records given without --{missing[0]} (the {missing[0]} of a record: module:function, "
                         "a field index or a field name)")
    which = "stream" if names["stream"] else "records"
    source = objects[which] if which in objects else resolve(source_name, option)
    if not callable(source) and not _is_strategy(source):
        raise InputError(f"{option} {source_name!r} is neither a strategy nor a function returning one")
    if names["stream"]:
        names.pop("records")
    else:
        names.pop("stream")
    if layout:
        names["layout"] = layout
    if late is None:
        late = getattr(module, "LATE", True) is not False
    if not late:
        names["late"] = "never (--no-late)"
    return RecordSpec(lambda: source if _is_strategy(source) else _strategy_from(source, source_name, option),
                      selector(objects.get("key", names["key"]), "--key"),
                      selector(objects.get("timestamp", names["timestamp"]), "--timestamp"), names,
                      whole=bool(given["stream"] is not None or "stream" in names), layout=layout, late=late)


def describe(value: Any) -> str:
    """How an input given as an object is named in the certificate and in messages."""
    if isinstance(value, (int, str)):
        return str(value)
    if _is_strategy(value):
        return f"strategy {_short(value)}"
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    module = getattr(value, "__module__", None)
    if name and module:
        return f"{module}:{name}"
    return _short(value)


def _is_strategy(value: Any) -> bool:
    from hypothesis.strategies import SearchStrategy

    return isinstance(value, SearchStrategy)


def _strategy_from(function: Callable, name: str, option: str = "--records"):
    try:
        value = function()
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{option} {name!r} raised {type(e).__name__}: {e}") from None
    if not _is_strategy(value):
        raise InputError(f"{option} {name!r} returned {type(value).__name__}, not a Hypothesis strategy")
    return value


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


def user_scenarios(operator: str, spec: RecordSpec, span: int = DEFAULT_SPAN):
    """Scenarios of the user's records, of two shapes (drawn half and half):

    - *spread*: 1-3 sources (each record to one at random), records out of order within a
      source, bounded out-of-orderness watermarks after some records (records below them are
      late, as in a real source), processing-time pauses, faults;
    - *burst*: the shape FLIP-443 changes outputs in: one source, records in timestamp order
      (a ``--stream`` in its own order), no watermark until one or two late points, so that one
      watermark makes the timers of several keys due at once, and right after it the records of
      keys seen before it (keys whose timers it made due), then faults as above.
    """
    from hypothesis import strategies as st

    records = spec.strategy()
    constant = max(1, span // 3)  # the operator's largest time constant (:func:`time_span`)

    @st.composite
    def scenarios(draw) -> Scenario:
        burst = draw(st.booleans(), label="burst shape")
        spread = False
        if spec.whole:
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
        bound = draw(st.sampled_from(bounds), label="out-of-orderness")
        if burst:  # the bound may grow: a watermark at a due timer's time (:func:`_watermarks`)
            with _spread_draws(draw, longer=False) if spread else nullcontext():  # the pool drawn as the records were
                sources, (steps, bound) = 1, _burst(draw, st, operator, stamped, bound, spec, records)
        else:
            layout = spec.source_layout
            sources = 1 if layout == "one" else draw(st.integers(1, 3), label="sources")
            steps = _spread(draw, st, stamped, bound, sources, span, layout)
        steps += _faults(draw, st, len(steps))
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
        return Scenario(family="job", steps=tuple(steps), params=params)

    return scenarios()


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


def _record_step(source: int, record: Any, key: Any, ts: int) -> UserRecord:
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


def _burst(draw, st, operator: str, stamped: list, bound: int, spec: RecordSpec, records) -> list:
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
    pool: list = []
    if not in_order:  # a pool of the user's records to bring in after the watermark: those of due keys
        pool = [(r, *_key_and_time(spec, r)) for r in draw(st.lists(records, min_size=POOL[0], max_size=POOL[1]),
                                                            label="records after it")]
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


_PLANNED: dict = {}  # the arguments' reprs -> _burst_plan's answer (each property draws the same inputs)


def _burst_plan(operator: str, stamped: list, bound: int, in_order: bool, pool: list) -> tuple:
    """:func:`_make_burst_plan`, remembered per input: the certification properties draw the same
    scenarios from the same seed, and planning costs as much as drawing them."""
    try:
        cache_key = (operator, bound, in_order, tuple((repr(r), repr(k), ts) for r, k, ts in stamped),
                     tuple((repr(r), repr(k), ts) for r, k, ts in pool))
    except Exception:  # noqa: BLE001 - a record whose repr fails: no caching
        return _make_burst_plan(operator, stamped, bound, in_order, pool)
    if cache_key not in _PLANNED:
        if len(_PLANNED) >= _PROBED_MAX:
            _PLANNED.clear()
        _PLANNED[cache_key] = _make_burst_plan(operator, stamped, bound, in_order, pool)
    hit, score, ordered, pending, choices, rest = _PLANNED[cache_key]
    return hit, score, list(ordered), [list(p) for p in pending], list(choices), list(rest)


def _make_burst_plan(operator: str, stamped: list, bound: int, in_order: bool, pool: list) -> tuple:
    """The input order and burst choices ((point, watermark, first) triples) to draw from, as
    ``(hit, score, ordered, pending, choices, pool)``: records mode, the records in timestamp order
    (and, without a hit, with one of the pool's later records among them: :data:`RAISERS`); a
    ``--stream``, each key's records in their order, interleaved two ways (:func:`_by_rank`,
    :func:`_by_time_per_key`). Choices where splitting changes the operator's output
    (:func:`splits_change_output`) come first, then the score of :func:`_burst_choices`."""
    orders = (_by_rank(stamped), _by_time_per_key(stamped)) if in_order else \
        (sorted(stamped, key=lambda item: item[2]),)
    budget = [PROBE_BUDGET]
    plans = [_plan(operator, ordered, bound, in_order, pool, budget, PROBE_PAIRS) for ordered in orders]
    if not in_order and not any(plan[0] for plan in plans):
        # records mode: a later record of the pool before the watermark raises it (timers with
        # a time constant longer than the records' spread come due)
        # (the earliest such records first: a raiser leaves the pool's later records on time)
        latest = max(ts for _, _, ts in stamped)
        later = sorted((x for x in pool if x[2] > latest), key=lambda x: x[2])
        for raiser in [x for x in later if x[2] < later[-1][2]][:RAISERS]:
            if budget[0] <= 0:
                break
            rest = [x for x in pool if x is not raiser]
            plans.append(_plan(operator, sorted(stamped + [raiser], key=lambda item: item[2]), bound, in_order, rest,
                               budget, RAISER_PAIRS))
            if plans[-1][0]:
                break
    best = max(plan[:2] for plan in plans)
    return next(plan for plan in plans if plan[:2] == best)


HEAD = 3  # records mode: a burst's first records, drawn as they are; narrower than the time constant: the rest spread
STREAM_INPUTS = 8  # a --stream's burst: inputs drawn, the best kept (the second half spread when narrow)
POOL = (10, 40)  # records mode: how many records of the user's strategy are drawn to come after the watermark
PROBE_PAIRS = 8  # (choice, record) pairs per input order tried on the operator alone (split and not)
RAISERS = 6  # records mode: pool records tried as the one that raises the burst's watermark
RAISER_PAIRS = 4  # (choice, record) pairs per raiser
PROBE_BUDGET = 12  # operator-alone probes per burst in all (each runs the operator twice; no corpus hit needed more than 11)


def _plan(operator: str, ordered: list, bound: int, in_order: bool, pool: list, budget: list, pairs: int) -> tuple:
    pending = pending_timers(operator, ordered)
    scored = _scored_choices(ordered, pending, bound, in_order, pool)
    score = max((s for s, _, _ in scored), default=0)
    choices = [(point, watermark) for s, point, watermark in scored if s == score and s]
    # the choices, each with a record to put right after the watermark, where splitting the
    # firing changes what the operator alone outputs: the best scored first, a few pairs in all
    hits, tried = [], 0
    candidates = {(point, watermark): _candidates(ordered, pending, pool, in_order, point, watermark)
                  for s, point, watermark in scored if s}
    # the choices with the most records that may meet their key's due timers first, then by score
    for _, point, watermark in sorted((x for x in scored if x[0]),
                                      key=lambda x: (-len(candidates[x[1:]]), -x[0])):
        for i, item in enumerate(candidates[(point, watermark)]):
            if tried >= pairs or budget[0] <= 0:
                break
            tried += 1
            budget[0] -= 1
            # the record, then its key's later records in the scenario's order (one of them may
            # show the difference: an END that finds the state its START left, or not; keyed
            # state and timers are per key, so other keys' records would show nothing new)
            following = [x for x in _after(ordered, pending, pool, in_order, point, watermark, i)[1:]
                         if repr(x[1]) == repr(item[1])]
            if splits_change_output(operator, ordered, watermark, point, [item] + following):
                hits.append((point, watermark, i))
                break
        if tried >= pairs or budget[0] <= 0 or len(hits) >= 2:
            break
    if not hits:  # the end of input right after the watermark, in the firing (the latest points first)
        for _, point, watermark in sorted((x for x in scored if x[0]), key=lambda x: (-x[1], -x[0]))[:END_PROBES]:
            budget[0] -= 1
            if splits_change_output(operator, ordered, watermark, point, [], end=True):
                hits.append((point, watermark, END))
                break
    return bool(hits), score, ordered, pending, hits or [(point, watermark, None) for point, watermark in choices], pool


END = -1  # a burst choice's ``first``: the input ends right after the watermark (no records after it)
END_PROBES = 2  # choices tried with the end of input inside the split firing


def _positions(pending: list, point: int, watermark: int, first: bool = False) -> dict:
    """Per key (repr) with a timer due at ``watermark``, the index of its last (``first``: first)
    due timer in firing order."""
    timers = pending[point] if point < len(pending) else []
    due = list(enumerate(t for t in timers if t[0] <= watermark))
    return {key: index for index, (_, key) in (reversed(due) if first else due)}


def _after(ordered: list, pending: list, pool: list, in_order: bool, point: int, watermark: int,
           first: int | None = None) -> list:
    """The records after the burst's watermark: the keys whose due timer fires third or later
    first (a stable sort: each key's records stay in their order; the order across keys is free,
    as between the partitions of a source); with ``pool`` (records mode), first its records of due
    keys, those of keys firing third or later and on time first (at most eight). ``first``: the
    index in :func:`_candidates` of the record to put right after the watermark."""
    position = _positions(pending, point, watermark)
    rest = ordered[point + 1:]
    if not in_order:
        due = sorted((x for x in pool if repr(x[1]) in position),
                     key=lambda item: (position[repr(item[1])] < 2, item[2] <= watermark))
        rest = due[:8] + rest
    rest = sorted(rest, key=lambda item: (position.get(repr(item[1]), -1) < 2, in_order or item[2] <= watermark,
                                          position.get(repr(item[1]), 0)))
    if first is not None:
        chosen = _candidates(ordered, pending, pool, in_order, point, watermark)[first]
        rest = [chosen] + [x for x in rest if x is not chosen]
    return rest


CANDIDATES = 8  # records tried as the one right after the burst's watermark


def _candidates(ordered: list, pending: list, pool: list, in_order: bool, point: int, watermark: int) -> list:
    """The on-time records that may run right after the burst's watermark, between the second
    and third parts of a split firing, of keys whose due timer fires third or later: of a
    ``--stream`` each such key's next record (its order kept), else any of their records after
    the point or in ``pool``. At most :data:`CANDIDATES`."""
    position = _positions(pending, point, watermark)
    firsts = _positions(pending, point, watermark, first=True)
    found, seen = [], set()
    for item in list(ordered[point + 1:]) + ([] if in_order else list(pool)):
        key = repr(item[1])
        if position.get(key, -1) < 2 or (in_order and key in seen):
            continue
        seen.add(key)
        if item[2] > watermark:
            found.append(item)
    # keys none of whose due timers fires before the record first
    found.sort(key=lambda item: firsts[repr(item[1])] < 2)
    return found[:CANDIDATES]


def _burst_choices(ordered: list, pending: list, bound: int, in_order: bool = False,
                   extra: list = ()) -> tuple[int, list]:
    """The best score of :func:`_scored_choices` and the (point, watermark) pairs that have it."""
    scored = _scored_choices(ordered, pending, bound, in_order, extra)
    best = max((score for score, _, _ in scored), default=0)
    return best, [(point, watermark) for score, point, watermark in scored if score == best and score]


def _scored_choices(ordered: list, pending: list, bound: int, in_order: bool = False, extra: list = ()) -> list:
    """Per burst point with due timers, ``(score, point, watermark)``: how many records after the
    watermark meet a due timer of their key not fired yet when every timer is a part of its own
    (the record ``j`` after the watermark runs before the due timer ``j + 2``, counted from 0),
    on time ones counting most and keys none of whose due timers fires before the record most of
    all; with ``--records`` more records of due keys are drawn (``extra``), so points that make
    three or more keys due count too."""
    scored = []
    for point in range(min(len(ordered) - (0 if extra else 1), len(pending))):
        if not pending[point]:
            continue
        times = [ts for _, _, ts in ordered[:point + 1]]
        later = list(ordered[point + 1:]) + ([] if in_order else list(extra))
        for watermark in _watermarks(pending[point], min(times), max(times), bound, later):
            score = _score(ordered, pending, point, watermark, in_order, extra)
            scored.append((score, point, watermark))
    return scored


WATERMARKS = 3  # per burst point, watermarks at due timers' times tried besides the drawn bound's


def _watermarks(timers: list, lowest: int, highest: int, bound: int, later: list = ()) -> list:
    """The watermarks a bounded-out-of-orderness source may emit after records from ``lowest`` to
    ``highest``: the drawn bound's (``highest - bound - 1``), ones at the time of the third, the
    middle and the last pending timer in that range (a larger bound: timers with a time constant
    longer than the records' spread come due while later records are still on time), and, per
    record of ``later``, the last pending timer of its key before its timestamp when two or more
    timers fire before it (that record on time right after a watermark that makes its key's timer
    due, third or later)."""
    times = sorted({ts for ts, _ in timers if lowest <= ts < highest})
    aligned = [t for t in (times[2:3] + times[len(times) // 2:len(times) // 2 + 1] + times[-1:])
               if sum(1 for ts, _ in timers if ts <= t) >= 3]
    fitted: list = []
    if later:
        every = sorted(ts for ts, _ in timers)
        own_times: dict = {}
        for ts, key in timers:
            own_times.setdefault(key, []).append(ts)
        for own in own_times.values():
            own.sort()
        for _, key, ts in later:
            own = own_times.get(repr(key))
            index = bisect_left(own, min(ts, highest)) if own else 0
            if index and own[index - 1] >= lowest and own[index - 1] not in fitted:
                watermark = own[index - 1]
                if bisect_right(every, watermark) - bisect_right(own, watermark) >= 2:
                    fitted.append(watermark)
                    if len(fitted) == WATERMARKS:
                        break
    return list(dict.fromkeys([highest - bound - 1] + aligned[:WATERMARKS] + fitted))


def _score(ordered: list, pending: list, point: int, watermark: int, in_order: bool, extra: list) -> int:
    """How many records after ``watermark`` may meet a due timer of their key not fired yet (see
    :func:`_scored_choices`)."""
    position = _positions(pending, point, watermark)
    firsts = _positions(pending, point, watermark, first=True)
    # records on time (above the watermark) first: the shape on records every source
    # sends; records behind the watermark next (some operators only get those)
    if in_order:  # exactly the records that follow
        after = ordered[point + 1:point + 1 + len(position)]
        meets = [ts > watermark for j, (_, key, ts) in enumerate(after) if position.get(repr(key), -1) >= j + 2]
    else:  # the records that follow (and ``extra`` ones) are brought forward by key
        keys = [(repr(key), ts > watermark) for _, key, ts in list(ordered[point + 1:]) + list(extra)]
        meets = [max(on for k, on in keys if k == key) for key, p in position.items()
                 if p >= 2 and any(k == key for k, _ in keys)]
        # a record on time of a key none of whose due timers fires before the third part
        meets += [max(on for k, on in keys if k == key) * 10 for key, p in firsts.items()
                  if p >= 2 and any(k == key for k, _ in keys)]
    return 100 * sum(meets) + 10 * sum(1 for m in meets if not m) + sum(1 for p in position.values() if p >= 2)


def _stream_score(operator: str, spec: RecordSpec, drawn: list) -> tuple:
    """How well a whole input lends itself to the burst shape (:func:`_burst_plan` with no
    out-of-orderness: a choice that splitting changes, then its score), then its length."""
    stamped = [(r, *_key_and_time(spec, r)) for r in drawn]
    hit, score = _burst_plan(operator, stamped, 0, True, [])[:2]
    return hit, score, len(drawn)


def _by_rank(stamped: list) -> list:
    """Each key's records in their order: every key's first record, then the seconds, ..."""
    rank: dict = {}
    ranked = []
    for index, item in enumerate(stamped):
        rank[repr(item[1])] = rank.get(repr(item[1]), -1) + 1
        ranked.append((rank[repr(item[1])], index, item))
    return [item for _, _, item in sorted(ranked)]


def _by_time_per_key(stamped: list) -> list:
    """Each key's records in their order, merged by timestamp (the next record of each key, the
    earliest first): as close to timestamp order as the per-key order allows."""
    queues: dict = {}
    for index, item in enumerate(stamped):
        queues.setdefault(repr(item[1]), []).append((index, item))
    merged = []
    while queues:
        key = min(queues, key=lambda k: (queues[k][0][1][2], queues[k][0][0]))
        merged.append(queues[key].pop(0)[1])
        if not queues[key]:
            del queues[key]
    return merged


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


_PROBED: dict = {}  # (operator, the records' reprs) -> pending_timers' answer (each property draws the same inputs)
_PROBED_MAX = 2048


def pending_timers(operator: str, ordered: list) -> list[list]:
    """Per record of ``ordered`` ((record, key, ts) in input order), the event-time timers pending
    after it, as (timestamp, repr(key)): the operator run over the records alone, no watermark
    (a probe: any error ends it early; what it learnt so far is returned). Remembered per input:
    every certification property explores the same scenarios."""
    try:
        cache_key = (operator, tuple((repr(record), repr(key), ts) for record, key, ts in ordered))
    except Exception:  # noqa: BLE001 - a record whose repr fails: no caching
        return _pending_timers(operator, ordered)
    if cache_key not in _PROBED:
        if len(_PROBED) >= _PROBED_MAX:
            _PROBED.clear()
        _PROBED[cache_key] = _pending_timers(operator, ordered)
    return [list(p) for p in _PROBED[cache_key]]


_SPLIT_PROBED: dict = {}


def splits_change_output(operator: str, ordered: list, watermark: int, point: int, after: list,
                         end: bool = False) -> bool:
    """Does splitting the burst's firing change what the operator alone outputs? The operator runs
    over ``ordered[:point + 1]``, then the watermark, then the records of ``after`` that are on time
    (a difference only late records make is a finding, not a refusal) and the end of input,
    twice: the watermark's timers fired at once, and fired one part at a time with one record
    between two parts from the third part on (the split certify.interruptible-timers tries
    first); ``end``: no records after the watermark, the end of input (the last watermark) arrives
    after the second part and fires the rest with its own. A search aid only (remembered per
    input): the verdict is the job's."""
    try:
        cache_key = (operator, watermark, point, end, tuple((repr(r), repr(k), ts) for r, k, ts in ordered),
                     tuple((repr(r), repr(k), ts) for r, k, ts in after))
    except Exception:  # noqa: BLE001 - a record whose repr fails
        return False
    if cache_key not in _SPLIT_PROBED:
        if len(_SPLIT_PROBED) >= _PROBED_MAX:
            _SPLIT_PROBED.clear()
        on_time = [item for item in after if item[2] > watermark]  # a late record's difference is a finding
        outputs = [_probe_outputs(operator, ordered[:point + 1], watermark, on_time, split, end)
                   for split in (False, True)]
        _SPLIT_PROBED[cache_key] = None not in outputs and outputs[0] != outputs[1]
    return _SPLIT_PROBED[cache_key]


def _probe_outputs(operator: str, before: list, watermark: int, after: list, split: bool, end: bool = False):
    from collections import Counter

    from streamproof.properties.job.values import canonical
    from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK

    outputs: list = []
    try:
        op = _probe_operator(operator, lambda value, ts: outputs.append(value),
                             lambda tag, value, ts: outputs.append(("side-output", tag, value)))
        if op is None:
            return None
        for item in before:
            op.process_element(_probe_record(*item))
        rest = list(after)
        manager = op.time_service_manager
        if split:
            parts = 0
            while not manager.try_advance_watermark(watermark, lambda: True):
                parts += 1
                if parts >= 2 and end:
                    break  # the end of input's watermark fires the rest below
                if parts >= 2 and rest:
                    op.process_element(_probe_record(*rest.pop(0)))
        else:
            manager.advance_watermark(watermark)
        for item in rest:
            op.process_element(_probe_record(*item))
        manager.advance_watermark(MAX_WATERMARK)
        return Counter(canonical(v) for v in outputs)
    except Exception as e:  # noqa: BLE001 - the user's code: the runs report its errors, not the probe
        _remember_slow(operator, e)
        return None


def _remember_slow(operator: str, error: Exception) -> None:
    from streamproof.impl.operators.keyed_process_operator import CallbackLimitExceeded

    if isinstance(error, CallbackLimitExceeded):  # a looping callback: the runs say so, once
        _SLOW_PROBES.add(operator)


_SLOW_PROBES: set = set()  # operators whose callback ran past the probe's time limit: never probed again


def _probe_operator(operator: str, emit, emit_side):
    from streamproof.impl.state.key_groups import KeyGroupRange
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator
    from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
    from streamproof.properties.job.functions import FUNCTIONS

    factory = FUNCTIONS.get(operator)
    if factory is None or operator in _SLOW_PROBES:
        return None
    op = KeyedProcessOperator(factory(), 128, KeyGroupRange(0, 127), ManualProcessingTimeService(start=0), emit,
                              emit_side=emit_side, max_seconds_per_callback=PROBE_CALLBACK_SECONDS)
    op.open()
    return op


def _probe_record(record: Any, key: Any, ts: int):
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.properties.job.steps import CompositeKey
    from streamproof.properties.job.values import decode

    routed = decode(encode(key))
    if isinstance(routed, bool) or not isinstance(routed, (str, int)):
        routed = CompositeKey.of(routed)
    return StreamRecord(routed, decode(encode(record)), ts)


def _pending_timers(operator: str, ordered: list) -> list[list]:
    found: list[list] = []
    try:
        op = _probe_operator(operator, lambda value, ts: None, lambda tag, value, ts: None)
        if op is None:
            return found
        names: dict = {}
        for item in ordered:
            record = _probe_record(*item)
            names[record.key] = repr(item[1])
            op.process_element(record)
            found.append(sorted((timer[0], names.get(timer[1], repr(timer[1])))
                                for service in op.time_service_manager.services.values()
                                for timer in service.event_time_timers_queue))
    except Exception as e:  # noqa: BLE001 - the user's code: the runs report its errors, not the probe
        _remember_slow(operator, e)
    return found


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


def _key_and_time(spec: RecordSpec, record: Any) -> tuple[Any, int]:
    try:
        key = spec.key(record)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"the key selector {spec.names['key']!r} failed on {record!r}: {type(e).__name__}: {e}") from None
    try:
        ts = spec.timestamp(record)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"the timestamp assigner {spec.names['timestamp']!r} failed on {record!r}: "
                         f"{type(e).__name__}: {e}") from None
    if not _valid_key(key):
        raise InputError(f"the key selector {spec.names['key']!r} gave {key!r} ({type(key).__name__}): keys are "
                         "strings, integers, floats, booleans or tuples (Rows) of them")
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise InputError(f"the timestamp assigner {spec.names['timestamp']!r} gave {ts!r}: timestamps are integers "
                         "(milliseconds)")
    return key, ts


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _valid_key(key: Any) -> bool:
    if isinstance(key, (str, int, float, bool)):
        return True
    return isinstance(key, tuple) and all(_valid_key(k) for k in key)


def _encoded(record: Any) -> Any:
    try:
        return encode(record)
    except UnencodableValue as e:
        raise InputError(f"record {record!r}: {e}") from None
