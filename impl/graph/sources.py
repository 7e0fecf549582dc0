"""Source subtasks (Flink's source tasks reading a bounded split): a bounded list of elements with
an offset (its checkpointed state) and a bounded-out-of-orderness watermark generator that restarts
with the task; a job graph's source subtask writes through its source operator's edges and, for a
captured job, runs the functions Flink chains to the source."""

from __future__ import annotations

from streamproof.impl.graph.job import PeriodicWatermark, SourceProgram
from streamproof.impl.operators.keyed_process_operator import (
    StreamRecord,
)
from streamproof.impl.tasks.stream_elements import EndOfData, Watermark
from streamproof.impl.timers.processing_time_service import MAX_WATERMARK, MIN_WATERMARK


class SourceTask:
    """A bounded source subtask with an offset (its checkpointed state).

    Its :class:`PeriodicWatermark` elements are the emission points of a watermark generator that
    restarts with the task (``max_timestamp`` and ``generated`` count from this (re)start only)."""

    def __init__(self, index: int, elements: list, offset: int, job):
        self.index, self.elements, self.offset, self.job = index, elements, offset, job
        self.ended = False      # sent EndOfData (drain): nothing more, barriers included
        self.exhausted = False  # no-drain: input read, the channel stays open for the stop savepoint
        self.max_timestamp: int | None = None  # the generator: highest record timestamp since this (re)start
        self.generated = MIN_WATERMARK         # ... and the highest watermark it emitted since then
        self.restart_tick = self._restart_tick()

    def is_runnable(self) -> bool:
        if self.ended or self.exhausted:
            return False
        if self.offset < len(self.elements):
            element = self.elements[self.offset]
            if isinstance(element, StreamRecord):
                return self.job.has_capacity(self.index, self.job.route(element))
        return True

    def emit_next(self) -> None:
        if self.offset < len(self.elements):
            element = self.elements[self.offset]
            self.offset += 1
            if isinstance(element, StreamRecord):
                self._send(element)
                if self.max_timestamp is None or element.timestamp > self.max_timestamp:
                    self.max_timestamp = element.timestamp
                if self.restart_tick is not None and self.restart_tick[0] == self.offset - 1:
                    self.tick(self.restart_tick[1])
                    # where the restarted generator emitted, and what: a failure-free run may too
                    events = getattr(self.job, "events", None)
                    if events is not None:
                        events.append(("regenerated-watermark", self.index, self.offset - 1, self.generated))
            elif isinstance(element, PeriodicWatermark):
                self.tick(element.bound)
            else:
                self.job.broadcast(self.index, element)
            return
        if not self.job.spec.config.drain:
            self.exhausted = True  # stop-with-savepoint without drain: no MAX_WATERMARK, no EndOfData
            return
        self.end()

    def _send(self, record: StreamRecord) -> None:
        self.job.send(self.index, self.job.route(record), record)

    def end(self) -> None:
        """End of input with drain: MAX_WATERMARK, then EndOfData."""
        self.job.broadcast(self.index, Watermark(MAX_WATERMARK))
        self.job.broadcast(self.index, EndOfData())
        self.ended = True

    def tick(self, bound: int) -> None:
        """An emission point of the bounded-out-of-orderness generator (nothing before the first
        record since the (re)start, nothing that is not above what it emitted since then)."""
        if self.max_timestamp is None:
            return
        watermark = self.max_timestamp - bound - 1
        if watermark > self.generated:
            self.generated = watermark
            self.job.broadcast(self.index, Watermark(watermark))

    def _restart_tick(self) -> tuple[int, int] | None:
        """After a restore: ``(index of a record, bound)`` when the restarted generator ticks once
        right after that record, the first one it reads. Only when the restart took a watermark
        away (a failure-free run had emitted one by the offset) and the element list has no
        emission point left where the generator could regain it while records remain: Flink's
        periodic emitter ticks within one interval of the restart while the source reads
        (docs/decisions.md, "Watermarks after a restore")."""
        if self.offset == 0 or any(isinstance(e, PeriodicWatermark) for e in self.elements[self.offset:]):
            return None
        highest, emitted, bound = None, MIN_WATERMARK, None
        for element in self.elements[:self.offset]:  # the failure-free generator up to the offset
            if isinstance(element, StreamRecord):
                highest = element.timestamp if highest is None else max(highest, element.timestamp)
            elif isinstance(element, PeriodicWatermark):
                bound = element.bound
                if highest is not None:
                    emitted = max(emitted, highest - bound - 1)
        if emitted == MIN_WATERMARK:
            return None
        records = (i for i in range(self.offset, len(self.elements)) if isinstance(self.elements[i], StreamRecord))
        first = next(records, None)
        return None if first is None else (first, bound)


class GraphSourceTask(SourceTask):
    """A source subtask (global index ``index``) writing to every edge of its source operator."""

    deployed = True  # set by the scheduler (FLIP-331: a source behind a blocking region waits)
    _fits = None  # the job's capacity check of this subtask's next record (made on first use)

    @property
    def program(self) -> SourceProgram | None:
        return self.job.spec.programs.get(self.job.graph.source_subtasks()[self.index][0])

    def is_runnable(self) -> bool:
        if self.ended or self.exhausted or not self.deployed:
            return False
        if self.offset < len(self.elements) and isinstance(self.elements[self.offset], StreamRecord):
            fits = self._fits
            if fits is None:  # the job's has_capacity for this subtask, its channels looked up once
                operator, subtask = self.job.graph.source_subtasks()[self.index]
                fits = self._fits = self.job.capacity_check(operator, subtask, any_target=self.program is not None)
            return fits(self.elements[self.offset])
        return True

    def emit_next(self) -> None:
        program = self.program
        if self.offset < len(self.elements) and program is not None:
            self._emit_with(program)
            return
        super().emit_next()  # records through _send(), the rest (end of input too) through broadcast()

    def _send(self, record: StreamRecord) -> None:
        self.job.write(*self.job.graph.source_subtasks()[self.index], record)

    def _emit_with(self, program: SourceProgram) -> None:
        """A captured job's source: records through its chained functions and timestamp assigner,
        watermarks from its generator at the emission points (none without a bound)."""
        element = self.elements[self.offset]
        self.offset += 1
        if isinstance(element, PeriodicWatermark):
            if program.bound is not None:
                self.tick(program.bound)
            return
        if not isinstance(element, StreamRecord):
            self.job.broadcast(self.index, element)
            return
        operator, subtask = self.job.graph.source_subtasks()[self.index]
        for record in program.records(element):
            if record.timestamp <= self.generated and program.bound is not None:
                self.job.events.append(("late-at-source", self.index, self.offset - 1, record.timestamp,
                                        self.generated))
            self.job.write(operator, subtask, record)
            if self.max_timestamp is None or record.timestamp > self.max_timestamp:
                self.max_timestamp = record.timestamp
        if self.restart_tick is not None and self.restart_tick[0] == self.offset - 1 and program.bound is not None:
            self.tick(program.bound)
            self.job.events.append(("regenerated-watermark", self.index, self.offset - 1, self.generated))
