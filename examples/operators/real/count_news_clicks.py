"""CountNewsClicksProcessFunction -- Flink's DataStream API V2 event-time example, in PyFlink form.

Source: https://github.com/apache/flink, file
``flink-examples/flink-examples-streaming/src/main/java/org/apache/flink/streaming/examples/dsv2/eventtime/CountNewsClicks.java``
(read at commit 47a02f63da293edfcace2996d2df33db2b888564; added by FLINK-37274 "Add examples for
DataStream V2", apache/flink pull request #26118), with its sample input
``flink-examples/flink-examples-streaming/src/main/resources/datas/dsv2/eventtime/CountNewsClicksEvents.csv``.
Original language: Java (DataStream API V2).  License: Apache-2.0.

"count the number of clicks on each news at 1 hour after news publication.  [...] there is only one
event of type PUBLISH for each news."  Pipeline: ``FileSource`` of CSV ``NewsEvent(newsId,
timestamp, type)`` -> event-time watermarks (``timestamp``, periodic, max out-of-order 10 s) ->
``keyBy(event -> event.newsId)`` -> ``process(EventTimeExtension.wrapProcessFunction(new
CountNewsClicksProcessFunction()))``.  A PUBLISH registers a timer at publication + 1 h that emits
the news' click count; clicks that arrive before their PUBLISH wait in a list, with a timer at
click + 1 h in case the PUBLISH never comes.

Changed in translation.  DataStream API V2 has no Python API, so besides Java -> Python the V2
names are mapped one to one onto PyFlink's ``KeyedProcessFunction`` (the operator underneath is the
same keyed process operator with keyed state and an event-time timer service):
``processRecord(record, output, ctx)`` -> ``process_element(record, ctx)``, ``onEventTimer(timestamp,
output, ctx)`` -> ``on_timer(timestamp, ctx)``, ``output.collect`` -> ``yield``,
``eventTimeManager.currentTime()`` -> ``ctx.timer_service().current_watermark()``,
``eventTimeManager.registerTimer(t)`` -> ``ctx.timer_service().register_event_time_timer(t)``, the
``StateDeclarations.valueState/listState`` declarations -> ``ValueStateDescriptor``/
``ListStateDescriptor`` (``Types.LONG()``) obtained in ``open``, ``ctx.getStateManager().getState(d)``
-> those state handles, ``getStateManager().getCurrentKey()`` -> ``ctx.get_current_key()``.
``NewsEvent`` is a ``Row(newsId, timestamp, type)`` with ``type`` the enum's name, ``NewsClicks`` a
``Row(newsId, clicks)``.  Logic, constants, comments and branches are unchanged; PyFlink's
``ListState.get()`` of an empty list is an empty list (never null), so a PUBLISH without pending
clicks stores a click count of 0 where V2 may leave it unset -- the timer reads both as 0.
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ListStateDescriptor, ValueStateDescriptor

ONE_HOUR_IN_MS = 60 * 60 * 1000  # Duration.ofHours(1).toMillis()

# the sample input's first timestamp is 1738827627444 (2025-02-06T07:40:27Z)
BEGINNING = 1738827600000

PUBLISH = "PUBLISH"  # NewsEventType.PUBLISH
CLICK = "CLICK"  # NewsEventType.CLICK


class CountNewsClicksProcessFunction(KeyedProcessFunction):
    """This process function will consume NewsEvents and count the number of clicks within 1
    hour of the news publication and send the results NewsClicks to the output.

    To achieve the goal, we will register an event timer for each news, which will be
    triggered at the time of the news's release time + 1 hour, and record a click count of each
    news. In the timer callback onEventTimer, we will output the number of clicks.

    To handle the potential disorder between news publication event and click events, we will
    use a ListState to store the timestamps of click events that occur prior to their
    corresponding publication events.

    To handle the potential missing news publication event, we will register an event timer
    for the click event and set the timer to the timestamp of the click event plus one hour."""

    def __init__(self):
        # uses a ValueState to store the publishing time of each news
        self.publish_time_state = None
        # uses a ValueState to store the click count of each news
        self.click_count_state = None
        # uses a ListState to store the timestamp of pending clicks for each news.
        # If a click NewsEvent occurs before the corresponding publication NewsEvent, we cannot
        # process this click event because we do not know the publication time of the news.
        # Therefore, we store the timestamp of this pending NewsEvent click in a list state.
        # Once the publication NewsEvent arrives, we can proceed to process the pending clicks.
        self.pending_clicks_state = None

    def open(self, runtime_context: RuntimeContext):
        # usesStates(): publish_time, click_count, pending_clicks
        self.publish_time_state = runtime_context.get_state(
            ValueStateDescriptor("publish_time", Types.LONG()))
        self.click_count_state = runtime_context.get_state(
            ValueStateDescriptor("click_count", Types.LONG()))
        self.pending_clicks_state = runtime_context.get_list_state(
            ListStateDescriptor("pending_clicks", Types.LONG()))

    def process_element(self, record, ctx: 'KeyedProcessFunction.Context'):
        event_time_manager = ctx.timer_service()

        if record.type == PUBLISH:
            # for the news publication event
            publish_time = record.timestamp
            if event_time_manager.current_watermark() > publish_time + ONE_HOUR_IN_MS:
                # if the current event time is more than one hour after the publication time,
                # it indicates that the publication event is late; therefore, this news should
                # be ignored.
                return

            # 1. record the publishing time
            self.publish_time_state.update(publish_time)

            # 2. process pending clicks
            pending_clicks = self.pending_clicks_state.get()
            if pending_clicks is not None:
                addition = 0
                for click_time in pending_clicks:
                    if click_time <= publish_time + ONE_HOUR_IN_MS:
                        addition += 1
                self._add_click_count(addition)

            # 3. register timer with the publishing time + 1 hour
            event_time_manager.register_event_time_timer(publish_time + ONE_HOUR_IN_MS)
        else:
            # for the news click event
            publish_time = self.publish_time_state.value()
            if publish_time is None:
                # If the news publication event has not yet arrived
                # 1. record the click timestamp in the pending clicks list.
                self.pending_clicks_state.add(record.timestamp)
                # 2. to avoid the news not being processed for a long time when there is no
                # publish event, register timer with the click timestamp + 1 hour.
                event_time_manager.register_event_time_timer(record.timestamp + ONE_HOUR_IN_MS)
            elif record.timestamp <= publish_time + ONE_HOUR_IN_MS:
                # If the click event occurs within one hour of the news publication, update the
                # click count.
                self._add_click_count(1)
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        publish_time = self.publish_time_state.value()

        if publish_time is None:
            # If the publishing time is null, it indicates that there is no publishing event
            # for
            # this news, or the news has already been processed; therefore, it should be
            # ignored.
            self._clear_all_state()
            return

        # get the news that the current event timer belongs to
        news_id = ctx.get_current_key()
        # get the click count of the news
        click_count = self.click_count_state.value()
        click_count = 0 if click_count is None else click_count

        # send the result to output
        yield Row(newsId=news_id, clicks=click_count)  # new NewsClicks(newsId, clickCount)

        # clear the state and mark the news as processed
        self._clear_all_state()

    def _add_click_count(self, addition):
        click_count_state = self.click_count_state
        previous_count = click_count_state.value()
        newly_count = addition if previous_count is None else previous_count + addition
        click_count_state.update(newly_count)

    def _clear_all_state(self):
        self.publish_time_state.clear()
        self.click_count_state.clear()
        self.pending_clicks_state.clear()


def records():
    """One ``NewsEvent`` like a line of ``CountNewsClicksEvents.csv`` (news 1-20 there, clicks
    before and after their news' publication, timestamps over about an hour and a half); here three
    news and three hours, so that the one-hour timers fire mid-stream."""
    from hypothesis import strategies as st

    return st.builds(
        lambda news_id, ts, kind: Row(newsId=news_id, timestamp=BEGINNING + ts, type=kind),
        st.integers(1, 3),
        st.integers(0, 3 * ONE_HOUR_IN_MS),
        st.sampled_from([PUBLISH, CLICK, CLICK, CLICK]),
    )


def key(event) -> int:
    return event.newsId  # keyBy(event -> event.newsId)


def timestamp(event) -> int:
    return event.timestamp  # newWatermarkGeneratorBuilder(event -> event.timestamp)


def stream():
    """A whole input, as the example's data is: "there is only one event of type PUBLISH for each
    news" -- a repeated PUBLISH of a news is dropped here (a per-record strategy cannot say it)."""
    from hypothesis import strategies as st

    def one_publish_per_news(events):
        published, kept = set(), []
        for event in events:
            if event.type == PUBLISH:
                if event.newsId in published:
                    continue
                published.add(event.newsId)
            kept.append(event)
        return kept

    return st.lists(records(), min_size=1, max_size=30).map(one_publish_per_news)
