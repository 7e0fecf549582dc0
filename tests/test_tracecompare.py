"""The one trace-comparison helper (properties/tracecompare.py) every runner uses."""

from __future__ import annotations

from streamproof.properties.tracecompare import TraceComparison, events_text, run_trace

TIES = TraceComparison(ignore=frozenset({"step"}), error_key=lambda e: (bool(e.get("fatal")),),
                       tie_key=lambda e: e["ts"] if e.get("event") == "fire" else None)
PLAIN = TraceComparison(ignore=frozenset({"message"}))


def fire(ts, key, step=0):
    return {"event": "fire", "ts": ts, "key": key, "step": step}


def test_ties_compare_as_a_multiset_and_nothing_else_does():
    assert TIES.same([fire(5, "a"), fire(5, "b")], [fire(5, "b", step=3), fire(5, "a")])
    assert not TIES.same([fire(5, "a"), fire(6, "b")], [fire(6, "b"), fire(5, "a")])     # different timestamps: ordered
    assert not TIES.same([fire(5, "a"), fire(5, "a")], [fire(5, "a")])                    # duplicates count
    assert not PLAIN.same([fire(5, "a"), fire(5, "b")], [fire(5, "b"), fire(5, "a")])     # no tie key: ordered


def test_errors_compare_by_type_and_the_family_key_only():
    assert TIES.same([{"event": "error", "text": "A", "fatal": True}], [{"event": "error", "text": "B", "fatal": True}])
    assert not TIES.same([{"event": "error", "fatal": True}], [{"event": "error"}])
    assert PLAIN.same([{"event": "error", "text": "A"}], [{"event": "error", "text": "B"}])
    assert PLAIN.same([{"event": "took", "mail": "m", "message": "x"}], [{"event": "took", "mail": "m"}])
    assert not PLAIN.same([{"event": "took", "mail": "m"}], [{"event": "took", "mail": "n"}])


def test_interleaving_across_lanes_is_free_within_a_lane_ordered():
    a = [{"event": "deliver", "subtask": 0, "n": 1}, {"event": "deliver", "subtask": 1, "n": 1},
         {"event": "deliver", "subtask": 0, "n": 2}]
    assert PLAIN.same_up_to_interleaving(a, [a[1], a[0], a[2]], lane="subtask")
    assert not PLAIN.same_up_to_interleaving(a, [a[2], a[1], a[0]], lane="subtask")
    assert not PLAIN.same_up_to_interleaving(a, a[:2], lane="subtask")


def test_difference_names_the_first_departure_in_one_line():
    a, b = [fire(1, "a"), fire(2, "x"), fire(2, "y")], [fire(1, "a"), fire(2, "x"), fire(2, "z")]
    assert TIES.difference(a, b).startswith("event 1: ")                                 # the tie group starts at 1
    assert "instead of" in TIES.difference(a, b)
    assert TIES.difference(a, a[:1]) == f"event 1: the implementation trace goes on with {events_text(a[1:])}"
    assert TIES.difference(a[:1], a).startswith("event 1: the reference trace goes on with")
    long = [fire(t, "k") for t in range(10)]
    assert events_text(long).endswith("(+7 more)") and "\n" not in TIES.difference(long, [])


def test_run_trace_collects_observations_and_stops_when_the_run_ended():
    seen = []

    def apply(step, index):
        seen.append(index)
        return [{"event": "obs", "step": index, "value": step}]

    assert [e["value"] for e in run_trace(apply, "abc")] == ["a", "b", "c"]
    seen.clear()
    assert len(run_trace(apply, "abcd", ended=lambda: len(seen) == 2)) == 2 and seen == [0, 1]
