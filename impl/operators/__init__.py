"""Stream operators (Flink's ``org.apache.flink.streaming.api.operators`` and
``...runtime.operators.windowing``): ``KeyedProcessOperator`` with its function, context and timer
service (:mod:`.keyed_process_operator`), user code under a time limit (:mod:`.user_code`), the
processing-time clock user code sees (:mod:`.user_clock`), window assigners, triggers and
``WindowOperator`` with FLIP-331's end-of-stream windows (:mod:`.windows`) and the two-phase-commit
sink (:mod:`.two_phase_commit_sink`, ``TwoPhaseCommitSinkFunction``).

The names below are the operator API of the older ``streamproof.impl.operators`` style, importable
from here as before (docs/api.md). Left out: the DataStream API's type system and serializers
(records are Python values), async I/O and the legacy source/sink functions.
"""

from streamproof.impl.operators.keyed_process_operator import (
    Collector, Context, KeyedProcessFunction, KeyedProcessOperator, OperatorSnapshot, RuntimeContext,
    StreamRecord, TimerService,
)
from streamproof.impl.operators.user_code import CallbackLimitExceeded, UserCodeError
from streamproof.impl.state.keyed_state_backend import (
    AggregatingState, AggregatingStateDescriptor, KeyedStateBackend, ListState, ListStateDescriptor, MapState,
    MapStateDescriptor, ReducingState, ReducingStateDescriptor, ValueState, ValueStateDescriptor,
)
from streamproof.impl.timers.processing_time_service import MAX_WATERMARK

__all__ = [
    "StreamRecord", "KeyedProcessFunction", "KeyedProcessOperator", "Context", "RuntimeContext", "Collector",
    "TimerService", "ValueState", "ListState", "MapState", "ReducingState", "AggregatingState",
    "ValueStateDescriptor", "ListStateDescriptor", "MapStateDescriptor", "ReducingStateDescriptor",
    "AggregatingStateDescriptor", "KeyedStateBackend", "OperatorSnapshot", "MAX_WATERMARK",
    "UserCodeError", "CallbackLimitExceeded",
]
