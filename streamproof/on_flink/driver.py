"""The client of runs on Apache Flink: ``python -m streamproof.on_flink.driver --serve`` (a runs
document's path per line of stdin, one JVM for all) or ``... driver RUNS.json`` (one batch),
started by :mod:`streamproof.on_flink.runner` with genuine PyFlink importable.

For each run of a runs document the job's file runs as written (as ``__main__``, its own ``sys.argv``),
with PyFlink changed at four points only:

- ``get_execution_environment``: the Python of this process for Flink's Python workers, the default
  parallelism of the run (the job's own ``set_parallelism`` still wins), a fixed-delay restart
  strategy;
- every user function the job passes is counted, one of them failed once in a fault run
  (:mod:`streamproof.on_flink.instrument`);
- every sink (``print``, ``add_sink``, ``sink_to``) becomes an exactly-once ``FileSink`` (row format,
  files rolled at each checkpoint) of the canonical values, one folder per sink in the order the job
  creates them;
- the first ``execute()`` enables checkpointing (the job's interval, else the run's; a paced run's
  always) and runs the job on the local MiniCluster; a later ``execute()`` is skipped, as certify
  captures the first. A paced run's ``from_collection`` emits one record per checkpoint.

It writes ``result-K.json`` per run: executed or not, the error (one line) if the job failed on
Flink, and the seconds the job took.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback

from streamproof.on_flink.instrument import Counting, EncodeForSink, instrument

_FUNCTION_ARGS = {  # (class, method): (positional index, keyword, window function?) of each function
    ("DataStream", "map"): [(0, "func", False)],
    ("DataStream", "flat_map"): [(0, "func", False)],
    ("DataStream", "filter"): [(0, "func", False)],
    ("DataStream", "process"): [(0, "func", False)],
    ("KeyedStream", "map"): [(0, "func", False)],
    ("KeyedStream", "flat_map"): [(0, "func", False)],
    ("KeyedStream", "filter"): [(0, "func", False)],
    ("KeyedStream", "process"): [(0, "func", False)],
    ("KeyedStream", "reduce"): [(0, "func", False)],
    ("WindowedStream", "reduce"): [(0, "reduce_function", False), (1, "window_function", True)],
    ("WindowedStream", "aggregate"): [(0, "aggregate_function", False), (1, "window_function", True)],
    ("WindowedStream", "process"): [(0, "process_window_function", True)],
    ("WindowedStream", "apply"): [(0, "window_function", True)],
}


class _Run:
    """The state of one run: its settings, the functions counted and the sinks made so far."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.counting = Counting(spec["count_dir"], tuple(spec["fault"]) if spec.get("fault") else None)
        self.functions: list[str] = []
        self.sinks: list[str] = []
        self.executed = False
        self.depth = 0  # inside a patched call: PyFlink's own nested calls are not the job's


RUN: _Run | None = None


def _name(function) -> str:
    return getattr(function, "__qualname__", None) or type(function).__name__


def _patch_functions(datastream_module) -> None:
    for (cls_name, method), args in _FUNCTION_ARGS.items():
        cls = getattr(datastream_module, cls_name)
        original = cls.__dict__.get(method)
        if original is None:
            continue

        def patched(self, *a, _original=original, _args=args, _label=f"{cls_name}.{method}", **kw):
            if RUN is None or RUN.depth:
                return _original(self, *a, **kw)
            a = list(a)
            for position, keyword, window in _args:
                holder, key = (a, position) if position < len(a) else (kw, keyword)
                if (key in holder if holder is kw else True) and holder[key] is not None:
                    counted = instrument(holder[key], len(RUN.functions), RUN.counting, window)
                    if counted is not None:
                        RUN.functions.append(f"{_label}({_name(holder[key])})")
                        holder[key] = counted
            RUN.depth += 1
            try:
                return _original(self, *a, **kw)
            finally:
                RUN.depth -= 1

        setattr(cls, method, patched)


def _patch_sinks(datastream_module) -> None:
    from pyflink.common import Types
    from pyflink.common.serialization import Encoder
    from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy

    def file_sink(self, how: str):
        if RUN is None:
            raise RuntimeError("streamproof: a sink outside a run")
        index = len(RUN.sinks)
        RUN.sinks.append(how)
        folder = os.path.join(RUN.spec["out"], f"sink-{index}")
        sink = FileSink.for_row_format(folder, Encoder.simple_string_encoder()) \
            .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build()
        RUN.depth += 1
        try:
            return self.map(EncodeForSink(), output_type=Types.STRING()).sink_to(sink)
        finally:
            RUN.depth -= 1

    for cls_name in ("DataStream", "KeyedStream"):
        cls = getattr(datastream_module, cls_name)
        for method in ("print", "add_sink", "sink_to"):
            if method in cls.__dict__:
                def patched(self, *a, _method=method, _original=cls.__dict__[method], **kw):
                    if RUN is None or RUN.depth:
                        return _original(self, *a, **kw)
                    return file_sink(self, _method)
                setattr(cls, method, patched)


def _patch_environment(env_module) -> None:
    from pyflink.common import Configuration

    cls = env_module.StreamExecutionEnvironment
    original_get = cls.__dict__["get_execution_environment"].__func__
    original_execute = cls.__dict__["execute"]

    def get_execution_environment(configuration=None):
        config = Configuration()
        if configuration is not None:
            config.add_all(configuration)
        defaults = {"python.executable": sys.executable, "python.client.executable": sys.executable,
                    "parallelism.default": str(RUN.spec["parallelism"]),
                    "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3",
                    "restart-strategy.fixed-delay.delay": "100 ms",
                    "python.execution-mode": RUN.spec.get("execution_mode", "process")}
        for key, value in defaults.items():
            if not config.contains_key(key) or key.startswith("python."):
                config.set_string(key, value)
        return original_get(config)

    def execute(self, job_name=None):
        if RUN.executed:
            return None  # certify captures the first execute(): later jobs are not compared
        RUN.executed = True
        if self.get_checkpoint_config().get_checkpoint_interval() <= 0 or RUN.spec.get("paced"):
            # paced: a record per checkpoint, at the run's interval (a job's 10 s would make it minutes long)
            self.enable_checkpointing(RUN.spec["checkpoint_interval"])
        started = time.monotonic()
        result = original_execute(self, job_name)
        RUN.spec["job_seconds"] = time.monotonic() - started
        return result

    def execute_async(self, job_name="Flink Streaming Job"):
        execute(self, job_name)  # run to the end: its committed output is what is compared
        return None

    original_from_collection = cls.__dict__["_from_collection"]

    def _from_collection(self, elements, type_info=None):
        if not RUN.spec.get("paced"):
            return original_from_collection(self, elements, type_info)
        return _paced_collection(self, elements, type_info)

    cls._from_collection = _from_collection
    cls.get_execution_environment = staticmethod(get_execution_environment)
    cls.execute = execute
    cls.execute_async = execute_async


def _paced_collection(env, elements, type_info):
    """``from_collection`` with its records converted as PyFlink converts them (its
    ``CollectionInputFormat``'s data), emitted by a ``DataGeneratorSource`` as Java's ``fromData``
    does, one record per completed checkpoint (``RateLimiterStrategy.perCheckpoint``): a checkpoint
    between every two records, and periodic watermarks between them."""
    import tempfile

    from pyflink.common import Types
    from pyflink.datastream.data_stream import DataStream
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "elements")
    try:
        with open(path, "wb") as f:
            env.serializer.serialize(elements, f)
        if type_info is None:
            j_objs = jvm.PythonBridgeUtils.readPickledBytes(path)
            type_info = Types.PICKLED_BYTE_ARRAY()
        else:
            j_objs = jvm.PythonBridgeUtils.readPythonObjects(path)
    finally:
        os.unlink(path)
        os.rmdir(folder)
    j_type = type_info.get_java_type_info()
    j_env = env._j_stream_execution_environment
    j_format = jvm.org.apache.flink.streaming.api.utils.PythonTypeUtils.getCollectionInputFormat(
        j_objs, j_type, j_env.getConfig())
    field = j_format.getClass().getDeclaredField("dataSet")  # the records as the source would emit them
    field.setAccessible(True)
    function = jvm.org.apache.flink.connector.datagen.functions.FromElementsGeneratorFunction(
        j_type, j_env.getConfig(), field.get(j_format))
    source = jvm.org.apache.flink.connector.datagen.source.DataGeneratorSource(
        function, len(elements), jvm.org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy
        .perCheckpoint(1), j_type)
    j_stream = j_env.fromSource(source, jvm.org.apache.flink.api.common.eventtime.WatermarkStrategy.noWatermarks(),
                                "Collection Source", j_type)
    j_stream.setParallelism(1)
    return DataStream(j_data_stream=j_stream)


def _one_line(exc: BaseException) -> str:
    """The root cause of a Flink failure, on one line: its last line naming an error."""
    causes = [line.strip() for line in str(exc).splitlines() if "Error" in line or "Exception" in line]
    return " ".join((causes[-1] if causes else str(exc)).split())[:300]


def _run_batch(path: str) -> None:
    """Every run of the runs document ``path``, each result written as it ends."""
    global RUN
    with open(path) as f:
        runs = json.load(f)
    job = os.path.abspath(runs["job"])
    if os.path.dirname(job) not in sys.path:
        sys.path.insert(0, os.path.dirname(job))
    for k, spec in enumerate(runs["runs"]):
        RUN = _Run(spec)
        result = {"executed": False, "error": None}
        started = time.monotonic()
        saved_argv = sys.argv
        sys.argv = [job]
        try:
            runpy.run_path(job, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                result["error"] = f"the job exited with {exc.code!r}"
        except BaseException as exc:  # noqa: BLE001 - the job failed on Flink: a result, said in one line
            result["error"] = _one_line(exc)
            result["trace"] = traceback.format_exc()[-4000:]
        finally:
            sys.argv = saved_argv
        result.update(executed=RUN.executed, seconds=time.monotonic() - started,
                      job_seconds=spec.get("job_seconds"), sinks=RUN.sinks, functions=RUN.functions)
        with open(os.path.join(runs["results"], f"result-{k}.json"), "w") as f:
            json.dump(result, f)
        RUN = None


def main(argv: list[str]) -> int:
    """``driver RUNS.json``: one batch; ``driver --serve``: a batch per line of stdin (the path of
    its runs document), ``PATH.done`` written after each, until stdin closes (one JVM for all)."""
    import pyflink.datastream.data_stream as datastream_module
    import pyflink.datastream.stream_execution_environment as env_module

    _patch_functions(datastream_module)
    _patch_sinks(datastream_module)
    _patch_environment(env_module)
    if argv[:1] != ["--serve"]:
        _run_batch(argv[0])
        return 0
    for line in sys.stdin:
        if line.strip():
            _run_batch(line.strip())
            with open(line.strip() + ".done", "w"):
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
