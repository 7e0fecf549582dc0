"""TopNHotPagesJob.TopNProcessFunction -- top-10 pages per sliding window, collected with a timer (zhisheng17/flink-learning).

Source: https://github.com/zhisheng17/flink-learning, file
``flink-learning-project/flink-learning-project-monitor-dashboard/src/main/java/com/zhisheng/project/dashboard/TopNHotPagesJob.java``
at commit d731cee7618021be56d132cc925102ffff8d75e6 (last changed in f48c20c2), with ``TopNResult``
(``.../dashboard/model/TopNResult.java``).
Original language: Java.  License: Apache-2.0 (the repository's LICENSE).

"实时计算最近 5 分钟内访问量最高的 Top 10 热门页面" (top 10 pages by visits in the last 5
minutes).  Pipeline: Kafka ``PageAccessEvent`` -> ``forBoundedOutOfOrderness(5 s)`` on
``event.getTimestamp()`` -> ``keyBy(PageAccessEvent::getPageUrl)`` ->
``window(SlidingEventTimeWindows.of(Time.minutes(5), Time.minutes(1)))`` ->
``aggregate(PageCountAgg, PageCountWindowFunction)`` emitting ``Tuple2.of(pageUrl + "|" + count,
window.getEnd())`` (a window result carries the timestamp ``window.maxTimestamp()`` = end - 1) ->
``keyBy(t -> t.f1)`` (the window end) -> ``process(new TopNProcessFunction())``: every
``(page|count, windowEnd)`` goes into a ``ListState`` and registers a timer at ``windowEnd + 1``
("等待同一窗口所有数据到齐": wait until all results of the window are in); the timer sorts them by
count, emits the top 10 and clears the list.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``), ``ListStateDescriptor<>("page-count-list", String.class)`` with
``Types.STRING()``, ``Tuple2`` as a Python tuple, Lombok's ``TopNResult``/``RankItem`` builders as
``Row``s with the same field names, ``encoded.split("\\\\|")`` as ``encoded.split("|")`` (the same
for these strings), ``Long.parseLong`` as ``int``, the descending stable ``List.sort`` as Python's
stable ``sort(reverse=True)`` (equal counts keep their order in both).  The Chinese comments are
the original's.

The function's input is the window operator's output: ``records()`` draws ``(page|count,
windowEnd)`` with window ends one slide apart, and ``timestamp(record)`` is the window result's
timestamp, ``windowEnd - 1``.
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ListStateDescriptor

TOP_N = 10
WINDOW_SIZE_MS = 5 * 60 * 1000  # Time.minutes(5)
WINDOW_SLIDE_MS = 60 * 1000  # Time.minutes(1)
# its input is the window operator's results, emitted before that operator forwards the watermark
# that closed the window: never behind the watermark (certify --no-late)
LATE = False


class TopNProcessFunction(KeyedProcessFunction):
    """TopN 处理函数

    实现思路：
    1. 每条数据到来时存入 ListState
    2. 注册一个窗口结束时间 +1 的定时器（等待同一窗口所有数据到齐）
    3. 定时器触发时，从 ListState 取出所有数据，排序输出 TopN
    """

    def __init__(self):
        self.page_count_list_state = None

    def open(self, parameters: RuntimeContext):
        self.page_count_list_state = parameters.get_list_state(
            ListStateDescriptor("page-count-list", Types.STRING()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        # 将 "pageUrl|count" 存入 ListState
        self.page_count_list_state.add(value[0])
        # 注册定时器：窗口结束时间 + 1ms，确保同一窗口的所有数据都到齐
        ctx.timer_service().register_event_time_timer(value[1] + 1)
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        # 从 ListState 中取出所有数据
        page_count_list = []
        for encoded in self.page_count_list_state.get():
            parts = encoded.split("|")
            if len(parts) == 2:
                page_count_list.append((parts[0], int(parts[1])))

        # 清空 ListState
        self.page_count_list_state.clear()

        # 按访问量降序排序
        page_count_list.sort(key=lambda t: t[1], reverse=True)

        # 构建 TopN 结果
        items = []
        for i in range(min(TOP_N, len(page_count_list))):
            items.append(Row(rank=i + 1,
                             name=page_count_list[i][0],
                             count=page_count_list[i][1]))

        yield Row(rankName="热门页面 Top " + str(TOP_N),
                  items=items,
                  windowEnd=ctx.get_current_key())


def records():
    """One window result ``Tuple2.of(pageUrl + "|" + count, window.getEnd())``: a few pages,
    counts that tie now and then, and six window ends one slide apart (three or more windows'
    timers due at one watermark: the shape interruptible timers change outputs in)."""
    from hypothesis import strategies as st

    return st.builds(
        lambda page, count, n: ("/page/" + str(page) + "|" + str(count), WINDOW_SIZE_MS + n * WINDOW_SLIDE_MS),
        st.integers(1, 12),
        st.integers(1, 20),
        st.integers(0, 5),
    )


def key(value) -> int:
    return value[1]  # keyBy(t -> t.f1): the window end


def timestamp(value) -> int:
    return value[1] - 1  # a window result's timestamp: window.maxTimestamp() = end - 1
