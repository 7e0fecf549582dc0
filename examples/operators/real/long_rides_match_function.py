"""LongRidesSolution.MatchFunction -- the 2019 Ververica training solution of "Long Ride Alerts".

Source: https://github.com/ververica/flink-training-exercises, file
``src/main/java/com/ververica/flinktraining/solutions/datastream_java/process/LongRidesSolution.java``
(last changed in commit 932ec2083d29f62c334edfb4b37e39990a05a67a; snapshot HEAD
6c93e54ab5022ccf25d030236e3e76a1d01e3c81).  The same ``MatchFunction`` is in the Scala solution
(``.../solutions/datastream_scala/process/LongRidesSolution.scala``), in
``CheckpointedLongRidesSolution.java`` of that repository, and it was the first solution in
apache/flink-training (commit a3071ca57a7f68aaae802ee1d51a5a713cd96d79).
Original language: Java.  License: Apache-2.0.

Pipeline: ``TaxiRideSource(input, maxEventDelay = 60, servingSpeedFactor = 600)`` (timestamps
``getEventTime()``, watermarks 60 s behind) -> ``keyBy(r -> r.rideId)`` ->
``process(new MatchFunction())``; it emits the START event of every ride that was not matched by
an END within two hours.

Changed in translation: imports, PyFlink's method names and generators, ``TaxiRide`` as a ``Row``
with the same field names, Joda ``DateTime`` fields as epoch milliseconds (a START row of the
data file has endTime 1970-01-01 00:00:00, i.e. 0), ``TaxiRide.class`` state as
``Types.PICKLED_BYTE_ARRAY()``.  Logic and constants unchanged.  Event times in ``records()`` are
relative milliseconds (the data file's rides are from 2013).
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

TWO_HOURS_MS = 120 * 60 * 1000


class MatchFunction(KeyedProcessFunction):
    # keyed, managed state
    # holds an END event if the ride has ended, otherwise a START event

    def __init__(self):
        self.ride_state = None

    def open(self, runtime_context: RuntimeContext):
        start_descriptor = ValueStateDescriptor("saved ride", Types.PICKLED_BYTE_ARRAY())
        self.ride_state = runtime_context.get_state(start_descriptor)

    def process_element(self, ride, context: 'KeyedProcessFunction.Context'):
        timer_service = context.timer_service()

        if ride.isStart:
            # the matching END might have arrived first; don't overwrite it
            if self.ride_state.value() is None:
                self.ride_state.update(ride)
        else:
            self.ride_state.update(ride)

        timer_service.register_event_time_timer(get_event_time(ride) + 120 * 60 * 1000)
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, timestamp: int, context: 'KeyedProcessFunction.OnTimerContext'):
        saved_ride = self.ride_state.value()
        if saved_ride is not None and saved_ride.isStart:
            yield saved_ride
        self.ride_state.clear()


def get_event_time(ride) -> int:
    """``TaxiRide.getEventTime()``: startTime for a START event, endTime for an END event."""
    if ride.isStart:
        return ride.startTime
    else:
        return ride.endTime


def records():
    """One ``TaxiRide`` line of ``nycTaxiRides.gz`` as ``TaxiRide.fromString`` parses it."""
    from hypothesis import strategies as st

    @st.composite
    def taxi_ride(draw):
        ride_id = draw(st.integers(1, 4))  # few rides: START and END of one ride meet in an input
        is_start = draw(st.booleans())
        start = draw(st.integers(0, 3 * TWO_HOURS_MS))
        end = start + 60 * 1000 * draw(st.integers(1, 300))
        return Row(
            rideId=ride_id,
            isStart=is_start,
            startTime=start,
            endTime=0 if is_start else end,
            startLon=draw(st.floats(-74.05, -73.7)),
            startLat=draw(st.floats(40.5, 41.0)),
            endLon=draw(st.floats(-74.05, -73.7)),
            endLat=draw(st.floats(40.5, 41.0)),
            passengerCnt=draw(st.integers(1, 6)),
            taxiId=draw(st.integers(2013000000, 2013013000)),
            driverId=draw(st.integers(2013000000, 2013013000)),
        )

    return taxi_ride()


def key(ride) -> int:
    return ride.rideId  # keyBy(r -> r.rideId)


def timestamp(ride) -> int:
    return get_event_time(ride)  # TaxiRideSource assigns getEventTime()


def stream():
    """A whole input, as the exercise's data is: "TaxiRide events can be lost, but there are no
    duplicates" -- each ride's START and END at most once, in any order (``records()`` draws them;
    a repeated (rideId, isStart) is dropped here, which a per-record strategy cannot express)."""
    from hypothesis import strategies as st

    def without_duplicates(events):
        seen, kept = set(), []
        for event in events:
            if (event.rideId, event.isStart) not in seen:
                seen.add((event.rideId, event.isStart))
                kept.append(event)
        return kept

    def start_before_end(events):
        # as in the exercise's data, mostly: a ride's START before its END (stable otherwise)
        return sorted(events, key=lambda event: (event.rideId, not event.isStart))

    events = st.lists(records(), min_size=1, max_size=30).map(without_duplicates)
    return st.one_of(events, events.map(start_before_end))
