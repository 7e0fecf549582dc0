"""LongRidesSolution.AlertFunction as of August 2021 (FLINK-23653 "exercise and test rework").

Source: https://github.com/apache/flink-training, file
``long-ride-alerts/src/solution/java/org/apache/flink/training/solutions/longrides/LongRidesSolution.java``
at commit bbb051ac458e1555f76f396f9424337d27cf4fd6 (2021-08-31).  It was replaced by commit
fd65b11 (FLINK-23926), which folded ``startTime``/``endTime`` into one ``eventTime``; see
``long_rides_alert_function.py`` for the current version.
Original language: Java.  License: Apache-2.0 (Apache Software Foundation).

In this version a ``TaxiRide`` carries ``startTime`` and ``endTime`` (a START event has
``endTime = Instant.ofEpochMilli(0)``, an END event both), ``getEventTime()`` is ``startTime`` for
a START and ``endTime`` for an END, and ``rideTooLong`` looks only at the END event.
Pipeline: ``TaxiRideGenerator`` -> ``forBoundedOutOfOrderness(60 s)`` on ``getEventTime()`` ->
``keyBy(ride -> ride.rideId)`` -> ``process(new AlertFunction())``.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``), ``TaxiRide`` as a ``Row`` with the same field names, ``Instant`` fields as epoch
milliseconds, ``Duration.between(s, e).compareTo(Duration.ofHours(2)) > 0`` as ``e - s > 2 h``,
``TaxiRide.class`` state as ``Types.PICKLED_BYTE_ARRAY()``.  Logic and constants unchanged.
Event times in ``records()`` count from the generator's BEGINNING (2020-01-01T12:00:00Z).
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

SECONDS_BETWEEN_RIDES = 20
TWO_HOURS_MS = 2 * 60 * 60 * 1000


class AlertFunction(KeyedProcessFunction):

    def __init__(self):
        self.ride_state = None

    def open(self, runtime_context: RuntimeContext):
        state_descriptor = ValueStateDescriptor("ride event", Types.PICKLED_BYTE_ARRAY())
        self.ride_state = runtime_context.get_state(state_descriptor)

    def process_element(self, ride, context: 'KeyedProcessFunction.Context'):

        first_ride_event = self.ride_state.value()

        if first_ride_event is None:
            self.ride_state.update(ride)

            if ride.isStart:
                context.timer_service().register_event_time_timer(self._get_timer_time(ride))
            else:
                if self._ride_too_long(ride):
                    yield ride.rideId
        else:
            if ride.isStart:
                # There's nothing to do but clear the state (which is done below).
                pass
            else:
                # There may be a timer that hasn't fired yet.
                context.timer_service().delete_event_time_timer(
                    self._get_timer_time(first_ride_event))

                # It could be that the ride has gone on too long, but the timer hasn't fired
                # yet.
                if self._ride_too_long(ride):
                    yield ride.rideId
            # Both events have now been seen, we can clear the state.
            self.ride_state.clear()

    def on_timer(self, timestamp: int, context: 'KeyedProcessFunction.OnTimerContext'):

        # The timer only fires if the ride was too long.
        yield self.ride_state.value().rideId
        self.ride_state.clear()

    @staticmethod
    def _ride_too_long(ride_end_event) -> bool:
        return (ride_end_event.endTime - ride_end_event.startTime) > TWO_HOURS_MS

    @staticmethod
    def _get_timer_time(ride) -> int:
        return ride.startTime + 120 * 60 * 1000


def records():
    """One ``TaxiRide`` (startTime/endTime era) as ``TaxiRideGenerator`` made them."""
    from hypothesis import strategies as st

    @st.composite
    def taxi_ride(draw):
        ride_id = draw(st.integers(1, 8))  # few rides: START and END of one ride meet in an input
        is_start = draw(st.booleans())
        start = SECONDS_BETWEEN_RIDES * 1000 * ride_id
        end = start + 60 * 1000 * draw(st.integers(0, 600))
        driver_id = 2013000000 + draw(st.integers(0, 199))
        return Row(
            rideId=ride_id,
            isStart=is_start,
            startTime=start,
            endTime=0 if is_start else end,  # Instant.ofEpochMilli(0) for a START event
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
    return ride.rideId


def timestamp(ride) -> int:
    return ride.startTime if ride.isStart else ride.endTime  # TaxiRide.getEventTime()


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
