"""streamproof.flink.capture: a real, unmodified PyFlink job file (``from pyflink...`` imports)
is run with PyFlink bound to streamproof; ``env.execute()`` returns without running anything and
the recorded pipeline comes back. No user function is ever called; every refusal is one line
naming the job's line; genuine pyflink modules are set aside and restored."""

from __future__ import annotations

import sys
import textwrap

import pytest

from streamproof.flink import pipeline as P
from streamproof.flink.capture import capture
from streamproof.flink.pipeline import CaptureError

# every user function of these jobs raises if called: capture must only record them
PRELUDE = '''\
def _never(*args, **kwargs):
    raise AssertionError("a user function was called during capture")
'''


def write(tmp_path, text: str, name: str = "job.py") -> str:
    path = tmp_path / name
    path.write_text(PRELUDE + textwrap.dedent(text))
    return str(path)


def line_of(path: str, needle: str) -> int:
    """The 1-based line of the first line containing ``needle`` in the job's file."""
    with open(path) as f:
        return next(i for i, text in enumerate(f, 1) if needle in text)


WINDOWS_JOB = '''
from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.time import Time
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import KeySelector, OutputTag, ProcessWindowFunction, StreamExecutionEnvironment
from pyflink.datastream.functions import ReduceFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        _never()


class ByName(KeySelector):
    def get_key(self, value):
        _never()


class Add(ReduceFunction):
    def reduce(self, a, b):
        _never()


class Wrap(ProcessWindowFunction):
    def process(self, key, context, elements):
        _never()


late = OutputTag("late", Types.TUPLE([Types.STRING(), Types.INT()]))
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(4)
env.enable_checkpointing(5000)
env.get_config().set_auto_watermark_interval(50)
events = env.from_collection([("a", 1), ("b", 2)], type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
stamped = events.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2)).with_timestamp_assigner(Stamp()))
windowed = stamped.key_by(ByName()) \\
    .window(TumblingEventTimeWindows.of(Time.seconds(10))) \\
    .allowed_lateness(1000) \\
    .side_output_late_data(late) \\
    .reduce(Add(), window_function=Wrap(), output_type=Types.STRING()) \\
    .name("per-name").uid("per-name-uid").set_parallelism(2)
windowed.get_side_output(late).print().name("late-out")
windowed.print()
counts = stamped.key_by(lambda v: v[0]).count_window(3).reduce(lambda a, b: _never())
counts.print()
stamped.key_by(lambda v: v[0]).sum(1).print()
env.execute("windows")
'''


def test_windows_job(tmp_path):
    path = write(tmp_path, WINDOWS_JOB)
    p = capture(path)
    kinds = [n.kind for n in p.nodes]
    assert kinds == [P.SOURCE, P.TIMESTAMPS, P.WINDOW, P.SIDE_OUTPUT, P.SINK, P.SINK, P.WINDOW, P.SINK, P.REDUCE,
                     P.SINK]
    assert (p.job_name, p.parallelism, p.checkpoint_interval, p.auto_watermark_interval) == ("windows", 4, 5000, 50)
    source, stamps, window, side, late_sink, main_sink, count, _, total, _ = p.nodes
    assert source.source.kind == "collection" and source.source.records == [("a", 1), ("b", 2)]
    assert source.parallelism == 1                      # from_collection is non-parallel
    assert stamps.inputs == [source.id] and stamps.watermarks.kind == "bounded" and stamps.watermarks.bound == 2000
    assert type(stamps.watermarks.assigner).__name__ == "Stamp"
    assert window.inputs == [stamps.id] and type(window.key_selector).__name__ == "ByName"
    spec = window.window
    assert spec.assigner == ("tumbling", 10_000, 0) and spec.function_kind == "reduce"
    assert type(spec.function).__name__ == "Add" and type(spec.window_function).__name__ == "Wrap"
    assert spec.allowed_lateness == 1000 and spec.late_tag.tag_id == "late"
    assert (window.name, window.uid, window.parallelism) == ("per-name", "per-name-uid", 2)
    assert window.line == f"job.py:{line_of(path, '.reduce(Add()')}"  # the line of the call itself
    assert side.kind == P.SIDE_OUTPUT and side.inputs == [window.id] and side.tag.tag_id == "late"
    assert late_sink.inputs == [side.id] and late_sink.name == "late-out" and late_sink.sink == "print"
    assert main_sink.inputs == [window.id]
    assert count.window.assigner == ("count", 3, None) and callable(count.key_selector)
    assert total.kind == P.REDUCE and total.function.aggregation == ("sum", 1) and total.key_selector is not None


TIMER_JOB = '''
from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import (CheckpointingMode, KeyedProcessFunction, RuntimeContext, RuntimeExecutionMode,
                                StreamExecutionEnvironment)
from pyflink.datastream.state import ValueStateDescriptor


class CountWithTimeout(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        _never()

    def process_element(self, value, ctx):
        _never()

    def on_timer(self, timestamp, ctx):
        _never()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.get_checkpoint_config().set_checkpoint_interval(20000)
    env.get_checkpoint_config().set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
    env.get_checkpoint_config().set_min_pause_between_checkpoints(500)
    env.set_max_parallelism(64)
    env.disable_operator_chaining()
    env.add_jars("file:///tmp/x.jar")
    ds = env.from_collection([("k", 1)]) \\
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_never))
    out = ds.key_by(lambda v: _never(v), key_type=Types.STRING()) \\
        .process(CountWithTimeout(), output_type=Types.STRING()) \\
        .name("timeouts").set_max_parallelism(32)
    out.map(_never).filter(_never).print()
    env.execute_async("timers")


if __name__ == "__main__":
    main()
'''


def test_event_time_timer_job(tmp_path):
    p = capture(write(tmp_path, TIMER_JOB))
    assert [n.kind for n in p.nodes] == [P.SOURCE, P.TIMESTAMPS, P.PROCESS, P.MAP, P.FILTER, P.SINK]
    assert (p.checkpoint_interval, p.checkpointing_mode, p.runtime_mode, p.max_parallelism, p.job_name) == \
        (20000, "AT_LEAST_ONCE", "STREAMING", 64, "timers")
    process = p.nodes[2]
    assert type(process.function).__name__ == "CountWithTimeout"
    assert callable(process.key_selector) and process.key_type is not None and process.inputs == [1]
    assert (process.name, process.max_parallelism) == ("timeouts", 32)
    assert p.nodes[1].watermarks.kind == "monotonous" and p.nodes[1].watermarks.assigner.__name__ == "_never"
    assert p.nodes[3].key_selector is None                 # map reads the process' (non-keyed) output
    assert all(n.chaining == "disabled" for n in p.nodes)  # disable_operator_chaining
    assert p.file.endswith("job.py")


UNION_JOB = '''
from pyflink.common import Types
from pyflink.datastream import OutputTag, ProcessFunction, SinkFunction, StreamExecutionEnvironment
from pyflink.datastream.connectors.jdbc import JdbcSink, JdbcConnectionOptions


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        _never()


class MySink(SinkFunction[str]):
    def invoke(self, value, context):
        _never()


errors = OutputTag("errors", Types.STRING())
env = StreamExecutionEnvironment.get_execution_environment()
a = env.from_collection([1, 2]).map(_never, output_type=Types.INT()).name("a")
b = env.from_collection([3]).filter(_never).uid("b")
merged = a.union(b).process(Split())
merged.get_side_output(errors).add_sink(MySink()).name("errors-sink")
merged.add_sink(JdbcSink.sink("insert", Types.ROW([Types.INT()]),
                              JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url("jdbc:x").build()))
result = env.execute()
print(result.get_job_id(), result.get_net_runtime())
'''


def test_union_side_output_two_sinks(tmp_path):
    p = capture(write(tmp_path, UNION_JOB))
    kinds = [n.kind for n in p.nodes]
    assert kinds == [P.SOURCE, P.MAP, P.SOURCE, P.FILTER, P.UNION, P.PROCESS, P.SIDE_OUTPUT, P.SINK, P.SINK]
    union = p.nodes[4]
    assert union.inputs == [1, 3] and p.nodes[1].name == "a" and p.nodes[3].uid == "b"
    assert p.nodes[5].inputs == [union.id] and p.nodes[5].key_selector is None
    assert p.nodes[6].tag.tag_id == "errors" and p.nodes[7].inputs == [6]
    assert p.nodes[7].sink == "add_sink(MySink())" and p.nodes[7].name == "errors-sink"
    assert p.nodes[8].sink == "add_sink(JdbcSink.sink(...))" and p.nodes[8].inputs == [5]
    assert len(p.sinks) == 2 and len(p.sources) == 2


KAFKA_JOB = '''
from pyflink.common import Duration, Encoder, WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy
from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

env = StreamExecutionEnvironment.get_execution_environment()
source = KafkaSource.builder() \\
    .set_bootstrap_servers("localhost:9092") \\
    .set_topics("input") \\
    .set_starting_offsets(KafkaOffsetsInitializer.earliest()) \\
    .set_value_only_deserializer(SimpleStringSchema()) \\
    .build()
strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(300)) \\
    .with_timestamp_assigner(_never).with_idleness(Duration.of_seconds(30))
lines = env.from_source(source, strategy, "kafka-in")
lines.map(_never).sink_to(FileSink.for_row_format("/tmp/out", Encoder.simple_string_encoder())
                          .with_rolling_policy(RollingPolicy.default_rolling_policy()).build())
env.from_source(source, WatermarkStrategy.no_watermarks(), "raw").print()
env.execute()
'''


def test_kafka_from_source_job(tmp_path):
    p = capture(write(tmp_path, KAFKA_JOB))
    assert [n.kind for n in p.nodes] == [P.SOURCE, P.TIMESTAMPS, P.MAP, P.SINK, P.SOURCE, P.SINK]
    source, stamps, _, files, raw, _ = p.nodes
    assert source.source.kind == "connector" and source.source.records is None and source.name == "kafka-in"
    assert source.source.description.startswith("KafkaSource.builder().set_bootstrap_servers(...)")
    assert source.source.description.endswith(".build()")
    assert source.parallelism is None
    # with_idleness returns a strategy without the Python assigner (PyFlink 2.3); from_source never applies one
    assert (stamps.watermarks.kind, stamps.watermarks.bound, stamps.watermarks.idleness) == ("bounded", 300, 30_000)
    assert stamps.watermarks.assigner is None and stamps.inputs == [source.id]
    assert files.sink == "sink_to(FileSink.for_row_format(...).with_rolling_policy(...).build())"
    assert raw.name == "raw" and p.nodes[5].inputs == [raw.id]   # no_watermarks(): no TIMESTAMPS node


def test_execute_does_not_run_and_code_after_it_runs(tmp_path):
    marker = tmp_path / "after.txt"
    path = write(tmp_path, f'''
        from pyflink.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).map(_never).print()
        env.execute()
        open({str(marker)!r}, "w").write("ran")
        env.from_collection([2]).print()
        env.execute("second")
    ''')
    p = capture(path)
    assert marker.read_text() == "ran"
    assert len(p.nodes) == 3 and p.job_name is None     # the first execute()'s pipeline


def test_genuine_pyflink_set_aside_and_restored(tmp_path):
    import pyflink.datastream as genuine
    before = {k: v for k, v in sys.modules.items() if k == "pyflink" or k.startswith("pyflink.")}
    p = capture(write(tmp_path, TIMER_JOB))
    assert p.nodes[2].kind == P.PROCESS
    after = {k: v for k, v in sys.modules.items() if k == "pyflink" or k.startswith("pyflink.")}
    assert after == before and all(after[k] is before[k] for k in before)
    assert sys.modules["pyflink.datastream"] is genuine
    assert genuine.StreamExecutionEnvironment.__module__.startswith("pyflink.")
    assert not any(type(f).__name__ == "_Finder" for f in sys.meta_path)


def test_capture_without_genuine_pyflink_imported(tmp_path):
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "pyflink" or k.startswith("pyflink.")}
    try:
        capture(write(tmp_path, WINDOWS_JOB))
        assert not any(k == "pyflink" or k.startswith("pyflink.") for k in sys.modules)
    finally:
        sys.modules.update(saved)


def test_job_modules_and_module_target(tmp_path, monkeypatch):
    (tmp_path / "helpers.py").write_text(textwrap.dedent('''
        from pyflink.datastream import MapFunction
        class Double(MapFunction):
            def map(self, value):
                raise AssertionError("called")
    '''))
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "__init__.py").write_text("")
    (tmp_path / "jobs" / "wordcount.py").write_text(textwrap.dedent('''
        from pyflink.datastream import StreamExecutionEnvironment
        from helpers import Double
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection(["a"]).map(Double()).print()
        env.execute()
    '''))
    monkeypatch.chdir(tmp_path)
    p = capture("jobs.wordcount")
    assert type(p.nodes[1].function).__name__ == "Double" and p.nodes[1].line == "wordcount.py:5"
    assert "helpers" not in sys.modules and "jobs.wordcount" not in sys.modules


STREAM = '''
from pyflink.common import Types, WatermarkStrategy
from pyflink.common.time import Time
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import TumblingProcessingTimeWindows, TumblingEventTimeWindows
env = StreamExecutionEnvironment.get_execution_environment()
ds = env.from_collection([("a", 1)])
other = env.from_collection([("b", 2)])
'''

REFUSED = [
    ("ds.partition_custom(lambda k, n: 0, lambda v: v[0]).print()", "DataStream.partition_custom"),
    ("ds.rebalance().print()", "DataStream.rebalance"),
    ("ds.shuffle().print()", "DataStream.shuffle"),
    ("ds.connect(other.broadcast(None)).process(None)", "DataStream.broadcast"),
    ("ds.window_all(TumblingEventTimeWindows.of(Time.seconds(1)))", "DataStream.window_all"),
    ("ds.key_by(lambda v: v[0]).window(TumblingProcessingTimeWindows.of(Time.seconds(1))).reduce(min)",
     "processing-time"),
    ("ds.key_by(lambda v: v[0]).name('keyed')", "KeyedStream.name"),
    ("ds.key_by(lambda v: v[0]).rebalance()", "KeyedStream.rebalance"),
    ("ds.cache()", "DataStream.cache"),
    ("ds.iterate()", "DataStream.iterate"),
    ("ds.execute_and_collect()", "DataStream.execute_and_collect"),
    ("env.execute_and_collect()", "StreamExecutionEnvironment.execute_and_collect"),
    ("env.some_future_api(1)", "StreamExecutionEnvironment.some_future_api"),
    ("WatermarkStrategy.for_generator(lambda ctx: None)", "WatermarkStrategy.for_generator"),
    ("from pyflink.datastream import AsyncDataStream; AsyncDataStream.unordered_wait(ds, None, 1000)",
     "AsyncDataStream.unordered_wait"),
    # a stream of the Table API (PyFlink's streaming_word_count.py reads a datagen table as a
    # stream; before, its map/key_by/reduce/print were opaque calls and the job "had no sink")
    ("from pyflink.table import StreamTableEnvironment; StreamTableEnvironment.create(env)"
     ".to_data_stream(None).map(str).print()", "StreamTableEnvironment.create(...).to_data_stream(...).map"),
]


@pytest.mark.parametrize("code,name", REFUSED, ids=[name for _, name in REFUSED])
def test_refused_by_name_at_its_line(tmp_path, code, name):
    path = write(tmp_path, STREAM + code + "\nds.print()\nenv.execute()\n")
    with pytest.raises(CaptureError) as info:
        capture(path)
    message = str(info.value)
    assert "\n" not in message and name in message
    assert message.startswith(f"job.py:{line_of(path, code)}: ")


def test_execute_and_collect_after_execute_is_refused(tmp_path):
    path = write(tmp_path, STREAM + "ds.print()\nenv.execute()\nfor x in ds.execute_and_collect():\n    print(x)\n")
    with pytest.raises(CaptureError, match=r"^job\.py:\d+: DataStream\.execute_and_collect is not supported"):
        capture(path)


def test_job_failing_while_built_names_its_line(tmp_path):
    path = write(tmp_path, STREAM + "def build():\n    raise ValueError('bad\\nconfig')\nbuild()\n")
    with pytest.raises(CaptureError) as info:
        capture(path)
    assert str(info.value) == (f"job.py:{line_of(path, 'raise ValueError')}: the job failed while it was built: "
                               f"ValueError: bad config")


def test_missing_file_and_syntax_error(tmp_path):
    with pytest.raises(CaptureError, match="no such job file"):
        capture(str(tmp_path / "nope.py"))
    path = write(tmp_path, "x = 1\ndef broken(:\n    pass\n")
    with pytest.raises(CaptureError) as info:
        capture(path)
    assert str(info.value).startswith(f"job.py:{line_of(path, 'def broken')}: the job does not compile: SyntaxError")
    with pytest.raises(CaptureError, match="no such job module|cannot be found"):
        capture("no_such_package_xyz.job")


@pytest.mark.parametrize("code,expected", [
    ("env.from_collection([1]).print()\n", "never called env.execute()"),
    ("x = 1\n", "never created a StreamExecutionEnvironment"),
    ("env.from_collection([1]).map(_never)\nenv.execute()\n", "with no sink"),
    ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
])
def test_nothing_to_capture(tmp_path, code, expected):
    env = "" if "never created" in expected else ("from pyflink.datastream import StreamExecutionEnvironment\n"
                                                  "env = StreamExecutionEnvironment.get_execution_environment()\n")
    with pytest.raises(CaptureError, match=expected) as info:
        capture(write(tmp_path, env + code))
    assert "\n" not in str(info.value) and str(info.value).startswith("job.py:")


def test_sys_exit_zero_after_execute_is_fine_and_argv_is_the_file(tmp_path):
    path = write(tmp_path, '''
        import sys
        from pyflink.datastream import StreamExecutionEnvironment
        assert sys.argv == [__file__]
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        env.execute()
        sys.exit(0)
    ''')
    saved = list(sys.argv)
    assert len(capture(path).nodes) == 2
    assert sys.argv == saved


def test_configuration_and_opaque_objects(tmp_path):
    path = write(tmp_path, '''
        from pyflink.common import Configuration, RestartStrategies
        from pyflink.datastream import StreamExecutionEnvironment, HashMapStateBackend
        from pyflink.table import StreamTableEnvironment
        config = Configuration()
        config.set_string("parallelism.default", "3")
        config.set_string("execution.checkpointing.interval", "10 s")
        env = StreamExecutionEnvironment.get_execution_environment(config)
        env.set_state_backend(HashMapStateBackend())
        env.get_config().set_global_job_parameters({"threshold": "5"})
        env.get_config().enable_object_reuse()
        RestartStrategies.fixed_delay_restart(3, 1000)
        t_env = StreamTableEnvironment.create(env)
        env.from_collection([1]).print()
        env.execute()
    ''')
    p = capture(path)
    assert (p.parallelism, p.checkpoint_interval) == (3, 10_000)
    assert p.configuration["parallelism.default"] == "3"
    assert p.configuration["pipeline.global-job-parameters"] == {"threshold": "5"}
