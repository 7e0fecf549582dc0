"""LongRidesSolution.MatchFunction as of August 2020 (FLINK-18630 "Redo the LongRideAlerts solutions
to cover a corner case").

Source: https://github.com/apache/flink-training, file
``long-ride-alerts/src/solution/java/org/apache/flink/training/solutions/longrides/LongRidesSolution.java``
at commit ea4a66e97dd211bd8f8b8e415e3e427c30e4746b (2020-08-25).  It replaced the 2019
``MatchFunction`` (``long_rides_match_function.py``) and was replaced in 2021
(``long_rides_alert_function_2021.py``).
Original language: Java.  License: Apache-2.0.

Pipeline: ``TaxiRideGenerator`` -> ``keyBy((TaxiRide ride) -> ride.rideId)`` ->
``process(new MatchFunction())``; emits the START event of each ride with no END after two hours.
A ``TaxiRide`` has ``startTime`` and ``endTime`` (a START event: ``endTime = 0``); its timestamp is
``getEventTime()`` (startTime for START, endTime for END).

Changed in translation: imports, PyFlink's method names and generators, ``TaxiRide`` as a ``Row``,
``Instant`` as epoch milliseconds, ``TaxiRide.class`` state as ``Types.PICKLED_BYTE_ARRAY()``.
Logic unchanged, including ``out.collect(rideState.value())`` in ``onTimer`` (which emits null if
the state was cleared while the timer stayed registered).  Event times count from the
generator's BEGINNING (2020-01-01T12:00:00Z).
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

SECONDS_BETWEEN_RIDES = 20
TWO_HOURS_MS = 120 * 60 * 1000


class MatchFunction(KeyedProcessFunction):

    def __init__(self):
        self.ride_state = None

    def open(self, config: RuntimeContext):
        state_descriptor = ValueStateDescriptor("ride event", Types.PICKLED_BYTE_ARRAY())
        self.ride_state = config.get_state(state_descriptor)

    def process_element(self, ride, context: 'KeyedProcessFunction.Context'):
        previous_ride_event = self.ride_state.value()

        if previous_ride_event is None:
            self.ride_state.update(ride)
            if ride.isStart:
                context.timer_service().register_event_time_timer(self._get_timer_time(ride))
        else:
            if not ride.isStart:
                # it's an END event, so event saved was the START event and has a timer
                # the timer hasn't fired yet, and we can safely kill the timer
                context.timer_service().delete_event_time_timer(
                    self._get_timer_time(previous_ride_event))
            # both events have now been seen, we can clear the state
            self.ride_state.clear()
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, timestamp: int, context: 'KeyedProcessFunction.OnTimerContext'):

        # if we get here, we know that the ride started two hours ago, and the END hasn't been processed
        yield self.ride_state.value()
        self.ride_state.clear()

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
            endTime=0 if is_start else end,
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
