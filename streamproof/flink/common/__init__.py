"""``pyflink.common``: :class:`Types`, :class:`TypeInformation`, :class:`Row`, :class:`RowKind`,
:class:`Time`, :class:`Duration`, :class:`Instant`, :class:`WatermarkStrategy`,
:class:`TimestampAssigner`, :class:`Configuration`, :class:`ExecutionConfig`; every other name
PyFlink 2.3 exports here (``Encoder``, ``SimpleStringSchema``, ``RestartStrategies``...) is an
opaque class (:func:`streamproof.flink.capture.opaque_class`): usable when a job is captured,
never run."""

from __future__ import annotations

from streamproof.flink.capture import opaque_class
from streamproof.flink.common.time import Duration, Instant, Time
from streamproof.flink.common.typeinfo import TypeInformation, Types
from streamproof.flink.common.types import Row, RowKind
from streamproof.flink.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

_ACCEPTED = ("set_", "enable_", "disable_", "register_", "add_", "configure")
_QUERIES = ("get_", "is_", "has_")


class Configuration:
    """PyFlink's ``Configuration``: string keys and values (``set_string``/``get_integer``...)."""

    def __init__(self, other: "Configuration | None" = None, j_configuration=None):
        self._data: dict[str, str] = dict(other._data) if isinstance(other, Configuration) else {}

    @classmethod
    def from_dict(cls, map: dict) -> "Configuration":
        config = cls()
        for key, value in map.items():
            config.set_string(key, value)
        return config

    def set_string(self, key: str, value) -> "Configuration":
        self._data[key] = str(value)
        return self

    def get_string(self, key: str, default_value: str = None) -> str:
        return self._data.get(key, default_value)

    def set_integer(self, key: str, value: int) -> "Configuration":
        return self.set_string(key, int(value))

    def get_integer(self, key: str, default_value: int = None) -> int:
        return int(self._data[key]) if key in self._data else default_value

    def set_boolean(self, key: str, value: bool) -> "Configuration":
        return self.set_string(key, "true" if value else "false")

    def get_boolean(self, key: str, default_value: bool = None) -> bool:
        return self._data[key].lower() == "true" if key in self._data else default_value

    def set_float(self, key: str, value: float) -> "Configuration":
        return self.set_string(key, float(value))

    def get_float(self, key: str, default_value: float = None) -> float:
        return float(self._data[key]) if key in self._data else default_value

    def set_bytearray(self, key: str, value) -> "Configuration":
        self._data[key] = value
        return self

    def get_bytearray(self, key: str, default_value=None):
        return self._data.get(key, default_value)

    def set(self, option, value) -> "Configuration":
        """``set(ConfigOption, value)``: a string key is accepted too."""
        key = option if isinstance(option, str) else getattr(option, "key", lambda: str(option))()
        return self.set_string(key, value)

    def key_set(self) -> set:
        return set(self._data)

    def add_all_to_dict(self, target_dict: dict) -> None:
        target_dict.update(self._data)

    def add_all(self, other: "Configuration", prefix: str = None) -> "Configuration":
        for key, value in other.to_dict().items():
            self._data[(prefix or "") + key] = value
        return self

    def contains_key(self, key: str) -> bool:
        return key in self._data

    def to_dict(self) -> dict:
        return dict(self._data)

    def remove_config(self, key: str) -> bool:
        return self._data.pop(key, None) is not None

    def __eq__(self, other):
        return isinstance(other, Configuration) and self._data == other._data

    def __hash__(self):
        return hash(tuple(sorted(self._data.items(), key=str)))

    def __repr__(self):
        return f"Configuration({self._data!r})"


class ExecutionConfig:
    """``env.get_config()``: parallelism, max parallelism, ``auto_watermark_interval`` (ms) and
    global job parameters are recorded; every other ``set_*``/``enable_*``/``disable_*`` setter is
    accepted and recorded nowhere (its ``get_*``/``is_*`` return None)."""

    def __init__(self):
        self._parallelism: int | None = None
        self._max_parallelism: int | None = None
        self._auto_watermark_interval = 200
        self._global_job_parameters: dict = {}

    def set_parallelism(self, parallelism: int) -> "ExecutionConfig":
        self._parallelism = None if parallelism == -1 else int(parallelism)
        return self

    def get_parallelism(self) -> int:
        return -1 if self._parallelism is None else self._parallelism

    def set_max_parallelism(self, max_parallelism: int) -> "ExecutionConfig":
        self._max_parallelism = int(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return -1 if self._max_parallelism is None else self._max_parallelism

    def set_auto_watermark_interval(self, interval: int) -> "ExecutionConfig":
        self._auto_watermark_interval = int(interval)
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._auto_watermark_interval

    def set_global_job_parameters(self, global_job_parameters_dict: dict) -> "ExecutionConfig":
        self._global_job_parameters = dict(global_job_parameters_dict)
        return self

    def get_global_job_parameters(self) -> dict:
        return dict(self._global_job_parameters)

    def __getattr__(self, name):
        if name.startswith(_ACCEPTED):
            return lambda *args, **kwargs: self
        if name.startswith(_QUERIES):
            return lambda *args, **kwargs: None
        raise AttributeError(f"'ExecutionConfig' object has no attribute {name!r}")


def _opaque(*names: str) -> dict:
    return {name: opaque_class(name, __name__) for name in names}


_OPAQUE = _opaque(
    "ConfigOption", "ConfigOptions", "TypeSerializer", "SerializationSchema", "DeserializationSchema",
    "SimpleStringSchema", "ByteArraySchema", "Encoder", "CompletableFuture", "InputDependencyConstraint", "JobClient",
    "JobExecutionResult", "JobID", "JobStatus", "RestartStrategies", "RestartStrategyConfiguration",
    "AssignerWithPeriodicWatermarksWrapper", "JsonRowDeserializationSchema", "JsonRowSerializationSchema",
    "CsvRowDeserializationSchema", "CsvRowSerializationSchema", "AvroRowDeserializationSchema",
    "AvroRowSerializationSchema",
)
globals().update(_OPAQUE)

__all__ = ["TypeInformation", "Types", "Row", "RowKind", "Duration", "Instant", "Time", "WatermarkStrategy",
           "TimestampAssigner", "Configuration", "ExecutionConfig", *_OPAQUE]
