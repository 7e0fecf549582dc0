"""``pyflink.datastream.stream_execution_environment`` for capture:
:class:`StreamExecutionEnvironment` records the pipeline the job builds; ``execute()`` /
``execute_async()`` return without running anything (the first one's pipeline is what
:func:`streamproof.flink.capture.capture` returns). Settings that do not change what a job
computes (jars, Python files, state backends...) are accepted and recorded nowhere; a method
streamproof does not know is refused by name."""

from __future__ import annotations

import dataclasses
import json
import re

import streamproof.flink.capture as _capture
import streamproof.flink.pipeline as P
from streamproof.flink.capture import describe, is_opaque, job_line, refuse
from streamproof.flink.common import Configuration, ExecutionConfig
from streamproof.flink.datastream.checkpointing_mode import CheckpointingMode
from streamproof.flink.datastream.data_stream import DataStream
from streamproof.flink.pipeline import CaptureError, Pipeline, SourceSpec

__all__ = ["StreamExecutionEnvironment", "CheckpointConfig", "JobExecutionResult"]

_UNITS = {"ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000,
          "secs": 1000, "second": 1000, "seconds": 1000, "m": 60_000, "min": 60_000, "mins": 60_000,
          "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
          "d": 86_400_000, "day": 86_400_000, "days": 86_400_000}


def _duration_ms(text: str) -> int | None:
    """``"10 s"``, ``"500ms"``, ``"1 min"``, ``"10000"`` (ms) as milliseconds, else None."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", str(text).lower())
    if not match or (match.group(2) and match.group(2) not in _UNITS):
        return None
    return int(match.group(1)) * _UNITS.get(match.group(2) or "ms")


def _mode_name(mode) -> str:
    return getattr(mode, "name", None) or str(mode).rsplit(".", 1)[-1]


class CheckpointConfig:
    """``env.get_checkpoint_config()``: ``set_checkpoint_interval`` and ``set_checkpointing_mode``
    update the pipeline; every other ``set_*``/``enable_*``/``disable_*`` is accepted and recorded
    nowhere."""

    def __init__(self, env: "StreamExecutionEnvironment"):
        self._env = env

    def set_checkpoint_interval(self, checkpoint_interval: int) -> "CheckpointConfig":
        self._env._sp_set_checkpoint_interval(checkpoint_interval)
        return self

    def get_checkpoint_interval(self) -> int:
        return -1 if self._env._sp_checkpoint_interval is None else self._env._sp_checkpoint_interval

    def is_checkpointing_enabled(self) -> bool:
        return self._env._sp_checkpoint_interval is not None

    def set_checkpointing_mode(self, checkpointing_mode) -> "CheckpointConfig":
        self._env._sp_checkpointing_mode = _mode_name(checkpointing_mode)
        return self

    set_checkpointing_consistency_mode = set_checkpointing_mode

    def get_checkpointing_mode(self):
        return CheckpointingMode[self._env._sp_checkpointing_mode]

    get_checkpointing_consistency_mode = get_checkpointing_mode

    def __getattr__(self, name):
        if name.startswith(("set_", "enable_", "disable_")):
            return lambda *args, **kwargs: self
        if name.startswith(("get_", "is_")):
            return lambda *args, **kwargs: None
        refuse(f"CheckpointConfig.{name}")


class JobExecutionResult:
    """What ``execute()`` / ``execute_async()`` return: a harmless stand-in for PyFlink's
    ``JobExecutionResult`` / ``JobClient`` (nothing ran: no accumulators, runtime 0)."""

    def __init__(self, job_name: str | None):
        self._job_name = job_name

    def get_job_id(self) -> str:
        return "0" * 32

    def get_job_status(self):
        return self

    def get_job_execution_result(self):
        return self

    def result(self, *args, **kwargs):
        return self

    def get(self, *args, **kwargs):
        return self

    def wait(self, *args, **kwargs):
        return self

    def done(self) -> bool:
        return True

    def is_job_execution_result(self) -> bool:
        return True

    def get_net_runtime(self) -> int:
        return 0

    def get_accumulator_result(self, accumulator_name: str):
        return None

    def get_all_accumulator_results(self) -> dict:
        return {}

    def cancel(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None

    def __repr__(self):
        return f"JobExecutionResult(job_name={self._job_name!r}, not run: captured by streamproof)"


class StreamExecutionEnvironment:
    """The job's environment, recording its pipeline (``get_execution_environment()`` returns the
    capture's one environment)."""

    def __init__(self, j_stream_execution_environment=None, serializer=None):
        self._sp_nodes: list[P.Node] = []
        self._sp_config = ExecutionConfig()
        self._sp_checkpoint_interval: int | None = None
        self._sp_checkpointing_mode = "EXACTLY_ONCE"
        self._sp_runtime_mode = "STREAMING"
        self._sp_configuration: dict = {}
        self._sp_chaining_disabled = False
        self._sp_checkpoint_config = CheckpointConfig(self)
        self._sp_line = job_line()
        self._sp_submitted: Pipeline | None = None

    @staticmethod
    def get_execution_environment(configuration=None) -> "StreamExecutionEnvironment":
        state = _capture.STATE
        if state.active:
            if state.env is None:
                state.env = StreamExecutionEnvironment()
            env = state.env
        else:
            env = StreamExecutionEnvironment()
        if configuration is not None:
            env.configure(configuration)
        return env

    # -- recording ----------------------------------------------------------------------------
    def _sp_add(self, kind: str, inputs=(), **fields) -> P.Node:
        node = P.Node(id=len(self._sp_nodes), kind=kind, inputs=list(inputs), line=job_line(), **fields)
        self._sp_nodes.append(node)
        return node

    def _sp_node(self, node_id: int) -> P.Node:
        return self._sp_nodes[node_id]

    def _sp_pipeline(self, job_name: str | None) -> Pipeline:
        nodes = [dataclasses.replace(n, inputs=list(n.inputs)) for n in self._sp_nodes]
        if self._sp_chaining_disabled:
            for node in nodes:
                node.chaining = "disabled"
        configuration = dict(self._sp_configuration)
        if self._sp_config._global_job_parameters:
            configuration["pipeline.global-job-parameters"] = dict(self._sp_config._global_job_parameters)
        return Pipeline(nodes=nodes, file=_capture.STATE.file or "", job_name=job_name,
                        parallelism=self._sp_config._parallelism, max_parallelism=self._sp_config._max_parallelism,
                        checkpoint_interval=self._sp_checkpoint_interval,
                        checkpointing_mode=self._sp_checkpointing_mode, runtime_mode=self._sp_runtime_mode,
                        auto_watermark_interval=self._sp_config._auto_watermark_interval, configuration=configuration)

    def _sp_source(self, spec: SourceSpec, name: str | None = None, parallelism: int | None = None) -> P.Node:
        return self._sp_add(P.SOURCE, source=spec, name=name, parallelism=parallelism, output_type=spec.type_info)

    def _sp_set_checkpoint_interval(self, interval) -> None:
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 10:
            raise CaptureError(f"{job_line()}: checkpoint interval {interval!r}: it must be an int of at least 10 ms "
                               f"(as Flink)")
        self._sp_checkpoint_interval = interval

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        refuse(f"StreamExecutionEnvironment.{name}")

    # -- settings -----------------------------------------------------------------------------
    def get_config(self) -> ExecutionConfig:
        return self._sp_config

    def set_parallelism(self, parallelism: int) -> "StreamExecutionEnvironment":
        if parallelism != -1 and (not isinstance(parallelism, int) or parallelism < 1):
            raise CaptureError(f"{job_line()}: StreamExecutionEnvironment.set_parallelism({parallelism!r}): "
                               f"the parallelism must be a positive int")
        self._sp_config.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        """The parallelism set, else 1 (nothing runs; a job's arithmetic on it stays sane)."""
        return self._sp_config._parallelism or 1

    def set_max_parallelism(self, max_parallelism: int) -> "StreamExecutionEnvironment":
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise CaptureError(f"{job_line()}: StreamExecutionEnvironment.set_max_parallelism({max_parallelism!r}): "
                               f"it must be an int in 1..32768")
        self._sp_config.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._sp_config.get_max_parallelism()

    def set_runtime_mode(self, execution_mode) -> "StreamExecutionEnvironment":
        self._sp_runtime_mode = _mode_name(execution_mode)
        return self

    def enable_checkpointing(self, interval: int, mode=None) -> "StreamExecutionEnvironment":
        self._sp_set_checkpoint_interval(interval)
        if mode is not None:
            self._sp_checkpointing_mode = _mode_name(mode)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        return self._sp_checkpoint_config

    def get_checkpoint_interval(self) -> int:
        return self._sp_checkpoint_config.get_checkpoint_interval()

    def get_checkpointing_mode(self):
        return self._sp_checkpoint_config.get_checkpointing_mode()

    get_checkpointing_consistency_mode = get_checkpointing_mode

    def disable_operator_chaining(self) -> "StreamExecutionEnvironment":
        self._sp_chaining_disabled = True
        return self

    def is_chaining_enabled(self) -> bool:
        return not self._sp_chaining_disabled

    def configure(self, configuration) -> None:
        """Record a ``Configuration`` (or dict); ``parallelism.default``, ``pipeline.max-parallelism``,
        ``execution.runtime-mode``, ``execution.checkpointing.interval``/``.mode`` and
        ``pipeline.auto-watermark-interval`` are applied to the pipeline's settings."""
        if isinstance(configuration, Configuration):
            values = configuration.to_dict()
        elif isinstance(configuration, dict):
            values = {str(k): v for k, v in configuration.items()}
        else:
            return
        self._sp_configuration.update(values)
        for key, value in values.items():
            text = str(value).strip()
            if key == "parallelism.default" and text.lstrip("-").isdigit():
                self._sp_config.set_parallelism(int(text))
            elif key == "pipeline.max-parallelism" and text.isdigit():
                self._sp_config.set_max_parallelism(int(text))
            elif key == "execution.runtime-mode":
                self._sp_runtime_mode = text.upper()
            elif key == "execution.checkpointing.interval" and _duration_ms(text) is not None:
                self._sp_set_checkpoint_interval(_duration_ms(text))
            elif key == "execution.checkpointing.mode":
                self._sp_checkpointing_mode = text.upper().replace("-", "_")
            elif key == "pipeline.auto-watermark-interval" and _duration_ms(text) is not None:
                self._sp_config.set_auto_watermark_interval(_duration_ms(text))

    def set_stream_time_characteristic(self, characteristic) -> "StreamExecutionEnvironment":
        return self

    def get_stream_time_characteristic(self):
        from streamproof.flink.datastream.time_characteristic import TimeCharacteristic
        return TimeCharacteristic.EventTime

    def set_buffer_timeout(self, timeout_millis: int) -> "StreamExecutionEnvironment":
        return self

    def get_buffer_timeout(self) -> int:
        return 100

    def set_state_backend(self, state_backend) -> "StreamExecutionEnvironment":
        return self

    def enable_changelog_state_backend(self, enabled: bool) -> "StreamExecutionEnvironment":
        return self

    def set_default_savepoint_directory(self, directory: str) -> "StreamExecutionEnvironment":
        return self

    def register_slot_sharing_group(self, slot_sharing_group) -> "StreamExecutionEnvironment":
        return self

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> None:
        return None

    def set_default_local_parallelism(self, parallelism: int) -> None:
        return None

    def add_jars(self, *jars_path: str) -> None:
        return None

    def add_classpaths(self, *classpaths: str) -> None:
        return None

    def add_python_file(self, file_path: str) -> None:
        return None

    def set_python_requirements(self, requirements_file_path: str, requirements_cache_dir: str = None) -> None:
        return None

    def add_python_archive(self, archive_path: str, target_dir: str = None) -> None:
        return None

    def set_python_executable(self, python_exec: str) -> None:
        return None

    def close(self) -> None:
        return None

    def get_execution_plan(self) -> str:
        """A JSON sketch of the recorded nodes (PyFlink returns Flink's plan)."""
        return json.dumps({"nodes": [{"id": n.id, "type": n.kind, "contents": n.label,
                                      "predecessors": list(n.inputs)} for n in self._sp_nodes]})

    # -- sources ------------------------------------------------------------------------------
    def from_collection(self, collection, type_info=None) -> DataStream:
        """A non-parallel source (parallelism 1, as PyFlink) of the job's own records."""
        node = self._sp_source(SourceSpec("collection", list(collection), type_info), parallelism=1)
        return DataStream(self, node.id)

    def from_source(self, source, watermark_strategy, source_name: str, type_info=None) -> DataStream:
        """A connector source, then (unless ``no_watermarks()``) a TIMESTAMPS node with the
        strategy, as Flink's source applies it. As PyFlink 2.3, a Python ``TimestampAssigner`` on
        that strategy is not passed to the source: records keep the connector's timestamps
        (the TIMESTAMPS node's ``assigner`` is None)."""
        if is_opaque(watermark_strategy) or not hasattr(type(watermark_strategy), "to_spec"):
            refuse(f"StreamExecutionEnvironment.from_source(..., {describe(watermark_strategy)}, ...)",
                   "only WatermarkStrategy.for_monotonous_timestamps/for_bounded_out_of_orderness/no_watermarks "
                   "are modelled")
        node = self._sp_source(SourceSpec("connector", None, type_info, describe(source)), name=source_name)
        spec = watermark_strategy.to_spec()
        if spec.kind == "none":
            return DataStream(self, node.id)
        spec = dataclasses.replace(spec, assigner=None)
        timestamps = self._sp_add(P.TIMESTAMPS, inputs=[node.id], watermarks=spec, output_type=type_info)
        return DataStream(self, timestamps.id)

    def add_source(self, source_func, source_name: str = "Custom Source", type_info=None) -> DataStream:
        node = self._sp_source(SourceSpec("connector", None, type_info, describe(source_func)), name=source_name)
        return DataStream(self, node.id)

    def read_text_file(self, file_path: str, charset_name: str = "UTF-8") -> DataStream:
        node = self._sp_source(SourceSpec("connector", None, None, f"read_text_file({file_path})"))
        return DataStream(self, node.id)

    def create_input(self, input_format, type_info=None):
        refuse("StreamExecutionEnvironment.create_input", "input formats are not modelled; use from_source")

    # -- execution ----------------------------------------------------------------------------
    def execute(self, job_name: str = None) -> JobExecutionResult:
        """Record the pipeline (the capture keeps the first one) and return without running."""
        if not any(n.kind == P.SINK for n in self._sp_nodes):
            raise CaptureError(f"{job_line()}: env.execute() with no sink: the job has no print()/add_sink()/"
                               f"sink_to() (Flink: No operators defined in streaming topology)")
        pipeline = self._sp_pipeline(job_name)
        if self._sp_submitted is None:
            self._sp_submitted = pipeline
        state = _capture.STATE
        if state.active and state.env is self and state.pipeline is None:
            state.pipeline = pipeline
        return JobExecutionResult(job_name)

    def execute_async(self, job_name: str = "Flink Streaming Job") -> JobExecutionResult:
        return self.execute(job_name)

    def execute_and_collect(self, *args, **kwargs):
        refuse("StreamExecutionEnvironment.execute_and_collect", "it runs the job and the job's code reads its results")
