package org.streamproof.harness;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.RoundRobinOperatorStateRepartitioner;
import org.apache.flink.runtime.state.DefaultOperatorStateBackend;
import org.apache.flink.runtime.state.DefaultOperatorStateBackendBuilder;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.RunnableFuture;

/**
 * Broadcast state (operator state in BROADCAST mode) snapshotted by every old subtask and restored
 * at a new parallelism, on Flink's own classes: one {@code DefaultOperatorStateBackend} per old
 * subtask, its {@code snapshot} (synchronous, {@code MemCheckpointStreamFactory}), {@code
 * RoundRobinOperatorStateRepartitioner.INSTANCE.repartitionState} (what {@code
 * StateAssignmentOperation} runs for operator state), then one backend per new subtask built from
 * the handles the repartitioner gave it ({@code DefaultOperatorStateBackendBuilder}, as {@code
 * StreamTaskStateInitializerImpl} builds it on restore), its contents read back.
 *
 * <p>Params: {@code old_parallelism}, {@code new_parallelism}; {@code states}: the names of the
 * broadcast states ({@code MapStateDescriptor<String, Long>} with {@code StringSerializer} and
 * {@code LongSerializer}), registered on every old and new subtask ({@code
 * CoBroadcastWithNonKeyedOperator.open} registers every descriptor); optional {@code list_states}:
 * {@code [{"name": n, "mode": "split"|"union"}]}, operator list states of {@code Long} ({@code
 * getListState}: SPLIT_DISTRIBUTE, {@code getUnionListState}: UNION), registered on every subtask;
 * optional {@code unregistered}: {@code [{"subtask": i, "state": n}]}, a broadcast or list state
 * old subtask i does not register (so its snapshot has no entry of that name; an old subtask that
 * registers nothing has no handle at all, as a finished one).
 *
 * <p>Steps (on the old subtasks, before the snapshot): {@code {"op": "put", "subtask": i,
 * "state": n, "key": k, "value": v}} (broadcast state), {@code {"op": "add", "subtask": i,
 * "state": n, "value": v}} (list state). Observations, per new subtask j in order: {@code
 * {"event": "restored", "subtask": j, "state": n, "entries": {k: v, ...}}} per broadcast state
 * (keys sorted), then {@code {"event": "restored_list", "subtask": j, "state": n, "values": [...]}}
 * per list state (in the order the restored state iterates).
 */
public final class BroadcastRestoreHarness {
    private BroadcastRestoreHarness() {}

    private static final int MAX_STATE_SIZE = 16 * 1024 * 1024;

    public static List<Map<String, Object>> run(JsonNode scenario) throws Exception {
        JsonNode params = scenario.path("params");
        int oldPar = Util.intValue(params, "old_parallelism");
        int newPar = Util.intValue(params, "new_parallelism");
        if (oldPar < 1 || newPar < 1) {
            throw new Util.Unsupported("parallelisms must be at least 1");
        }
        List<String> states = new ArrayList<>();
        for (JsonNode n : params.path("states")) {
            states.add(n.asText());
        }
        Map<String, Boolean> lists = new LinkedHashMap<>(); // name -> union?
        for (JsonNode n : params.path("list_states")) {
            String mode = Util.text(n, "mode");
            if (!mode.equals("split") && !mode.equals("union")) {
                throw new Util.Unsupported("list_states: mode must be split or union, not " + mode);
            }
            lists.put(Util.text(n, "name"), mode.equals("union"));
        }
        Set<String> unregistered = new HashSet<>();
        for (JsonNode n : params.path("unregistered")) {
            unregistered.add(Util.intValue(n, "subtask") + "/" + Util.text(n, "state"));
        }

        // the old subtasks: register, apply the steps, snapshot
        List<DefaultOperatorStateBackend> old = new ArrayList<>();
        for (int i = 0; i < oldPar; i++) {
            DefaultOperatorStateBackend backend = backend(List.of());
            for (String name : states) {
                if (!unregistered.contains(i + "/" + name)) {
                    backend.getBroadcastState(descriptor(name));
                }
            }
            for (Map.Entry<String, Boolean> e : lists.entrySet()) {
                if (!unregistered.contains(i + "/" + e.getKey())) {
                    listState(backend, e.getKey(), e.getValue());
                }
            }
            old.add(backend);
        }
        for (JsonNode step : Util.steps(scenario)) {
            String op = Util.text(step, "op");
            int subtask = Util.intValue(step, "subtask");
            if (subtask < 0 || subtask >= oldPar) {
                throw new Util.Unsupported("step " + op + ": no old subtask " + subtask);
            }
            String name = Util.text(step, "state");
            if (unregistered.contains(subtask + "/" + name)) {
                throw new Util.Unsupported("step " + op + ": subtask " + subtask + " does not register " + name);
            }
            DefaultOperatorStateBackend backend = old.get(subtask);
            if (op.equals("put")) {
                if (!states.contains(name)) {
                    throw new Util.Unsupported("put: no broadcast state " + name);
                }
                backend.getBroadcastState(descriptor(name)).put(Util.text(step, "key"), Util.longValue(step, "value"));
            } else if (op.equals("add")) {
                if (!lists.containsKey(name)) {
                    throw new Util.Unsupported("add: no list state " + name);
                }
                listState(backend, name, lists.get(name)).add(Util.longValue(step, "value"));
            } else {
                throw new Util.Unsupported("unknown step " + op);
            }
        }
        List<List<OperatorStateHandle>> snapshots = new ArrayList<>();
        MemCheckpointStreamFactory streams = new MemCheckpointStreamFactory(MAX_STATE_SIZE);
        for (DefaultOperatorStateBackend backend : old) {
            RunnableFuture<SnapshotResult<OperatorStateHandle>> future =
                    backend.snapshot(1L, 0L, streams, CheckpointOptions.forCheckpointWithDefaultLocation());
            future.run();
            OperatorStateHandle handle = future.get().getJobManagerOwnedSnapshot();
            List<OperatorStateHandle> handles = new ArrayList<>();
            if (handle != null) {
                handles.add(handle);
            }
            snapshots.add(handles);
            backend.close();
            backend.dispose();
        }

        // Flink's repartitioner, then the new subtasks restored from what it gave each
        List<List<OperatorStateHandle>> assigned =
                RoundRobinOperatorStateRepartitioner.INSTANCE.repartitionState(snapshots, oldPar, newPar);
        if (assigned.size() != newPar) {
            throw new IllegalStateException("the repartitioner returned " + assigned.size() + " lists for " + newPar);
        }
        List<Map<String, Object>> events = new ArrayList<>();
        for (int j = 0; j < newPar; j++) {
            DefaultOperatorStateBackend backend = backend(assigned.get(j));
            for (String name : states) {
                BroadcastState<String, Long> state = backend.getBroadcastState(descriptor(name));
                Map<String, Object> entries = new TreeMap<>();
                for (Map.Entry<String, Long> e : state.entries()) {
                    entries.put(e.getKey(), e.getValue());
                }
                events.add(Util.event("restored", "subtask", j, "state", name, "entries", entries));
            }
            for (Map.Entry<String, Boolean> e : lists.entrySet()) {
                List<Object> values = new ArrayList<>();
                Iterable<Long> got = listState(backend, e.getKey(), e.getValue()).get();
                if (got != null) {
                    for (Long v : got) {
                        values.add(v);
                    }
                }
                events.add(Util.event("restored_list", "subtask", j, "state", e.getKey(), "values", values));
            }
            backend.close();
            backend.dispose();
        }
        return events;
    }

    private static DefaultOperatorStateBackend backend(Collection<OperatorStateHandle> restore) throws Exception {
        return new DefaultOperatorStateBackendBuilder(
                        BroadcastRestoreHarness.class.getClassLoader(),
                        new ExecutionConfig(),
                        false,
                        restore,
                        new CloseableRegistry())
                .build();
    }

    private static MapStateDescriptor<String, Long> descriptor(String name) {
        return new MapStateDescriptor<>(name, StringSerializer.INSTANCE, LongSerializer.INSTANCE);
    }

    private static ListState<Long> listState(DefaultOperatorStateBackend backend, String name, boolean union)
            throws Exception {
        ListStateDescriptor<Long> d = new ListStateDescriptor<>(name, LongSerializer.INSTANCE);
        return union ? backend.getUnionListState(d) : backend.getListState(d);
    }
}
