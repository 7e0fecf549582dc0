"""The one job runtime: a job running a :class:`~streamproof.impl.graph.job_graph.JobGraph` (a one-stage
job is its one-operator graph): sources, chain tasks joined by forward and keyed channels, the
checkpoint coordinator of :mod:`streamproof.impl.graph.checkpoint_coordinator`, failover and
per-stage rescaling.

Channels: a task has one input channel per (upstream operator, upstream subtask) feeding it, a
forward edge one, a keyed edge one per upstream subtask. Records go by key group (keyed) or to
the same subtask index (forward); watermarks, barriers and EndOfData go to every task the sender
feeds. Failover restarts every task from the latest completed checkpoint (with keyed exchanges
the pipelined region is the whole job); a rescale changes one chain's parallelism and that of the
chains tied to it by forward edges. After a rescale, in-flight records of unaligned checkpoints
are routed again and a merged channel gets the smallest watermark of its old buffers
(:meth:`GraphJob._replay_safe_watermarks`).

Size: one class, the runtime of every job (deployment, routing, blocking regions, restore,
failover), kept whole as the one place that says how a job runs; how each task is wired is apart
(:mod:`streamproof.impl.graph.task_wiring`).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Callable

from streamproof.impl.graph.checkpoint_coordinator import CompletedCheckpoint, GraphCheckpointCoordinator
from streamproof.impl.graph.job import GraphJobSpec
from streamproof.impl.graph.sources import GraphSourceTask
from streamproof.impl.graph.task_wiring import (
    TimedMailboxTimers, chained_output, input_clock, interrupt_check, network_output, routed_output,
)
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem
from streamproof.impl.state.key_groups import (
    assign_to_key_group, compute_key_group_range_for_operator_index, compute_operator_index_for_key_group,
)
from streamproof.impl.tasks.chained_operators import (
    BroadcastProcessOperator, KeyedBroadcastOperator, KeyedOperator, KeylessRecordError, ProcessOperator,
    SinkCommitter, SinkOperator, SinkWriter, StatelessOperator,
)
from streamproof.impl.tasks.operator_chain import ChainTask
from streamproof.impl.tasks.stream_elements import EndOfData, SecondInput, Watermark
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService


class KeySelectorError(RuntimeError):
    """A captured job's key selector raised or returned a key Flink cannot route."""


class NoResourceAvailableError(RuntimeError):
    """A pipelined region needs more slots than the cluster has (Flink's NoResourceAvailableException)."""


class GraphJob:
    """A running job graph: its current attempt's tasks, channels, clock and coordinator."""

    def __init__(self, spec: GraphJobSpec, external: ExternalSystem | None = None, rng: random.Random | None = None):
        self.spec = spec
        self.graph = spec.graph
        self.rng = rng or random.Random(0)
        self.external = external or ExternalSystem()
        self.now = 0
        self.attempt = 0
        self.events: list[tuple] = []
        self.output_logs: list[tuple[int, str, list]] = []  # (attempt, "operator[subtask]", output log)
        self.all_tasks: list[ChainTask] = []
        self.timer_delays: list[int] = []  # mailbox steps between a processing timer's mail and its run
        self.second_input_records = 0  # metric: records written on the second input of a two-input operator
        self.timer_mail_waiting: dict = {}  # timer mail not run yet -> (task, its step count when put)
        self.trigger_log: list[tuple] = []  # (attempt, checkpoint id, step, triggered in the blocking phase)
        self.finish_log: list[tuple] = []  # (attempt, chain, subtask, step) when a task's input ended
        self.layouts: list[dict] = []
        self.declined: list[int] = []  # steps where a checkpoint was due but declined (BLOCKING_OUTPUT_EXIST)
        self.deploy_log: list[tuple] = []  # (attempt, step, chains of the region deployed)
        self.coordinator = GraphCheckpointCoordinator(self, spec.checkpoint_interval)
        self.failovers = 0
        self.round_robin: dict = {}  # rebalance edges: (edge, sender) -> next turn
        self._deploy(None)

    # -- channels ----------------------------------------------------------------------------
    def layout(self) -> tuple:
        return tuple((chain.name, chain.parallelism) for chain in self.graph.chains)

    def parallelism_of(self, operator: str) -> int:
        return self.graph.by_name[operator].parallelism

    def _targets(self, edge, sender: int, element: Any) -> list[ChainTask]:
        chain = self.graph.chain_of[edge.target]
        if edge.partitioning == "forward":
            return [self.task_of[(chain, sender)]]
        p = self.parallelism_of(edge.target)
        if edge.partitioning == "broadcast":  # every record (and every other element) to every subtask
            return [self.task_of[(chain, i)] for i in range(p)]
        if edge.partitioning == "rebalance" and isinstance(element, StreamRecord):
            sent = self.round_robin.get((edge, sender), 0)  # records this sender wrote on the edge
            self.round_robin[(edge, sender)] = sent + 1
            return [self.task_of[(chain, (sent + sender) % p)]]  # Flink starts at a random channel: here sender
        if isinstance(element, StreamRecord):
            if element.key is None:
                raise KeylessRecordError(f"a record without key on the keyed edge {edge.source}->{edge.target} (emitted outside "
                               f"any keyed context, e.g. in end_input() or finish()): {element.value!r}")
            return [self.task_of[(chain, self._owner(element, p))]]
        return [self.task_of[(chain, i)] for i in range(p)]

    def _owner(self, record: StreamRecord, parallelism: int) -> int:
        key_group = assign_to_key_group(record.key, self.spec.max_parallelism)
        return compute_operator_index_for_key_group(self.spec.max_parallelism, parallelism, key_group)

    def write(self, operator: str, sender: int, element: Any, edges=None) -> None:
        """``operator``'s subtask ``sender`` writes an element to its network outputs."""
        for edge in edges if edges is not None else self.graph.outputs(operator):
            if edge.key_selector is not None and isinstance(element, StreamRecord):
                element = StreamRecord(self.key_of(edge, element.value), element.value, element.timestamp)
            sent = element
            if edge.input == 2 and isinstance(element, StreamRecord) and type(element.value) is not SecondInput:
                sent = StreamRecord(element.key, SecondInput(element.value), element.timestamp)
                self.second_input_records += 1
            for task in self._targets(edge, sender, sent):
                task.receive(task.channel_index[(operator, sender)], sent)

    def key_of(self, edge, value: Any) -> Any:
        """The key ``edge``'s key selector gives ``value`` (a tuple, float or bool key is routed
        as Flink's TupleN/Double/Boolean)."""
        try:
            key = self.spec.functions[edge.key_selector](value)
        except Exception as e:  # noqa: BLE001 - user code: named, then a verdict
            raise KeySelectorError(f"the key selector of {edge.target} raised {type(e).__name__}: {e} "
                                   f"on {value!r}") from e
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            from streamproof.impl.state.key_groups import CompositeKey
            try:
                key = CompositeKey.of(key)
            except Exception as e:  # noqa: BLE001
                raise KeySelectorError(f"the key selector of {edge.target} returned {key!r}: {e}") from e
        return key

    def broadcast(self, source: int, element: Any) -> None:
        self.write(*self.graph.source_subtasks()[source], element)

    def has_capacity(self, operator: str, sender: int, record: StreamRecord, any_target: bool = False) -> bool:
        """Whether ``record`` fits in the channels it goes to (``any_target``: in every channel it
        could go to, for a record a source program turns into others before routing)."""
        if any_target or any(e.key_selector or e.partitioning == "rebalance" for e in self.graph.outputs(operator)):
            return all(self._queued(task, (operator, sender)) < self.spec.channel_capacity
                       for edge in self.graph.outputs(operator) for task in self._targets(edge, sender, None))
        return all(self._queued(task, (operator, sender)) < self.spec.channel_capacity
                   for edge in self.graph.outputs(operator) for task in self._targets(edge, sender, record))

    def capacity_check(self, operator: str, sender: int, any_target: bool = False) -> Callable[[StreamRecord], bool]:
        """:meth:`has_capacity` of ``operator``'s subtask ``sender`` as a function of the record, with
        the channels it reads looked up once: a source asks before every record (issue 30). Valid
        while this attempt's tasks run (a failover deploys new sources, which ask again)."""
        edges, capacity = self.graph.outputs(operator), self.spec.channel_capacity
        channel = (operator, sender)
        if any_target or any(e.key_selector or e.partitioning == "rebalance" for e in edges):
            every = [(t.queued_records, t.channel_index[channel]) for e in edges for t in self._targets(e, sender, None)]
            return lambda record: all(queued[index] < capacity for queued, index in every)
        fixed = [(t.queued_records, t.channel_index[channel]) for e in edges if e.partitioning in ("forward", "broadcast")
                 for t in self._targets(e, sender, None)]
        keyed = [[(t.queued_records, t.channel_index[channel]) for t in self._targets(e, sender, None)]
                 for e in edges if e.partitioning not in ("forward", "broadcast")]
        max_parallelism = self.spec.max_parallelism

        def fits(record: StreamRecord) -> bool:
            if keyed and record.key is None:
                return self.has_capacity(operator, sender, record)  # raises KeylessRecordError, as it did
            if not all(queued[index] < capacity for queued, index in fixed):
                return False
            for subtasks in keyed:
                owner = compute_operator_index_for_key_group(max_parallelism, len(subtasks),
                                                             assign_to_key_group(record.key, max_parallelism))
                queued, index = subtasks[owner]
                if queued[index] >= capacity:
                    return False
            return True
        return fits

    @staticmethod
    def _queued(task: ChainTask, channel: tuple) -> int:
        return task.queued_records[task.channel_index[channel]]

    def _output_blocked(self, task: ChainTask, network: list):
        """Back-pressure: a task stops reading input while a channel it writes to is full."""
        capacity = self.spec.channel_capacity
        channels = [(target.queued_records, target.channel_index[(edge.source, task.vertex_subtask)])
                    for edge in network for target in self._targets(edge, task.vertex_subtask, None)]

        def blocked() -> bool:
            return any(queued[index] >= capacity for queued, index in channels)
        return blocked

    # -- deployment ------------------------------------------------------------------------------
    def _channels(self, head: str, subtask: int) -> list[tuple]:
        channels = []
        for edge in self.graph.inputs(head):
            senders = [subtask] if edge.partitioning == "forward" else range(self.parallelism_of(edge.source))
            channels += [(edge.source, u) for u in senders]
        return channels

    def _deploy(self, checkpoint: CompletedCheckpoint | None) -> None:
        spec, graph = self.spec, self.graph
        offsets = checkpoint.source_offsets if checkpoint else [0] * len(spec.sources)
        # rebalance: a restored sender goes on where its checkpoint left (records it wrote before the
        # barrier; a source: the records before its offset), so a restore deals records as the
        # failure-free run with the same start does (Flink starts at a random channel each attempt)
        self.round_robin = {key: n for snap in checkpoint.task_snapshots
                            for key, n in getattr(snap, "round_robin", {}).items()} \
            if checkpoint is not None and checkpoint.parallelism == self.layout() else {}
        for i, elements in enumerate(spec.sources):
            operator, subtask = graph.source_subtasks()[i]
            for edge in graph.outputs(operator):
                if edge.partitioning == "rebalance":
                    self.round_robin[(edge, subtask)] = sum(isinstance(e, StreamRecord) for e in elements[:offsets[i]])
        self.sources = [GraphSourceTask(i, elements, offsets[i], self) for i, elements in enumerate(spec.sources)]
        for source in self.sources:
            source.deployed = False
        self.clock = ManualProcessingTimeService(start=self.now)
        self.restoring = checkpoint  # input-driven clocks resume where the checkpoint's tasks were
        self.tasks: list[ChainTask] = []
        # this attempt's watermark processors with a continuation scheduled (MailboxWatermarkProcessor)
        self.scheduled_continuations = [0]
        self.task_of: dict[tuple, ChainTask] = {}
        self.layouts.append(dict(self.layout()))  # per attempt: each chain's parallelism
        self.blocking = graph.blocking_chains()  # chains with blocking outputs (asked once per attempt)
        for chain in graph.chains:
            if graph.by_name[chain.head].kind == "source":
                continue
            for s in range(chain.parallelism):
                self._create_task(chain, s)
        for task in self.tasks:
            self._wire(task)
        if checkpoint is not None:
            self._restore(checkpoint)
            if spec.ended_sources_finished_on_restore:
                self._end_finished_sources(checkpoint)
        for task in self.tasks:
            task.open()
        self.deployed: set[int] = set()
        for region in graph.regions():
            if graph.slots_needed(region) > (spec.slots or 10**9):
                raise NoResourceAvailableError(
                    f"pipelined region {sorted(region)} needs {graph.slots_needed(region)} slots, the cluster has "
                    f"{spec.slots}")
        self.schedule()

    def _end_finished_sources(self, checkpoint: CompletedCheckpoint) -> None:
        """FLIP-147: a source subtask that had sent
        EndOfData when the checkpoint was triggered is restored as finished; every task consumes
        its channels (replayed channel state first) before anything else."""
        ended = [i for i, done in enumerate(checkpoint.sources_ended or ()) if done]
        if not ended:
            return
        for i in ended:
            self.sources[i].end()
        subtasks = self.graph.source_subtasks()
        for task in self.tasks:
            channels = [task.channel_index[subtasks[i]] for i in ended if subtasks[i] in task.channel_index]
            if channels:
                task.forced = deque(channel for channel in channels for _ in task.inputs[channel])
                task.source_done = self._source_done(task)

    def _source_done(self, task: ChainTask) -> Callable[[int], bool]:
        """Whether nothing more comes on ``task``'s channel (the channels from sources only)."""
        index = {task.channel_index[c]: i for i, c in enumerate(self.graph.source_subtasks()) if c in task.channel_index}

        def done(channel: int) -> bool:
            source = index.get(channel)
            return source is not None and (self.sources[source].ended or self.sources[source].exhausted)
        return done

    # -- FLIP-331 scheduling -----------------------------------------------------------------------
    def _region_tasks(self, index: int) -> list[ChainTask]:
        region = self.graph.regions()[index]
        return [t for t in self.tasks if t.name in region]

    def _region_finished(self, index: int) -> bool:
        region = self.graph.regions()[index]
        sources = [s for s in self.sources if self.graph.chain_of[self.graph.source_subtasks()[s.index][0]] in region]
        return all(t.input_ended for t in self._region_tasks(index)) and all(s.ended or s.exhausted for s in sources)

    def schedule(self) -> None:
        """Deploys, in order, every region whose blocking inputs are finished and whose slots are
        free; a region's slots are freed when all its tasks finished."""
        graph, free = self.graph, self.spec.slots or 10**9
        regions = graph.regions()
        for index in self.deployed:
            if not self._region_finished(index):
                free -= graph.slots_needed(regions[index])
        for index, region in enumerate(regions):
            if index in self.deployed:
                continue
            producers = {graph.chain_of[e.source] for e in graph.edges if graph.is_blocking(e)
                         and graph.chain_of[e.target] in region}
            if not all(t.input_ended for t in self.tasks if t.name in producers):
                continue
            needed = graph.slots_needed(region)
            if needed > free:
                continue
            free -= needed
            self.deployed.add(index)
            self.deploy_log.append((self.attempt, self.now, sorted(region)))
            for task in self._region_tasks(index):
                task.deployed = True
            for source in self.sources:
                if graph.chain_of[graph.source_subtasks()[source.index][0]] in region:
                    source.deployed = True

    def _task_finished(self, task: ChainTask) -> None:
        self.finish_log.append((self.attempt, task.name, task.vertex_subtask, self.now))
        self.coordinator.task_finished(task)
        if task.terminate_on_finish and not self.coordinator.pending and not any(op.pending() for op in task.operators):
            task.terminate()
        self.schedule()

    def blocking_phase(self) -> bool:
        """A blocking-output chain is unfinished, or a blocking result is not fully read."""
        blocking = self.blocking
        if not blocking:
            return False
        if any(not t.input_ended for t in self.tasks if t.name in blocking):
            return True
        return any(not t.channels_ended[t.channel_index[c]] for t in self.tasks for c in t.channel_ids
                   if self.graph.chain_of[c[0]] in blocking)

    def _create_task(self, chain, s: int) -> ChainTask:
        spec, task_id = self.spec, len(self.tasks)
        kgr = compute_key_group_range_for_operator_index(spec.max_parallelism, chain.parallelism, s)
        channels = self._channels(chain.head, s)
        # input-driven clocks resume where the checkpoint's tasks owning the same key groups were,
        # plus the time the restart took
        clock = self.clock if spec.processing_time == "steps" else ManualProcessingTimeService(
            start=max((snap.processing_time for snap in self.restoring.task_snapshots if snap.vertex == chain.name
                       and snap.key_group_range.get_intersection(kgr).get_number_of_key_groups()),
                      default=0) + spec.restore_clock_gap if self.restoring is not None else 0)
        task = ChainTask(chain.name, task_id, s, self.attempt, kgr, channels, TimedMailboxTimers(clock, self, task_id),
                         spec.config, self._acknowledger(self.attempt))
        if spec.processing_time == "input":
            task.advance_processing_time = input_clock(clock, task)
            task.processing_time_service.fire_due_at_once = True
        task.channel_index = {c: i for i, c in enumerate(channels)}
        if spec.forced_lineage is not None and (chain.name, s) in spec.forced_lineage:
            task.forced_records = deque(spec.forced_lineage[(chain.name, s)])
        if spec.forced_elements is not None and (chain.name, s) in spec.forced_elements:
            task.forced = deque(spec.forced_elements[(chain.name, s)])
            task.source_done = self._source_done(task)
        task.vertex_parallelism = chain.parallelism
        task.keeps_history = spec.histories
        for index, name in enumerate(chain.operators):
            task.operators.append(self._operator(name, index, task))
        if spec.timer_tie_order != "insertion":  # before restore and open() create the timer services
            for op in task.keyed:
                op.operator.time_service_manager.set_tie_order(spec.timer_tie_order)
        task.on_finished = self._task_finished
        task.terminate_on_finish = chain.name in self.graph.blocking_chains()
        task.deployed = False  # until the scheduler deploys its region
        for op in task.operators:
            if isinstance(op, KeyedOperator):
                op.watermark_processor.should_interrupt = interrupt_check(self.rng, spec.async_mail_rate,
                                                                          task.executor, op.executor)
            processor = getattr(op, "watermark_processor", None)
            if processor is not None:
                processor.scheduled_count = self.scheduled_continuations
            self.output_logs.append((self.attempt, f"{op.name}[{s}]", op.log))
        self.tasks.append(task)
        self.all_tasks.append(task)
        self.task_of[(chain.name, s)] = task
        return task

    def _operator(self, name: str, index: int, task: ChainTask):
        node, spec = self.graph.by_name[name], self.spec
        broadcast = self.graph.has_broadcast_input(name)
        if node.kind == "keyed_process":
            keyed = KeyedBroadcastOperator if broadcast else KeyedOperator
            return keyed(name, index, task, spec.functions[node.function](), spec.max_parallelism,
                         node.parallelism, spec.watermark_mode)
        if node.kind in ("map", "filter", "flat_map"):
            return StatelessOperator(name, index, task, spec.functions[node.function])
        if node.kind == "process":
            return (BroadcastProcessOperator if broadcast else ProcessOperator)(name, index, task,
                                                                               spec.functions[node.function]())
        if node.kind == "sink":
            return SinkOperator(name, index, task, self.external)
        if node.kind == "sink_writer":
            return SinkWriter(name, index, task)
        return SinkCommitter(name, index, task, self.external)

    def _wire(self, task: ChainTask) -> None:
        ops = {op.name: op for op in task.operators}
        network = []
        for op in task.operators:
            routed = self.graph.by_name[op.name].route_side_outputs
            for edge in self.graph.outputs(op.name):
                if self.graph.is_chained(edge):
                    output = chained_output(ops[edge.target])
                else:
                    if not self.graph.is_blocking(edge):  # a blocking result is not back-pressured
                        network.append(edge)
                    output = network_output(self, op.name, task.vertex_subtask, edge)
                    task.network_outputs.append(output)
                op.outputs.append(routed_output(output, edge.tag) if routed else output)
        task.output_blocked = self._output_blocked(task, network)

    def _restore(self, checkpoint: CompletedCheckpoint) -> None:
        """Keyed state by key group; other operator state by old subtask modulo the new
        parallelism (nothing dropped); then the in-flight data of unaligned checkpoints."""
        same_layout, spec = checkpoint.parallelism == self.layout(), self.spec
        for chain in self.graph.chains:
            snapshots = [snap for snap in checkpoint.task_snapshots if snap.vertex == chain.name]
            for s in range(chain.parallelism if snapshots else 0):
                task = self.task_of[(chain.name, s)]
                task.restore_operators(snapshots)
                own = next((snap for snap in snapshots if snap.vertex_subtask == s), None)
                task.inherited_records = list(own.lineage) if same_layout and own is not None and \
                    own.lineage is not None else None
                task.inherited = list(own.element_lineage) if same_layout and own is not None and \
                    own.element_lineage is not None else None
                owned = [snap for snap in snapshots
                         if snap.key_group_range.get_intersection(task.key_group_range).get_number_of_key_groups()]
                if spec.restore_watermarks and owned:  # the counterfactual (never Flink): see JobSpec
                    task.restored_watermark = min(snap.watermark for snap in owned)
        self._replay_in_flight(checkpoint.task_snapshots, same_layout)

    def _replay_in_flight(self, snapshots: list, same_layout: bool) -> None:
        """The in-flight data of an unaligned checkpoint, every task snapshot's; after a rescale, then
        each old channel's safe watermark (:meth:`_replay_safe_watermarks`)."""
        self._reached: dict[tuple, list[int]] = {}
        for snapshot in snapshots:
            self._replay_channel_state(snapshot, same_layout)
        if not same_layout:
            self._replay_safe_watermarks(snapshots)

    def _replay_channel_state(self, snapshot, same_layout: bool) -> None:
        """In-flight data of an unaligned checkpoint is delivered before anything sent later: on
        its own channel when nothing was rescaled, else records routed again (a watermark counts
        towards its old channel's safe watermark; a processing-time advance is dropped: the
        restored clocks and the sources move time on). An EndOfData in flight is not: the restored
        upstream (a source at its end offset, a task finishing again) sends its own."""
        chain = next(c for c in self.graph.chains if c.name == snapshot.vertex)
        last: dict[tuple, int] = {}
        for channel, element in snapshot.channel_state:
            sender, u = snapshot.channels[channel]
            if isinstance(element, EndOfData):
                continue  # the restored upstream ends its output again
            if same_layout:
                task = self.task_of[(chain.name, snapshot.vertex_subtask)]
                task.receive(task.channel_index[(sender, u)], element)
                continue
            if isinstance(element, Watermark):
                last[(sender, u)] = max(element.timestamp, last.get((sender, u), element.timestamp))
                continue
            if not isinstance(element, StreamRecord):
                continue
            edge = next(e for e in self.graph.inputs(chain.head) if e.source == sender)
            if edge.partitioning == "broadcast":  # each subtask had its own copy: it stays with that subtask
                if snapshot.vertex_subtask < chain.parallelism:
                    task = self.task_of[(chain.name, snapshot.vertex_subtask)]
                    task.receive(task.channel_index[(sender, u % self.parallelism_of(sender))], element)
                continue
            if edge.partitioning == "forward" and self.graph.by_name[chain.head].kind == "keyed_process":
                index = self._owner(element, chain.parallelism)  # a keyed stream read as such: by key group
                task = self.task_of[(chain.name, index)]
                task.receive(task.channel_index[(sender, index)], element)
                continue
            now = snapshot.vertex_subtask % chain.parallelism if edge.partitioning == "forward" \
                else u % self.parallelism_of(sender)
            for task in self._targets(edge, now, element):
                task.receive(task.channel_index[(sender, now)], element)
        if not same_layout:  # each old buffer of a channel is a virtual channel of the new one it merges into
            for sender, u in {tuple(c) for c in snapshot.channels}:
                edge = next((e for e in self.graph.inputs(chain.head) if e.source == sender), None)
                if edge is None or edge.partitioning in ("forward", "broadcast"):
                    continue  # not merged across old subtasks
                merged = self._reached.setdefault((chain.name, sender, u % self.parallelism_of(sender)), [])
                merged.append(last.get((sender, u)))  # None: that buffer had no watermark

    def _replay_safe_watermarks(self, snapshots: list) -> None:
        """After a rescale the old buffers of one channel (each old receiver's, from each old sender
        subtask that maps to the new one) merge; Flink keeps them apart as virtual channels and
        forwards the smallest watermark of them (``DemultiplexingRecordDeserializer``). A channel
        gets, after its replayed records, the smallest watermark of its old buffers when every one of
        them had one, so that no replayed record becomes late; else the next watermark from upstream
        supersedes. Forward and broadcast edges keep no replayed watermark: their channels are not
        merged across old subtasks."""
        for (name, sender, now), reached in self._reached.items():
            if not reached or None in reached:
                continue
            chain = next(c for c in self.graph.chains if c.name == name)
            for s in range(chain.parallelism):
                task = self.task_of[(name, s)]
                if (sender, now) in task.channel_index:
                    task.receive(task.channel_index[(sender, now)], Watermark(min(reached)))

    def _acknowledger(self, attempt: int):
        def acknowledge(checkpoint_id: int, snapshot) -> None:
            chain = next((c for c in self.graph.chains if c.name == snapshot.vertex), None)
            if chain is not None:  # the rebalance counters this task's operators had at the barrier
                snapshot.round_robin = {key: n for key, n in self.round_robin.items()
                                        if key[1] == snapshot.vertex_subtask and key[0].source in chain.operators}
            self.coordinator.acknowledge(attempt, checkpoint_id, snapshot)
        return acknowledge

    # -- failover --------------------------------------------------------------------------------
    def failover(self, failed_subtask: int, reason: str, new_parallelism: int | None = None,
                 operator: str | None = None) -> None:
        """Restarts every task from the latest completed checkpoint; a rescale changes the
        parallelism of ``operator``'s chain (and its forward group), or of every chain."""
        for task in self.tasks:
            task.fail()
        self.coordinator.abort_pending()
        self.coordinator.stop_savepoint = None
        self.failovers += 1
        self.attempt += 1
        if new_parallelism is not None:
            chains = self.graph.forward_group(self.graph.chain_of[operator]) if operator else \
                {c.name for c in self.graph.chains if self.graph.by_name[c.head].kind != "source"}
            # a source's subtasks keep their number; so do the chains it feeds forward (a collection dealt over
            # the subtasks of a watermark generator, certify_job_graph: the generator keeps its parallelism)
            fed = {self.graph.chain_of[e.target] for e in self.graph.edges
                   if e.partitioning == "forward" and self.graph.by_name[e.source].kind == "source"}
            chains -= {c for f in fed for c in self.graph.forward_group(f)}
            self.graph = self.graph.with_parallelism(chains, new_parallelism)
        latest = self.coordinator.latest()
        self.events.append(("failover", reason, failed_subtask, latest.checkpoint_id if latest else None,
                            self.layout()))
        self._deploy(latest)

    def record_lineage(self) -> dict | None:
        """Per (chain, subtask) of the current attempt, its record lineage; None when a rescale
        merged tasks' inputs."""
        lineage = {(t.name, t.vertex_subtask): t.record_lineage() for t in self.tasks}
        return None if any(v is None for v in lineage.values()) else lineage

    def timer_mail_delays(self) -> list[int]:
        """How long each processing-time timer's mail waited: run, or never run by a task that did
        not fail (a failed task's mail is dropped with it)."""
        return self.timer_delays + [task.steps - put_at for task, put_at in self.timer_mail_waiting.values()
                                    if task.state != task.FAILED]

    @property
    def done(self) -> bool:
        return all(t.state == t.TERMINATED for t in self.tasks)

    def advance_clock(self, now: int) -> None:
        self.now = now
        self.clock.advance_to(now)

