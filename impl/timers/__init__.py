"""The keyed timer service (Flink's ``org.apache.flink.streaming.api.operators`` timer classes):
the timer value (:mod:`.internal_timer`, ``TimerHeapInternalTimer``), the key-group-partitioned queue
(:mod:`.heap_priority_queue_set`, ``HeapPriorityQueueSet``), ``InternalTimerServiceImpl``
(:mod:`.internal_timer_service`), ``InternalTimeServiceManager``
(:mod:`.internal_time_service_manager`), the processing-time service and simulated clock
(:mod:`.processing_time_service`), the operator-level processing-time service
(:mod:`.operator_timers`), FLINK-9182's copy-on-write snapshots (:mod:`.snapshots`) and their
binary format (:mod:`.snapshot_format`), and FLIP-269's termination actions (:mod:`.termination`).

Left out: the RocksDB timer store, Flink's serializers (the snapshot format is streamproof's own,
docs/snapshots.md), and wall-clock processing time (every clock here is simulated).
"""

from streamproof.impl.state.key_context import KeyContext
from streamproof.impl.timers.internal_time_service_manager import (
    InternalTimeServiceManager,
)
from streamproof.impl.timers.internal_timer import InternalTimer
from streamproof.impl.timers.internal_timer_service import InternalTimerService
from streamproof.impl.timers.processing_time_service import (
    MAX_WATERMARK, MIN_WATERMARK, ManualProcessingTimeService,
)

__all__ = ["KeyContext", "InternalTimeServiceManager", "InternalTimer", "InternalTimerService",
           "ManualProcessingTimeService", "MIN_WATERMARK", "MAX_WATERMARK"]
