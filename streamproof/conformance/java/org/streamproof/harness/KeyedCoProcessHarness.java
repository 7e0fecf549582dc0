package org.streamproof.harness;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.common.operators.ProcessingTimeService.ProcessingTimeCallback;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.accumulators.AccumulatorRegistry;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.externalresource.ExternalResourceInfoProvider;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.metrics.groups.TaskMetricGroup;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.query.KvStateRegistry;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.DefaultOperatorStateBackendBuilder;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupStatePartitionStreamProvider;
import org.apache.flink.runtime.state.LocalRecoveryConfig;
import org.apache.flink.runtime.state.OperatorStateBackend;
import org.apache.flink.runtime.state.StatePartitionStreamProvider;
import org.apache.flink.runtime.state.UncompressedStreamCompressionDecorator;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackendBuilder;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;
import org.apache.flink.runtime.state.metrics.SizeTrackingStateConfig;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.operators.InternalTimeServiceManager;
import org.apache.flink.streaming.api.operators.InternalTimeServiceManagerImpl;
import org.apache.flink.streaming.api.operators.KeyContext;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.StreamOperatorStateContext;
import org.apache.flink.streaming.api.operators.StreamTaskStateInitializer;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.StreamTask;
import org.apache.flink.streaming.runtime.tasks.StreamTaskCancellationContext;
import org.apache.flink.streaming.runtime.tasks.TwoInputStreamTask;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.CloseableIterable;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.apache.flink.util.SimpleUserCodeClassLoader;
import org.apache.flink.util.clock.Clock;
import org.apache.flink.util.clock.ManualClock;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

/**
 * The {@code keyed_co_process} family on Flink's own {@code KeyedCoProcessOperator}: a keyed
 * two-input operator (one heap keyed state backend and one {@code InternalTimeServiceManagerImpl}
 * shared by both inputs; its watermark combined over both inputs by {@code
 * AbstractStreamOperator.processWatermark1/2}) around the fixed {@link SumFunction} below.
 *
 * <p>No Flink test jar is used: the operator is set up and its state initialized through its own
 * {@code setup(StreamTask, StreamConfig, Output)} and {@code initializeState(StreamTaskStateInitializer)}.
 * The pieces those read are stood in for: the containing task is a {@code TwoInputStreamTask}
 * allocated without its constructor (only its {@code environment} and {@code cancelables} are
 * set, which is all {@code AbstractStreamOperator} asks of it); its {@code Environment} is a
 * proxy answering the few calls made (metric group, task/job info, class loader, configs); the
 * {@link StreamTaskStateInitializer} is this harness's, building what Flink's {@code
 * StreamTaskStateInitializerImpl} builds for a fresh heap backend: a {@code HeapKeyedStateBackend}
 * (max parallelism 128, all key groups), a {@code DefaultOperatorStateBackend} and an {@code
 * InternalTimeServiceManagerImpl} over the keyed backend's priority queues. Processing time is a
 * clock at 0 that never fires. The scenario then calls the operator as a task does: {@code
 * setKeyContextElement1/2} then {@code processElement1/2}, {@code processWatermark1/2}.
 *
 * <p>Params: {@code delay} (D, default 5). Steps: {@code {"op": "element", "input": 1|2, "value":
 * "key:amount", "ts": t|null}}, {@code {"op": "watermark", "input": 1|2, "ts": t}}. Observations,
 * in emission order: {@code {"event": "output", "value": v, "ts": t|null}} per record, {@code
 * {"event": "watermark", "ts": t}} per watermark the operator emits; {@code {"event": "error",
 * ...}} when a step throws.
 */
public final class KeyedCoProcessHarness {
    static final int MAX_PARALLELISM = 128;

    private KeyedCoProcessHarness() {}

    public static List<Map<String, Object>> run(JsonNode scenario) throws Exception {
        long delay = scenario.path("params").path("delay").asLong(5);
        List<Map<String, Object>> events = new ArrayList<>();
        KeyedCoProcessOperator<String, String, String, String> operator =
                new KeyedCoProcessOperator<>(new SumFunction(delay));
        open(operator, new EventOutput(events));
        JsonNode steps = Util.steps(scenario);
        for (int i = 0; i < steps.size(); i++) {
            JsonNode step = steps.get(i);
            String op = Util.text(step, "op");
            if (!op.equals("element") && !op.equals("watermark")) {
                throw new Util.Unsupported("unknown keyed_co_process op '" + op + "'");
            }
            int input = Util.intValue(step, "input");
            if (input != 1 && input != 2) {
                throw new Util.Unsupported("input must be 1 or 2, not " + input);
            }
            try {
                switch (op) {
                    case "element": {
                        String value = Util.text(step, "value");
                        JsonNode ts = step.get("ts");
                        StreamRecord<String> record = ts == null || ts.isNull()
                                ? new StreamRecord<>(value)
                                : new StreamRecord<>(value, Util.longValue(step, "ts"));
                        if (input == 1) {
                            operator.setKeyContextElement1(record);
                            operator.processElement1(record);
                        } else {
                            operator.setKeyContextElement2(record);
                            operator.processElement2(record);
                        }
                        break;
                    }
                    case "watermark": {
                        Watermark mark = new Watermark(Util.longValue(step, "ts"));
                        if (input == 1) {
                            operator.processWatermark1(mark);
                        } else {
                            operator.processWatermark2(mark);
                        }
                        break;
                    }
                    default:
                        throw new Util.Unsupported("unknown keyed_co_process op '" + op + "'");
                }
            } catch (Util.Unsupported e) {
                throw e;
            } catch (Exception e) {
                events.add(Util.event("error", "text", e.getClass().getSimpleName(), "step", i, "message", Util.message(e)));
            }
        }
        operator.close();
        return events;
    }

    // -- the function under test ------------------------------------------------------------------

    /**
     * Input 1 adds its amount to the key's {@code sum} and registers an event-time timer at
     * {@code ts + delay}; input 2 subtracts its amount, and with amount 0 deletes the timer at
     * {@code ts + delay}; both emit {@code "<input>:<key>:<sum>:<current watermark>"}. A timer
     * emits {@code "t:<key>:<ts>:<sum>:<current watermark>"}, and when the sum is odd and
     * {@code ts} a multiple of 3 registers one more at {@code ts + 1}.
     */
    public static final class SumFunction extends KeyedCoProcessFunction<String, String, String, String> {
        private static final long serialVersionUID = 1L;
        private final long delay;
        private transient ValueState<Long> sum;

        SumFunction(long delay) {
            this.delay = delay;
        }

        @Override
        public void open(org.apache.flink.api.common.functions.OpenContext openContext) {
            sum = getRuntimeContext().getState(new ValueStateDescriptor<>("sum", LongSerializer.INSTANCE));
        }

        private static long amount(String value) {
            return Long.parseLong(value.substring(value.indexOf(':') + 1));
        }

        private long add(long amount) throws Exception {
            Long before = sum.value();
            long now = (before == null ? 0L : before) + amount;
            sum.update(now);
            return now;
        }

        @Override
        public void processElement1(String value, Context ctx, Collector<String> out) throws Exception {
            long now = add(amount(value));
            if (ctx.timestamp() != null) {
                ctx.timerService().registerEventTimeTimer(ctx.timestamp() + delay);
            }
            out.collect("1:" + ctx.getCurrentKey() + ":" + now + ":" + ctx.timerService().currentWatermark());
        }

        @Override
        public void processElement2(String value, Context ctx, Collector<String> out) throws Exception {
            long amount = amount(value);
            long now = add(-amount);
            if (amount == 0 && ctx.timestamp() != null) {
                ctx.timerService().deleteEventTimeTimer(ctx.timestamp() + delay);
            }
            out.collect("2:" + ctx.getCurrentKey() + ":" + now + ":" + ctx.timerService().currentWatermark());
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out) throws Exception {
            Long value = sum.value();
            long now = value == null ? 0L : value;
            out.collect("t:" + ctx.getCurrentKey() + ":" + timestamp + ":" + now + ":"
                    + ctx.timerService().currentWatermark());
            if (now % 2 != 0 && timestamp % 3 == 0) {
                ctx.timerService().registerEventTimeTimer(timestamp + 1);
            }
        }
    }

    /** Both inputs' key: the part of {@code "key:amount"} before the colon. */
    public static final class KeyOf implements KeySelector<String, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public String getKey(String value) {
            return value.substring(0, value.indexOf(':'));
        }
    }

    // -- assembling the operator ------------------------------------------------------------------

    private static void open(KeyedCoProcessOperator<String, String, String, String> operator, Output<StreamRecord<String>> output)
            throws Exception {
        StreamConfig config = new StreamConfig(new Configuration());
        config.setOperatorID(new OperatorID());
        config.setOperatorName("KeyedCoProcess");
        config.setStateKeySerializer(StringSerializer.INSTANCE);
        config.setStatePartitioner(0, new KeyOf());
        config.setStatePartitioner(1, new KeyOf());
        config.serializeAllConfigs();

        StreamTask<?, ?> task = containingTask(environment());
        Method setup = org.apache.flink.streaming.api.operators.AbstractUdfStreamOperator.class
                .getDeclaredMethod("setup", StreamTask.class, StreamConfig.class, Output.class);
        setup.setAccessible(true);
        setup.invoke(operator, task, config, output);
        Method setTime = org.apache.flink.streaming.api.operators.AbstractStreamOperator.class
                .getDeclaredMethod("setProcessingTimeService", ProcessingTimeService.class);
        setTime.setAccessible(true);
        setTime.invoke(operator, new ManualProcessingTime());
        operator.initializeState(new HeapStateInitializer());
        operator.open();
    }

    /** A {@code TwoInputStreamTask} without its constructor: only what operators read of it. */
    private static StreamTask<?, ?> containingTask(Environment environment) throws Exception {
        Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
        Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        Object unsafe = theUnsafe.get(null);
        StreamTask<?, ?> task = (StreamTask<?, ?>) unsafeClass.getMethod("allocateInstance", Class.class)
                .invoke(unsafe, TwoInputStreamTask.class);
        set(task, "environment", environment);
        set(task, "cancelables", new CloseableRegistry());
        return task;
    }

    private static void set(Object target, String name, Object value) throws Exception {
        Field field = StreamTask.class.getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
    }

    /** The calls {@code AbstractStreamOperator.setup} and {@code StreamingRuntimeContext} make. */
    private static Environment environment() {
        ExecutionConfig executionConfig = new ExecutionConfig();
        Configuration jobConfiguration = new Configuration();
        Configuration taskManagerConfiguration = new Configuration();
        JobID jobId = new JobID();
        TaskMetricGroup metrics = UnregisteredMetricGroups.createUnregisteredTaskMetricGroup();
        AccumulatorRegistry accumulators = new AccumulatorRegistry(jobId, ExecutionAttemptID.randomId());
        TaskManagerRuntimeInfo tmInfo = proxy(TaskManagerRuntimeInfo.class, (p, m, a) -> {
            if (m.getName().equals("getConfiguration")) {
                return taskManagerConfiguration;
            }
            return objectMethod(p, m, a, "TaskManagerRuntimeInfo");
        });
        Map<String, Object> answers = new HashMap<>();
        answers.put("getExecutionConfig", executionConfig);
        answers.put("getJobID", jobId);
        answers.put("getJobVertexId", new JobVertexID());
        answers.put("getTaskConfiguration", new Configuration());
        answers.put("getJobConfiguration", jobConfiguration);
        answers.put("getTaskManagerInfo", tmInfo);
        answers.put("getMetricGroup", metrics);
        answers.put("getJobInfo", new JobInfoImpl(jobId, "streamproof-keyed-co-process"));
        answers.put("getTaskInfo", new TaskInfoImpl("KeyedCoProcess", MAX_PARALLELISM, 0, 1, 0));
        answers.put("getUserCodeClassLoader",
                SimpleUserCodeClassLoader.create(KeyedCoProcessHarness.class.getClassLoader()));
        answers.put("getDistributedCacheEntries", Collections.emptyMap());
        answers.put("getAccumulatorRegistry", accumulators);
        answers.put("getExternalResourceInfoProvider", ExternalResourceInfoProvider.NO_EXTERNAL_RESOURCES);
        return proxy(Environment.class, (p, m, a) -> {
            if (answers.containsKey(m.getName()) && (a == null || a.length == 0)) {
                return answers.get(m.getName());
            }
            return objectMethod(p, m, a, "Environment");
        });
    }

    @SuppressWarnings("unchecked")
    private static <T> T proxy(Class<T> type, InvocationHandler handler) {
        return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler);
    }

    private static Object objectMethod(Object proxy, Method method, Object[] args, String name) {
        switch (method.getName()) {
            case "toString":
                return name;
            case "hashCode":
                return System.identityHashCode(proxy);
            case "equals":
                return proxy == args[0];
            default:
                throw new UnsupportedOperationException("the harness's " + name + " has no " + method.getName());
        }
    }

    /**
     * What Flink's {@code StreamTaskStateInitializerImpl} gives an operator with a fresh (not
     * restored) heap state backend.
     */
    private static final class HeapStateInitializer implements StreamTaskStateInitializer {
        @Override
        public StreamOperatorStateContext streamOperatorStateContext(OperatorID operatorID, String operatorClassName,
                ProcessingTimeService processingTimeService, KeyContext keyContext, TypeSerializer<?> keySerializer,
                CloseableRegistry streamTaskCloseableRegistry, MetricGroup metricGroup, double managedMemoryFraction,
                boolean isUsingCustomRawKeyedState, boolean isAsyncState) throws Exception {
            if (isAsyncState) {
                throw new Util.Unsupported("the harness builds no async state backend");
            }
            ClassLoader loader = KeyedCoProcessHarness.class.getClassLoader();
            ExecutionConfig executionConfig = new ExecutionConfig();
            KeyGroupRange range = KeyGroupRange.of(0, MAX_PARALLELISM - 1);
            @SuppressWarnings("unchecked")
            HeapKeyedStateBackend<Object> keyed = new HeapKeyedStateBackendBuilder<>(
                    new KvStateRegistry().createTaskRegistry(new JobID(), new JobVertexID()),
                    (TypeSerializer<Object>) keySerializer,
                    loader,
                    MAX_PARALLELISM,
                    range,
                    executionConfig,
                    TtlTimeProvider.DEFAULT,
                    LatencyTrackingStateConfig.disabled(),
                    SizeTrackingStateConfig.disabled(),
                    Collections.emptyList(),
                    UncompressedStreamCompressionDecorator.INSTANCE,
                    LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED,
                    new HeapPriorityQueueSetFactory(range, MAX_PARALLELISM, 128),
                    true,
                    new CloseableRegistry()).build();
            OperatorStateBackend operatorState = new DefaultOperatorStateBackendBuilder(
                    loader, executionConfig, true, Collections.emptyList(), new CloseableRegistry()).build();
            InternalTimeServiceManager<Object> timers = InternalTimeServiceManagerImpl.create(
                    UnregisteredMetricGroups.createUnregisteredTaskMetricGroup().getIOMetricGroup(),
                    keyed,
                    range,
                    loader,
                    keyContext,
                    processingTimeService,
                    Collections.emptyList(),
                    StreamTaskCancellationContext.alwaysRunning());
            return new StreamOperatorStateContext() {
                @Override
                public boolean isRestored() {
                    return false;
                }

                @Override
                public OptionalLong getRestoredCheckpointId() {
                    return OptionalLong.empty();
                }

                @Override
                public OperatorStateBackend operatorStateBackend() {
                    return operatorState;
                }

                @Override
                public TypeSerializer<?> keySerializer() {
                    return keySerializer;
                }

                @Override
                public CheckpointableKeyedStateBackend<?> keyedStateBackend() {
                    return keyed;
                }

                @Override
                public AsyncKeyedStateBackend<?> asyncKeyedStateBackend() {
                    return null;
                }

                @Override
                public InternalTimeServiceManager<?> internalTimerServiceManager() {
                    return timers;
                }

                @Override
                public InternalTimeServiceManager<?> asyncInternalTimerServiceManager() {
                    return null;
                }

                @Override
                public CloseableIterable<StatePartitionStreamProvider> rawOperatorStateInputs() {
                    return CloseableIterable.empty();
                }

                @Override
                public CloseableIterable<KeyGroupStatePartitionStreamProvider> rawKeyedStateInputs() {
                    return CloseableIterable.empty();
                }
            };
        }
    }

    /** The operator's output: every record and watermark, in order. */
    private static final class EventOutput implements Output<StreamRecord<String>> {
        private final List<Map<String, Object>> events;

        EventOutput(List<Map<String, Object>> events) {
            this.events = events;
        }

        @Override
        public void collect(StreamRecord<String> record) {
            events.add(Util.event("output", "value", record.getValue(),
                    "ts", record.hasTimestamp() ? record.getTimestamp() : null));
        }

        @Override
        public <X> void collect(OutputTag<X> outputTag, StreamRecord<X> record) {
            throw new UnsupportedOperationException("the function has no side outputs");
        }

        @Override
        public void emitWatermark(Watermark mark) {
            events.add(Util.event("watermark", "ts", mark.getTimestamp()));
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus watermarkStatus) {}

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {}

        @Override
        public void emitWatermark(WatermarkEvent watermark) {}

        @Override
        public void close() {}
    }

    /** Processing time held at 0: timers are kept, never fired (the function registers none). */
    private static final class ManualProcessingTime implements ProcessingTimeService {
        private final ManualClock clock = new ManualClock(0);

        @Override
        public long getCurrentProcessingTime() {
            return clock.absoluteTimeMillis();
        }

        @Override
        public ScheduledFuture<?> registerTimer(long timestamp, ProcessingTimeCallback target) {
            return new CompletableScheduledFuture();
        }

        @Override
        public Clock getClock() {
            return clock;
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(ProcessingTimeCallback callback, long initialDelay, long period) {
            return new CompletableScheduledFuture();
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(ProcessingTimeCallback callback, long initialDelay, long period) {
            return new CompletableScheduledFuture();
        }

        @Override
        public CompletableFuture<Void> quiesce() {
            return CompletableFuture.completedFuture(null);
        }
    }

    /** A scheduled future that never comes due. */
    private static final class CompletableScheduledFuture extends CompletableFuture<Object>
            implements ScheduledFuture<Object> {
        @Override
        public long getDelay(java.util.concurrent.TimeUnit unit) {
            return Long.MAX_VALUE;
        }

        @Override
        public int compareTo(java.util.concurrent.Delayed o) {
            return 0;
        }
    }
}
