"""SortingJobCoalescedTimer.SortFunction -- event-time sorting with coalesced timers (Ververica's latency lab).

Source: https://github.com/ververica/lab-flink-latency, file
``src/main/java/com/ververica/lablatency/job/SortingJobCoalescedTimer.java`` at commit
5ba6265147642f144a1606b3531665fdb6ebb50e, with ``Measurement`` from
``src/main/java/com/ververica/lablatency/event/Measurement.java``.
Original language: Java.  License: Apache-2.0 (Copyright 2021 Ververica GmbH; the repository's LICENSE).

Pipeline: ``FlinkKafkaConsumer<MeasurementRecord>`` -> ``assignTimestampsAndWatermarks(
forBoundedOutOfOrderness(250 ms), element.getTimestamp())`` -> ``flatMap(MeasurementDeserializer...)``
emitting ``Tuple2.of(measurement, kafkaRecord.getTimestamp())`` -> ``keyBy(x -> x.f0.getSensorId())``
-> ``process(new SortFunction(roundTimerTo))`` with ``--round-timer-to`` 100 by default (README:
"it coalesces timers to the next 100ms [...] or to the next watermark if --round-timer-to is set to
0").  The function buffers each sensor's events in a ``ListState`` and, when a timer fires, emits
the buffered events whose timestamp is at or below the current watermark, in timestamp order.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``), ``ListStateDescriptor<>("events", TypeHint<Tuple2<Measurement, Long>>)`` with
``Types.PICKLED_BYTE_ARRAY()``, ``Tuple2<Measurement, Long>`` as a Python tuple ``(measurement,
timestamp)`` with the ``Measurement`` POJO as a ``Row``, ``MeasurementByTimeComparator`` as a sort
key on ``f1`` (both sorts are stable), ``list.subList(0, index).clear()`` as ``del list[:index]``,
SLF4J's ``LOG`` as Python ``logging``.  Java's integer division is ``//`` (timestamps are not
negative).  ``ARGS`` is the job's default ``roundTimerTo`` (100).
"""

import logging

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ListStateDescriptor

ROUND_TIMER_TO = 100  # params.getInt("round-timer-to", 100)

ARGS = [ROUND_TIMER_TO]


LOG = logging.getLogger("SortFunction")  # LoggerFactory.getLogger(SortFunction.class)


class SortFunction(KeyedProcessFunction):
    """SortFunction with timer coalescing: round timer to ``roundTo``"""

    def __init__(self, round_to: int):
        self.list_state = None
        self.round_to = round_to

    def open(self, parameters: RuntimeContext):
        desc = ListStateDescriptor(
            "events",
            Types.PICKLED_BYTE_ARRAY())  # TypeInformation.of(new TypeHint<Tuple2<Measurement, Long>>() {})
        self.list_state = parameters.get_list_state(desc)

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        timer_service = ctx.timer_service()
        current_timestamp = ctx.timestamp()
        current_watermark = timer_service.current_watermark()

        if current_timestamp > current_watermark:
            self.list_state.add(value)
            if self.round_to == 0:
                timer_service.register_event_time_timer(current_watermark + 1)
            else:
                timer_service.register_event_time_timer(
                    current_timestamp // self.round_to * self.round_to + self.round_to)
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        current_watermark = ctx.timer_service().current_watermark()

        lst = []
        for event in self.list_state.get():
            lst.append(event)
        LOG.info("Sorting list with size: " + str(len(lst)))
        lst.sort(key=lambda e: e[1])  # new MeasurementByTimeComparator(): Long.compare(o1.f1, o2.f1)

        index = 0
        for event in lst:
            # this requires re-assign timestamps and watermarks. Otherwise, the emitted events
            # here are all having the same timestamp as this timer.
            if event is not None and event[1] <= current_watermark:
                yield event
                index += 1
            else:
                break
        del lst[0:index]
        self.list_state.update(lst)


def records():
    """One ``Tuple2<Measurement, Long>`` as the deserializer emits it: a ``Measurement`` like
    ``MeasurementGenerator``'s (three sensors here) and the Kafka record's timestamp (the event
    time)."""
    from hypothesis import strategies as st

    return st.builds(
        lambda sensor_id, value, location, info, ts: (
            Row(sensorId=sensor_id, value=value, location=location, measurementInformation=info), ts),
        st.integers(0, 2),
        st.floats(0.0, 100.0, allow_nan=False, exclude_max=True),
        st.sampled_from(["Berlin", "Hamburg", "Munich"]),
        st.sampled_from(["", "info"]),
        st.integers(0, 3 * ROUND_TIMER_TO),
    )


def key(value) -> int:
    return value[0].sensorId  # keyBy(x -> x.f0.getSensorId())


def timestamp(value) -> int:
    return value[1]  # MeasurementRecord.getTimestamp(), also Tuple2.f1
