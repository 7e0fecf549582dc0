package org.streamproof.harness;

import java.io.File;
import java.io.InputStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.concurrent.ComponentMainThreadExecutor;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.executiongraph.ExecutionGraphID;
import org.apache.flink.runtime.executiongraph.TaskInformation;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.messages.Acknowledge;
import org.apache.flink.runtime.metrics.groups.JobManagerJobMetricGroup;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.operators.coordination.AcknowledgeCheckpointEvent;
import org.apache.flink.runtime.operators.coordination.CoordinatorStore;
import org.apache.flink.runtime.operators.coordination.CoordinatorStoreImpl;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinatorHolder;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.apache.flink.runtime.operators.coordination.TaskNotRunningException;
import org.apache.flink.runtime.scheduler.GlobalFailureHandler;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.util.FlinkException;
import org.apache.flink.util.SerializedValue;

/**
 * The {@code valve} family on Apache Flink's own classes: one real
 * {@link OperatorCoordinatorHolder} (with its real {@code SubtaskGatewayImpl}s), a recording
 * coordinator, scripted subtasks and RPCs, the JobManager main thread run inline. Each step maps
 * onto holder calls exactly as {@code impl/coordinator_harness.py} does for the Python port, and the
 * observations come out in the format of {@code shared/vectors/flink_valve_traces.json}.
 *
 * <p>Entry point for the conformance kit: {@link #run(JsonNode)} (one scenario, its {@code
 * steps}; {@code params.protocol} must be {@code flink-2.3} or absent, else {@link Util.Unsupported}:
 * this harness drives Flink, not the Python-only protocols). For a standalone run:
 * {@code java -cp <classes>:<flink lib>/* org.streamproof.harness.ValveHarness scenario.json}
 * (or the scenario on stdin) prints the observed list as JSON.
 *
 * <p>What the environment does, as a JobManager would:
 *
 * <ul>
 *   <li>the main thread is one FIFO queue: work submitted while a task runs waits its turn, work
 *       submitted from outside runs at once (with what it queued) before {@code execute} returns;
 *       an exception escaping a task is an {@code error} event (Flink's RPC endpoint logs it and
 *       goes on);
 *   <li>attempts run as soon as they are deployed; an RPC to an attempt that no longer runs is
 *       refused ({@code deliver_refused}, {@link TaskNotRunningException}); {@code rpc} sets how the
 *       following RPCs to a subtask complete: {@code ack} at once, {@code pending} until {@code
 *       rpc_ack_all} / {@code rpc_fail_all}, {@code lost} (failed at once, never arrives);
 *   <li>{@code triggerTaskFailover} is recorded ({@code task_failover}) and the attempt is marked:
 *       a subtask whose failover was requested fails before it acknowledges anything again (an
 *       {@code ack} or a subtask event from it, or {@code rpc_ack_all} with RPCs to it pending,
 *       first fails that attempt: {@code executionAttemptFailed}, its pending RPCs fail, and the
 *       ack / event is refused with an {@code error}). Realistic scenarios fail such a subtask
 *       right away ({@code fail_subtask}), so this only shows on the others;
 *   <li>{@code reset} deploys a new attempt of every failed subtask, then {@code resetToCheckpoint};
 *       {@code restart_subtask} fails the current attempt if it still runs, deploys a new one, then
 *       {@code subtaskReset}.
 * </ul>
 *
 * <p>The holder is built with {@code OperatorCoordinatorHolder.create(...)} (package-private, the
 * factory Flink's own OperatorCoordinatorHolderTest uses) through reflection;
 * {@code SubtaskAccess} is package-private, so the scripted accesses are dynamic proxies. Flink 2.3
 * only registers gateways (and so only closes them) when a {@link CheckpointCoordinator} is given
 * to {@code lazyInitialize}; the holder only checks it is there, so an instance is allocated
 * without running its constructor.
 */
public final class ValveHarness {

    /** The only protocol this harness can drive: the one Flink ships. */
    public static final String PROTOCOL = "flink-2.3";

    private static final String COORDINATION = "org.apache.flink.runtime.operators.coordination.";

    /**
     * System property {@value}: {@code false} turns off the JobManager rule "a subtask whose
     * failover was requested fails before it acknowledges anything again" (the attempt then goes on
     * as the Python harness lets it); only for comparing with that harness on unrealistic scenarios.
     */
    public static final String FAILOVER_RULE_PROPERTY = "streamproof.valve.failoverFailsTask";

    private ValveHarness() {}

    // ------------------------------------------------------------------------------- entry points

    /** Runs one valve scenario (a JSON object with {@code steps}); returns its observations. */
    public static List<Map<String, Object>> run(JsonNode scenario) throws Exception {
        checkParams(scenario.get("params"));
        JsonNode steps = scenario.get("steps");
        if (steps == null || !steps.isArray()) {
            throw new IllegalArgumentException("a valve scenario needs a 'steps' array");
        }
        List<Map<String, Object>> trace = new ArrayList<>();
        Run[] current = new Run[1];
        ValveFatalGuard.begin(t -> {
            if (current[0] != null) {
                current[0].error(t, true);
            }
        });
        try {
            int index = 0;
            for (JsonNode step : steps) {
                String op = text(step, "op");
                if ("new_holder".equals(op)) {
                    current[0] = new Run(trace, intField(step, "parallelism"));
                } else if (current[0] == null) {
                    throw new IllegalArgumentException(
                            "step " + index + ": the first step of a valve scenario is new_holder, got " + op);
                } else {
                    current[0].apply(op, step);
                }
                index++;
            }
        } finally {
            ValveFatalGuard.end();
        }
        return trace;
    }

    /**
     * Standalone: {@code ValveHarness FILE} (or the scenario on stdin) prints the observed list of
     * one scenario as JSON; {@code ValveHarness --lines} reads scenarios as JSON Lines on stdin and
     * prints, per line, {@code {"observed": [...]}} or {@code {"error": "Type: message"}}.
     */
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        if (args.length > 0 && "--lines".equals(args[0])) {
            java.io.BufferedReader in = new java.io.BufferedReader(
                    new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (line.trim().isEmpty()) {
                    continue;
                }
                Map<String, Object> out = new LinkedHashMap<>();
                try {
                    out.put("observed", run(mapper.readTree(line)));
                } catch (Exception e) {
                    Throwable cause = unwrap(e);
                    out.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
                }
                System.out.println(mapper.writeValueAsString(out));
                System.out.flush();
            }
            return;
        }
        JsonNode scenario;
        if (args.length > 0) {
            scenario = mapper.readTree(new File(args[0]));
        } else {
            try (InputStream in = System.in) {
                scenario = mapper.readTree(in);
            }
        }
        List<Map<String, Object>> observed = run(scenario);
        System.out.println(mapper.writeValueAsString(observed));
        System.out.flush();
    }

    private static void checkParams(JsonNode params) {
        if (params == null || params.isNull()) {
            return;
        }
        if (!params.isObject()) {
            throw new IllegalArgumentException("valve 'params' must be an object");
        }
        Iterator<String> names = params.fieldNames();
        while (names.hasNext()) {
            String name = names.next();
            if (!"protocol".equals(name)) {
                throw new IllegalArgumentException("valve params: only 'protocol' is allowed, got '" + name + "'");
            }
        }
        JsonNode protocol = params.get("protocol");
        if (protocol != null && !protocol.isNull() && !PROTOCOL.equals(protocol.asText())) {
            throw new Util.Unsupported(
                    "valve params.protocol '" + protocol.asText() + "': the Flink harness drives Flink's own "
                            + "OperatorCoordinatorHolder, i.e. protocol " + PROTOCOL
                            + " only (legacy and streamproof exist only in the Python implementation)");
        }
    }

    // ------------------------------------------------------------------------------ one holder

    /** One holder with its scripted subtasks and coordinator; one method per step. */
    private static final class Run {
        final List<Map<String, Object>> trace;
        final int parallelism;
        final int[] attempts;
        final boolean[] running;
        final String[] rpcMode;
        /** per subtask: the attempt whose failover was requested, or -1 */
        final int[] failoverRequested;
        final List<PendingRpc> pending = new ArrayList<>();
        final MainThread mainThread;
        final RecordingCoordinator coordinator;
        final OperatorCoordinatorHolder holder;
        final Map<Long, CompletableFuture<byte[]>> results = new HashMap<>();

        Run(List<Map<String, Object>> trace, int parallelism) throws Exception {
            if (parallelism < 1) {
                throw new IllegalArgumentException("new_holder: parallelism must be >= 1, got " + parallelism);
            }
            this.trace = trace;
            this.parallelism = parallelism;
            this.attempts = new int[parallelism];
            this.running = new boolean[parallelism];
            this.rpcMode = new String[parallelism];
            this.failoverRequested = new int[parallelism];
            for (int i = 0; i < parallelism; i++) {
                running[i] = true;
                rpcMode[i] = "ack";
                failoverRequested[i] = -1;
            }
            this.mainThread = new MainThread(Thread.currentThread(), t -> error(t, false));
            this.coordinator = new RecordingCoordinator(this);
            this.holder = createHolder(coordinator, accessFactory(), parallelism);
            GlobalFailureHandler globalFailureHandler = this::globalFailure;
            onMainThread(() -> holder.lazyInitialize(globalFailureHandler, mainThread, checkpointCoordinatorStandIn()));
            onMainThread(holder::start);
        }

        // -- reporting ----------------------------------------------------------------------
        void record(String event, Object... keyValues) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("event", event);
            for (int i = 0; i < keyValues.length; i += 2) {
                e.put((String) keyValues[i], keyValues[i + 1]);
            }
            trace.add(e);
        }

        void error(Throwable t, boolean fatal) {
            Throwable cause = unwrap(t);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("event", "error");
            e.put("text", cause.getClass().getSimpleName());
            e.put("message", String.valueOf(cause.getMessage()));
            if (fatal) {
                e.put("fatal", true);
            }
            trace.add(e);
        }

        void globalFailure(Throwable t) {
            record("global_failure", "message", String.valueOf(t.getMessage()));
        }

        /** A call from outside the main thread that may throw (the vectors' {@code error}). */
        void call(Action action) {
            try {
                action.run();
            } catch (Exception e) {
                error(e, false);
            }
        }

        /** Work for the JobManager's main thread (runs now, or after what is queued). */
        void onMainThread(Action action) {
            mainThread.execute(() -> {
                try {
                    action.run();
                } catch (Exception e) {
                    error(e, false);
                }
            });
        }

        // -- the scripted tasks ---------------------------------------------------------------
        boolean isRunning(int subtask, int attempt) {
            return running[subtask] && attempts[subtask] == attempt;
        }

        CompletableFuture<Acknowledge> rpc(int subtask, int attempt, SerializedValue<OperatorEvent> serialized)
                throws Exception {
            OperatorEvent event = serialized.deserializeValue(ValveHarness.class.getClassLoader());
            Object value = event instanceof ValveEvent ? (Object) ((ValveEvent) event).value : event.toString();
            if (!isRunning(subtask, attempt)) {
                record("deliver_refused", "subtask", subtask, "attempt", attempt, "value", value);
                return failed(notRunning(subtask, attempt));
            }
            String mode = rpcMode[subtask];
            if ("lost".equals(mode)) {
                record("lost", "subtask", subtask, "attempt", attempt, "value", value);
                return failed(new FlinkException("RPC lost"));
            }
            record("deliver", "subtask", subtask, "attempt", attempt, "value", value);
            if ("ack".equals(mode)) {
                return CompletableFuture.completedFuture(Acknowledge.get());
            }
            CompletableFuture<Acknowledge> future = new CompletableFuture<>();
            pending.add(new PendingRpc(subtask, attempt, future));
            return future;
        }

        void taskFailoverRequested(int subtask, int attempt) {
            record("task_failover", "subtask", subtask, "attempt", attempt);
            if (isRunning(subtask, attempt)
                    && !"false".equals(System.getProperty(FAILOVER_RULE_PROPERTY))) {
                failoverRequested[subtask] = attempt;
            }
        }

        /** A real JobManager fails an attempt whose failover it requested before that attempt
         * acknowledges anything again. */
        void failIfFailoverRequested(int subtask) {
            int attempt = attempts[subtask];
            if (running[subtask] && failoverRequested[subtask] == attempt) {
                failSubtask(subtask);
            }
        }

        Object accessFactory() {
            Class<?> factory = flinkClass("SubtaskAccess$SubtaskAccessFactory");
            InvocationHandler handler = (proxy, method, args) -> {
                switch (method.getName()) {
                    case "getAccessesForSubtask":
                        return Collections.singletonList(access((Integer) args[0], attempts[(Integer) args[0]]));
                    case "getAccessForAttempt":
                        return access((Integer) args[0], (Integer) args[1]);
                    default:
                        return objectMethod(proxy, method, args, "ValveSubtaskAccessFactory");
                }
            };
            return Proxy.newProxyInstance(factory.getClassLoader(), new Class<?>[] {factory}, handler);
        }

        Object access(int subtask, int attempt) {
            Class<?> access = flinkClass("SubtaskAccess");
            ExecutionAttemptID attemptId = new ExecutionAttemptID(
                    new ExecutionGraphID(), new ExecutionVertexID(new JobVertexID(), subtask), attempt);
            String name = "valve-subtask (" + (subtask + 1) + "/" + parallelism + ")#" + attempt;
            InvocationHandler handler = (proxy, method, args) -> {
                switch (method.getName()) {
                    case "createEventSendAction": {
                        @SuppressWarnings("unchecked")
                        SerializedValue<OperatorEvent> event = (SerializedValue<OperatorEvent>) args[0];
                        Callable<CompletableFuture<Acknowledge>> send = () -> rpc(subtask, attempt, event);
                        return send;
                    }
                    case "getSubtaskIndex":
                        return subtask;
                    case "currentAttempt":
                        return attemptId;
                    case "subtaskName":
                        return name;
                    case "hasSwitchedToRunning":
                        return CompletableFuture.completedFuture(null);
                    case "isStillRunning":
                        return isRunning(subtask, attempt);
                    case "triggerTaskFailover":
                        taskFailoverRequested(subtask, attempt);
                        return null;
                    default:
                        return objectMethod(proxy, method, args, name);
                }
            };
            return Proxy.newProxyInstance(access.getClassLoader(), new Class<?>[] {access}, handler);
        }

        // -- steps ------------------------------------------------------------------------------
        void apply(String op, JsonNode step) {
            switch (op) {
                case "send":
                    send(subtask(step), intField(step, "event"));
                    break;
                case "from_subtask":
                    fromSubtask(subtask(step), intField(step, "event"));
                    break;
                case "trigger":
                    trigger(longField(step, "checkpoint"));
                    break;
                case "complete":
                    long toComplete = longField(step, "checkpoint");
                    call(() -> coordinator.complete(toComplete));
                    break;
                case "result":
                    result(longField(step, "checkpoint"));
                    break;
                case "ack":
                    ack(subtask(step), longField(step, "checkpoint"));
                    break;
                case "notify_complete":
                    holder.notifyCheckpointComplete(longField(step, "checkpoint"));
                    break;
                case "notify_aborted":
                    holder.notifyCheckpointAborted(longField(step, "checkpoint"));
                    break;
                case "abort_triggering":
                    holder.abortCurrentTriggering();
                    break;
                case "reset":
                    reset(longField(step, "checkpoint"));
                    break;
                case "fail_subtask":
                    failSubtask(subtask(step));
                    break;
                case "restart_subtask":
                    restartSubtask(subtask(step), longField(step, "checkpoint"));
                    break;
                case "rpc":
                    rpcMode(subtask(step), text(step, "mode"));
                    break;
                case "rpc_ack_all":
                    rpcAckAll();
                    break;
                case "rpc_fail_all":
                    rpcFailAll();
                    break;
                default:
                    throw new Util.Unsupported("unknown valve op '" + op + "'");
            }
        }

        int subtask(JsonNode step) {
            int subtask = intField(step, "subtask");
            if (subtask < 0 || subtask >= parallelism) {
                throw new IllegalArgumentException(
                        "subtask " + subtask + " is not below the parallelism " + parallelism);
            }
            return subtask;
        }

        void send(int subtask, int value) {
            call(() -> coordinator.send(subtask, new ValveEvent(value)));
        }

        void fromSubtask(int subtask, int value) {
            failIfFailoverRequested(subtask);
            int attempt = attempts[subtask];
            if (!isRunning(subtask, attempt)) {
                error(notRunning(subtask, attempt), false);
                return;
            }
            onMainThread(() -> holder.handleEventFromOperator(subtask, attempt, new ValveEvent(value)));
        }

        void ack(int subtask, long checkpoint) {
            failIfFailoverRequested(subtask);
            int attempt = attempts[subtask];
            if (!isRunning(subtask, attempt)) {
                error(notRunning(subtask, attempt), false);
                return;
            }
            AcknowledgeCheckpointEvent event = new AcknowledgeCheckpointEvent(checkpoint);
            onMainThread(() -> holder.handleEventFromOperator(subtask, attempt, event));
        }

        void trigger(long checkpoint) {
            CompletableFuture<byte[]> result = new CompletableFuture<>();
            results.put(checkpoint, result);
            holder.checkpointCoordinator(checkpoint, result);
        }

        void result(long checkpoint) {
            CompletableFuture<byte[]> future = results.get(checkpoint);
            if (future == null) {
                error(new IllegalStateException("checkpoint " + checkpoint + " was never triggered"), false);
                return;
            }
            String state = !future.isDone() ? "pending" : future.isCompletedExceptionally() ? "failed" : "done";
            record("result", "checkpoint", checkpoint, "state", state);
        }

        void reset(long checkpoint) {
            for (int i = 0; i < parallelism; i++) {
                if (!running[i]) {
                    deployNewAttempt(i);
                }
                failoverRequested[i] = -1;
            }
            onMainThread(() -> holder.resetToCheckpoint(checkpoint, null));
        }

        void failSubtask(int subtask) {
            int attempt = attempts[subtask];
            running[subtask] = false;
            if (failoverRequested[subtask] == attempt) {
                failoverRequested[subtask] = -1;
            }
            onMainThread(() -> holder.executionAttemptFailed(subtask, attempt, null));
        }

        void restartSubtask(int subtask, long checkpoint) {
            if (running[subtask]) {
                failSubtask(subtask);
            }
            deployNewAttempt(subtask);
            onMainThread(() -> holder.subtaskReset(subtask, checkpoint));
        }

        void deployNewAttempt(int subtask) {
            attempts[subtask] += 1;
            running[subtask] = true;
            failoverRequested[subtask] = -1;
        }

        void rpcMode(int subtask, String mode) {
            if (!"ack".equals(mode) && !"pending".equals(mode) && !"lost".equals(mode)) {
                throw new IllegalArgumentException("rpc mode must be ack, pending or lost, got '" + mode + "'");
            }
            rpcMode[subtask] = mode;
        }

        void rpcAckAll() {
            List<PendingRpc> all = new ArrayList<>(pending);
            pending.clear();
            // a subtask whose failover was requested fails before it acknowledges anything again
            java.util.Set<String> failedNow = new java.util.HashSet<>();
            for (PendingRpc rpc : all) {
                if (isRunning(rpc.subtask, rpc.attempt) && failoverRequested[rpc.subtask] == rpc.attempt) {
                    failSubtask(rpc.subtask);
                    failedNow.add(rpc.subtask + "#" + rpc.attempt);
                }
            }
            for (PendingRpc rpc : all) {
                if (failedNow.contains(rpc.subtask + "#" + rpc.attempt)) {
                    rpc.future.completeExceptionally(notRunning(rpc.subtask, rpc.attempt));
                } else {
                    rpc.future.complete(Acknowledge.get());
                }
            }
        }

        void rpcFailAll() {
            List<PendingRpc> all = new ArrayList<>(pending);
            pending.clear();
            for (PendingRpc rpc : all) {
                rpc.future.completeExceptionally(new FlinkException("RPC failed"));
            }
        }
    }

    // --------------------------------------------------------------------- coordinator and events

    /** The coordinator of holder-level scenarios: it sends what the scenario says, completes its
     * checkpoint future when the scenario says, and records what reaches it. */
    private static final class RecordingCoordinator implements OperatorCoordinator {
        private final Run run;
        private final Map<Integer, SubtaskGateway> gateways = new HashMap<>();
        private final Map<Long, CompletableFuture<byte[]>> checkpoints = new HashMap<>();

        RecordingCoordinator(Run run) {
            this.run = run;
        }

        void send(int subtask, OperatorEvent event) {
            SubtaskGateway gateway = gateways.get(subtask);
            if (gateway == null) {
                throw new IllegalStateException("subtask " + subtask + " has no gateway: it never became ready");
            }
            gateway.sendEvent(event);
        }

        void complete(long checkpointId) {
            CompletableFuture<byte[]> future = checkpoints.get(checkpointId);
            if (future == null) {
                throw new IllegalStateException("no coordinator checkpoint " + checkpointId + " was triggered");
            }
            future.complete(("coordinator state for " + checkpointId).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        @Override
        public void start() {}

        @Override
        public void close() {}

        @Override
        public void handleEventFromOperator(int subtask, int attemptNumber, OperatorEvent event) {
            run.record("coordinator_received", "subtask", subtask, "attempt", attemptNumber, "value", event.toString());
        }

        @Override
        public void checkpointCoordinator(long checkpointId, CompletableFuture<byte[]> resultFuture) {
            checkpoints.put(checkpointId, resultFuture);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {}

        @Override
        public void resetToCheckpoint(long checkpointId, byte[] checkpointData) {
            run.record("coordinator_reset", "checkpoint", checkpointId);
        }

        @Override
        public void subtaskReset(int subtask, long checkpointId) {
            run.record("coordinator_subtask_reset", "subtask", subtask, "checkpoint", checkpointId);
        }

        @Override
        public void executionAttemptFailed(int subtask, int attemptNumber, Throwable reason) {}

        @Override
        public void executionAttemptReady(int subtask, int attemptNumber, SubtaskGateway gateway) {
            gateways.put(subtask, gateway);
        }
    }

    /** The scenario's events: an int; its text is what {@code coordinator_received} shows. */
    public static final class ValveEvent implements OperatorEvent {
        private static final long serialVersionUID = 1L;
        public final int value;

        public ValveEvent(int value) {
            this.value = value;
        }

        @Override
        public String toString() {
            return Integer.toString(value);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ValveEvent && ((ValveEvent) o).value == value;
        }

        @Override
        public int hashCode() {
            return value;
        }
    }

    private static final class PendingRpc {
        final int subtask;
        final int attempt;
        final CompletableFuture<Acknowledge> future;

        PendingRpc(int subtask, int attempt, CompletableFuture<Acknowledge> future) {
            this.subtask = subtask;
            this.attempt = attempt;
            this.future = future;
        }
    }

    // ------------------------------------------------------------------------------ main thread

    /** The JobManager's main thread: one FIFO queue, run inline by whoever submits from outside. */
    private static final class MainThread implements ComponentMainThreadExecutor {
        private final ArrayDeque<Runnable> queue = new ArrayDeque<>();
        private final Thread owner;
        private final java.util.function.Consumer<Throwable> uncaught;
        private boolean running;

        MainThread(Thread owner, java.util.function.Consumer<Throwable> uncaught) {
            this.owner = owner;
            this.uncaught = uncaught;
        }

        @Override
        public void execute(Runnable command) {
            queue.add(command);
            if (running) {
                return;
            }
            running = true;
            try {
                Runnable task;
                while ((task = queue.poll()) != null) {
                    try {
                        task.run();
                    } catch (VirtualMachineError e) {
                        throw e;
                    } catch (Throwable t) {
                        uncaught.accept(t);
                    }
                }
            } finally {
                running = false;
            }
        }

        @Override
        public void assertRunningInMainThread() {
            if (Thread.currentThread() != owner) {
                throw new IllegalStateException("not running in the main thread");
            }
        }

        @Override
        public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException("the valve harness has no timers");
        }

        @Override
        public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException("the valve harness has no timers");
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
            throw new UnsupportedOperationException("the valve harness has no timers");
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException("the valve harness has no timers");
        }
    }

    // ----------------------------------------------------------------------------------- helpers

    private interface Action {
        void run() throws Exception;
    }

    private static OperatorCoordinatorHolder createHolder(
            RecordingCoordinator coordinator, Object accessFactory, int parallelism) throws Exception {
        OperatorID operatorId = new OperatorID();
        OperatorCoordinator.Provider provider = new CoordinatorProvider(operatorId, coordinator);
        Class<?> factoryClass = flinkClass("SubtaskAccess$SubtaskAccessFactory");
        Method create = OperatorCoordinatorHolder.class.getDeclaredMethod(
                "create", OperatorID.class, OperatorCoordinator.Provider.class, CoordinatorStore.class,
                String.class, ClassLoader.class, int.class, int.class, factoryClass, boolean.class,
                TaskInformation.class, JobManagerJobMetricGroup.class);
        create.setAccessible(true);
        TaskInformation taskInformation = new TaskInformation(
                new JobVertexID(), "valve task", parallelism, Math.max(parallelism, 128),
                "org.apache.flink.runtime.jobgraph.tasks.AbstractInvokable", new Configuration());
        try {
            return (OperatorCoordinatorHolder) create.invoke(
                    null, operatorId, provider, new CoordinatorStoreImpl(), "valve-coordinator",
                    ValveHarness.class.getClassLoader(), parallelism, Math.max(parallelism, 128), accessFactory,
                    false, taskInformation, UnregisteredMetricGroups.createUnregisteredJobManagerJobMetricGroup());
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw e;
        }
    }

    /** Hands the one recording coordinator to the holder. */
    private static final class CoordinatorProvider implements OperatorCoordinator.Provider {
        private static final long serialVersionUID = 1L;
        private final OperatorID operatorId;
        private final transient OperatorCoordinator coordinator;

        CoordinatorProvider(OperatorID operatorId, OperatorCoordinator coordinator) {
            this.operatorId = operatorId;
            this.coordinator = coordinator;
        }

        @Override
        public OperatorID getOperatorId() {
            return operatorId;
        }

        @Override
        public OperatorCoordinator create(OperatorCoordinator.Context context) {
            return coordinator;
        }
    }

    /** The holder only checks that a CheckpointCoordinator is there (streaming mode: it then
     * registers its gateways); none of its methods is called. */
    private static CheckpointCoordinator checkpointCoordinatorStandIn() throws Exception {
        Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
        java.lang.reflect.Field field = unsafeClass.getDeclaredField("theUnsafe");
        field.setAccessible(true);
        Object unsafe = field.get(null);
        Method allocate = unsafeClass.getMethod("allocateInstance", Class.class);
        return (CheckpointCoordinator) allocate.invoke(unsafe, CheckpointCoordinator.class);
    }

    private static Class<?> flinkClass(String simpleName) {
        try {
            return Class.forName(COORDINATION + simpleName, false, OperatorCoordinatorHolder.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("Flink class " + simpleName + " not found", e);
        }
    }

    private static Object objectMethod(Object proxy, Method method, Object[] args, String name) {
        switch (method.getName()) {
            case "equals":
                return proxy == args[0];
            case "hashCode":
                return System.identityHashCode(proxy);
            case "toString":
                return name;
            default:
                throw new UnsupportedOperationException(name + "." + method.getName());
        }
    }

    private static TaskNotRunningException notRunning(int subtask, int attempt) {
        return new TaskNotRunningException("subtask " + subtask + " attempt " + attempt + " is not running");
    }

    private static <T> CompletableFuture<T> failed(Throwable t) {
        CompletableFuture<T> future = new CompletableFuture<>();
        future.completeExceptionally(t);
        return future;
    }

    private static Throwable unwrap(Throwable t) {
        while ((t instanceof InvocationTargetException || t instanceof java.util.concurrent.CompletionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static String text(JsonNode step, String field) {
        JsonNode node = step.get(field);
        if (node == null || !node.isTextual()) {
            throw new IllegalArgumentException("valve step " + step + ": field '" + field + "' must be a string");
        }
        return node.asText();
    }

    private static int intField(JsonNode step, String field) {
        JsonNode node = step.get(field);
        if (node == null || !node.canConvertToInt()) {
            throw new IllegalArgumentException("valve step " + step + ": field '" + field + "' must be an int");
        }
        return node.asInt();
    }

    private static long longField(JsonNode step, String field) {
        JsonNode node = step.get(field);
        if (node == null || !node.canConvertToLong()) {
            throw new IllegalArgumentException("valve step " + step + ": field '" + field + "' must be a long");
        }
        return node.asLong();
    }
}
