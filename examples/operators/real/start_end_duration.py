"""StartEndDuration -- the KeyedProcessFunction example of flink.apache.org ("What is Apache Flink? -- Applications").

Source: https://github.com/apache/flink-web, file ``docs/content/what-is-flink/flink-applications.md``
(section "Building Blocks for Streaming Applications" -> "Layered APIs" -> "The ProcessFunctions") at
commit aa5b0b18dc0ae74cd3f97bca518fc46124e1927a, published as
https://flink.apache.org/what-is-flink/flink-applications/ .
Original language: Java.  License: Apache-2.0 (the repository's LICENSE).

"The following example shows a KeyedProcessFunction that operates on a KeyedStream and matches START
and END events.  When a START event is received, the function remembers its timestamp in state and
registers a timer in four hours.  If an END event is received before the timer fires, the function
computes the duration between END and START event, clears the state, and returns the value.
Otherwise, the timer just fires and clears the state."  The page shows only the function: the input
is a ``KeyedStream`` of ``Tuple2<String, String>`` (key, "START"/"END") with event timestamps.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``), ``ValueStateDescriptor<Long>("startTime", Long.class)`` with ``Types.LONG()``,
``Tuple2.of(in.f0, ...)`` as a Python tuple, the ``switch`` as ``if``/``elif`` (the ``END`` case has
no ``break`` and falls through to ``default``, which does nothing: kept as a comment).  Kept as is:
the timer of a START is never deleted, so it also clears the state of a later START of the same key
(and a second START overwrites the first one's time but leaves its timer).

The page leaves out where the timestamps come from; ``records()`` carries each event's timestamp as
a third field ``ts`` next to ``f0`` and ``f1`` (the function reads only ``f0``, ``f1`` and
``ctx.timestamp()``).
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

FOUR_HOURS_MS = 4 * 60 * 60 * 1000


class StartEndDuration(KeyedProcessFunction):
    """Matches keyed START and END events and computes the difference between
    both elements' timestamps. The first String field is the key attribute,
    the second String attribute marks START and END events."""

    def __init__(self):
        self.start_time = None

    def open(self, conf: RuntimeContext):
        # obtain state handle
        self.start_time = conf.get_state(ValueStateDescriptor("startTime", Types.LONG()))

    def process_element(self, in_, ctx: 'KeyedProcessFunction.Context'):
        """Called for each processed event."""
        if in_.f1 == "START":
            # set the start time if we receive a start event.
            self.start_time.update(ctx.timestamp())
            # register a timer in four hours from the start event.
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 4 * 60 * 60 * 1000)
        elif in_.f1 == "END":
            # emit the duration between start and end event
            s_time = self.start_time.value()
            if s_time is not None:
                yield in_.f0, ctx.timestamp() - s_time
                # clear the state
                self.start_time.clear()
            # (no break: falls through to default)
        # default:
        #   do nothing

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        """Called when a timer fires."""
        # Timeout interval exceeded. Cleaning up the state.
        self.start_time.clear()
        return
        yield  # a generator, like every PyFlink on_timer


def records():
    """One ``Tuple2<String, String>`` event (key, "START" or "END") with its event time."""
    from hypothesis import strategies as st

    return st.builds(
        lambda k, kind, ts: Row(f0=k, f1=kind, ts=ts),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["START", "END"]),
        st.integers(0, 3 * FOUR_HOURS_MS),
    )


def key(event) -> str:
    return event.f0  # "The first String field is the key attribute"


def timestamp(event) -> int:
    return event.ts
