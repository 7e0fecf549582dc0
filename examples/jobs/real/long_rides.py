# Translated line for line to PyFlink from the Flink training (ververica/flink-training-exercises)
#   src/main/java/com/ververica/flinktraining/solutions/datastream_java/process/LongRidesSolution.java
# @ 6c93e54ab5022ccf25d030236e3e76a1d01e3c81 (file last changed in 932ec208, 2019-07-04; identical
# in dataArtisans/flink-training-exercises @ ad167682)
# (https://github.com/ververica/flink-training-exercises/blob/6c93e54ab5022ccf25d030236e3e76a1d01e3c81/src/main/java/com/ververica/flinktraining/solutions/datastream_java/process/LongRidesSolution.java)
# with TaxiRide (datatypes/TaxiRide.java), ExerciseBase (utils/ExerciseBase.java: parallelism 4,
# printOrTest = print) and the test data helpers of
# src/test/java/com/ververica/flinktraining/exercises/datastream_java/process/LongRidesTest.java.
#
# Kept: maxEventDelay 60 s, parallelism 4, key by rideId, MatchFunction as written (a START does
# not overwrite a stored END, an END overwrites a START, a timer at event time + 120 min for EVERY
# event, on_timer emits the stored ride only if it is a START, then clears), print. Deviations:
#  - TaxiRideSource (a generator replaying nycTaxiRides.gz; it assigns event-time timestamps and
#    emits watermarks = time - maxDelay - 1) becomes env.from_collection +
#    WatermarkStrategy.for_bounded_out_of_orderness(60 s) with getEventTime() as the timestamp
#    (same watermark formula). servingSpeedFactor (600) only paces the generator; kept as a constant.
#  - The input is built with LongRidesTest's own helpers (beginning = 2000-01-01 00:00, startRide,
#    endRide, the same lon/lat/passengerCnt/taxiId/driverId) from its `longRide` case (START, END
#    3 hours later) and `noEnd` case (START, no END), for four rides whose START times are staggered
#    by a minute so that one watermark makes three 2-hour timers due at once. The composition
#    (which rides, which minutes) was WRITTEN FOR THIS CORPUS; the test's explicit watermark marks
#    are replaced by the generator above (ride 4's START at 2:05 moves the watermark past 2:02).
#  - Joda DateTime becomes epoch milliseconds (UTC); TaxiRide becomes a NamedTuple (its toString
#    is not reproduced). env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime) has no
#    PyFlink 2.x call (event time is the default); kept as a comment. ParameterTool/--input dropped.
from typing import NamedTuple

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


# datatypes/TaxiRide.java
class TaxiRide(NamedTuple):
    rideId: int
    isStart: bool
    startTime: int   # epoch millis (Joda DateTime in the original)
    endTime: int
    startLon: float
    startLat: float
    endLon: float
    endLat: float
    passengerCnt: int
    taxiId: int
    driverId: int

    def getEventTime(self) -> int:
        if self.isStart:
            return self.startTime
        else:
            return self.endTime


# LongRidesTest.java helpers
MINUTE = 60 * 1000
HOUR = 60 * MINUTE
beginning = 946684800000  # new DateTime(2000, 1, 1, 0, 0), UTC


def testRide(rideId, isStart, startTime, endTime):
    return TaxiRide(rideId, isStart, startTime, endTime,
                    -73.9947, 40.750626, -73.9947, 40.750626, 1, 0, 0)


def startRide(rideId, startTime):
    return testRide(rideId, True, startTime, 0)  # new DateTime(0)


def endRide(started, endTime):
    return testRide(started.rideId, False, started.startTime, endTime)


ride1 = startRide(1, beginning)
ride2 = startRide(2, beginning + 1 * MINUTE)
ride3 = startRide(3, beginning + 2 * MINUTE)
ride4 = startRide(4, beginning + 2 * HOUR + 5 * MINUTE)
RIDES = [
    ride1,                                    # timer 2:00
    ride2,                                    # timer 2:01 (no END: as in noEnd)
    ride3,                                    # timer 2:02
    ride4,                                    # watermark 2:03:59.999: timers of 1, 2, 3 due
    endRide(ride1, beginning + 3 * HOUR),     # as in longRide: ended 3 hours later, on time
    endRide(ride3, beginning + 3 * HOUR + 2 * MINUTE),  # ended 3 hours later, on time
]


class RideTimeAssigner(TimestampAssigner):

    def extract_timestamp(self, ride, record_timestamp: int) -> int:
        return ride.getEventTime()


class LongRidesSolution(object):

    @staticmethod
    def main(args):
        max_event_delay = 60        # events are out of order by max 60 seconds
        serving_speed_factor = 600  # events of 10 minutes are served in 1 second

        # set up streaming execution environment
        env = StreamExecutionEnvironment.get_execution_environment()
        # env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime)
        env.set_parallelism(4)  # ExerciseBase.parallelism

        # start the data generator
        rides = env.from_collection(RIDES) \
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(
                    Duration.of_seconds(max_event_delay))
                .with_timestamp_assigner(RideTimeAssigner()))

        long_rides = rides \
            .key_by(lambda r: r.rideId) \
            .process(MatchFunction())

        long_rides.print()  # printOrTest

        env.execute("Long Taxi Rides")


class MatchFunction(KeyedProcessFunction):
    # keyed, managed state
    # holds an END event if the ride has ended, otherwise a START event

    def __init__(self):
        self.rideState = None

    def open(self, runtime_context: RuntimeContext):
        start_descriptor = ValueStateDescriptor("saved ride", Types.PICKLED_BYTE_ARRAY())
        self.rideState = runtime_context.get_state(start_descriptor)

    def process_element(self, ride, context: 'KeyedProcessFunction.Context'):
        timer_service = context.timer_service()

        if ride.isStart:
            # the matching END might have arrived first; don't overwrite it
            if self.rideState.value() is None:
                self.rideState.update(ride)
        else:
            self.rideState.update(ride)

        timer_service.register_event_time_timer(ride.getEventTime() + 120 * 60 * 1000)

    def on_timer(self, timestamp: int, context: 'KeyedProcessFunction.OnTimerContext'):
        saved_ride = self.rideState.value()
        if saved_ride is not None and saved_ride.isStart:
            yield saved_ride
        self.rideState.clear()


if __name__ == '__main__':
    import sys
    LongRidesSolution.main(sys.argv[1:])
