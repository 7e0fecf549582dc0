"""Where a burst scenario puts its watermark: the burst points, watermarks and records right after
it scored from the timers the operator has pending (:mod:`streamproof.properties.certify_probes`),
those where splitting the firing changes the operator's output first (remembered per input)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from streamproof.properties.certify_probes import _PROBED_MAX, pending_timers, splits_change_output


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
