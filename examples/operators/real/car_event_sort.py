"""CarEventSort.SortFunction -- event-time sorting of connected-car events (Ververica training).

Source: https://github.com/ververica/flink-training-exercises, file
``src/main/java/com/ververica/flinktraining/examples/datastream_java/process/CarEventSort.java``
(last changed in commit 932ec2083d29f62c334edfb4b37e39990a05a67a; snapshot HEAD
6c93e54ab5022ccf25d030236e3e76a1d01e3c81), with ``ConnectedCarEvent`` and
``ConnectedCarAssigner`` from ``.../exercises/datastream_java/datatypes`` and ``.../utils``.
Original language: Java.  License: Apache-2.0.

Pipeline: ``readTextFile(input)`` -> ``ConnectedCarEvent.fromString`` ->
``assignTimestampsAndWatermarks(new ConnectedCarAssigner())`` (timestamp ``event.timestamp``, a
punctuated watermark ``timestamp - 30000`` after every event) -> ``keyBy(event -> event.carId)`` ->
``process(new SortFunction())`` (parallelism 1): buffers each car's events in a
``PriorityQueue`` held in ``ValueState`` and emits them in timestamp order once the watermark
passes them; late events are dropped.

Changed in translation: imports, PyFlink's method names and generators, ``java.util.PriorityQueue``
as a small ``PriorityQueue`` class on ``heapq`` with the same ``add``/``peek``/``remove(Object)``,
ordered by ``ConnectedCarEvent.compareTo`` (timestamp) and removing by ``ConnectedCarEvent.equals``
(``this.id == other.id``, a reference comparison of Strings in Java, hence ``is``);
``TypeHint<PriorityQueue<...>>`` as ``Types.PICKLED_BYTE_ARRAY()``; ``Long watermark`` as an int;
the ``ConnectedCarEvent`` POJO as a ``Row`` with the same fields (scenario records must be
JSON-like).  The bug is kept: ``onTimer`` removes events from the queue
it got from ``queueState.value()`` but never calls ``queueState.update(queue)``.
"""

import heapq
import itertools

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

WATERMARK_DELAY_MS = 30000  # ConnectedCarAssigner: extractedTimestamp - 30000

_SEQUENCE = itertools.count()


def _equals(a, b) -> bool:
    """``ConnectedCarEvent.equals``: ``this.id == other.id`` -- a reference comparison of Strings."""
    return a.id is b.id


class PriorityQueue:
    """``java.util.PriorityQueue<ConnectedCarEvent>`` ordered by ``ConnectedCarEvent.compareTo``
    (``Long.compare(this.timestamp, other.timestamp)``), on ``heapq``."""

    def __init__(self, initial_capacity=11):
        self._heap = []

    def add(self, event):
        heapq.heappush(self._heap, (event.timestamp, next(_SEQUENCE), event))

    def peek(self):
        return self._heap[0][2] if self._heap else None

    def remove(self, o) -> bool:
        for i, (_, _, e) in enumerate(self._heap):
            if _equals(o, e):
                self._heap.pop(i)
                heapq.heapify(self._heap)
                return True
        return False


class SortFunction(KeyedProcessFunction):

    def __init__(self):
        self.queue_state = None

    def open(self, config: RuntimeContext):
        descriptor = ValueStateDescriptor(
                # state name
                "sorted-events",
                # type information of state
                Types.PICKLED_BYTE_ARRAY())
        self.queue_state = config.get_state(descriptor)

    def process_element(self, event, context: 'KeyedProcessFunction.Context'):
        timer_service = context.timer_service()

        if context.timestamp() > timer_service.current_watermark():
            queue = self.queue_state.value()
            if queue is None:
                queue = PriorityQueue(10)
            queue.add(event)
            self.queue_state.update(queue)
            timer_service.register_event_time_timer(event.timestamp)
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, timestamp: int, context: 'KeyedProcessFunction.OnTimerContext'):
        queue = self.queue_state.value()
        watermark = context.timer_service().current_watermark()
        head = queue.peek()
        while head is not None and head.timestamp <= watermark:
            yield head
            queue.remove(head)
            head = queue.peek()


def records():
    """One ``ConnectedCarEvent`` as ``fromString`` parses a line of the car-data file."""
    from hypothesis import strategies as st

    return st.builds(
        lambda car, n, t, lon, lat, cons, speed, thr, load: Row(
            id="%s-%d" % (car, n), carId=car, timestamp=t, longitude=lon, latitude=lat,
            consumption=cons, speed=speed, throttle=thr, engineload=load),
        st.sampled_from(["car-a", "car-b", "car-c"]),
        st.integers(0, 10**6),
        st.integers(0, 3 * WATERMARK_DELAY_MS),
        st.floats(-122.5, -122.0),
        st.floats(37.2, 37.8),
        st.floats(0.0, 20.0),
        st.floats(0.0, 120.0),
        st.floats(0.0, 100.0),
        st.floats(0.0, 100.0),
    )


def key(event) -> str:
    return event.carId  # keyBy((ConnectedCarEvent event) -> event.carId)


def timestamp(event) -> int:
    return event.timestamp  # ConnectedCarAssigner.extractTimestamp
