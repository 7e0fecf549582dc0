package org.streamproof.harness;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService.ProcessingTimeCallback;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.operators.InternalTimeServiceManagerImpl;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.KeyContext;
import org.apache.flink.streaming.api.operators.MailboxWatermarkProcessor;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.StreamTaskCancellationContext;
import org.apache.flink.streaming.runtime.tasks.mailbox.Mail;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;
import org.apache.flink.util.clock.Clock;
import org.apache.flink.util.clock.SystemClock;
import org.apache.flink.util.function.ThrowingRunnable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

/**
 * The {@code chain_watermark} family on Flink's own {@code MailboxWatermarkProcessor}: a chain
 * {@code A -> B} of two operators, each with its own {@code InternalTimeServiceManagerImpl} (heap
 * timers, one service), its own {@code MailboxExecutorImpl} (priority = its index in the chain)
 * and its own processor; one {@code TaskMailboxImpl}. A's output hands every watermark to B's
 * processor at once (as {@code ChainingOutput} → {@code AbstractStreamOperator.processWatermark}
 * does), B's output is the chain's.
 *
 * <p>Observations (docs/chain-watermark.md): {@code fire} (operator, key, ts), {@code emit}
 * (operator, watermark), {@code ran} (the mail {@code run_mail} took at {@code MIN_PRIORITY} and
 * ran, null when none). Mails are named by their description: an operator's executor is wrapped
 * only to prefix its descriptions with the operator's name ({@code
 * "B:emitWatermarkInsideMailbox"}); a timer marked by {@code timer_puts_mail} puts {@code
 * "<operator>:<key>@<ts>"} through its operator's executor when it fires. Only {@code params.mode}
 * {@code flink-2.3} is driven (the {@code corrected} mode is the project's, not Flink's).
 */
public final class ChainWatermarkHarness {
    static final int MAX_PARALLELISM = 128;
    static final int DRAIN_BUDGET = 10_000;
    static final String SERVICE = "timers";
    static final String NAMESPACE = "";

    public static List<Map<String, Object>> run(JsonNode scenario) throws Exception {
        String mode = scenario.path("params").path("mode").asText("flink-2.3");
        if (!mode.equals("flink-2.3")) {
            throw new Util.Unsupported("the harness drives Flink's processor as shipped (mode flink-2.3), not mode '" + mode + "'");
        }
        return new ChainWatermarkHarness(scenario).runAll();
    }

    private final JsonNode steps;
    private final TypeSerializer<Object> keySerializer;
    private final List<Map<String, Object>> events = new ArrayList<>();
    private TaskMailboxImpl mailbox;
    private Op a;
    private Op b;

    @SuppressWarnings("unchecked")
    private ChainWatermarkHarness(JsonNode scenario) {
        this.steps = Util.steps(scenario);
        Set<String> types = new LinkedHashSet<>();
        for (JsonNode s : steps) {
            if (s.has("key")) {
                types.add(Util.key(s.get("key")).getClass().getSimpleName());
            }
        }
        if (types.size() > 1) {
            throw new Util.Unsupported("the harness uses one key type, but the keys are " + String.join(", ", types));
        }
        String t = types.isEmpty() ? "String" : types.iterator().next();
        TypeSerializer<?> ser = t.equals("Long") ? LongSerializer.INSTANCE
                : t.equals("Integer") ? IntSerializer.INSTANCE : StringSerializer.INSTANCE;
        this.keySerializer = (TypeSerializer<Object>) ser;
    }

    private List<Map<String, Object>> runAll() throws Exception {
        for (int i = 0; i < steps.size(); i++) {
            JsonNode step = steps.get(i);
            try {
                apply(step);
            } catch (Util.Unsupported e) {
                throw e;
            } catch (Exception e) {
                events.add(Util.event("error", "text", e.getClass().getSimpleName(), "step", i, "message", Util.message(e)));
            }
        }
        return events;
    }

    private void apply(JsonNode step) throws Exception {
        String op = Util.text(step, "op");
        if (mailbox == null && !op.equals("new_chain")) {
            throw new Util.Unsupported("'" + op + "' before new_chain");
        }
        switch (op) {
            case "new_chain":
                mailbox = new TaskMailboxImpl(Thread.currentThread());
                b = new Op("B", 1, null);
                a = new Op("A", 0, b);
                break;
            case "register": {
                Op target = operator(step);
                target.keyContext.setCurrentKey(Util.key(step.get("key")));
                target.service.registerEventTimeTimer(NAMESPACE, Util.longValue(step, "ts"));
                break;
            }
            case "timer_puts_mail":
                operator(step).putsMail.add(Arrays.asList(Util.key(step.get("key")), Util.longValue(step, "ts")));
                break;
            case "watermark":
                a.processor.emitWatermarkInsideMailbox(new Watermark(Util.longValue(step, "ts")));
                break;
            case "mail": {
                String name = Util.text(step, "name");
                mailbox.put(new Mail(() -> {}, 0, "%s", name));
                break;
            }
            case "run_mail":
                runOne();
                break;
            case "drain": {
                int ran = 0;
                while (mailbox.hasMail()) {
                    if (++ran > DRAIN_BUDGET) {
                        throw new IllegalStateException("drain ran more than " + DRAIN_BUDGET + " mails");
                    }
                    runOne();
                }
                break;
            }
            default:
                throw new Util.Unsupported("unknown chain_watermark op '" + op + "'");
        }
    }

    private Op operator(JsonNode step) {
        String name = Util.text(step, "operator");
        switch (name) {
            case "A":
                return a;
            case "B":
                return b;
            default:
                throw new Util.Unsupported("operator must be A or B, not '" + name + "'");
        }
    }

    private void runOne() throws Exception {
        Optional<Mail> mail = mailbox.tryTake(TaskMailbox.MIN_PRIORITY);
        events.add(Util.event("ran", "mail", mail.map(Mail::toString).orElse(null)));
        if (mail.isPresent()) {
            mail.get().run();
        }
    }

    /** One chained operator: timers, executor, processor; its output feeds {@code downstream}. */
    private final class Op implements Triggerable<Object, String> {
        final String name;
        final SimpleKeyContext keyContext = new SimpleKeyContext();
        final InternalTimeServiceManagerImpl<Object> manager;
        final InternalTimerService<String> service;
        final MailboxExecutorImpl executor;
        final MailboxWatermarkProcessor<Object> processor;
        final Op downstream;
        final Set<List<Object>> putsMail = new HashSet<>();

        Op(String name, int chainIndex, Op downstream) throws Exception {
            this.name = name;
            this.downstream = downstream;
            KeyGroupRange range = KeyGroupRange.of(0, MAX_PARALLELISM - 1);
            this.manager = InternalTimeServiceManagerImpl.create(
                    UnregisteredMetricGroups.createUnregisteredTaskMetricGroup().getIOMetricGroup(),
                    new HeapPriorityQueueSetFactory(range, MAX_PARALLELISM, 128),
                    range,
                    ChainWatermarkHarness.class.getClassLoader(),
                    keyContext,
                    new NoProcessingTime(),
                    List.of(),
                    StreamTaskCancellationContext.alwaysRunning());
            this.service = manager.getInternalTimerService(SERVICE, keySerializer, StringSerializer.INSTANCE, this);
            this.executor = new MailboxExecutorImpl(mailbox, chainIndex, StreamTaskActionExecutor.IMMEDIATE);
            this.processor = new MailboxWatermarkProcessor<>(new ChainOutput(this), new Labelled(executor, name), manager);
        }

        @Override
        public void onEventTime(InternalTimer<Object, String> timer) {
            Object key = timer.getKey();
            long ts = timer.getTimestamp();
            events.add(Util.event("fire", "operator", name, "key", Util.keyJson(key), "ts", ts));
            if (putsMail.contains(Arrays.asList(key, ts))) {
                executor.execute(MailboxExecutor.MailOptions.options(), () -> {}, "%s", name + ":" + key + "@" + ts);
            }
        }

        @Override
        public void onProcessingTime(InternalTimer<Object, String> timer) {
            throw new IllegalStateException("no processing-time timers in this family");
        }

        void emitted(Watermark mark) {
            events.add(Util.event("emit", "operator", name, "watermark", mark.getTimestamp()));
            if (downstream != null) {
                try {
                    downstream.processor.emitWatermarkInsideMailbox(mark);
                } catch (RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }

    /** An operator's output: records nothing but watermarks, which go on down the chain. */
    private static final class ChainOutput implements Output<StreamRecord<Object>> {
        private final Op op;

        ChainOutput(Op op) {
            this.op = op;
        }

        @Override
        public void emitWatermark(Watermark mark) {
            op.emitted(mark);
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus watermarkStatus) {}

        @Override
        public <X> void collect(OutputTag<X> outputTag, StreamRecord<X> record) {
            throw new UnsupportedOperationException("no records in this family");
        }

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {}

        @Override
        public void emitWatermark(WatermarkEvent watermark) {
            throw new UnsupportedOperationException("no generalized watermarks in this family");
        }

        @Override
        public void collect(StreamRecord<Object> record) {
            throw new UnsupportedOperationException("no records in this family");
        }

        @Override
        public void close() {}
    }

    /** Flink's executor, with the operator's name put in front of every mail's description. */
    private static final class Labelled implements MailboxExecutor {
        private final MailboxExecutor delegate;
        private final String prefix;

        Labelled(MailboxExecutor delegate, String name) {
            this.delegate = delegate;
            this.prefix = name.replace("%", "%%") + ":";
        }

        @Override
        public void execute(MailOptions options, ThrowingRunnable<? extends Exception> command,
                String descriptionFormat, Object... descriptionArgs) {
            delegate.execute(options, command, prefix + descriptionFormat, descriptionArgs);
        }

        @Override
        public void yield() throws InterruptedException {
            delegate.yield();
        }

        @Override
        public boolean tryYield() {
            return delegate.tryYield();
        }

        @Override
        public boolean shouldInterrupt() {
            return delegate.shouldInterrupt();
        }
    }

    private static final class SimpleKeyContext implements KeyContext {
        private Object key;

        @Override
        public void setCurrentKey(Object key) {
            this.key = key;
        }

        @Override
        public Object getCurrentKey() {
            return key;
        }
    }

    /** No processing time in this family: registering a physical timer is a harness bug. */
    private static final class NoProcessingTime implements ProcessingTimeService {
        @Override
        public long getCurrentProcessingTime() {
            return Long.MIN_VALUE;
        }

        @Override
        public ScheduledFuture<?> registerTimer(long timestamp, ProcessingTimeCallback target) {
            throw new UnsupportedOperationException("no processing-time timers in this family");
        }

        @Override
        public Clock getClock() {
            return SystemClock.getInstance();
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(ProcessingTimeCallback callback, long initialDelay, long period) {
            throw new UnsupportedOperationException("scheduleAtFixedRate");
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(ProcessingTimeCallback callback, long initialDelay, long period) {
            throw new UnsupportedOperationException("scheduleWithFixedDelay");
        }

        @Override
        public CompletableFuture<Void> quiesce() {
            return CompletableFuture.completedFuture(null);
        }
    }
}
