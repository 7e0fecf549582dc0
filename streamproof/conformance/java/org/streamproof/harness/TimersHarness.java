package org.streamproof.harness;

import org.apache.flink.api.common.operators.ProcessingTimeService.ProcessingTimeCallback;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.io.PostVersionedIOReadableWritable;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.core.memory.DataOutputViewStreamWrapper;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupStatePartitionStreamProvider;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.operators.InternalTimeServiceManagerImpl;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.InternalTimerServiceImpl;
import org.apache.flink.streaming.api.operators.InternalTimersSnapshot;
import org.apache.flink.streaming.api.operators.InternalTimersSnapshotReaderWriters;
import org.apache.flink.streaming.api.operators.KeyContext;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.StreamTaskCancellationContext;
import org.apache.flink.util.clock.Clock;
import org.apache.flink.util.clock.SystemClock;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The {@code timers} family on Flink's own {@code InternalTimeServiceManagerImpl} and {@code
 * InternalTimerServiceImpl} (heap timers, {@code HeapPriorityQueueSetFactory}), with a manual
 * processing-time service like Flink's {@code TestProcessingTimeService} that records every
 * physical timer registered and cancelled.
 *
 * <p>Each instance ({@code new_instance} / {@code restore}) is one manager with its own key context
 * and clock; its services are named ({@code service}, default {@code "timers"}) and started on first
 * use, a restored instance starting every service the snapshot had (as an operator's open() would).
 * A {@code snapshot} is what {@code snapshotTimersForKeyGroup} returns for each service and local
 * key group: live views of the timer sets, read when a {@code restore} uses them (what the
 * vectors recorded, e.g. {@code snapshot_is_point_in_time}; see model/timers.py). A restore
 * writes the key groups of its range in the manager's raw keyed state format (the
 * serialization proxy's framing around Flink's own timer snapshot writer) and restores them
 * through {@code InternalTimeServiceManagerImpl.create}, as Flink restores a rescaled operator.
 * Services are snapshotted in the manager's own order (its {@code HashMap}), as Flink's
 * serialization proxy writes them. Keys of one type use Flink's serializer of that type; keys of
 * mixed types use {@link TimersMixedKeySerializer} (a type tag and the value), so such scenarios
 * snapshot and restore too.
 *
 * <p>Observations follow shared/vectors/flink_timer_traces.json. A step Flink rejects gives {@code
 * {"event": "error", "text": exception, "message": ...}}; more than {@code params.budget}
 * (default 10000) timers fired in one step gives a fatal error and ends the run (Flink would loop
 * forever). {@code register.action} (FLIP-269 termination actions) does not exist in Flink and is
 * ignored: it changes nothing observable in this family.
 */
public final class TimersHarness {
    static final String DEFAULT_SERVICE = "timers";
    static final int DEFAULT_BUDGET = 10_000;
    /** InternalTimerServiceSerializationProxy.VERSION (Flink 1.6 to 2.x). */
    static final int SERIALIZATION_VERSION = 2;

    public static List<Map<String, Object>> run(JsonNode scenario) throws Exception {
        return new TimersHarness(scenario).runAll();
    }

    private final JsonNode steps;
    private final int budget;
    private final List<Map<String, Object>> events = new ArrayList<>();
    private final List<Instance> instances = new ArrayList<>();
    private final Map<String, Snap> snapshots = new HashMap<>();
    private final Map<List<Object>, List<JsonNode>> reactions = new HashMap<>();
    private final TypeSerializer<Object> keySerializer;
    private Instance current;
    private int firedInCall;
    private int firedInStep;

    private static final class BudgetExceeded extends RuntimeException {
        BudgetExceeded(String message) {
            super(message);
        }
    }

    private static final class Snap {
        final int maxParallelism;
        final List<String> services;
        final Map<Integer, List<ServiceView>> keyGroups;

        Snap(int maxParallelism, List<String> services, Map<Integer, List<ServiceView>> keyGroups) {
            this.maxParallelism = maxParallelism;
            this.services = services;
            this.keyGroups = keyGroups;
        }
    }

    /** What snapshotTimersForKeyGroup returned for one service: live views of its timer sets. */
    private static final class ServiceView {
        final String name;
        final InternalTimersSnapshot<Object, String> timers;

        ServiceView(String name, InternalTimersSnapshot<Object, String> timers) {
            this.name = name;
            this.timers = timers;
        }
    }

    @SuppressWarnings("unchecked")
    private TimersHarness(JsonNode scenario) {
        this.steps = Util.steps(scenario);
        JsonNode b = scenario.path("params").path("budget");
        this.budget = b.isIntegralNumber() && b.canConvertToInt() && b.intValue() > 0 ? b.intValue() : DEFAULT_BUDGET;
        Set<String> types = new LinkedHashSet<>();
        collectKeyTypes(steps, types);
        TypeSerializer<?> ser = types.size() > 1 ? TimersMixedKeySerializer.INSTANCE : StringSerializer.INSTANCE;
        if (types.size() == 1) {
            String t = types.iterator().next();
            ser = t.equals("Long") ? LongSerializer.INSTANCE : t.equals("Integer") ? IntSerializer.INSTANCE : StringSerializer.INSTANCE;
        }
        this.keySerializer = (TypeSerializer<Object>) ser;
    }

    private static void collectKeyTypes(JsonNode steps, Set<String> types) {
        for (JsonNode s : steps) {
            if (s.has("key")) {
                types.add(Util.key(s.get("key")).getClass().getSimpleName());
            }
        }
    }

    private List<Map<String, Object>> runAll() throws Exception {
        for (int i = 0; i < steps.size(); i++) {
            JsonNode step = steps.get(i);
            firedInStep = 0;
            try {
                apply(step);
            } catch (Util.Unsupported e) {
                throw e;
            } catch (BudgetExceeded e) {
                events.add(Util.event("error", "text", "BudgetExceeded", "step", i, "message", e.getMessage(), "fatal", true));
                break;
            } catch (Exception e) {
                events.add(Util.event("error", "text", e.getClass().getSimpleName(), "step", i, "message", Util.message(e)));
            }
        }
        return events;
    }

    private void apply(JsonNode step) throws Exception {
        String op = Util.text(step, "op");
        if (current == null && !op.equals("new_instance") && !op.equals("on_fire")) {
            throw new Util.Unsupported("'" + op + "' before any new_instance");
        }
        switch (op) {
            case "new_instance":
                start(new Instance(Util.intValue(step, "max_parallelism"), range(step), List.of()), List.of());
                break;
            case "restore": {
                String id = Util.text(step, "id");
                Snap snap = snapshots.get(id);
                if (snap == null) {
                    throw new Util.Unsupported("restore of an unknown snapshot '" + id + "'");
                }
                int maxParallelism = Util.intValue(step, "max_parallelism");
                if (maxParallelism != snap.maxParallelism) {
                    // Flink refuses this when assigning state (StateAssignmentOperation)
                    throw new IllegalStateException("snapshot '" + id + "' was taken with max_parallelism "
                            + snap.maxParallelism + ", not " + maxParallelism);
                }
                KeyGroupRange range = range(step);
                List<KeyGroupStatePartitionStreamProvider> streams = new ArrayList<>();
                for (int kg : range) {
                    List<ServiceView> views = snap.keyGroups.get(kg);
                    if (views != null) {
                        byte[] bytes = new KeyGroupState(views).bytes();
                        streams.add(new KeyGroupStatePartitionStreamProvider(new ByteArrayInputStream(bytes), kg));
                    }
                }
                start(new Instance(maxParallelism, range, streams), snap.services);
                break;
            }
            case "use_instance": {
                int index = Util.intValue(step, "index");
                if (index < 0 || index >= instances.size()) {
                    throw new Util.Unsupported("use_instance: no instance " + index);
                }
                current = instances.get(index);
                break;
            }
            case "set_key":
                current.keyContext.setCurrentKey(Util.key(step.get("key")));
                break;
            case "register":
            case "delete":
                registerOrDelete(step);
                break;
            case "advance_watermark":
                current.manager.advanceWatermark(new Watermark(Util.longValue(step, "to")));
                break;
            case "try_advance_watermark": {
                long to = Util.longValue(step, "to");
                int interruptAfter = Util.intValue(step, "interrupt_after");
                firedInCall = 0;
                boolean completed = current.manager.tryAdvanceWatermark(new Watermark(to), () -> firedInCall >= interruptAfter);
                events.add(Util.event("try_advance_watermark", "to", to, "completed", completed,
                        "watermark", current.service(DEFAULT_SERVICE).currentWatermark()));
                break;
            }
            case "advance_processing_time":
                current.clock.advanceTo(Util.longValue(step, "to"));
                break;
            case "on_fire": {
                List<Object> where = Arrays.asList(Util.optText(step, "service", DEFAULT_SERVICE), domain(step),
                        Util.key(step.get("key")), Util.text(step, "namespace"), Util.longValue(step, "ts"));
                JsonNode then = step.path("then");
                for (JsonNode s : then) {
                    String thenOp = Util.text(s, "op");
                    if (!thenOp.equals("register") && !thenOp.equals("delete")) {
                        throw new Util.Unsupported("on_fire: only register and delete may be in 'then', not '" + thenOp + "'");
                    }
                    reactions.computeIfAbsent(where, k -> new ArrayList<>()).add(s);
                }
                break;
            }
            case "snapshot":
                snapshot(Util.text(step, "id"));
                break;
            case "count":
                events.add(Util.event("count", "event_timers", current.manager.numEventTimeTimers(),
                        "processing_timers", current.manager.numProcessingTimeTimers(),
                        "physical_timers", current.clock.pending));
                break;
            default:
                throw new Util.Unsupported("unknown timers op '" + op + "'");
        }
    }

    private static KeyGroupRange range(JsonNode step) {
        JsonNode r = step.path("key_group_range");
        if (!r.isArray() || r.size() != 2 || !r.get(0).canConvertToInt() || !r.get(1).canConvertToInt()) {
            throw new Util.Unsupported("key_group_range must be [start, end]");
        }
        return KeyGroupRange.of(r.get(0).intValue(), r.get(1).intValue());
    }

    private static String domain(JsonNode step) {
        String d = Util.text(step, "domain");
        if (!d.equals("event") && !d.equals("processing")) {
            throw new Util.Unsupported("domain must be event or processing, not '" + d + "'");
        }
        return d;
    }

    private void registerOrDelete(JsonNode step) {
        InternalTimerService<String> service = current.service(Util.optText(step, "service", DEFAULT_SERVICE));
        String namespace = Util.text(step, "namespace");
        long ts = Util.longValue(step, "ts");
        boolean register = Util.text(step, "op").equals("register");
        if (domain(step).equals("event")) {
            if (register) {
                service.registerEventTimeTimer(namespace, ts);
            } else {
                service.deleteEventTimeTimer(namespace, ts);
            }
        } else if (register) {
            service.registerProcessingTimeTimer(namespace, ts);
        } else {
            service.deleteProcessingTimeTimer(namespace, ts);
        }
    }

    private void start(Instance inst, List<String> services) {
        instances.add(inst);
        current = inst;
        Set<String> names = new LinkedHashSet<>();
        names.add(DEFAULT_SERVICE);
        names.addAll(services);
        for (String name : names) {
            inst.service(name);
        }
        events.add(Util.event("instance", "index", instances.size() - 1));
    }

    @SuppressWarnings("unchecked")
    private void snapshot(String id) {
        // the services in the manager's own order (its HashMap), as InternalTimerServiceSerializationProxy
        // writes them: a restore registers them in that order
        List<String> names = new ArrayList<>(current.registeredServices().keySet());
        Map<Integer, List<ServiceView>> keyGroups = new HashMap<>();
        for (int kg : current.range) {
            List<ServiceView> views = new ArrayList<>();
            for (String name : names) {
                InternalTimerServiceImpl<Object, String> service = current.registeredServices().get(name);
                views.add(new ServiceView(name, service.snapshotTimersForKeyGroup(kg)));
            }
            keyGroups.put(kg, views);
        }
        snapshots.put(id, new Snap(current.maxParallelism, names, keyGroups));
    }

    /** One key group of a snapshot in the manager's raw keyed state format (what
     * InternalTimerServiceSerializationProxy writes), written when a restore reads it. */
    private final class KeyGroupState extends PostVersionedIOReadableWritable {
        private final List<ServiceView> views;

        KeyGroupState(List<ServiceView> views) {
            this.views = views;
        }

        @Override
        public int getVersion() {
            return SERIALIZATION_VERSION;
        }

        @Override
        public void write(DataOutputView out) throws IOException {
            super.write(out);
            out.writeInt(views.size());
            for (ServiceView v : views) {
                out.writeUTF(v.name);
                InternalTimersSnapshotReaderWriters.getWriterForVersion(
                                SERIALIZATION_VERSION, v.timers, keySerializer, StringSerializer.INSTANCE)
                        .writeTimersSnapshot(out);
            }
        }

        @Override
        protected void read(DataInputView in, boolean wasVersioned) {
            throw new UnsupportedOperationException();
        }

        byte[] bytes() throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            write(new DataOutputViewStreamWrapper(bytes));
            return bytes.toByteArray();
        }
    }

    private void fired(Instance inst, String name, String domain, InternalTimer<Object, String> timer) {
        if (firedInStep >= budget) {
            throw new BudgetExceeded("more than " + budget + " timers fired in one step: a callback keeps registering due timers");
        }
        firedInStep++;
        Map<String, Object> e = Util.event("fire", "domain", domain, "key", Util.keyJson(timer.getKey()),
                "namespace", timer.getNamespace(), "ts", timer.getTimestamp(),
                "current_key", Util.keyJson(inst.keyContext.getCurrentKey()),
                "watermark", inst.service(name).currentWatermark());
        if (!name.equals(DEFAULT_SERVICE)) {
            e.put("service", name);
        }
        events.add(e);
        firedInCall++;
        List<JsonNode> then = reactions.get(
                Arrays.asList(name, domain, timer.getKey(), timer.getNamespace(), timer.getTimestamp()));
        if (then != null) {
            for (JsonNode s : new ArrayList<>(then)) {
                registerOrDelete(s);
            }
        }
    }

    /** One operator's timers: a manager, its key context and its processing-time clock. */
    private final class Instance {
        final int maxParallelism;
        final KeyGroupRange range;
        final SimpleKeyContext keyContext = new SimpleKeyContext();
        final ManualProcessingTimeService clock = new ManualProcessingTimeService();
        final InternalTimeServiceManagerImpl<Object> manager;
        final Map<String, InternalTimerService<String>> services = new LinkedHashMap<>();

        Instance(int maxParallelism, KeyGroupRange range, List<KeyGroupStatePartitionStreamProvider> restored) {
            if (range.getEndKeyGroup() >= maxParallelism || range.getStartKeyGroup() < 0) {
                throw new Util.Unsupported("key_group_range " + range + " is not within max_parallelism " + maxParallelism);
            }
            this.maxParallelism = maxParallelism;
            this.range = range;
            try {
                this.manager = InternalTimeServiceManagerImpl.create(
                        UnregisteredMetricGroups.createUnregisteredTaskMetricGroup().getIOMetricGroup(),
                        new HeapPriorityQueueSetFactory(range, maxParallelism, 128),
                        range,
                        TimersHarness.class.getClassLoader(),
                        keyContext,
                        clock,
                        restored,
                        StreamTaskCancellationContext.alwaysRunning());
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }

        /** The manager's {@code timerServices} map (package-private in Flink: read reflectively). */
        @SuppressWarnings("unchecked")
        Map<String, InternalTimerServiceImpl<Object, String>> registeredServices() {
            try {
                java.lang.reflect.Field f = InternalTimeServiceManagerImpl.class.getDeclaredField("timerServices");
                f.setAccessible(true);
                return (Map<String, InternalTimerServiceImpl<Object, String>>) f.get(manager);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        InternalTimerService<String> service(String name) {
            InternalTimerService<String> s = services.get(name);
            if (s == null) {
                Instance self = this;
                s = manager.getInternalTimerService(name, keySerializer, StringSerializer.INSTANCE,
                        new Triggerable<Object, String>() {
                            @Override
                            public void onEventTime(InternalTimer<Object, String> timer) {
                                fired(self, name, "event", timer);
                            }

                            @Override
                            public void onProcessingTime(InternalTimer<Object, String> timer) {
                                fired(self, name, "processing", timer);
                            }
                        });
                services.put(name, s);
            }
            return s;
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

    /**
     * Like Flink's TestProcessingTimeService: {@code advanceTo(t)} sets the time, then fires the
     * pending physical timers with time ≤ t one by one in time order (equal times: registration
     * order), including those registered meanwhile. Registrations and cancellations are observed.
     */
    private final class ManualProcessingTimeService implements ProcessingTimeService {
        long now = Long.MIN_VALUE;
        int pending;
        long seq;
        final PriorityQueue<PhysicalTimer> queue = new PriorityQueue<>(
                (a, b) -> a.ts != b.ts ? Long.compare(a.ts, b.ts) : Long.compare(a.seq, b.seq));

        @Override
        public long getCurrentProcessingTime() {
            return now;
        }

        @Override
        public ScheduledFuture<?> registerTimer(long timestamp, ProcessingTimeCallback target) {
            PhysicalTimer t = new PhysicalTimer(this, timestamp, seq++, target);
            queue.add(t);
            pending++;
            events.add(Util.event("physical_register", "ts", timestamp));
            return t;
        }

        void advanceTo(long time) throws Exception {
            now = time;
            int fired = 0;
            while (!queue.isEmpty() && queue.peek().ts <= time) {
                PhysicalTimer t = queue.poll();
                if (!t.pending) {
                    continue;
                }
                t.pending = false;
                pending--;
                if (++fired > budget) {
                    throw new BudgetExceeded("more than " + budget + " physical timers fired advancing to " + time);
                }
                t.target.onProcessingTime(t.ts);
            }
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

    private final class PhysicalTimer implements ScheduledFuture<Object> {
        final ManualProcessingTimeService clock;
        final long ts;
        final long seq;
        final ProcessingTimeCallback target;
        boolean pending = true;
        boolean cancelled;

        PhysicalTimer(ManualProcessingTimeService clock, long ts, long seq, ProcessingTimeCallback target) {
            this.clock = clock;
            this.ts = ts;
            this.seq = seq;
            this.target = target;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            if (!pending) {
                return false;
            }
            pending = false;
            cancelled = true;
            clock.pending--;
            events.add(Util.event("physical_cancel", "ts", ts));
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return !pending;
        }

        @Override
        public Object get() {
            return null;
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            return null;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            long delay = clock.now == Long.MIN_VALUE ? Long.MAX_VALUE : ts - clock.now;
            return unit.convert(delay, TimeUnit.MILLISECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            return Long.compare(getDelay(TimeUnit.MILLISECONDS), o.getDelay(TimeUnit.MILLISECONDS));
        }
    }
}
