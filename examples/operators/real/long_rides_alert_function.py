"""LongRidesSolution.AlertFunction -- the "Long Ride Alerts" solution of the Apache Flink training.

Source: https://github.com/apache/flink-training, file
``long-ride-alerts/src/solution/java/org/apache/flink/training/solutions/longrides/LongRidesSolution.java``
at commit dc81157f826649b6084d968689f623ce41a1b46c (the Scala solution next to it,
``long-ride-alerts/src/solution/scala/.../LongRidesSolution.scala``, has the same logic).
Original language: Java.  License: Apache-2.0 (Apache Software Foundation).

Pipeline in the original: ``TaxiRideGenerator`` -> ``assignTimestampsAndWatermarks(
forBoundedOutOfOrderness(60 s), ride.getEventTimeMillis())`` -> ``keyBy(ride -> ride.rideId)``
-> ``process(new AlertFunction())``; it emits the rideId of every ride longer than two hours.
The exercise states "TaxiRide events can be lost, but there are no duplicates".

Changed in translation: imports (``streamproof.flink`` instead of ``pyflink``/Flink Java), PyFlink's
names (``process_element``/``on_timer`` as generators, ``yield`` instead of ``out.collect``), the
``TaxiRide`` POJO becomes a ``Row`` with the same field names, ``eventTime`` (a ``java.time.Instant``)
is carried as epoch milliseconds, ``Duration.between(a, b).compareTo(Duration.ofHours(2)) > 0``
becomes ``b - a > 2 h`` in milliseconds, ``ValueStateDescriptor<>("ride event", TaxiRide.class)``
uses ``Types.PICKLED_BYTE_ARRAY()``.  Constants, branches, comments and bugs are kept as they are.
Event times in ``records()`` are measured from the generator's ``BEGINNING``
(2020-01-01T12:00:00Z) instead of from the Unix epoch.
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

# DataGenerator: SECONDS_BETWEEN_RIDES = 20; ride durations are aLong(0, 600, 20, 40) minutes
SECONDS_BETWEEN_RIDES = 20
TWO_HOURS_MS = 2 * 60 * 60 * 1000  # Duration.ofHours(2) and eventTime.plusSeconds(120 * 60)


class AlertFunction(KeyedProcessFunction):

    def __init__(self):
        self.ride_state = None

    def open(self, runtime_context: RuntimeContext):
        ride_state_descriptor = ValueStateDescriptor("ride event", Types.PICKLED_BYTE_ARRAY())
        self.ride_state = runtime_context.get_state(ride_state_descriptor)

    def process_element(self, ride, context: 'KeyedProcessFunction.Context'):

        first_ride_event = self.ride_state.value()

        if first_ride_event is None:
            # whatever event comes first, remember it
            self.ride_state.update(ride)

            if ride.isStart:
                # we will use this timer to check for rides that have gone on too long and may
                # not yet have an END event (or the END event could be missing)
                context.timer_service().register_event_time_timer(self._get_timer_time(ride))
        else:
            if ride.isStart:
                if self._ride_too_long(ride, first_ride_event):
                    yield ride.rideId
            else:
                # the first ride was a START event, so there is a timer unless it has fired
                context.timer_service().delete_event_time_timer(
                    self._get_timer_time(first_ride_event))

                # perhaps the ride has gone on too long, but the timer didn't fire yet
                if self._ride_too_long(first_ride_event, ride):
                    yield ride.rideId

            # both events have now been seen, we can clear the state
            # this solution can leak state if an event is missing
            # see DISCUSSION.md for more information
            self.ride_state.clear()

    def on_timer(self, timestamp: int, context: 'KeyedProcessFunction.OnTimerContext'):

        # the timer only fires if the ride was too long
        # (Java: rideState.value().rideId -- a NullPointerException if the state was cleared)
        yield self.ride_state.value().rideId

        # clearing now prevents duplicate alerts, but will leak state if the END arrives
        self.ride_state.clear()

    @staticmethod
    def _ride_too_long(start_event, end_event) -> bool:
        return (end_event.eventTime - start_event.eventTime) > TWO_HOURS_MS

    @staticmethod
    def _get_timer_time(ride) -> int:
        if ride.isStart:
            return ride.eventTime + 120 * 60 * 1000
        else:
            raise RuntimeError("Can not get start time from END event.")


def records():
    """One ``TaxiRide`` event as ``TaxiRideGenerator`` makes them (rideId, isStart, eventTime, ...)."""
    from hypothesis import strategies as st

    @st.composite
    def taxi_ride(draw):
        ride_id = draw(st.integers(1, 8))  # few rides: START and END of one ride meet in an input
        is_start = draw(st.booleans())
        start = SECONDS_BETWEEN_RIDES * 1000 * ride_id
        duration_minutes = draw(st.integers(0, 600))
        event_time = start if is_start else start + 60 * 1000 * duration_minutes
        driver_id = 2013000000 + draw(st.integers(0, 199))
        return Row(
            rideId=ride_id,
            isStart=is_start,
            eventTime=event_time,
            startLon=draw(st.floats(-74.05, -73.7)),
            startLat=draw(st.floats(40.5, 41.0)),
            endLon=draw(st.floats(-74.05, -73.7)),
            endLat=draw(st.floats(40.5, 41.0)),
            passengerCnt=draw(st.integers(1, 4)),
            taxiId=driver_id,
            driverId=driver_id,
        )

    return taxi_ride()


def key(ride) -> int:
    return ride.rideId  # keyBy(ride -> ride.rideId)


def timestamp(ride) -> int:
    return ride.eventTime  # ride.getEventTimeMillis()


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
