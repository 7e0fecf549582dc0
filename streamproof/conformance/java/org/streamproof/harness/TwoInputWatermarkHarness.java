package org.streamproof.harness;

import org.apache.flink.api.common.eventtime.IndexedCombinedWatermarkStatus;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.PushingAsyncDataInput.DataOutput;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The watermark of a two-input operator on Flink's own classes: each input's {@code
 * StatusWatermarkValve} (the minimum over its channels, as {@code StreamTwoInputProcessor}'s
 * inputs keep it) hands its watermark to the operator, which combines the two with {@code
 * IndexedCombinedWatermarkStatus} ({@code AbstractStreamOperator.processWatermark1/2}: the
 * operator's watermark moves when the minimum of both inputs' moves).
 *
 * <p>Params: {@code channels}, the channel count of input 1 and of input 2. Steps: {@code
 * {"op": "watermark", "input": 1|2, "channel": c, "ts": t}}. Observations: {@code {"event":
 * "watermark", "ts": t}} each time the operator's combined watermark advances.
 */
public final class TwoInputWatermarkHarness {
    private TwoInputWatermarkHarness() {}

    public static List<Map<String, Object>> run(JsonNode scenario) throws Exception {
        JsonNode channels = scenario.path("params").path("channels");
        if (!channels.isArray() || channels.size() != 2) {
            throw new Util.Unsupported("params.channels: the channel counts of the two inputs");
        }
        List<Map<String, Object>> events = new ArrayList<>();
        IndexedCombinedWatermarkStatus combined = IndexedCombinedWatermarkStatus.forInputsCount(2);
        StatusWatermarkValve[] valves = new StatusWatermarkValve[2];
        List<DataOutput<Object>> outputs = new ArrayList<>();
        for (int input = 0; input < 2; input++) {
            valves[input] = new StatusWatermarkValve(channels.get(input).asInt());
            outputs.add(new OperatorInput(input, combined, events));
        }
        for (JsonNode step : Util.steps(scenario)) {
            if (!"watermark".equals(Util.text(step, "op"))) {
                throw new Util.Unsupported("unknown step " + Util.text(step, "op"));
            }
            int input = Util.intValue(step, "input") - 1;
            valves[input].inputWatermark(
                    new Watermark(Util.longValue(step, "ts")), Util.intValue(step, "channel"), outputs.get(input));
        }
        return events;
    }

    /** What an input's valve emits reaches the operator as processWatermark1/2. */
    private static final class OperatorInput implements DataOutput<Object> {
        private final int index;
        private final IndexedCombinedWatermarkStatus combined;
        private final List<Map<String, Object>> events;

        OperatorInput(int index, IndexedCombinedWatermarkStatus combined, List<Map<String, Object>> events) {
            this.index = index;
            this.combined = combined;
            this.events = events;
        }

        @Override
        public void emitWatermark(Watermark mark) {
            if (combined.updateWatermark(index, mark.getTimestamp())) {
                events.add(Util.event("watermark", "ts", combined.getCombinedWatermark()));
            }
        }

        @Override
        public void emitRecord(StreamRecord<Object> record) {}

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) {}

        @Override
        public void emitLatencyMarker(LatencyMarker marker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes attributes) {}

        @Override
        public void emitWatermark(WatermarkEvent event) {}
    }
}
