"""Two-input operators (``connect``): capture, the job-graph runtime, certification (docs/flink-api.md,
"Two inputs")."""

from __future__ import annotations

import textwrap

import pytest

from streamproof import testing
from streamproof.flink.capture import capture
from streamproof.impl.graph.job_graph import Edge, GraphError, JobGraph, OperatorNode, graph_from_json, graph_to_json
from streamproof.properties.certify_job_report import certify as certify_job

HEADER = '''
from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    CoFlatMapFunction, CoMapFunction, CoProcessFunction, KeyedCoProcessFunction)
from pyflink.datastream.state import ValueStateDescriptor


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Both(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return value


class BothFlat(CoFlatMapFunction):
    def flat_map1(self, value):
        yield value

    def flat_map2(self, value):
        yield value


class Plain(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield value

    def process_element2(self, value, ctx):
        yield value


class Keyed(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        yield value

    def process_element2(self, value, ctx):
        yield value


env = StreamExecutionEnvironment.get_execution_environment()
strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(Second())
'''


def job(tmp_path, body: str) -> str:
    path = tmp_path / "job.py"
    path.write_text(HEADER + textwrap.dedent(body) + "\nenv.execute('two inputs')\n")
    return str(path)


def test_connect_is_captured_with_both_inputs_and_their_key_selectors(tmp_path):
    path = job(tmp_path, '''
        a = env.from_collection([("x", 1)])
        b = env.from_collection([("x", 2)])
        a.connect(b).key_by(lambda r: r[0], lambda r: r[0] + "!").map(Both()).print()
        a.connect(b).flat_map(BothFlat()).print()
        ''')
    pipeline = capture(path)
    keyed, plain = [n for n in pipeline.nodes if n.two_inputs]
    assert keyed.inputs == plain.inputs == [0, 1]
    assert keyed.key_selector(("x", 1)) == "x" and keyed.key_selector2(("x", 1)) == "x!"
    assert plain.key_selector is None and plain.key_selector2 is None


@pytest.mark.parametrize("body,message", [
    ("a.connect(b).key_by(len, len).process(Plain())", "KeyedCoProcessFunction is required"),
    ("a.connect(b).process(Keyed())", "CoProcessFunction is required"),
])
def test_pyflinks_type_errors(tmp_path, body, message):
    path = job(tmp_path, "a = env.from_collection([1])\nb = env.from_collection([2])\n" + body + "\n")
    with pytest.raises(Exception, match=message):
        capture(path)


ENRICH = '''
    class Enrich(KeyedCoProcessFunction):
        """A ride waits for its fare and the reverse; a timer 10 ms after a ride gives up on the fare."""

        def open(self, ctx):
            self.ride = ctx.get_state(ValueStateDescriptor("ride", Types.PICKLED_BYTE_ARRAY()))
            self.fare = ctx.get_state(ValueStateDescriptor("fare", Types.PICKLED_BYTE_ARRAY()))

        def process_element1(self, ride, ctx):
            fare = self.fare.value()
            if fare is not None:
                self.fare.clear()
                yield ride[0], ride[2], fare[2]
            else:
                self.ride.update(ride)
                ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)

        def process_element2(self, fare, ctx):
            ride = self.ride.value()
            if ride is not None:
                self.ride.clear()
                yield ride[0], ride[2], fare[2]
            else:
                self.fare.update(fare)

        def on_timer(self, timestamp, ctx):
            ride = self.ride.value()
            if ride is not None:  # timed out: a ride without its fare
                self.ride.clear()
                yield ride[0], ride[2], None

    rides = env.from_collection([(1, 10, "r1"), (2, 12, "r2"), (3, 20, "r3"), (4, 21, "r4")]) \\
        .assign_timestamps_and_watermarks(strategy)
    fares = env.from_collection([(2, 11, 7.5), (1, 13, 3.0), (3, 40, 9.0)]).assign_timestamps_and_watermarks(strategy)
    rides.key_by(lambda r: r[0]).connect(fares.key_by(lambda f: f[0])).process(Enrich()).print()
    '''


def test_a_keyed_co_process_function_shares_state_and_timers_across_inputs(tmp_path):
    harness = testing.for_job(job(tmp_path, ENRICH))
    expected = [(1, "r1", 3.0), (2, "r2", 7.5), (4, "r4", None)]  # r3's fare comes after its timeout...
    result = harness.run(watermarks="each")
    # ... unless the fares' watermark holds the timer back: the operator's watermark is the minimum
    # of both inputs', so r3 (timer at 30) waits for fare 3 (at 40, watermark then 37) whenever the
    # fares' source is behind; each run's output is one of the two
    outputs = sorted(result.output(), key=repr)
    assert outputs in (sorted(expected + [(3, "r3", 9.0)], key=repr), sorted(expected + [(3, "r3", None)], key=repr))
    again = harness.run(parallelism=2, fail_after_checkpoints=1, watermarks="each")
    assert again.failovers == 1 and len(again.output()) == 4


def test_a_co_map_on_non_keyed_streams_calls_map1_and_map2(tmp_path):
    harness = testing.for_job(job(tmp_path, '''
        class Tag(CoMapFunction):
            def map1(self, value):
                return "first", value

            def map2(self, value):
                return "second", value

        env.from_collection([1, 2]).connect(env.from_collection([3])).map(Tag()).print()
        '''))
    harness.run().assert_output([("first", 1), ("first", 2), ("second", 3)])


def test_certify_certifies_a_correct_join_and_refuses_state_in_an_attribute(tmp_path):
    correct = certify_job(job(tmp_path, ENRICH), 10, 0)
    assert correct.results["job.same-output"]["verdict"] == "held", correct.results
    assert correct.results["job.interruptible-timers"]["verdict"] in ("held", "not applicable")
    (tmp_path / "bad").mkdir()
    broken = certify_job(job(tmp_path / "bad", '''
        class Counting(KeyedCoProcessFunction):
            seen = 0  # BUG: not Flink state: a restore keeps whatever this attempt counted

            def process_element1(self, value, ctx):
                self.seen += 1
                yield value[0], self.seen

            def process_element2(self, value, ctx):
                self.seen += 1
                yield value[0], self.seen

        a = env.from_collection([("a", 1), ("b", 2), ("c", 3), ("d", 4)])
        b = env.from_collection([("a", 5), ("b", 6)])
        a.key_by(lambda r: r[0]).connect(b.key_by(lambda r: r[0])).process(Counting()).print()
        '''), 10, 0)
    assert not broken.holds and broken.results["job.same-output"]["verdict"] == "failed"


def test_graph_json_keeps_the_second_input_and_rejects_a_lone_one():
    graph = JobGraph([OperatorNode("source", "source", 1), OperatorNode("s0", "keyed_process", 1, "window_sum"),
                      OperatorNode("s1", "keyed_process", 1, "co_window_sum"), OperatorNode("sink", "sink", 1)],
                     [Edge("source", "s0", "keyed"), Edge("source", "s1", "keyed"), Edge("s0", "s1", "keyed", input=2),
                      Edge("s1", "sink")])
    document = graph_to_json(graph)
    assert {"from": "s0", "to": "s1", "partitioning": "keyed", "input": 2} in document["edges"]
    assert graph_from_json(document, 1).edges == graph.edges
    document["edges"] = [e for e in document["edges"] if not (e["from"] == "source" and e["to"] == "s1")]
    with pytest.raises(GraphError, match="also has an input 1"):
        graph_from_json(document, 1)
    document["edges"][1]["input"] = 3
    with pytest.raises(GraphError, match="input is 1 or 2"):
        graph_from_json(document, 1)
