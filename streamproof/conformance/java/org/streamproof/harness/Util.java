package org.streamproof.harness;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;

import java.util.LinkedHashMap;
import java.util.Map;

/** Small helpers shared by the family harnesses. */
public final class Util {
    private Util() {}

    /** The harness cannot drive this scenario (reported as the scenario's {@code error}). */
    public static final class Unsupported extends RuntimeException {
        public Unsupported(String message) {
            super(message);
        }
    }

    /** An observation: {@code event("took", "mail", "A")}. */
    public static Map<String, Object> event(String type, Object... fields) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", type);
        for (int i = 0; i + 1 < fields.length; i += 2) {
            e.put((String) fields[i], fields[i + 1]);
        }
        return e;
    }

    /** A throwable in one line: its simple class name and message. */
    public static String oneLine(Throwable e) {
        String msg = e.getMessage();
        String text = e instanceof Unsupported ? msg : e.getClass().getSimpleName() + (msg == null ? "" : ": " + msg);
        return text == null ? "" : text.replaceAll("\\s+", " ").trim();
    }

    /** A one-line message of a throwable, without its class name. */
    public static String message(Throwable e) {
        String msg = e.getMessage();
        return msg == null ? e.getClass().getSimpleName() : msg.replaceAll("\\s+", " ").trim();
    }

    /**
     * A key from scenario JSON as the JVM type Flink would hash: a string → {@code String}, an
     * integer → {@code Long}, {@code {"int32": n}} → {@code Integer}.
     */
    public static Object key(JsonNode node) {
        if (node == null || node.isMissingNode() || node.isNull()) {
            throw new Unsupported("a key is missing");
        }
        if (node.isTextual()) {
            return node.textValue();
        }
        if (node.isIntegralNumber() && node.canConvertToLong()) {
            return node.longValue();
        }
        if (node.isObject() && node.size() == 1 && node.has("int32")
                && node.get("int32").isIntegralNumber() && node.get("int32").canConvertToInt()) {
            return node.get("int32").intValue();
        }
        throw new Unsupported("not a key (string, long or {\"int32\": n}): " + node);
    }

    /** A key as observations show it (the inverse of {@link #key}). */
    public static Object keyJson(Object key) {
        if (key instanceof Integer) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("int32", key);
            return m;
        }
        return key;
    }

    public static String text(JsonNode step, String field) {
        JsonNode n = step.get(field);
        if (n == null || !n.isTextual()) {
            throw new Unsupported("step " + step.path("op").asText("?") + ": field '" + field + "' must be a string");
        }
        return n.textValue();
    }

    public static String optText(JsonNode step, String field, String dflt) {
        JsonNode n = step.get(field);
        return n == null || n.isNull() ? dflt : text(step, field);
    }

    public static long longValue(JsonNode step, String field) {
        JsonNode n = step.get(field);
        if (n == null || !n.isIntegralNumber() || !n.canConvertToLong()) {
            throw new Unsupported("step " + step.path("op").asText("?") + ": field '" + field + "' must be a long");
        }
        return n.longValue();
    }

    public static int intValue(JsonNode step, String field) {
        JsonNode n = step.get(field);
        if (n == null || !n.isIntegralNumber() || !n.canConvertToInt()) {
            throw new Unsupported("step " + step.path("op").asText("?") + ": field '" + field + "' must be an int");
        }
        return n.intValue();
    }

    /** The scenario's steps (an array, possibly empty). */
    public static JsonNode steps(JsonNode scenario) {
        JsonNode steps = scenario.path("steps");
        if (!steps.isArray()) {
            throw new Unsupported("the scenario has no steps array");
        }
        return steps;
    }
}
