"""PseudoWindow -- hourly tip sums per driver with a KeyedProcessFunction (Flink documentation).

Source: https://github.com/apache/flink, file ``docs/content/docs/learn-flink/event_driven.md``
(section "Process Functions" -> "Example" and "Side Outputs"; read at commit
5093bab413f6e755d598471de0c9be8f35faa940), published as
https://nightlies.apache.org/flink/flink-docs-stable/docs/learn-flink/event_driven/ .
Original language: Java.  License: Apache-2.0.

Pipeline in the documentation: the training's ``TaxiFare`` stream (timestamps ``fare.getEventTime()``
= ``startTime``) -> ``keyBy((TaxiFare fare) -> fare.driverId)`` ->
``process(new PseudoWindow(Duration.ofHours(1)))``; late fares go to the side output
``lateFares``.  This file has the version with the side output (the documentation's final form).

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``, ``yield LATE_FARES, fare`` for ``ctx.output(lateFares, fare)``),
``MapStateDescriptor<>("sumOfTips", Long.class, Float.class)`` with ``Types.LONG(), Types.FLOAT()``,
``Tuple3.of(driverId, timestamp, sumOfTips)`` as a Python tuple, ``TaxiFare`` as a ``Row``.  The
constructor takes the window length as a ``Time``/``Duration`` (as the original) or as
milliseconds (so that ``ARGS`` is JSON).  Java's ``float`` is 32-bit; Python's is 64-bit.
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, OutputTag, RuntimeContext
from streamproof.flink.datastream.state import MapStateDescriptor

ONE_HOUR_MS = 60 * 60 * 1000  # Duration.ofHours(1)

LATE_FARES = OutputTag("lateFares", Types.PICKLED_BYTE_ARRAY())

ARGS = [ONE_HOUR_MS]


class PseudoWindow(KeyedProcessFunction):
    """Compute the sum of the tips for each driver in hour-long windows.  The keys are driverIds."""

    def __init__(self, duration):
        self.duration_msec = duration if isinstance(duration, int) else duration.to_milliseconds()
        # Keyed, managed state, with an entry for each window, keyed by the window's end time.
        # There is a separate MapState object for each driver.
        self.sum_of_tips = None

    def open(self, ctx: RuntimeContext):
        sum_desc = MapStateDescriptor("sumOfTips", Types.LONG(), Types.FLOAT())
        self.sum_of_tips = ctx.get_map_state(sum_desc)

    def process_element(self, fare, ctx: 'KeyedProcessFunction.Context'):
        event_time = fare.startTime  # fare.getEventTime()
        timer_service = ctx.timer_service()

        if event_time <= timer_service.current_watermark():
            # This event is late; its window has already been triggered.
            yield LATE_FARES, fare
        else:
            # Round up eventTime to the end of the window containing this event.
            end_of_window = (event_time - (event_time % self.duration_msec) + self.duration_msec - 1)

            # Schedule a callback for when the window has been completed.
            timer_service.register_event_time_timer(end_of_window)

            # Add this fare's tip to the running total for that window.
            sum_ = self.sum_of_tips.get(end_of_window)
            if sum_ is None:
                sum_ = 0.0
            sum_ += fare.tip
            self.sum_of_tips.put(end_of_window, sum_)

    def on_timer(self, timestamp: int, context: 'KeyedProcessFunction.OnTimerContext'):
        driver_id = context.get_current_key()
        # Look up the result for the hour that just ended.
        sum_of_tips = self.sum_of_tips.get(timestamp)

        result = (driver_id, timestamp, sum_of_tips)
        yield result
        self.sum_of_tips.remove(timestamp)


def records():
    """One ``TaxiFare`` as the training's ``TaxiFareGenerator``/``DataGenerator`` makes them."""
    from hypothesis import strategies as st

    @st.composite
    def taxi_fare(draw):
        ride_id = draw(st.integers(1, 10_000))
        driver_id = 2013000000 + draw(st.integers(0, 2))
        tip = float(draw(st.integers(0, 60)))  # DataGenerator.tip(): aLong(0, 60, 10, 15)
        tolls = float(draw(st.integers(0, 5))) if ride_id % 10 == 0 else 0.0
        return Row(
            rideId=ride_id,
            taxiId=driver_id,
            driverId=driver_id,
            startTime=draw(st.integers(0, 3 * ONE_HOUR_MS)),
            paymentType="CARD" if ride_id % 2 == 0 else "CASH",
            tip=tip,
            tolls=tolls,
            totalFare=3.0 + draw(st.integers(0, 600)) + tip + tolls,
        )

    return taxi_fare()


def key(fare) -> int:
    return fare.driverId  # keyBy((TaxiFare fare) -> fare.driverId)


def timestamp(fare) -> int:
    return fare.startTime  # TaxiFare.getEventTime()
